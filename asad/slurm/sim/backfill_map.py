"""The backfill map of one partition during one pass of sched/backfill: the plans made so far
as whole-node intervals, and per job shape when each node fits it (running jobs to their limits),
cached for the pass. ``backfill.backfill_pass`` fills it; ``planner`` searches it."""

from __future__ import annotations

import numpy as np

from asad.slurm.sim.cluster import PartitionState

INF = float("inf")


class BackfillMap:
    """The backfill map of one partition during one pass: reservations as whole-node intervals."""

    __slots__ = ("part", "n_iv", "_iv_node", "_iv_b", "_iv_e", "min_b", "times", "max_free", "failed",
                 "failed_free", "_sorted", "_order", "_merged", "no_plan", "_ends", "_frees", "_jobs", "_ends_l",
                 "_mem")

    def __init__(self, part: PartitionState):
        self.part = part
        # the plans' node intervals: [0, n_iv) of growing arrays (node, begin, end)
        self.n_iv = 0
        self._iv_node = np.empty(64, dtype=np.int64)
        self._iv_b = np.empty(64)
        self._iv_e = np.empty(64)
        self.min_b: dict[int, float] = {}  # node -> earliest reservation begin on it
        self.times: dict[tuple[int, int], np.ndarray] = {}  # shape -> per-node time it fits
        self._sorted: dict[tuple[int, int], np.ndarray] = {}  # shape -> those times, sorted
        self._order: dict[tuple[int, int], np.ndarray] = {}  # shape -> nodes by those times
        self._merged: tuple[np.ndarray, ...] | None = None
        self._ends: tuple[np.ndarray, ...] | None = None  # running pieces by end: running_ends()
        self._jobs: tuple[np.ndarray, np.ndarray] | None = None  # running_jobs()
        self._ends_l: list[float] | None = None
        self._mem: np.ndarray | None = None  # running_mem()
        self._frees: tuple[np.ndarray, ...] | None = None  # see free_instants()
        self.max_free = part.max_free_cores()
        self.failed: list[tuple[int, int, int, float]] = []  # (shape, end) that could not start now
        self.failed_free: list[tuple[int, int, int]] = []  # shapes that do not fit even unplanned
        # (nodes, cores, mem, limit) that got no plan (never fit, or beyond bf_window): a job
        # needing at least as much of each gets none either, since within a pass plans and
        # starts only make nodes usable later
        self.no_plan: list[tuple[int, int, int, int]] = []

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self.n_iv
        return self._iv_node[:n], self._iv_b[:n], self._iv_e[:n]

    def merge_base(self) -> tuple[np.ndarray, ...]:
        """The plans' node intervals sorted by node, then begin, with what merging them for any
        job length needs: each interval's running max end within its node (``run_hi``) and the
        gap from the previous interval's running end (inf at a new node). For a job of length L
        the blocked spans are [b - L, e); two consecutive ones of a node merge iff gap <= L."""
        if self._merged is None:
            node, b, e = self.arrays()
            order = np.lexsort((b, node))
            node, b, e = node[order], b[order], e[order]
            big = 1e12  # times are < 1e11: node * big keeps the running max inside each node
            run_hi = np.maximum.accumulate(node * big + e) - node * big
            gap = np.full(len(node), np.inf)
            same = node[1:] == node[:-1]
            gap[1:][same] = b[1:][same] - run_hi[:-1][same]
            self._merged = (node, b, run_hi, gap)
        return self._merged

    def running_ends(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every running job's pieces (one per node) as (end, node, cores, job), sorted by end
        and job (a job's pieces are next to each other)."""
        if self._ends is None:
            part = self.part
            hi = part.p_hi
            act = part.p_active[:hi]
            ends, nodes, cores = part.p_end[:hi][act], part.p_node[:hi][act], part.p_c[:hi][act]
            jobs = part.p_job[:hi][act]
            order = np.lexsort((jobs, ends))
            self._ends = (ends[order], nodes[order], cores[order], jobs[order])
            self._mem = part.p_m[:hi][act][order]
        return self._ends

    def running_mem(self) -> np.ndarray:
        """The memory of each of running_ends()'s pieces, in its order."""
        self.running_ends()
        return self._mem

    def free_after(self, gone: int) -> tuple[np.ndarray, np.ndarray]:
        """Free cores and memory per node once running_ends()'s first ``gone`` pieces have gone
        (the will-run test's state after the running jobs it took away)."""
        _, nodes, cores, _ = self.running_ends()
        n = self.part.n
        return (self.part.np_free_c + np.bincount(nodes[:gone], weights=cores[:gone], minlength=n).astype(np.int64),
                self.part.np_free_m + np.bincount(nodes[:gone], weights=self._mem[:gone], minlength=n).astype(np.int64))

    def running_jobs(self) -> tuple[np.ndarray, np.ndarray]:
        """Per running job, in end order: the index of its first piece in running_ends(), and
        its end."""
        if self._jobs is None:
            p_end, _, _, p_job = self.running_ends()
            first = np.flatnonzero(np.concatenate([[len(p_end) > 0], (p_job[1:] != p_job[:-1]) | (p_end[1:] != p_end[:-1])]))
            self._jobs = (first, p_end[first])
        return self._jobs

    def running_ends_list(self) -> list[float]:
        """running_jobs()'s ends as a Python list (for bisect in scalar loops)."""
        if self._ends_l is None:
            self._ends_l = self.running_jobs()[1].tolist()
        return self._ends_l

    def free_instants(self) -> tuple[np.ndarray, ...]:
        """The plans as merged spans per node, (node, begin, end), and every instant at which a
        plan begins or ends (node_space's segment boundaries), sorted."""
        if self._frees is None:
            node, b, run_hi, gap = self.merge_base()
            new = gap > 0  # a span that starts when the previous one ended joins it
            first = np.flatnonzero(new)
            last = np.empty(len(first), dtype=np.int64)
            last[:-1] = first[1:] - 1
            if len(first):
                last[-1] = len(node) - 1
            bounds = np.unique(np.concatenate([self.arrays()[1], self.arrays()[2]]))
            self._frees = (node[first], b[first], run_hi[last], bounds)
        return self._frees

    def time_order(self, cores: int, mem: int, now: float) -> np.ndarray:
        """The nodes in order of node_times (for the compiled planner's k-th fit time)."""
        key = (cores, mem)
        order = self._order.get(key)
        if order is None:
            order = np.argsort(self.node_times(cores, mem, now))  # ties: any order gives the same k-th time
            self._order[key] = order
        return order

    def sorted_times(self, cores: int, mem: int, now: float) -> np.ndarray:
        key = (cores, mem)
        st = self._sorted.get(key)
        if st is None:
            st = self.node_times(cores, mem, now)[self.time_order(cores, mem, now)]  # one sort for both
            self._sorted[key] = st
        return st

    def node_times(self, cores: int, mem: int, now: float) -> np.ndarray:
        key = (cores, mem)
        t = self.times.get(key)
        if t is None:
            t = self.part.fit_times(cores, mem, now)
            self.times[key] = t
        return t

    def started(self, nodes: list[int], now: float) -> None:
        """A job started on ``nodes``: their fit times change, everything else stays."""
        part = self.part
        for (cores, mem), t in self.times.items():
            for node in nodes:
                t[node] = part._node_time(node, cores, mem, now)
        self._sorted.clear()
        self._order.clear()
        self._ends = self._jobs = self._ends_l = self._mem = None
        self.max_free = part.max_free_cores()

    def reserve(self, nodes: list[int], begin: float, end: float) -> None:
        n, k = self.n_iv, len(nodes)
        if n + k > len(self._iv_node):
            grow = max(2 * len(self._iv_node), n + k)
            self._iv_node = np.resize(self._iv_node, grow)
            self._iv_b = np.resize(self._iv_b, grow)
            self._iv_e = np.resize(self._iv_e, grow)
        self._iv_node[n: n + k] = nodes
        self._iv_b[n: n + k] = begin
        self._iv_e[n: n + k] = end
        self.n_iv = n + k
        for node in nodes:
            if begin < self.min_b.get(node, INF):
                self.min_b[node] = begin
        self._merged = None
        self._frees = None
