"""``later_start`` as Slurm 22.05.8's ``_attempt_backfill`` finds it (issue 37, f37o; lead (b): jobs
the fixed replay left with no plan at all).

The oracle below transcribes the loop at backfill.c 2390-2425 on a node_space map built as
``_add_reservation`` splits it (a segment boundary at each plan's start and end). For every
segment that ends after ``start_res`` the loop first tests whether the next segment has a usable
node the current one (ANDed with the segments seen so far) lacks, and sets ``later_start`` to
the segment's end at the first such one; only then does it AND the segment in, or ``break`` at
the first segment that begins after the job's end. So the segment after the window is tested
too, and a plan that fills exactly that segment frees its node at ``later_start``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asad.slurm.sim.backfill_map import BackfillMap
from asad.slurm.sim.cluster import PartitionState
from asad.slurm.sim.config import PartitionSpec
from asad.slurm.sim.planner import later_start

NOW = 1_000_020.0
WINDOW = 86400.0
INF = float("inf")


def slurm_walk(n: int, plans: list[tuple[list[int], float, float]], start_res: float,
               end_time: float) -> tuple[float, set[int]]:
    """backfill.c's node_space walk for one try: (later_start or inf, the usable nodes left)."""
    window_end = NOW + WINDOW
    cuts = sorted({NOW, window_end} | {t for _, b, e in plans for t in (b, e) if NOW < t < window_end})
    segs = []
    for b, e in zip(cuts, cuts[1:]):
        held = {x for nodes, pb, pe in plans if pb < e and pe > b for x in nodes}
        segs.append((b, e, set(range(n)) - held))
    tmp = set(range(n))  # the job's usable nodes (tmp_bitmap): every node here
    avail = set(tmp)
    later = 0.0
    j = 0
    while True:
        begin, end, seg_avail = segs[j]
        if end > start_res and j + 1 < len(segs) and later == 0:
            next_bitmap = tmp & segs[j + 1][2]
            current_bitmap = avail & seg_avail
            if not next_bitmap <= current_bitmap:  # !bit_super_set(next_bitmap, current_bitmap)
                later = end
        if end <= start_res:
            pass
        elif begin <= end_time:
            avail &= seg_avail
        else:
            break
        j += 1
        if j == len(segs):
            break
    return (later if later else INF), avail


def _map(n: int, plans: list[tuple[list[int], float, float]]) -> BackfillMap:
    part = PartitionState(PartitionSpec("p", nodes=n, cores_per_node=8, mem_per_node_mb=8000), 0)
    plan = BackfillMap(part)
    for nodes, b, e in plans:
        plan.reserve(nodes, b, e)
    return plan


def _sim(plan: BackfillMap, n: int, start_res: float, end_time: float) -> tuple[float, set[int]]:
    _, _, span_e, bounds = plan.free_instants()
    iv_node, iv_b, iv_e = plan.arrays()
    held = set(iv_node[(iv_e > start_res) & (iv_b <= end_time)].tolist())
    return later_start(span_e, bounds, start_res, end_time), set(range(n)) - held


plan_st = st.tuples(st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True),
                    st.integers(0, 30), st.integers(1, 20))  # nodes, begin / 10 s, length / 10 s


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 5), st.lists(plan_st, max_size=7), st.integers(0, 40), st.integers(1, 20))
def test_later_start_and_held_nodes_are_slurms(n, raw, start10, limit10) -> None:  # noqa: ANN001
    plans = []
    for nodes, b10, len10 in raw:
        nodes = [x for x in nodes if x < n]
        if nodes:  # plans of one pass never overlap on a node: keep those that do not
            b, e = NOW + 10 * b10, NOW + 10 * (b10 + len10)
            if all(not (set(nodes) & set(o)) or e <= ob or b >= oe for o, ob, oe in plans):
                plans.append((nodes, b, e))
    if not plans:
        return
    start_res = NOW + 5 * start10
    end_time = start_res + 10 * limit10
    assert _sim(_map(n, plans), n, start_res, end_time) == slurm_walk(n, plans, start_res, end_time)


def test_a_plan_filling_the_segment_after_the_window_gives_later_start() -> None:
    # Node 1 planned [2100, 3780), node 0 [2400, 2820); a 2,280-s try from now ends at 2280, before
    # node 0's plan begins. Slurm's walk tests the segment [2400, 2820) before it breaks there:
    # its next segment has node 0 free and the current one (node 0 held) does not, so
    # later_start = 2820. Counting only plans that overlap the window gives none (no plan).
    plans = [([1], NOW + 2100, NOW + 3780), ([0], NOW + 2400, NOW + 2820)]
    want = slurm_walk(2, plans, NOW, NOW + 2280)
    assert want == (NOW + 2820, {0})
    assert _sim(_map(2, plans), 2, NOW, NOW + 2280) == want


def test_the_segment_two_past_the_window_is_not_looked_at() -> None:
    # Back-to-back plans on both nodes over [100, 400); the try [now, now + 100]: the walk ANDs
    # [100, 200) in, tests [200, 300) and breaks there. No node comes free at 200 or 300 (the
    # next plan follows at once), so there is no later_start and the job gets no plan: a free
    # node at 400, two segments past the window, is not looked at.
    plans = [([0, 1], NOW + 100, NOW + 200), ([0, 1], NOW + 200, NOW + 300), ([0, 1], NOW + 300, NOW + 400)]
    assert slurm_walk(2, plans, NOW, NOW + 100) == (INF, set())
    assert _sim(_map(2, plans), 2, NOW, NOW + 100) == (INF, set())
    assert np.isinf(later_start(np.array([NOW + 400.0]), np.array([NOW + 100.0, NOW + 200, NOW + 300, NOW + 400]),
                                NOW, NOW + 100))


def test_such_a_job_gets_slurms_plan_not_none() -> None:
    # The plan search on the example above: two 6-core nodes whose running jobs end at +2520, a
    # 2-node job of 2,280 s. Slurm: later_start 2820 (node 0 free again), then 3780 (node 1), where
    # the job fits on both: planned at +3780. Before f37o the search found no later_start in the
    # first try and gave the job no plan (the compiled search and its numpy reference alike).
    from asad.slurm.sim import plan_kernel
    from asad.slurm.sim.jobs import SimJob
    from asad.slurm.sim.planner import planned_start_slurm

    part = PartitionState(PartitionSpec("p", nodes=2, cores_per_node=8, mem_per_node_mb=8000), 0)
    part.select = "consec"
    part.allocate([0, 1], 7, 100, NOW + 2520, owner=1)
    for compiled in (True, False):
        plan = BackfillMap(part)
        plan.reserve([1], NOW + 2100, NOW + 3780)
        plan.reserve([0], NOW + 2400, NOW + 2820)
        job = SimJob(9999, "j", [part], 2, 12, 100, 2280, NOW, 10.0, background=False)
        saved = plan_kernel._ENABLED
        plan_kernel._ENABLED = compiled and saved
        try:
            got = planned_start_slurm(plan, job, NOW, NOW + WINDOW, 0.0, 1.0)
        finally:
            plan_kernel._ENABLED = saved
        assert got == (NOW + 3780, [0, 1]), compiled


def test_a_guessed_end_is_the_whole_second_after_now() -> None:
    # Lead (a): Slurm holds times as whole-second time_t. A running job already past its limit
    # (being killed) is the will-run walk's last job; _guess_job_end (cons_common/job_test.c)
    # gives end_time + KillWait + OverTimeLimit, and at least now + 1 with now = time(NULL). At
    # 0.6 s into a second that is the next whole second, not now + 1.0 (1.6 s on).
    from asad.slurm.sim import plan_kernel
    from asad.slurm.sim.jobs import SimJob
    from asad.slurm.sim.planner import planned_start_slurm

    now = NOW + 0.6
    part = PartitionState(PartitionSpec("p", nodes=1, cores_per_node=8, mem_per_node_mb=8000), 0)
    part.select = "consec"
    part.allocate([0], 8, 100, NOW - 10, owner=1)  # its end_time (start + limit) has passed
    for compiled in (True, False):
        plan = BackfillMap(part)
        job = SimJob(9999, "j", [part], 1, 8, 100, 60, now, 10.0, background=False)
        saved = plan_kernel._ENABLED
        plan_kernel._ENABLED = compiled and saved
        try:
            got = planned_start_slurm(plan, job, now, now + WINDOW, 0.0, 1.0)
        finally:
            plan_kernel._ENABLED = saved
        assert got == (NOW + 1.0, [0]), compiled
