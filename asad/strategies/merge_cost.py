"""The cost rule of merged jobs: run a stage in its predecessor's job, sized to the larger of the two,
or give it a job of its own (issue 35; ``share_jobs = "cost"``, ``asad.strategies.share``).

Both sides are priced in the unit of the quantile rule (``asad.strategies.auto``, docs/asa.md §10):
makespan seconds, with ``idle_price`` makespan seconds per idle core-second.

- **Merged**: the job asks for the largest CPUs of its stages for the sum of their run times, so
  a stage with ``c`` CPUs in a job of ``C`` leaves ``(C - c)`` cores idle for its run time ``R``.
  Adding a stage costs ``idle_price x`` the idle core-seconds it adds (its own, and the earlier
  stages' if it raises ``C``). No queue wait, no barrier. But the merged job asks for more (the
  sum of the time limits, the largest CPUs), and a larger job finds fewer backfill holes: where
  the learner has seen waits of both the merged job's geometry and the job's without the stage,
  the difference of their mean waits is added (it delays every stage of the job). Where the two
  share a geometry key (its time buckets are coarse) the learner cannot tell them apart, and
  nothing is added.
- **A job of its own**: what the site's rule would make of it. Under the quantile rule (limits
  enforced) the stage is submitted without a dependency ahead of its predecessor's expected end:
  with ``Y = W_g + R_g - W`` (the group job's wait and run time, minus the stage's own wait) and
  the best instant ``x`` (``P(Y <= x) = 1 - tau``), the expected cost is
  ``idle_price·c·E[(Y - x)+] + E[(x - Y)+]``: the idle at its barrier and the makespan lost to a
  wait that came in longer, both expected. When that lead is under ``MIN_LEAD_S`` the rule submits
  with ``afterok`` instead, and the stage loses its whole wait: ``E[W]``. Under the chain rules
  the stage waits in the queue after its predecessor ends: ``E[W]`` too (the aged chain's age is
  not priced: it hides part of that wait, so this overstates what a job of its own costs there).

A stage rides when its merged cost is the smaller. Everything comes from what was learned: the
stages' recent run times and the geometries' wait quantiles; a stage with either unknown is not
merged (a workflow's first run is a job per stage, as without merging).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from asad.strategies.auto import MIN_LEAD_S, quantile_level
from asad.strategies.expected_start import end_of


@dataclass(frozen=True)
class StageCost:
    """What the rule knows of one stage: its CPUs and its recent run times (s)."""
    cpus: int
    runtimes_s: tuple[float, ...]

    @property
    def runtime_s(self) -> float:
        return float(np.mean(self.runtimes_s))


def idle_core_s(stages: Sequence[StageCost]) -> float:
    """Core-seconds a job sized to the largest of ``stages`` leaves idle while they run in turn."""
    top = max(s.cpus for s in stages)
    return sum((top - s.cpus) * s.runtime_s for s in stages)


def merged_cost_s(group: Sequence[StageCost], rider: StageCost, idle_price: float, extra_wait_s: float = 0.0
                  ) -> float:
    """Makespan seconds that adding ``rider`` to the job of ``group`` costs: the idle it adds, priced,
    plus ``extra_wait_s``, how much longer the larger job is expected to wait than the job without
    it (a longer, or wider, job finds fewer backfill holes; never below 0: a merged job that
    happened to wait less is not counted as a gain)."""
    return idle_price * (idle_core_s([*group, rider]) - idle_core_s(group)) + max(0.0, extra_wait_s)


def own_job_cost_s(rule: str, group_wait_grid: Sequence[float], group: Sequence[StageCost], rider: StageCost,
                   rider_wait_grid: Sequence[float], idle_price: float) -> tuple[float, str]:
    """(expected makespan seconds, how) of giving ``rider`` a job of its own after ``group``'s job,
    under the site's rule (``chain``, ``aged-chain`` or ``quantile``)."""
    waits = np.asarray(rider_wait_grid, dtype=float)
    mean_wait = float(waits.mean())
    if rule != "quantile":
        return mean_wait, f"its own job would wait {mean_wait:.0f} s after the stage before it ends (rule {rule})"
    # the group's work ends at its job's wait plus its stages' run times (the last one's spread kept)
    before = sum(s.runtime_s for s in group[:-1])
    ends = end_of(np.asarray(group_wait_grid, dtype=float) + before, group[-1].runtimes_s)
    y = (ends[:, None] - waits[None, :]).ravel()
    tau = quantile_level(idle_price, rider.cpus)
    x = float(np.quantile(y, 1.0 - tau))
    lead = float(np.median(ends)) - x
    if lead < MIN_LEAD_S:
        return mean_wait, (f"its own job would go with afterok (lead {lead:.0f} s < {MIN_LEAD_S:.0f} s) and "
                           f"wait {mean_wait:.0f} s")
    idle = float(np.mean(np.maximum(y - x, 0.0)))
    late = float(np.mean(np.maximum(x - y, 0.0)))
    cost = idle_price * rider.cpus * idle + late
    return cost, (f"its own job, {lead:.0f} s ahead at a barrier, would idle {idle:.0f} s x {rider.cpus} cores "
                  f"and lose {late:.0f} s, expected")

