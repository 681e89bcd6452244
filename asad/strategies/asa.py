"""ASA, the proactive strategy: while a stage's predecessors run, submit it at
``expected_end - estimated_wait`` so that its queue wait overlaps their run.

``expected_end`` is the latest predecessor's start plus its learned run time (the time
limit until asad has seen it run); ``estimated_wait`` comes from the wait learner of the
stage's job geometry. Modes:

- ``dependency``: the early job carries ``afterok`` on the running predecessors, so Slurm
  cannot start it too early; it is never idle.
- ``naive``: no Slurm dependency; the job idles at a barrier until the predecessors end
  (their markers, or the simulator's ``wait_for``), and the idle core-hours are charged.

Timing ``daemon`` submits at the planned instant; ``begin`` submits as soon as the plan is
known with ``--begin`` set to the planned instant, so Slurm holds the timing (a restarted
daemon cannot miss it, and under submit-order priority the job takes its place earlier).
"""

from __future__ import annotations

from asad.core.model import StageState
from asad.strategies.base import Plan, SubmitAt, SubmitNow


class Asa:
    name = "asa"

    def plan(self, wf, stage, now, ctx) -> Plan:  # noqa: ANN001
        preds = wf.spec.predecessors(stage)
        running: list[str] = []
        expected_end = 0.0
        for p in preds:
            ps = wf.stages[p]
            if ps.state is StageState.COMPLETED:
                continue
            job = wf.current_job(p)
            if ps.state is not StageState.RUNNING or job is None or job.start_time is None:
                return None  # a predecessor has not started: its end is unknown
            running.append(p)
            expected_end = max(expected_end, ctx.expected_end(wf, p))
        if not running:
            return SubmitNow()
        est_wait = ctx.estimate_wait(wf, stage)
        at = expected_end - est_wait
        naive = wf.mode == "naive"
        dep = () if naive else tuple(running)
        barrier = tuple(running) if naive else ()
        why = (f"asa ({wf.mode}): at the predecessors' expected end minus the learned wait "
               f"({est_wait:.0f} s)" + (", held at a barrier" if naive else ", with afterok"))
        source = ctx.wait_source(wf, stage) if hasattr(ctx, "wait_source") else ""
        if source:
            why += f"; {source}"
        if at <= now:
            return SubmitNow(dependency_on=dep, barrier_on=barrier, est_wait_s=est_wait, planned_start=expected_end,
                             why=why)
        if ctx.config.asa_timing == "begin":
            return SubmitNow(dependency_on=dep, barrier_on=barrier, begin=at, est_wait_s=est_wait,
                             planned_start=expected_end, why=why)
        return SubmitAt(at=at, est_wait_s=est_wait, planned_start=expected_end, why=why)


def too_early(wf, stage, now, ctx, lead_s: float) -> bool:  # noqa: ANN001
    """Naive mode, paper 4.6: the allocation arrived while the predecessors still have so long
    to run that a fresh submission (planned with a lead of ``lead_s``) would still arrive in
    time; idling is pure waste, so cancel and resubmit."""
    remaining = 0.0
    for p in wf.spec.predecessors(stage):
        if wf.stages[p].state is StageState.COMPLETED:
            continue
        remaining = max(remaining, ctx.predicted_end(wf, p, now) - now)  # a pending one's wait included
    if remaining <= 0:
        return False
    return remaining > lead_s + ctx.config.naive_resubmit_margin_s
