"""slurmctld's two schedulers: the main pass in priority order and the backfill pass.

Faithful to Slurm where it matters for queue waits, and fast because of the same limits Slurm
imposes on itself:

- **Main pass** (``schedule()``): jobs in priority order; the first job that cannot start in a
  partition blocks that partition for every lower-priority job of this pass. An event-triggered
  pass tests at most ``default_queue_depth`` jobs; a full pass runs every ``sched_interval``.
- **Backfill** (every ``bf_interval``, at most ``bf_max_job_test`` jobs deep): ``slurm`` plans a
  start for every job it tests and starts a lower job only where it delays none of those plans
  (see ``backfill.py``); ``easy`` reserves for the first K blocked jobs of each partition only.
- **Priority**: ``fifo`` orders by job id (submission order, like ``priority/basic``: a job held
  by a dependency keeps its place). ``multifactor`` is Slurm's integer age + job-size priority
  (see ``priority.py``), plus Fair Tree fair-share when weighted (``fairshare.py``), recomputed
  every ``PriorityCalcPeriod``.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator

import numpy as np

from asad.slurm.sim import backfill as slurm_backfill
from asad.slurm.sim.cluster import PartitionState, Reservation
from asad.slurm.sim.config import SimConfig
from asad.slurm.sim.fairshare import FairTree
from asad.slurm.sim.jobs import SimJob
from asad.slurm.sim.priority import Multifactor

StartFn = Callable[[SimJob, PartitionState, list[int]], None]


class JobQueue:
    """Eligible pending jobs of one partition in priority order (lazy deletion).

    Next to the job list it keeps the jobs' shapes in numpy arrays, so that a backfill pass can
    rule out, in one vectorised step, every job that cannot fit anywhere in the partition now.
    """

    # a_limit_f: the time limit as the backfill pass kernel reads it (a float, as SimJob holds it;
    # a_limit is the integer the priority and EASY code read); a_res_min: the job's earliest
    # planned start when queued (inf: none), lowered only by pass_inputs.record_plans
    _FIELDS = ("a_nodes", "a_cpn", "a_cpus", "a_mem", "a_limit", "a_limit_f", "a_elig", "a_id", "a_live",
               "a_assoc", "a_res_min")

    def __init__(self) -> None:
        self.keys: list[object] = []
        self.jobs: list[SimJob] = []
        self.dead = 0
        self.frozen = False  # positions must stay valid during a pass: no compaction then
        self.head = 0  # no live job before this position
        self._alloc(256)

    def _alloc(self, cap: int) -> None:
        self.a_nodes = np.zeros(cap, dtype=np.int64)
        self.a_cpn = np.zeros(cap, dtype=np.int64)
        self.a_cpus = np.zeros(cap, dtype=np.int64)
        self.a_mem = np.zeros(cap, dtype=np.int64)
        self.a_limit = np.zeros(cap, dtype=np.int64)
        self.a_limit_f = np.zeros(cap, dtype=np.float64)
        self.a_res_min = np.zeros(cap, dtype=np.float64)
        self.a_elig = np.zeros(cap, dtype=float)
        self.a_id = np.zeros(cap, dtype=np.int64)
        self.a_live = np.zeros(cap, dtype=bool)
        self.a_assoc = np.zeros(cap, dtype=np.int64)

    def __setstate__(self, state: dict) -> None:
        """A queue pickled before ``a_limit_f`` and ``a_res_min`` were kept gets them from its
        jobs (so a snapshot of the older code plays on in this one, for timing both from the same
        state)."""
        self.__dict__.update(state)
        if "a_limit_f" not in state or "a_res_min" not in state:
            self.a_limit_f = np.zeros(len(self.a_live), dtype=np.float64)
            self.a_res_min = np.zeros(len(self.a_live), dtype=np.float64)
            for i, job in enumerate(self.jobs):
                self.a_limit_f[i] = job.time_limit_s
                self.a_res_min[i] = np.inf if job.res_time_min is None else job.res_time_min

    def _grow(self) -> None:
        cap = len(self.a_live) * 2
        for name in self._FIELDS:
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def _write(self, i: int, job: SimJob) -> None:
        self.a_nodes[i] = job.nodes
        self.a_cpn[i] = job.cpus_per_node
        self.a_cpus[i] = job.cpus
        self.a_mem[i] = job.mem_per_node_mb
        self.a_limit[i] = job.time_limit_s
        self.a_limit_f[i] = job.time_limit_s
        self.a_res_min[i] = np.inf if job.res_time_min is None else job.res_time_min
        self.a_elig[i] = job.accrue_time
        self.a_id[i] = job.job_id
        self.a_live[i] = True
        self.a_assoc[i] = job.assoc

    def add(self, job: SimJob) -> None:
        key = job.sort_key
        n = len(self.jobs)
        if n == len(self.a_live):
            self._grow()
        if not self.keys or key > self.keys[-1]:  # type: ignore[operator]
            self.keys.append(key)
            self.jobs.append(job)
            self._write(n, job)
            return
        i = bisect_right(self.keys, key)  # type: ignore[arg-type]
        self.keys.insert(i, key)
        self.jobs.insert(i, job)
        if i <= self.head:
            self.head = i
        for name in self._FIELDS:
            arr = getattr(self, name)
            arr[i + 1 : n + 1] = arr[i:n]
        self._write(i, job)

    def remove(self, job: SimJob) -> None:
        i = bisect_left(self.keys, job.sort_key)  # type: ignore[arg-type]
        if i < len(self.jobs) and self.jobs[i] is job:
            self.a_live[i] = False
        self.dead += 1
        if not self.frozen:
            self.maybe_compact()

    def maybe_compact(self) -> None:
        if self.dead > 256 and self.dead * 2 > len(self.jobs):
            self.compact()

    def compact(self) -> None:
        self._rebuild([j for j in self.jobs if j.queued])

    def reprioritise(self, priority_of: Callable[..., np.ndarray]) -> None:
        """Recompute every live job's priority at once and re-sort (multifactor's periodic
        recalculation), permuting the shape arrays instead of rebuilding them job by job."""
        n = len(self.jobs)
        live = np.flatnonzero(self.a_live[:n])
        ids = self.a_id[live]
        prio = priority_of(self.a_elig[live], self.a_nodes[live], self.a_cpus[live], self.a_limit[live],
                           self.a_assoc[live])
        order = np.lexsort((ids, -prio))
        sel = live[order]
        old_jobs = self.jobs
        self.jobs = [old_jobs[i] for i in sel.tolist()]
        self.keys = list(zip((-prio[order]).tolist(), ids[order].tolist()))
        for job, key in zip(self.jobs, self.keys):
            job.sort_key = key
        cap = max(256, 2 * len(sel))
        for name in self._FIELDS:
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[: len(sel)] = old[sel]
            setattr(self, name, new)
        self.dead = 0
        self.head = 0

    def first_live(self) -> int:
        """Position of the highest-priority live job (started jobs pile up at the head)."""
        jobs, head = self.jobs, self.head
        while head < len(jobs) and not jobs[head].queued:
            head += 1
        self.head = head
        return head

    def _rebuild(self, live: list[SimJob]) -> None:
        self.head = 0
        self.jobs = live
        self.keys = [j.sort_key for j in live]
        self.dead = 0
        self._alloc(max(256, 2 * len(live)))
        for i, job in enumerate(live):
            self._write(i, job)

    def __len__(self) -> int:
        return len(self.jobs) - self.dead


class Scheduler:
    def __init__(self, config: SimConfig, parts: list[PartitionState], start_fn: StartFn):
        self.config = config
        self.parts = parts
        self.queues = [JobQueue() for _ in parts]
        self.start_fn = start_fn
        self.blockers: dict[int, int] = {}  # partition index -> job id that blocked it
        self.pass_id = 0
        self.main_passes = 0
        self.backfill_passes = 0
        self.backfill_starts = 0
        self.eligible_count = 0
        self.fast_path = True  # tests switch it off to check the fast path changes nothing
        self.multifactor = Multifactor(config)
        # Fair-share associations and usage (None unless multifactor with a fair-share weight).
        self.fairtree = (FairTree(config.decay_half_life_s, config.fairshare_shares, config.start_time,
                                  charge_at_end=config.accounting_enforce_limits)
                         if config.fairshare else None)

    # ---- queue membership ------------------------------------------------------------------
    def priority(self, job: SimJob, now: float) -> int:
        fs = None if self.fairtree is None else float(self.fairtree.factor[job.assoc])
        return self.multifactor.of_job(now, job.accrue_time, job.nodes, job.cpus, job.time_limit_s, fs)

    def held_priority(self, job: SimJob, now: float) -> int:
        """The priority a job that waited for a dependency or a ``--begin`` holds as it becomes
        eligible: Slurm sets ``job_ptr->priority`` at submission (``set_job_prio``) and changes it
        only when the decay thread recomputes every pending job's, held ones included
        (``decay_apply_weighted_factors``, every PriorityCalcPeriod); ``job_independent()`` leaves
        it alone. So it is the priority of the last recalculation since the submission (or of the
        submission), with the age a held job had then: none, unless a ``--begin`` kept its accrue
        time (priority.py) or ACCRUE_ALWAYS counts from submit."""
        cfg = self.config
        period = cfg.priority_calc_period_s
        origin = cfg.timer_origin_s if cfg.prio_origin_s is None else cfg.prio_origin_s
        last_recalc = origin + math.floor((now - origin) / period + 1e-9) * period
        at = max(job.submit_time, last_recalc)
        accrue = self.multifactor.accrue_time(job.submit_time, at, job.begin_accrue)
        fs = None if self.fairtree is None else float(self.fairtree.factor[job.assoc])
        return self.multifactor.of_job(at, accrue, job.nodes, job.cpus, job.time_limit_s, fs)

    def enqueue(self, job: SimJob, now: float) -> None:
        job.accrue_time = self.multifactor.accrue_time(job.submit_time, job.eligible_time, job.begin_accrue)
        if self.config.priority == "multifactor":
            if job.submit_time < now and self.config.held_priority:
                prio = self.held_priority(job, now)
            else:
                prio = self.priority(job, now)
            job.sort_key = (-prio, job.job_id)
        job.queued = True
        self.eligible_count += 1
        for part in job.parts:
            self.queues[part.index].add(job)

    def dequeue(self, job: SimJob) -> None:
        if not job.queued:
            return
        job.queued = False
        self.eligible_count -= 1
        for part in job.parts:
            self.queues[part.index].remove(job)

    def recalc_priorities(self, now: float) -> None:
        mf = self.multifactor

        factor = None if self.fairtree is None else self.fairtree.factor

        def priority_of(accrue: np.ndarray, nodes: np.ndarray, cpus: np.ndarray,
                        limit: np.ndarray, assoc: np.ndarray) -> np.ndarray:
            return mf.of_arrays(now, accrue, nodes, cpus, limit, None if factor is None else factor[assoc])

        for queue in self.queues:
            queue.reprioritise(priority_of)

    def _in_order(self) -> Iterator[SimJob]:
        """Every eligible job once, in priority order across partitions.

        Safe while jobs start: starting only clears ``queued`` (lazy deletion) and compaction
        swaps in new lists, so the iterated lists never change under the iterator."""
        live = [q for q in self.queues if len(q)]
        if len(live) == 1:
            jobs = live[0].jobs
            for i in range(live[0].first_live(), len(jobs)):
                if jobs[i].queued:
                    yield jobs[i]
            return
        self.pass_id += 1
        pid = self.pass_id
        merged = heapq.merge(*[zip(q.keys, q.jobs) for q in live])
        for _, job in merged:
            if job.queued and job.seen_pass != pid:
                job.seen_pass = pid
                yield job

    # ---- main pass ----------------------------------------------------------------------------
    def main_pass(self, depth: int | None) -> int:
        """Start jobs in priority order until every partition is blocked; returns jobs started."""
        for queue in self.queues:
            queue.frozen = True
        try:
            return self._main_pass(depth)
        finally:
            for queue in self.queues:
                queue.frozen = False
                queue.maybe_compact()

    def _main_pass(self, depth: int | None) -> int:
        self.main_passes += 1
        if not self.eligible_count:
            self.blockers = {}
            return 0
        if len(self.parts) == 1:
            return self._main_pass_one_partition(depth)
        blocked: set[int] = set()
        blockers: dict[int, int] = {}
        nparts = len(self.parts)
        tested = started = 0
        for job in self._in_order():
            if not job.queued:
                continue
            parts = [p for p in job.parts if p.index not in blocked]
            if not parts:
                continue
            tested += 1
            if depth is not None and tested > depth:
                break
            for part in parts:
                nodes = part.find_nodes(job.nodes, job.cpus_per_node, job.mem_per_node_mb)
                if nodes is not None:
                    self.start_fn(job, part, nodes)
                    started += 1
                    break
            else:
                for part in parts:
                    blocked.add(part.index)
                    blockers[part.index] = job.job_id
                if len(blocked) == nparts:
                    break
        self.blockers = blockers
        return started

    def _main_pass_one_partition(self, depth: int | None) -> int:
        part = self.parts[0]
        queue = self.queues[0]
        jobs = queue.jobs
        tested = started = 0
        self.blockers = {}
        for i in range(queue.first_live(), len(jobs)):
            job = jobs[i]
            if not job.queued:
                continue
            tested += 1
            if depth is not None and tested > depth:
                break
            nodes = part.find_nodes(job.nodes, job.cpus_per_node, job.mem_per_node_mb)
            if nodes is None:
                self.blockers = {part.index: job.job_id}
                break
            self.start_fn(job, part, nodes)
            started += 1
        return started

    # ---- backfill -----------------------------------------------------------------------------
    def backfill_pass(self, now: float) -> int:
        for queue in self.queues:
            queue.frozen = True
        try:
            return self._backfill_pass(now)
        finally:
            for queue in self.queues:
                queue.frozen = False
                queue.maybe_compact()

    def _backfill_pass(self, now: float) -> int:
        """One backfill pass. Written flat on purpose: it is the simulator's inner loop."""
        cfg = self.config
        self.backfill_passes += 1
        parts = self.parts
        for part in parts:
            part.reservations = []
        if not self.eligible_count:
            return 0
        if cfg.backfill == "slurm":
            started = slurm_backfill.backfill_pass(self, now)
            self.backfill_starts += started
            return started
        if len(parts) == 1 and self.fast_path:
            started = self._backfill_one_partition(now)
            self.backfill_starts += started
            return started
        k_max = cfg.bf_reservations
        res_count = [0] * len(parts)
        res_starts: list[list[float]] = [[] for _ in parts]  # reservation starts, ascending
        # Failed shapes (nodes, cores, mem, reservations overlapped): a job needing at least as
        # much of everything fails too, since starts within a pass only take resources away.
        failed: list[list[tuple]] = [[] for _ in parts]
        max_free = [p.max_free_cores() for p in parts]
        max_test = cfg.bf_max_job_test
        tested = started = 0
        if len(parts) == 1:
            order: Iterator[SimJob] = iter(self.queues[0].jobs)
        else:
            order = self._in_order()
        for job in order:
            if not job.queued:
                continue
            tested += 1
            if tested > max_test:
                break
            cpn = job.cpus_per_node
            for part in job.parts:
                pi = part.index
                if cpn > max_free[pi] or part.free_cores_total < job.cpus:
                    continue
                starts = res_starts[pi]
                end = now + job.time_limit_s
                hits = bisect_left(starts, end) if starts else 0  # reservations it would overlap
                nn, mem = job.nodes, job.mem_per_node_mb
                for fn, fc, fm, fh in failed[pi]:
                    if nn >= fn and cpn >= fc and mem >= fm and hits >= fh:
                        break
                else:
                    fn = -1
                if fn != -1:
                    continue
                shape = (nn, cpn, mem, hits)
                if self._try_start(job, part, hits, shape, failed[pi]):
                    started += 1
                    max_free[pi] = part.max_free_cores()
                    break
            else:
                for part in job.parts:
                    if res_count[part.index] < k_max:
                        self._reserve(job, now, res_count, res_starts)
                        break
        self.backfill_starts += started
        return started

    def _backfill_one_partition(self, now: float) -> int:
        """The same pass for the common one-partition cluster, minus the jobs that cannot fit.

        A vectorised bound rules out every job that no node (or too few nodes) could hold right
        now, counting on reserved nodes only their slack for jobs that would overlap the
        reservation. Starts within the pass only take resources away, so ruled-out jobs would
        fail anyway. Only the survivors, plus the ruled-out jobs that may still need one of the
        K reservations, are visited in priority order: the outcome is exactly the full loop's.
        The bound is recomputed after each new reservation (recomputing it after each start
        too was measured slower: 100 s against 91 s wall for 10 days of hpc2n at 0.9).
        """
        part = self.parts[0]
        queue = self.queues[0]
        k_max = self.config.bf_reservations
        head = queue.first_live()
        live = head + np.flatnonzero(queue.a_live[head: len(queue.jobs)])[: self.config.bf_max_job_test]
        if not len(live):
            return 0
        res_count = [0]
        res_starts: list[list[float]] = [[]]
        failed: list[tuple] = []
        max_free = part.max_free_cores()
        started = 0
        jobs = queue.jobs
        # The head is usually the job the main pass just found blocked: test it exactly first,
        # so that the bound is computed once per pass, with its reservation already in place.
        head_job = jobs[int(live[0])]
        cpn_h = head_job.cpus_per_node
        if (cpn_h <= max_free and head_job.cpus <= part.free_cores_total
                and self._try_start(head_job, part, 0,
                                    (head_job.nodes, cpn_h, head_job.mem_per_node_mb, 0), failed)):
            started += 1
            max_free = part.max_free_cores()
        elif k_max > 0:
            self._reserve(head_job, now, res_count, res_starts)
        pos = 1
        while pos < len(live):
            rest = live[pos:]
            cand = self._fits_bound(part, queue, rest, now)
            ruled_out = ~cand
            slots_left = k_max - res_count[0]
            visit = np.flatnonzero(cand | (ruled_out & (np.cumsum(ruled_out) <= slots_left)))
            next_pos = len(live)
            for rel in visit.tolist():
                i = int(rest[rel])
                job = jobs[i]
                if not job.queued:
                    continue
                cpn_j = job.cpus_per_node
                if cand[rel] and cpn_j <= max_free and job.cpus <= part.free_cores_total:
                    starts = res_starts[0]
                    hits = bisect_left(starts, now + job.time_limit_s) if starts else 0
                    nn, mem = job.nodes, job.mem_per_node_mb
                    for fn, fc, fm, fh in failed:
                        if nn >= fn and cpn_j >= fc and mem >= fm and hits >= fh:
                            break
                    else:
                        if self._try_start(job, part, hits, (nn, cpn_j, mem, hits), failed):
                            started += 1
                            max_free = part.max_free_cores()
                            continue
                if res_count[0] < k_max and self._reserve(job, now, res_count, res_starts):
                    next_pos = pos + rel + 1  # new reservation: tighten the bound from here on
                    break
            pos = next_pos
        return started

    @staticmethod
    def _fits_bound(part: PartitionState, queue: JobQueue, idx: np.ndarray, now: float) -> np.ndarray:
        """Necessary condition for each queued job (positions ``idx``) to start now."""
        cpn, nodes, mem = queue.a_cpn[idx], queue.a_nodes[idx], queue.a_mem[idx]
        cnt_ge, maxmem_ge = part.capacity_profile()
        cand = (queue.a_cpus[idx] <= part.free_cores_total) & (cnt_ge[cpn] >= nodes) & (maxmem_ge[cpn] >= mem)
        if part.reservations:
            starts = np.array([r.start for r in part.reservations])
            hits = np.searchsorted(starts, now + queue.a_limit[idx], side="left")
            for h in range(1, len(part.reservations) + 1):
                sel = hits == h
                if not sel.any():
                    continue
                cnt_h, maxmem_h = part.capacity_profile(part.reservations[:h])
                cand[sel] &= (cnt_h[cpn[sel]] >= nodes[sel]) & (maxmem_h[cpn[sel]] >= mem[sel])
        return cand

    def _try_start(self, job: SimJob, part: PartitionState, hits: int, shape: tuple,
                   failed: list[tuple]) -> bool:
        cores, mem = job.cpus_per_node, job.mem_per_node_mb
        allow = None
        overlapping = part.reservations[:hits]  # reservations are kept in start order
        if overlapping:
            def within_slack(node: int) -> bool:
                for r in overlapping:
                    if node in r.slack_c and (r.slack_c[node] < cores or r.slack_m[node] < mem):
                        return False
                return True
            allow = within_slack
        nodes = part.find_nodes(job.nodes, cores, mem, allow)
        if nodes is None:
            failed.append(shape)
            return False
        for r in overlapping:
            for node in nodes:
                if node in r.slack_c:
                    r.slack_c[node] -= cores
                    r.slack_m[node] -= mem
        self.start_fn(job, part, nodes)
        return True

    def _reserve(self, job: SimJob, now: float, res_count: list[int],
                 res_starts: list[list[float]]) -> bool:
        best: tuple[Reservation, PartitionState] | None = None
        for part in job.parts:
            if res_count[part.index] >= self.config.bf_reservations:
                continue
            res = part.earliest_start(job.nodes, job.cpus_per_node, job.mem_per_node_mb,
                                      job.time_limit_s, now, part.reservations)
            if res is not None and (best is None or res.start < best[0].start):
                best = (res, part)
        if best is None:
            return False
        res, part = best
        res.job_id = job.job_id
        i = bisect_right(res_starts[part.index], res.start)
        res_starts[part.index].insert(i, res.start)
        part.reservations.insert(i, res)
        res_count[part.index] += 1
        if job.res_time_min is None or res.start < job.res_time_min:
            job.res_time_min = res.start
        return True
