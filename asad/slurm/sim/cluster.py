"""Nodes of one partition, allocated by cores and memory per node (select/cons_tres,
CR_Core_Memory), and the availability profile the backfill planner reserves on.

Free cores are indexed in buckets (nodes grouped by their number of free cores) so that finding
nodes for a job never scans the whole partition: best fit walks the buckets from the job's core
count upwards. Running allocations are also kept in flat numpy arrays ("pieces": one per job and
node, with the time the job will end at the latest) so that the earliest start of a blocked job
is computed with a few vectorised operations instead of a Python sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from asad.slurm.sim import plan_kernel
from asad.slurm.sim.config import PartitionSpec

_NONE_HELD = np.empty(0, dtype=np.int64)  # find_nodes without blocked nodes, for the compiled pick


@dataclass
class Reservation:
    """A backfill reservation: the nodes a blocked job will get at ``start`` at the latest.

    ``slack_*`` is what each reserved node has left at ``start`` beyond the reserved job's needs;
    a job that would still run at ``start`` may use a reserved node only within that slack.
    """

    job_id: int
    start: float
    end: float
    nodes: list[int]
    cores: int
    mem_mb: int
    slack_c: dict[int, int]
    slack_m: dict[int, int]


def consec_pick(idx: np.ndarray, free: np.ndarray, nodes: int, cores: int) -> list[int]:
    """cons_tres's ``_eval_nodes`` without topology or weights, on the usable nodes ``idx``
    (sorted) with ``free`` cores each: they form runs of consecutive nodes; take the tightest run
    (fewest free cores) that holds the rest of the job, the first on ties (else the biggest run,
    and go on), from its first node, except that the last node is the one with the fewest free
    cores in the run (a single-node best fit). Compiled as ``plan_kernel.consec_pick``."""
    if len(idx) == 1:
        return [int(idx[0])]
    if plan_kernel.enabled():
        return plan_kernel.consec_pick(idx, free, nodes, cores).tolist()
    cut = np.flatnonzero(np.diff(idx) != 1) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [len(idx)]])
    run_cpus = np.add.reduceat(free, starts)
    run_n = ends - starts
    alive = np.ones(len(starts), dtype=bool)
    chosen: list[int] = []
    rem = nodes
    while rem > 0:
        suff = alive & (run_cpus >= rem * cores) & (run_n >= rem)
        if suff.any():
            r = int(np.argmin(np.where(suff, run_cpus, np.iinfo(np.int64).max)))
        else:
            r = int(np.argmax(np.where(alive, run_cpus, -1)))
        alive[r] = False
        a, b = int(starts[r]), int(ends[r])
        if rem == 1:
            chosen.append(int(idx[a + int(np.argmin(free[a:b]))]))  # all hold the job: tightest
            return chosen
        take = min(rem, b - a)
        chosen.extend(int(x) for x in idx[a: a + take])
        rem -= take
    return chosen


class PartitionState:
    def __init__(self, spec: PartitionSpec, index: int):
        self.spec = spec
        self.name = spec.name
        self.index = index
        self.n = spec.nodes
        self.cores = spec.cores_per_node
        self.mem = spec.mem_per_node_mb
        self.speed = spec.speed
        self.select = "bestfit"  # or "consec" (select/cons_tres); set by the simulator
        # node -> jobs whose epilog still runs there: its cores are free, the node is not
        # (slurmctld's cg_node_bitmap)
        self.completing: dict[int, int] = {}
        self.free_c = [self.cores] * self.n
        self.free_m = [self.mem] * self.n
        # numpy mirrors of free_c/free_m for the vectorised planner (lists are faster per node)
        self.np_free_c = np.full(self.n, self.cores, dtype=np.int64)
        self.np_free_m = np.full(self.n, self.mem, dtype=np.int64)
        self.buckets: list[set[int]] = [set() for _ in range(self.cores + 1)]
        self.buckets[self.cores] = set(range(self.n))
        self.free_cores_total = self.n * self.cores
        # nodes whose free resources or running pieces changed since the compiled backfill pass
        # last read this (FitCache.note_marked), set at each allocation and release
        self.fit_changed = np.ones(self.n, dtype=np.bool_)
        # shapes (nodes, cores, memory, completing_ok) find_nodes found too few nodes for since
        # resources were last given back (release, end_completing)
        self.no_fit: set[tuple[int, int, int, bool]] = set()
        self.busy_core_s = 0.0  # integrated over finished and running jobs, for utilisation
        cap = max(64, self.n * 4)
        self.p_end = np.zeros(cap)
        self.p_node = np.zeros(cap, dtype=np.int64)
        self.p_c = np.zeros(cap, dtype=np.int64)
        self.p_m = np.zeros(cap, dtype=np.int64)
        self.p_job = np.zeros(cap, dtype=np.int64)  # which job a piece belongs to
        self.p_active = np.zeros(cap, dtype=bool)
        self.p_hi = 0  # slots [0, p_hi) have been used at least once
        self.p_free: list[int] = []
        self.reservations = []  # the property below
        # Per-node view of the pieces, for updating the first reservation's profile node by node.
        self.node_slots: list[list[int]] = [[] for _ in range(self.n)]
        self.piece_info: dict[int, tuple[float, int, int]] = {}
        self._prof_shape: tuple[int, int] | None = None
        self._prof_times: np.ndarray | None = None
        self._dirty: set[int] = set()
        # fit_times() cache across backfill passes: per shape, the times and how far into the
        # change log they are up to date
        self._change_log: list[int] = []
        self._fit_cache: dict[tuple[int, int], tuple[np.ndarray, int]] = {}

    def __setstate__(self, state: dict) -> None:
        """A partition pickled before ``fit_changed`` was kept marks every node changed (and one
        without ``no_fit`` remembers no shape)."""
        self.__dict__.update(state)
        if "fit_changed" not in state:
            self.fit_changed = np.ones(self.n, dtype=np.bool_)
        if "no_fit" not in state:
            self.no_fit = set()

    # ---- capacity checks -------------------------------------------------------------------

    @property
    def reservations(self) -> list[Reservation]:
        """The last backfill pass's plans, in start order. The compiled pass hands them over as
        (job, nodes, start) (``set_plans``) and they become ``Reservation`` records when first
        read: a saturated ``hpc2n`` pass makes ~250 plans, their records were ~10 % of its CPU,
        and only ``estimate_start`` and the EASY backfill read them. (Kept in ``__dict__`` under
        the same name, so simulators pickled before the property load unchanged.)"""
        d = self.__dict__
        pending = d.get("_plans_pending")
        if pending is not None:
            d["_plans_pending"] = None
            if not isinstance(pending, list):  # pass_inputs.PassEvents or PassPlans: the kernel's arrays
                d["reservations"] = pending.reservations()
                return d["reservations"]
            made = [Reservation(job_id=job.job_id, start=t, end=t + job.time_limit_s, nodes=nodes,
                                cores=job.cpus_per_node, mem_mb=job.mem_per_node_mb,
                                slack_c=dict.fromkeys(nodes, 0), slack_m=dict.fromkeys(nodes, 0))
                    for job, nodes, t in pending]
            made.sort(key=lambda r: r.start)
            d["reservations"] = made
        return d["reservations"]

    @reservations.setter
    def reservations(self, value: list[Reservation]) -> None:
        self.__dict__["_plans_pending"] = None
        self.__dict__["reservations"] = value

    def set_plans(self, plans: Any) -> None:
        """The plans of a pass as (job, nodes, start) in the order made, or an object whose
        ``reservations()`` gives their records in start order (``pass_inputs.PassPlans``):
        ``reservations`` as ``backfill._record_plan`` would have built them, built when first
        read."""
        self.__dict__["reservations"] = []
        self.__dict__["_plans_pending"] = plans

    def fits_empty(self, nodes: int, cores: int, mem_mb: int) -> bool:
        return nodes <= self.n and cores <= self.cores and mem_mb <= self.mem

    def find_nodes(self, nodes: int, cores: int, mem_mb: int,
                   allow: Callable[[int], bool] | None = None,
                   blocked: list[int] | None = None, completing_ok: bool = False) -> list[int] | None:
        """Nodes for a job now, or None if too few hold it. ``select`` decides which: "consec"
        is select/cons_tres's default, "bestfit" the nodes with the fewest free cores. Nodes
        still completing a job (epilog) are left out unless ``completing_ok`` (backfill's
        will-run test sees their cores as free). Without ``allow`` and ``blocked``, a shape that
        found too few nodes is remembered (``no_fit``) until a release or the end of an epilog
        gives resources back: allocations and epilogs only take nodes away, so it still finds too
        few (the main pass asks its blocked head job's shape again at each event: 3,230 of the
        5,823 calls of a saturated ``hpc2n`` half day from day 4 were answered so)."""
        if nodes * cores > self.free_cores_total:
            return None
        if allow is None and blocked is None:
            # a shape that found too few nodes finds too few until something is given back
            key = (nodes, cores, mem_mb, completing_ok)
            no_fit = self.no_fit
            if key in no_fit:
                return None
            got = self._find_nodes(nodes, cores, mem_mb, None, None, completing_ok)
            if got is None:
                no_fit.add(key)
            return got
        return self._find_nodes(nodes, cores, mem_mb, allow, blocked, completing_ok)

    def _find_nodes(self, nodes: int, cores: int, mem_mb: int, allow: Callable[[int], bool] | None,
                    blocked: list[int] | None, completing_ok: bool) -> list[int] | None:
        if self.completing and not completing_ok:
            blocked = list(self.completing) + (blocked or [])
        if self.select == "consec":
            return self._find_consec(nodes, cores, mem_mb, allow, blocked)
        if blocked:
            held = set(blocked)
            inner = allow
            allow = (lambda node: node not in held and inner(node)) if inner else (lambda node: node not in held)
        buckets = self.buckets
        if nodes > 1 and sum(len(buckets[k]) for k in range(cores, self.cores + 1)) < nodes:
            return None
        free_m = self.free_m
        chosen: list[int] = []
        for k in range(cores, self.cores + 1):
            bucket = buckets[k]
            if not bucket:
                continue
            for node in bucket:
                if free_m[node] >= mem_mb and (allow is None or allow(node)):
                    chosen.append(node)
                    if len(chosen) == nodes:
                        return chosen
        return None

    def _find_consec(self, nodes: int, cores: int, mem_mb: int, allow: Callable[[int], bool] | None,
                     blocked: list[int] | None) -> list[int] | None:
        """cons_tres's ``_eval_nodes`` without topology or weights: usable nodes form runs of
        consecutive nodes; take the tightest run that holds the rest of the job (else the biggest
        run, and go on), from its first node, except that the last node is the one with the
        fewest free cores in the run (a single-node best fit)."""
        free_c = self.np_free_c
        if allow is None and plan_kernel.enabled():
            held = np.asarray(blocked, dtype=np.int64) if blocked else _NONE_HELD
            got = plan_kernel.find_consec(free_c, self.np_free_m, held, nodes, cores, mem_mb)
            return got.tolist() if len(got) else None
        ok = (free_c >= cores) & (self.np_free_m >= mem_mb)
        if blocked:
            ok[blocked] = False
        idx = np.flatnonzero(ok)
        if allow is not None:
            idx = np.array([i for i in idx.tolist() if allow(i)], dtype=np.int64)
        if len(idx) < nodes:
            return None
        return consec_pick(idx, free_c[idx], nodes, cores)

    def max_free_cores(self) -> int:
        buckets = self.buckets
        for k in range(self.cores, 0, -1):
            if buckets[k]:
                return k
        return 0

    def capacity_profile(self, reservations: list[Reservation] = ()) -> tuple[np.ndarray, np.ndarray]:
        """For c = 0..cores: how many nodes have at least c free cores, and the most free memory
        on any node with at least c free cores (-1 if none). With ``reservations``, their nodes
        count only their slack (what a job overlapping them may use)."""
        fc, fm = self.np_free_c, self.np_free_m
        if reservations:
            fc, fm = fc.copy(), fm.copy()
            for r in reservations:
                nodes = np.fromiter(r.slack_c.keys(), dtype=np.int64, count=len(r.slack_c))
                fc[nodes] = np.minimum(fc[nodes], np.maximum(0, np.fromiter(r.slack_c.values(), dtype=np.int64, count=len(nodes))))
                fm[nodes] = np.minimum(fm[nodes], np.fromiter(r.slack_m.values(), dtype=np.int64, count=len(nodes)))
        cnt_ge = np.cumsum(np.bincount(fc, minlength=self.cores + 1)[::-1])[::-1]
        most = np.full(self.cores + 1, -1, dtype=np.int64)
        np.maximum.at(most, fc, fm)
        return cnt_ge, np.maximum.accumulate(most[::-1])[::-1]

    # ---- allocation --------------------------------------------------------------------------
    def allocate(self, nodes: list[int], cores: int, mem_mb: int, end_latest: float, owner: int = 0) -> list[int]:
        free_c, free_m, buckets = self.free_c, self.free_m, self.buckets
        changed = self.fit_changed
        slots = []
        for node in nodes:
            changed[node] = True
            before = free_c[node]
            buckets[before].discard(node)
            buckets[before - cores].add(node)
            free_c[node] = before - cores
            free_m[node] -= mem_mb
            self.np_free_c[node] = before - cores
            self.np_free_m[node] = free_m[node]
            slot = self._add_piece(end_latest, node, cores, mem_mb)
            self.p_job[slot] = owner
            slots.append(slot)
        self.free_cores_total -= cores * len(nodes)
        return slots

    def release(self, nodes: list[int], cores: int, mem_mb: int, slots: list[int]) -> None:
        self.no_fit.clear()
        free_c, free_m, buckets = self.free_c, self.free_m, self.buckets
        changed = self.fit_changed
        for node in nodes:
            changed[node] = True
            before = free_c[node]
            buckets[before].discard(node)
            buckets[before + cores].add(node)
            free_c[node] = before + cores
            free_m[node] += mem_mb
            self.np_free_c[node] = before + cores
            self.np_free_m[node] = free_m[node]
        self.free_cores_total += cores * len(nodes)
        active = self.p_active
        node_slots, dirty = self.node_slots, self._dirty
        for node, slot in zip(nodes, slots):
            active[slot] = False
            self.p_free.append(slot)
            node_slots[node].remove(slot)
            dirty.add(node)
            del self.piece_info[slot]
        self._log_changes(nodes)

    def start_completing(self, nodes: list[int]) -> None:
        for node in nodes:
            self.completing[node] = self.completing.get(node, 0) + 1

    def end_completing(self, nodes: list[int]) -> None:
        self.no_fit.clear()
        for node in nodes:
            left = self.completing[node] - 1
            if left:
                self.completing[node] = left
            else:
                del self.completing[node]

    def _add_piece(self, end: float, node: int, cores: int, mem_mb: int) -> int:
        if self.p_free:
            slot = self.p_free.pop()
        else:
            slot = self.p_hi
            if slot == len(self.p_end):
                self._grow()
            self.p_hi += 1
        self.p_end[slot] = end
        self.p_node[slot] = node
        self.p_c[slot] = cores
        self.p_m[slot] = mem_mb
        self.p_active[slot] = True
        self.node_slots[node].append(slot)
        self.piece_info[slot] = (end, cores, mem_mb)
        self._dirty.add(node)
        self._log_changes((node,))
        return slot

    def _log_changes(self, nodes) -> None:  # noqa: ANN001
        """Note nodes whose allocations changed, for ``fit_times``' caches. Compacted here, not only
        in ``fit_times``: the compiled pass keeps fit times of its own and never calls it, so a
        long run would otherwise grow the log by every start and end."""
        log = self._change_log
        if len(log) > 8 * self.n + 4096:  # drop caches that are far behind
            self._fit_cache.clear()
            log.clear()
        log.extend(nodes)

    def _grow(self) -> None:
        cap = len(self.p_end) * 2
        for attr in ("p_end", "p_node", "p_c", "p_m", "p_active", "p_job"):
            old = getattr(self, attr)
            new = np.zeros(cap, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, attr, new)

    # ---- availability profile ---------------------------------------------------------------
    def earliest_start(self, nodes: int, cores: int, mem_mb: int, duration_s: float, now: float,
                       blocks: list[Reservation] = ()) -> Reservation | None:
        """Earliest time ``nodes`` nodes each have ``cores`` and ``mem_mb`` free, assuming every
        running job runs to its time limit (what Slurm's planner assumes) and that earlier
        reservations (``blocks``) hold their nodes from now until they end (conservative: a later
        reservation is never placed inside an earlier one's window). None if it never fits."""
        if not self.fits_empty(nodes, cores, mem_mb) or nodes > self.n:
            return None
        if not blocks:
            return self._earliest_cached(nodes, cores, mem_mb, duration_s, now)
        times, (fc, fm, ends, pnode, pc, pm) = self._profile(cores, mem_mb, now, blocks)
        if np.count_nonzero(np.isfinite(times)) < nodes:
            return None
        t_start = max(float(np.partition(times, nodes - 1)[nodes - 1]), now)
        upto = ends <= t_start
        fc_t = fc + np.bincount(pnode[upto], weights=pc[upto], minlength=self.n).astype(np.int64)
        fm_t = fm + np.bincount(pnode[upto], weights=pm[upto], minlength=self.n).astype(np.int64)
        return self._pick(times, nodes, cores, mem_mb, duration_s, now, fc_t, fm_t)

    def _earliest_cached(self, nodes: int, cores: int, mem_mb: int, duration_s: float,
                         now: float) -> Reservation | None:
        """Without earlier reservations the per-node times depend on nothing but that node's
        pieces, so between passes only the nodes whose allocations changed are recomputed."""
        shape = (cores, mem_mb)
        if self._prof_shape == shape:
            times = self._prof_times
            for node in self._dirty:
                times[node] = self._node_time(node, cores, mem_mb, now)
        else:
            times = self._profile(cores, mem_mb, now, ())[0]
            self._prof_shape, self._prof_times = shape, times
        self._dirty.clear()
        return self._pick(times, nodes, cores, mem_mb, duration_s, now, None, None)

    def fit_times(self, cores: int, mem_mb: int, now: float) -> np.ndarray:
        """Per node, the first time it holds ``cores`` and ``mem_mb`` with every running job
        ending at its time limit (inf: never; a time <= now: free already). A copy, kept up to
        date between calls by recomputing only the nodes whose allocations changed."""
        log = self._change_log
        key = (cores, mem_mb)
        hit = self._fit_cache.get(key)
        if hit is None or len(log) - hit[1] > self.n:
            times = self._profile(cores, mem_mb, now, ())[0]
        else:
            times = hit[0]
            for node in set(log[hit[1]:]):
                times[node] = self._node_time(node, cores, mem_mb, now)
        self._fit_cache[key] = (times, len(log))
        return times.copy()

    def _node_time(self, node: int, cores: int, mem_mb: int, now: float) -> float:
        fc, fm = self.free_c[node], self.free_m[node]
        if fc >= cores and fm >= mem_mb:
            return now
        for end, c, m in sorted(self.piece_info[s] for s in self.node_slots[node]):
            fc += c
            fm += m
            if fc >= cores and fm >= mem_mb:
                return end
        return np.inf

    def _pick(self, times: np.ndarray, nodes: int, cores: int, mem_mb: int, duration_s: float,
              now: float, fc_t: np.ndarray | None, fm_t: np.ndarray | None) -> Reservation | None:
        if np.count_nonzero(np.isfinite(times)) < nodes:
            return None
        # cached "now" entries from an earlier pass are simply "free already"
        t_start = max(float(np.partition(times, nodes - 1)[nodes - 1]), now)
        chosen = [int(x) for x in np.flatnonzero(times <= t_start)[:nodes]]
        slack_c, slack_m = {}, {}
        for node in chosen:
            if fc_t is not None:
                free_c, free_m = int(fc_t[node]), int(fm_t[node])
            else:
                free_c, free_m = self.free_c[node], self.free_m[node]
                for s in self.node_slots[node]:
                    end, c, m = self.piece_info[s]
                    if end <= t_start:
                        free_c += c
                        free_m += m
            slack_c[node] = free_c - cores
            slack_m[node] = free_m - mem_mb
        return Reservation(job_id=0, start=t_start, end=t_start + duration_s, nodes=chosen,
                           cores=cores, mem_mb=mem_mb, slack_c=slack_c, slack_m=slack_m)

    def _profile(self, cores: int, mem_mb: int, now: float,
                 blocks: list[Reservation]) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """Per node, the first time it holds (cores, mem_mb), all nodes at once (vectorised)."""
        fc = self.np_free_c.copy()
        fm = self.np_free_m.copy()
        act = np.flatnonzero(self.p_active[: self.p_hi])
        ends = self.p_end[act]
        pnode = self.p_node[act]
        pc = self.p_c[act]
        pm = self.p_m[act]
        if blocks:
            extra_end, extra_node, extra_c, extra_m = [], [], [], []
            for blk in blocks:
                for node in blk.nodes:
                    fc[node] -= blk.cores
                    fm[node] -= blk.mem_mb
                    extra_end.append(blk.end)
                    extra_node.append(node)
                    extra_c.append(blk.cores)
                    extra_m.append(blk.mem_mb)
            ends = np.concatenate([ends, np.asarray(extra_end, dtype=float)])
            pnode = np.concatenate([pnode, np.asarray(extra_node, dtype=np.int64)])
            pc = np.concatenate([pc, np.asarray(extra_c, dtype=np.int64)])
            pm = np.concatenate([pm, np.asarray(extra_m, dtype=np.int64)])
        times = np.full(self.n, np.inf)
        times[(fc >= cores) & (fm >= mem_mb)] = now
        if len(ends):
            # by node, then by end time (ends are within max_time of now, far below 1e8 s)
            order = np.argsort(pnode * 1e8 + (ends - now), kind="stable")
            s_node, s_end, s_c, s_m = pnode[order], ends[order], pc[order], pm[order]
            cs_c, cs_m = np.cumsum(s_c), np.cumsum(s_m)
            first = np.empty(len(s_node), dtype=bool)
            first[0] = True
            np.not_equal(s_node[1:], s_node[:-1], out=first[1:])
            grp = np.cumsum(first) - 1
            starts = np.flatnonzero(first)
            base_c = (cs_c - s_c)[starts][grp]
            base_m = (cs_m - s_m)[starts][grp]
            ok = ((fc[s_node] + cs_c - base_c) >= cores) & ((fm[s_node] + cs_m - base_m) >= mem_mb)
            qi = np.flatnonzero(ok)
            if len(qi):
                q_node = s_node[qi]
                head = np.empty(len(qi), dtype=bool)
                head[0] = True
                np.not_equal(q_node[1:], q_node[:-1], out=head[1:])
                uniq = q_node[head]
                times[uniq] = np.minimum(times[uniq], s_end[qi[head]])
        return times, (fc, fm, ends, pnode, pc, pm)

    def check_invariants(self) -> None:
        """Raise if any node is over-committed (used by property tests)."""
        for node in range(self.n):
            if not 0 <= self.free_c[node] <= self.cores:
                raise AssertionError(f"{self.name} node {node}: free cores {self.free_c[node]}")
            if not 0 <= self.free_m[node] <= self.mem:
                raise AssertionError(f"{self.name} node {node}: free memory {self.free_m[node]}")
            if node not in self.buckets[self.free_c[node]]:
                raise AssertionError(f"{self.name} node {node}: bucket index out of date")
