"""What a strategy answers for one stage that has no live job: submit now, later, or not yet.

Plain values, so that the context (asad/core/context.py) can size a ``SubmitNow`` without
importing the strategies that make them; the strategies' own interface is ``protocol.py``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SubmitNow:
    dependency_on: tuple[str, ...] = ()  # stages whose jobs get an ``afterok`` on this one
    barrier_on: tuple[str, ...] = ()  # naive mode: the job idles until these stages end
    begin: float | None = None  # hand the timing to Slurm (``--begin``)
    est_wait_s: float | None = None
    planned_start: float | None = None  # the predecessors' expected end
    why: str = ""  # the rule and the numbers behind the decision (``asad explain``)


@dataclass(frozen=True)
class SubmitAt:
    at: float
    est_wait_s: float
    planned_start: float
    why: str = ""


Plan = SubmitNow | SubmitAt | None

