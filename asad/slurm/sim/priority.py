"""Job priority as Slurm 22.05's priority/basic and priority/multifactor compute it.

Multifactor (``src/plugins/priority/multifactor/priority_multifactor.c``, ``set_priority_factors``
and ``_get_priority_internal``), the factors this simulator has:

- **age** = min(now - accrue_time, PriorityMaxAge) / PriorityMaxAge, in whole seconds. Without
  accounting limits the accrue time is the job's begin time, set once (``acct_policy.c``,
  ``acct_policy_handle_accrue_time``: "Always set accrue_time to begin time when not enforcing
  limits"). A job submitted with only a dependency has no begin time until the dependency is
  met, so it accrues nothing while held. A job submitted with a dependency *and* a ``--begin`` in
  the future has a begin time at once: its accrue time is that ``--begin``, and it keeps it while
  the dependency holds (``job_independent`` clears a begin time only once it has passed, and
  only ``acct_policy_remove_accrue_time`` would clear the accrue time, which returns at once
  unless ``AccountingStorageEnforce`` includes ``limits``; with limits the dependency resets it).
  ``PriorityFlags=ACCRUE_ALWAYS`` counts from submit.
- **job size** (PriorityFavorSmall=NO, the default): (min_nodes / cluster nodes + CPUs / cluster
  CPUs) / 2, over the *whole cluster's* nodes and CPUs (``node_record_count``, ``cluster_cpus``),
  not a partition's. FavorSmall=YES: ((N - nodes) / N + (C - cpus) / C) / 2.
  ``PriorityFlags=SMALL_RELATIVE_TO_TIME``: max(nodes * C / N, cpus) / time limit in minutes / C
  (1 - that with FavorSmall).
- **fair-share** (``PriorityWeightFairshare`` > 0): the job's user association's Fair Tree factor
  (``fairshare.py``), recomputed at every ``PriorityCalcPeriod``;
- the weighted sum (age + fair-share + job size, in Slurm's order) is truncated to an unsigned integer, at least 1 (0 means held).

Ties in priority go to the lower job id (``sort_job_queue2``). Fair-share, QOS, partition and TRES
factors are not modelled (weight 0): QOS, partition, association, TRES, site, nice.
"""

from __future__ import annotations

import numpy as np

from asad.slurm.sim.config import SimConfig

FLAG_ACCRUE_ALWAYS = "ACCRUE_ALWAYS"
FLAG_SMALL_RELATIVE_TO_TIME = "SMALL_RELATIVE_TO_TIME"
KNOWN_FLAGS = frozenset({FLAG_ACCRUE_ALWAYS, FLAG_SMALL_RELATIVE_TO_TIME})


class Multifactor:
    def __init__(self, config: SimConfig):
        self.w_age = float(config.weight_age)
        self.w_size = float(config.weight_size)
        self.w_fs = float(config.weight_fairshare)
        self.max_age = max(1, int(config.max_age_s))
        self.favor_small = bool(config.priority_favor_small)
        self.flags = frozenset(config.priority_flags)
        self.accrue_always = FLAG_ACCRUE_ALWAYS in self.flags
        self.relative_to_time = FLAG_SMALL_RELATIVE_TO_TIME in self.flags
        self.nodes = sum(p.nodes for p in config.partitions)
        self.cpus = sum(p.total_cpus for p in config.partitions)

    def accrue_time(self, submit: float, eligible: float, begin_accrue: float | None = None) -> float:
        """When age starts: submit (ACCRUE_ALWAYS), a dependent job's future ``--begin`` kept
        through its dependency (``begin_accrue``, set only without accounting limits), else the
        eligible time."""
        if self.accrue_always:
            return submit
        return eligible if begin_accrue is None else min(begin_accrue, eligible)

    def size_factor(self, nodes, cpus, limit_s):  # noqa: ANN001 -- floats or numpy arrays
        n, c = float(self.nodes), float(self.cpus)
        if self.relative_to_time:
            js = np.maximum(nodes * c / n, cpus) / np.maximum(1, limit_s // 60) / c
            if self.favor_small:
                js = 1.0 - js
        elif self.favor_small:
            js = ((n - nodes) / n + (c - cpus) / c) / 2
        else:
            js = (nodes / n + cpus / c) / 2
        return np.clip(js, 0.0, 1.0)

    def age_factor(self, now: float, accrue):  # noqa: ANN001
        diff = np.maximum(0, np.floor(now) - np.floor(accrue))
        return np.minimum(diff, self.max_age) / self.max_age

    def of_arrays(self, now: float, accrue: np.ndarray, nodes: np.ndarray, cpus: np.ndarray,
                  limit_s: np.ndarray, fs: np.ndarray | None = None) -> np.ndarray:
        """Integer priorities; ``fs`` = each job's fair-share factor (None: no fair-share)."""
        prio = self.w_age * self.age_factor(now, accrue)
        if fs is not None and self.w_fs:
            prio = prio + self.w_fs * fs
        prio = prio + self.w_size * self.size_factor(nodes.astype(float), cpus.astype(float), limit_s)
        return np.maximum(1, np.floor(prio)).astype(np.int64)

    def of_job(self, now: float, accrue: float, nodes: int, cpus: int, limit_s: int,
               fs: float | None = None) -> int:
        return int(self.of_arrays(now, np.array([accrue], dtype=float), np.array([nodes]),
                                  np.array([cpus]), np.array([limit_s]),
                                  None if fs is None else np.array([fs]))[0])
