"""The quantile rule's answer to an allocation that comes far ahead of its predecessors' end.

The rule (``asad.strategies.auto``) leads by a quantile of the learned wait of the stage's geometry.
That distribution mixes the queue's calm and congested spells: on the simulator under
``multifactor-limits`` one 28-core geometry saw waits of 30 s to 3 h (docs/results/strategies.md,
"Issue 35, third stop"). Learned in a congested spell, it leads by hundreds of seconds in a calm
one, and the allocation then idles at the barrier (a Montage stage eligible 420 s early was
allocated after 30 s and held 28 cores for 390 s). The allocation itself is the freshest word on
the queue: this geometry waits about as long as this job just did, *now*. So when the
predecessors still have much longer to run than that wait, the allocation is released and the
stage planned again with a lead of at most that wait (:func:`lead_cap`): eligible about one such
wait before the predecessors' end, or ``afterok`` if that is under the rule's minimum lead.

Released when the idle it saves, priced as the rule prices idle (``idle_price`` per idle
core-second, in makespan seconds), exceeds the wait the stage risks taking again:
``idle_price · cpus · (remaining - waited) > waited``, and the spare time exceeds
``RELEASE_MARGIN_S`` (a shorter gap is within the scheduler's own pace). At most
``MAX_RELEASES`` per stage, so a queue that keeps handing out early allocations is not asked
again and again.
"""

from __future__ import annotations

from asad.core.model import JobRecord, StageState

# Below this much spare time (remaining run of the predecessors minus the wait just seen) an early
# allocation is kept: about four of Slurm's scheduling passes.
RELEASE_MARGIN_S = 120.0
# Releases per stage: after these, an early allocation is held (politeness to Slurm).
MAX_RELEASES = 3


def released_waits(wf, stage: str) -> list[float]:  # noqa: ANN001
    """Waits (s) of this stage's earlier jobs whose allocation asad released as too early, oldest
    first."""
    return [j.wait_s for j in wf.jobs
            if j.stage == stage and j.cancelled_by_asad and j.start_time is not None and j.wait_s is not None]


def lead_cap(wf, stage: str) -> float | None:  # noqa: ANN001
    """The largest lead a new plan of ``stage`` may take: the wait of its latest early allocation;
    None if none was released."""
    waits = released_waits(wf, stage)
    return waits[-1] if waits else None


def remaining_run(wf, stage: str, now: float, ctx) -> float:  # noqa: ANN001
    """Seconds until the stage's last unfinished predecessor is expected to end."""
    remaining = 0.0
    for p in wf.spec.predecessors(stage):
        if wf.stages[p].state is StageState.COMPLETED:
            continue
        remaining = max(remaining, ctx.predicted_end(wf, p, now) - now)
    return remaining


def release_early(wf, stage: str, job: JobRecord, now: float, ctx) -> tuple[bool, str]:  # noqa: ANN001
    """(release?, why) for an allocation of ``stage`` that arrived before its predecessors ended."""
    if job.rides or job.wait_s is None:
        return False, ""
    if len(released_waits(wf, stage)) >= MAX_RELEASES:
        return False, ""
    waited = job.wait_s
    spare = remaining_run(wf, stage, now, ctx) - waited
    if spare <= RELEASE_MARGIN_S:
        return False, ""
    price = ctx.idle_price(wf)
    cpus = job.request.cpus
    if price * cpus * spare <= waited:
        return False, ""
    return True, (f"allocation arrived after a wait of {waited:.0f} s, {spare + waited:.0f} s before its "
                  f"predecessors' expected end: released (holding it would idle {cpus} CPUs for ~{spare:.0f} s "
                  f"more than one more such wait) and planned again with a lead of at most {waited:.0f} s")
