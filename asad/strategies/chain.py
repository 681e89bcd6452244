"""Chain: what many users do by hand — every stage submitted at once, each with
``--dependency=afterok`` on its predecessors. Stages are submitted in waves because a
stage's dependency needs its predecessors' job ids."""

from __future__ import annotations

from asad.core.model import StageState
from asad.strategies.base import Plan, SubmitNow


class Chain:
    name = "chain"

    def plan(self, wf, stage, now, ctx) -> Plan:  # noqa: ANN001
        pending: list[str] = []
        for p in wf.spec.predecessors(stage):
            ps = wf.stages[p]
            if ps.state is StageState.COMPLETED:
                continue
            job = wf.current_job(p)
            if job is None or job.job_id is None or ps.state not in (StageState.SUBMITTED, StageState.RUNNING):
                return None
            pending.append(p)
        return SubmitNow(dependency_on=tuple(pending))
