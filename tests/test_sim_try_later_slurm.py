"""The simulator's plan search (``planner.try_later`` and the compiled ``plan_kernel``) against a
transcription of ``_attempt_backfill``'s TRY_LATER loop (backfill.c, Slurm 22.05.8; issue 37, f37o).

The transcription keeps Slurm's control flow and its node_space map (segments split at every
plan's start and end, as ``_add_reservation`` makes them) and uses the simulator's own will-run
test (``planner.will_run``, checked against cons_common's ``_will_run_test`` in earlier rounds)
and node pick for ``_try_sched``: what it checks is the loop around them (the segment walk's held
nodes and ``later_start``, "start later than later_start: try later", ``_test_resv_overlap``).
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from asad.slurm.sim import plan_kernel
from asad.slurm.sim.backfill_map import BackfillMap
from asad.slurm.sim.cluster import PartitionState, consec_pick
from asad.slurm.sim.config import PartitionSpec
from asad.slurm.sim.jobs import SimJob
from asad.slurm.sim.planner import planned_start_slurm, will_run

NOW = 1_000_020.0  # a whole second: Slurm's now is time(NULL)
WINDOW = 86400.0
CORES, MEM = 8, 8000


class Loops(Exception):
    """Slurm's loop would try the same start_res again (it stops only at bf_max_time)."""


def slurm_try_later(plan: BackfillMap, job: SimJob, res: float) -> tuple[float, list[int]] | None:
    part = plan.part
    n, k, limit = part.n, job.nodes, job.time_limit_s
    iv_node, iv_b, iv_e = plan.arrays()
    plans = list(zip(iv_node.tolist(), iv_b.tolist(), iv_e.tolist()))
    window_end = NOW + WINDOW
    cuts = sorted({NOW, window_end} | {t for _, b, e in plans for t in (b, e) if NOW < t < window_end})
    segs = [(b, e, {x for x in range(n)} - {x for x, pb, pe in plans if pb < e and pe > b})
            for b, e in zip(cuts, cuts[1:])]
    times = part.fit_times(job.cpus_per_node, job.mem_per_node_mb, NOW)
    tmp = set(range(n))
    start_res, seen = NOW, set()
    while True:
        if start_res in seen:
            raise Loops
        seen.add(start_res)
        end_time = limit + (start_res if start_res > NOW else NOW)
        avail, later = set(tmp), 0.0
        for j, (begin, end, seg_avail) in enumerate(segs):
            if end > start_res and j + 1 < len(segs) and later == 0:
                if not (tmp & segs[j + 1][2]) <= (avail & seg_avail):
                    later = end
            if end <= start_res:
                continue
            if begin <= end_time:
                avail &= seg_avail
            else:
                break
        if len(avail) < k:
            if later:
                start_res = later
                continue
            return None
        mask = np.zeros(n, dtype=bool)
        mask[sorted(avail)] = True
        got = will_run(plan, times, mask, job, NOW, 0.0)  # _try_sched on avail_bitmap
        if got is None:
            if later:
                start_res = later
                continue
            return None
        at, fits, gone = got
        start = max(at, start_res)  # if (start_res > job_ptr->start_time) start_time = start_res
        if later and start > later:
            start_res = later
            continue
        if start > NOW + WINDOW:
            return None
        idx = np.flatnonzero(fits)
        nodes = consec_pick(idx, plan.free_after(gone)[0][idx], k, job.cpus_per_node)
        b, e = (start // res) * res, ((start + limit) // res) * res
        if start > NOW and any(end > b and begin < e and not set(nodes) <= seg_avail
                               for begin, end, seg_avail in segs):  # _test_resv_overlap
            start_res = start  # later_start = job_ptr->start_time; TRY_LATER
            continue
        return start, list(nodes)


running_job = st.tuples(st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True),
                        st.integers(1, CORES), st.integers(1, 40))  # nodes, cores, end / 10 s
plan_st = st.tuples(st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True),
                    st.integers(0, 40), st.integers(1, 20))  # nodes, begin / 10 s, length / 10 s


@settings(max_examples=400, deadline=None)
# found by this test on main before f37o (1000090 against Slurm's 1000060): node 0's plan
# [+20, +30) begins after the first try's window [now, now + 10] and frees node 0 at +30
@example(n=6, running=[([0, 1], 1, 1), ([0, 1], 1, 1), ([0, 1], 1, 1), ([0, 1, 2], 2, 1), ([2], 1, 7),
                       ([0, 1, 5], 4, 1)],
         raw_plans=[([0], 2, 1), ([5], 0, 4)], k=3, cpn=6, limit10=1, res=1.0)
# found by this test in the fourteenth session: a 10-s limit under bf_resolution=60 rounds the
# plan's window to one instant, a plan's end; Slurm's segments are cut there, so no overlap
@example(n=2, running=[([0], 4, 18)], raw_plans=[([0], 0, 1), ([0], 6, 18), ([1], 0, 18)], k=1, cpn=5,
         limit10=1, res=60.0)
@given(st.integers(1, 6), st.lists(running_job, max_size=10), st.lists(plan_st, max_size=6),
       st.integers(1, 4), st.integers(1, CORES), st.integers(1, 30), st.sampled_from([1.0, 60.0]))
def test_the_plan_search_follows_slurms_try_later_loop(n, running, raw_plans, k, cpn, limit10, res) -> None:  # noqa: ANN001
    part = PartitionState(PartitionSpec("p", nodes=n, cores_per_node=CORES, mem_per_node_mb=MEM), 0)
    part.select = "consec"
    for owner, (nodes, cores, end10) in enumerate(running, start=1):
        nodes = [x for x in nodes if x < n and part.free_c[x] >= cores]
        if nodes:
            part.allocate(nodes, cores, 100, NOW + 10 * end10, owner=owner)
    plan = BackfillMap(part)
    taken: list[tuple[set[int], float, float]] = []
    for nodes, b10, len10 in raw_plans:
        nodes = {x for x in nodes if x < n}
        b, e = NOW + 10 * b10, NOW + 10 * (b10 + len10)
        b, e = (b // res) * res, (e // res) * res
        # the plans of one pass never overlap on a node (each is made around the earlier ones)
        if nodes and e > b and all(not (nodes & o) or e <= ob or b >= oe for o, ob, oe in taken):
            plan.reserve(sorted(nodes), b, e)
            taken.append((nodes, b, e))
    k = min(k, n)
    job = SimJob(9999, "j", [part], k, cpn * k, 100, 10 * limit10, NOW, 10.0, background=False)
    try:
        want = slurm_try_later(plan, job, res)
    except Loops:
        assume(False)
    for compiled in (True, False):
        saved = plan_kernel._ENABLED
        plan_kernel._ENABLED = compiled and saved
        try:
            fresh = BackfillMap(part)
            for nodes, b, e in taken:
                fresh.reserve(sorted(nodes), b, e)
            got = planned_start_slurm(fresh, job, NOW, NOW + WINDOW, 0.0, res)
        finally:
            plan_kernel._ENABLED = saved
        if want is None:
            assert got is None, compiled
        else:
            assert got is not None and (got[0], sorted(got[1])) == (want[0], sorted(want[1])), compiled
