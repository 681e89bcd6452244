"""The compiled pass's inputs and outputs gathered and split in compiled loops (issue 37,
thirteenth session): ``pass_inputs.tested_inputs`` equals ``tested_positions`` and the numpy
gathers, ``pass_inputs.split_events`` equals ``record_plans`` and the start events, and the
partition's change marks (``PartitionState.fit_changed``, read by ``FitCache.note_marked``) keep
the fit-time cache equal to the sweep."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asad.slurm.sim import fit_cache, pass_inputs, pass_kernel, pass_shapes, plan_kernel
from asad.slurm.sim.cluster import PartitionState
from asad.slurm.sim.config import PartitionSpec
from asad.slurm.sim.jobs import SimJob
from asad.slurm.sim.scheduler import JobQueue

pytestmark = pytest.mark.skipif(plan_kernel.njit is None, reason="numba is not installed")

N = 6


def _job(jid: int, nodes: int, cpn: int, mem: int, limit: float) -> SimJob:
    job = SimJob(jid, "j", [], nodes, cpn * nodes, mem, limit, 0.0, 10.0, background=True)
    job.sort_key = (0.0, jid)
    job.queued = True
    return job


def _queue(shapes: list, gone: list) -> tuple[JobQueue, list[SimJob]]:
    queue = JobQueue()
    queue.frozen = True
    jobs = [_job(i, *shape) for i, shape in enumerate(shapes)]
    for job in jobs:
        queue.add(job)
    for job, g in zip(jobs, gone):
        if g:
            job.queued = False
            queue.remove(job)
    return queue, jobs


shape_st = st.tuples(st.integers(1, 4), st.integers(1, 8), st.integers(0, 4000), st.sampled_from([60.0, 3600.5, 7200.0]))


@settings(max_examples=150, deadline=None)
@given(st.lists(shape_st, max_size=40), st.lists(st.booleans(), max_size=40), st.integers(0, 20))
def test_tested_inputs_equal_the_positions_and_numpy_gathers(shapes, gone, max_test) -> None:  # noqa: ANN001
    """The positions of ``tested_positions`` (from the head, queued only, at most ``max_test``,
    0: all) and each shape array gathered there, with numpy's dtypes. Fails when the bound is
    off by one or the head's dead jobs are counted (checked by breaking them)."""
    queue, _ = _queue(shapes, gone)
    got = pass_inputs.tested_inputs(queue, max_test)
    live = pass_inputs.tested_positions(queue, max_test)
    want = (live, queue.a_nodes[live], queue.a_cpn[live], queue.a_cpus[live], queue.a_mem[live],
            queue.a_limit_f[live], queue.a_id[live])
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


event_st = st.tuples(st.booleans(), st.integers(0, 9), st.sampled_from([50.0, 100.0, 200.0, 900.0]),
                     st.integers(1, 3))  # a plan?, which tested job, start, node count


@settings(max_examples=150, deadline=None)
@given(st.lists(shape_st, min_size=1, max_size=10), st.lists(event_st, max_size=12),
       st.lists(st.sampled_from([None, 100.0, 150.0, 1000.0]), min_size=10, max_size=10))
def test_split_events_equal_record_plans_and_the_starts(shapes, events, res_min) -> None:  # noqa: ANN001
    """Two queues alike (jobs with and without an earlier planned start, some planned twice in
    a pass): ``split_events`` on one and ``record_plans`` plus the start events on the other
    give the same plan records, the same jobs' earliest planned starts (job and queue mirror)
    and the starts in the kernel's order. Fails when a start's offset or a tested job's bound is
    off (checked by breaking them)."""
    made = []
    for _ in range(2):
        queue, jobs = _queue(shapes, [])
        for job, t in zip(jobs, res_min):
            job.res_time_min = t
            queue.a_res_min[queue.jobs.index(job)] = np.inf if t is None else t
        made.append((queue, jobs))
    n_t = len(shapes)
    kinds = np.array([pass_kernel.EV_PLAN if plan else 1 - pass_kernel.EV_PLAN for plan, *_ in events], dtype=np.int64)
    which = np.array([w % n_t for _, w, _, _ in events], dtype=np.int64)
    ts = np.array([t for _, _, t, _ in events], dtype=np.float64)
    lens = np.array([k for *_, k in events], dtype=np.int64)
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64) if len(events) else np.zeros(0, dtype=np.int64)
    flat = np.arange(int(lens.sum()), dtype=np.int64) % N
    (qa, ja), (qb, jb) = made
    live_a, _, t_cpn, _, t_mem, t_limit, t_id = pass_inputs.tested_inputs(qa, 0)
    plans, s_pos, s_off, s_len = pass_inputs.split_events(qa, live_a, kinds, which, ts, offs, lens, flat,
                                                          (t_id, t_limit, t_cpn, t_mem), pass_kernel.EV_PLAN)
    live_b = pass_inputs.tested_positions(qb, 0)
    is_plan = kinds == pass_kernel.EV_PLAN
    pl, stt = np.flatnonzero(is_plan), np.flatnonzero(~is_plan)
    want = pass_inputs.record_plans(qb, live_b, which[pl], ts[pl], offs[pl], lens[pl], flat)
    assert plans.reservations() == want.reservations()
    assert [j.res_time_min for j in ja] == [j.res_time_min for j in jb]
    np.testing.assert_array_equal(qa.a_res_min, qb.a_res_min)
    assert s_pos == live_b[which[stt]].tolist()
    assert s_off == offs[stt].tolist() and s_len == lens[stt].tolist()


def _kept_times(cache: fit_cache.FitCache, part: PartitionState, pieces: tuple, cores: int, mem: int,
                now: float) -> np.ndarray | None:
    fc = cache.arrays
    s = fit_cache.slot_for(fc[0], fc[1], fc[2], fc[3], fc[10][0], cores, mem)
    if s < 0:
        return None
    pe, pn, pc, pm, _pj = pieces
    n_p = len(pe)
    head, lst = np.empty(N + 1, dtype=np.int64), np.empty(max(n_p, 1), dtype=np.int64)
    out, order = np.empty(N), np.empty(N, dtype=np.int64)
    fit_cache.ensure_slot(s, fc[3], fc[4], fc[5], fc[6], fc[7], fc[8], fc[9], part.np_free_c, part.np_free_m,
                          pe, pn, pc, pm, n_p, head, lst, np.zeros(1, dtype=np.bool_), cores, mem, now, out, order)
    return out


start_st = st.tuples(st.lists(st.integers(0, N - 1), min_size=1, max_size=3, unique=True),
                     st.integers(1, 4), st.integers(0, 400), st.integers(10, 900))  # nodes, cores, mem, end
step_st = st.tuples(st.lists(st.integers(0, 40), max_size=3), st.lists(start_st, max_size=3),
                    st.lists(st.tuples(st.integers(1, 8), st.sampled_from([0, 200, 800])), min_size=1, max_size=3))


@settings(max_examples=200, deadline=None)
@given(st.lists(step_st, min_size=1, max_size=8))
def test_marked_nodes_keep_the_fit_cache_equal_to_the_sweep(steps) -> None:  # noqa: ANN001
    """Jobs start and end on a partition between passes; each pass gives new versions to the
    nodes the partition marked (``note_marked``) and clears the marks, as ``compiled_pass``
    does. Every asked shape's kept times equal a fresh sweep's over the partition as it is.
    Fails when ``allocate`` or ``release`` does not mark its nodes (checked by breaking each)."""
    part = PartitionState(PartitionSpec("p", N, 8, 1000), 0)
    cache = fit_cache.FitCache(N, slots=2)  # fewer slots than shapes: slots are taken over too
    running: list = []
    now = 0.0
    jid = 0
    for ends, starts, shapes in steps:
        for k in ends:
            if running:
                nodes, c, m, slots = running.pop(k % len(running))
                part.release(nodes, c, m, slots)
        for nodes, c, m, end in starts:
            if all(part.free_c[n] >= c and part.free_m[n] >= m for n in nodes):
                jid += 1
                running.append((nodes, c, m, part.allocate(nodes, c, m, now + end, owner=jid)))
        now += 7.0
        cache.note_marked(part.fit_changed)
        part.fit_changed[:] = False
        pieces = pass_inputs.running_sorted_numpy(part)
        for cores, mem in shapes:
            got = _kept_times(cache, part, pieces, cores, mem, now)
            if got is None:
                continue
            want, order, want_sorted = np.empty(N), np.empty(N, dtype=np.int64), np.empty(N)
            pass_shapes._shape_times_sorted(want, order, want_sorted, part.np_free_c, part.np_free_m,
                                            *pieces[:4], len(pieces[0]), cores, mem, now)
            assert got.tolist() == want.tolist()


def test_a_partition_pickled_without_marks_marks_every_node() -> None:
    """A partition of a snapshot made before ``fit_changed`` was kept loads with every node
    marked (and a loaded cache gives all new versions anyway)."""
    import pickle

    part = PartitionState(PartitionSpec("p", N, 8, 1000), 0)
    part.fit_changed[:] = False
    state = dict(part.__dict__)
    del state["fit_changed"]
    old = PartitionState.__new__(PartitionState)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    assert old.fit_changed.all() and len(old.fit_changed) == N
    again = pickle.loads(pickle.dumps(part))
    assert not again.fit_changed.any()
