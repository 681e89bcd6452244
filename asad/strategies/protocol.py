"""The one method every strategy has (per_stage.py, chain.py, asa.py, auto.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from asad.strategies.base import Plan

if TYPE_CHECKING:
    from asad.core.context import Context
    from asad.core.model import WorkflowRun


class Strategy(Protocol):
    name: str

    def plan(self, wf: WorkflowRun, stage: str, now: float, ctx: Context) -> Plan: ...
