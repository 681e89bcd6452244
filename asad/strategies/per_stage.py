"""Per-Stage (E-HPC): a stage is submitted only once every predecessor has completed.
Fewest core-hours; every stage waits in the queue in full."""

from __future__ import annotations

from asad.core.model import StageState
from asad.strategies.base import Plan, SubmitNow


class PerStage:
    name = "per-stage"

    def plan(self, wf, stage, now, ctx) -> Plan:  # noqa: ANN001
        preds = wf.spec.predecessors(stage)
        if all(wf.stages[p].state is StageState.COMPLETED for p in preds):
            return SubmitNow()
        return None
