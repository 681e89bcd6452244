"""The fit-time cache (``fit_cache``): each job shape's fit times kept from pass to pass, moved by
the nodes that changed, equal the sweep over every running piece (``_shape_times_sorted``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asad.slurm.sim import fit_cache, pass_shapes, plan_kernel

pytestmark = pytest.mark.skipif(plan_kernel.njit is None, reason="numba is not installed")

N = 10
NOW0 = 1_000_000.0

job_st = st.tuples(st.integers(-50, 3000), st.lists(st.integers(0, N - 1), min_size=1, max_size=3, unique=True),
                   st.integers(1, 8), st.integers(0, 4000))  # end - now, nodes, cores, memory per node
step_st = st.tuples(st.lists(st.integers(0, 30), max_size=4),  # jobs to end (indices into the live ones)
                    st.lists(job_st, max_size=3),  # jobs to start
                    st.lists(st.tuples(st.integers(0, N - 1), st.integers(0, 8), st.integers(0, 8000)), max_size=3),
                    st.integers(0, 400),  # the clock moves on by this
                    st.lists(st.tuples(st.integers(1, 8), st.sampled_from([0, 1000, 4000, 8000])), min_size=1, max_size=5))


def _pieces(jobs: list) -> tuple:
    """The running pieces sorted by (end, job), as the pass gets them."""
    rows = sorted((end, jid, node, c, m) for jid, (end, nodes, c, m) in jobs.items() for node in nodes)
    if not rows:
        return (np.empty(0), *(np.empty(0, dtype=np.int64) for _ in range(4)))
    ends, jids, nodes, cs, ms = zip(*rows)
    i64 = np.int64
    return (np.array(ends, dtype=float), np.array(nodes, dtype=i64), np.array(cs, dtype=i64),
            np.array(ms, dtype=i64), np.array(jids, dtype=i64))


def _kept(cache: fit_cache.FitCache, pieces: tuple, free_c, free_m, cores: int, mem: int, now: float) -> tuple:  # noqa: ANN001
    fc = cache.arrays
    s = fit_cache.slot_for(fc[0], fc[1], fc[2], fc[3], fc[10][0], cores, mem)
    if s < 0:  # every slot is this pass's: the pass sweeps this shape as before
        return None
    pe, pn, pc, pm, _pj = pieces
    n_p = len(pe)
    head, lst = np.empty(N + 1, dtype=np.int64), np.empty(max(n_p, 1), dtype=np.int64)
    out, order = np.empty(N), np.empty(N, dtype=np.int64)
    fit_cache.ensure_slot(s, fc[3], fc[4], fc[5], fc[6], fc[7], fc[8], fc[9], free_c, free_m, pe, pn, pc, pm,
                          n_p, head, lst, np.zeros(1, dtype=np.bool_), cores, mem, now, out, order)
    return out, out[order]


@settings(max_examples=200, deadline=None)
@given(st.lists(job_st, max_size=12), st.lists(step_st, min_size=1, max_size=6))
def test_kept_fit_times_equal_the_sweep(first_jobs, steps) -> None:  # noqa: ANN001
    """Passes one after another: jobs end and start (so nodes' pieces change), free resources
    change on their own too, the clock moves; at every pass each asked shape's kept times (per
    node, and their values in order) equal a fresh sweep's. Fails when ``note_changes`` misses
    the nodes of a job that started since the last pass."""
    now = NOW0
    jobs = {jid: (now + end, nodes, c, m) for jid, (end, nodes, c, m) in enumerate(first_jobs)}
    next_id = len(jobs)
    rng = np.random.default_rng(len(first_jobs))
    free_c = rng.integers(0, 9, N).astype(np.int64)
    free_m = rng.integers(0, 8001, N).astype(np.int64)
    cache = fit_cache.FitCache(N, slots=3)  # fewer slots than shapes: slots are taken over too
    for ending, starting, frees, dt, shapes in steps:
        live = sorted(jobs)
        for i in ending:
            if live:
                jobs.pop(live[i % len(live)], None)
        for end, nodes, c, m in starting:
            jobs[next_id] = (now + end, nodes, c, m)
            next_id += 1
        for node, c, m in frees:
            free_c[node], free_m[node] = c, m
        now += dt
        pieces = _pieces(jobs)
        cache.note_pass(free_c, free_m, pieces)
        for cores, mem in shapes:
            kept = _kept(cache, pieces, free_c, free_m, cores, mem, now)
            if kept is None:
                continue
            got, got_sorted = kept
            want, order, want_sorted = np.empty(N), np.empty(N, dtype=np.int64), np.empty(N)
            pass_shapes._shape_times_sorted(want, order, want_sorted, free_c, free_m, *pieces[:4], len(pieces[0]),
                                            cores, mem, now)
            assert got.tolist() == want.tolist()
            assert got_sorted.tolist() == want_sorted.tolist()


def test_a_start_inside_a_pass_moves_only_its_nodes() -> None:
    """A node given a new version (as the pass kernel does at a start) is computed again from
    the pieces and free resources it has then; the others keep their kept times."""
    now = NOW0
    jobs = {1: (now + 100, [0, 1], 8, 0), 2: (now + 200, [2], 8, 0)}
    free_c = np.zeros(N, dtype=np.int64)
    free_c[3:] = 8
    free_m = np.full(N, 8000, dtype=np.int64)
    cache = fit_cache.FitCache(N)
    pieces = _pieces(jobs)
    cache.note_pass(free_c, free_m, pieces)
    got, _ = _kept(cache, pieces, free_c, free_m, 8, 0, now)
    assert got[:4].tolist() == [now + 100, now + 100, now + 200, now]
    # job 3 starts on node 3 inside the pass: its free cores go, it ends at +50
    jobs[3] = (now + 50, [3], 8, 0)
    free_c[3] = 0
    pieces = _pieces(jobs)
    cache.arrays[9][3] += 1
    got, got_sorted = _kept(cache, pieces, free_c, free_m, 8, 0, now)
    assert got[:4].tolist() == [now + 100, now + 100, now + 200, now + 50]
    assert got_sorted.tolist()[:6] == [now] * 6 and got_sorted.tolist()[6:] == [now + 50, now + 100, now + 100, now + 200]


def test_a_pickled_cache_loads_empty_and_computes_again() -> None:
    """A simulator's snapshot carries the cache empty: after loading, the first pass gives every
    node a new version, so the kept times are the sweep's again."""
    import pickle

    now = NOW0
    pieces = _pieces({1: (now + 100, [0, 1], 8, 0)})
    free_c = np.full(N, 8, dtype=np.int64)
    free_c[:2] = 0
    free_m = np.full(N, 8000, dtype=np.int64)
    cache = fit_cache.FitCache(N)
    cache.note_pass(free_c, free_m, pieces)
    _kept(cache, pieces, free_c, free_m, 8, 0, now)
    loaded = pickle.loads(pickle.dumps(cache))
    assert loaded.prev is None and (loaded.arrays[0] == -1).all()
    free_c[0] = 8  # the job's piece on node 0 is gone, unseen by the loaded cache's history
    pieces = _pieces({1: (now + 100, [1], 8, 0)})
    loaded.note_pass(free_c, free_m, pieces)
    got, _ = _kept(loaded, pieces, free_c, free_m, 8, 0, now)
    assert got[:3].tolist() == [now, now + 100, now]


def test_the_change_log_stays_bounded_when_fit_times_is_never_asked() -> None:
    """The compiled pass keeps fit times of its own and never calls ``PartitionState.fit_times``;
    the node change log it feeds must still be compacted, or a 30-day run grows it by every start
    and end. Asked afterwards, ``fit_times`` still equals a fresh profile."""
    from asad.slurm.sim.cluster import PartitionState
    from asad.slurm.sim.config import PartitionSpec

    part = PartitionState(PartitionSpec("p", nodes=4, cores_per_node=8, mem_per_node_mb=1000), 0)
    rng = np.random.default_rng(3)
    part.fit_times(2, 100, 0.0)  # a cached shape, far behind once the log has been compacted
    running = []
    for step in range(20_000):
        if running and (len(running) > 6 or rng.random() < 0.5):
            nodes, slots = running.pop(int(rng.integers(len(running))))
            part.release(nodes, 2, 100, slots)
        else:
            free = [n for n in range(part.n) if part.free_c[n] >= 2 and part.free_m[n] >= 100]
            if free:
                nodes = [int(rng.choice(free))]
                running.append((nodes, part.allocate(nodes, 2, 100, 1000.0 + step)))
        assert len(part._change_log) <= 8 * part.n + 4096 + 1
    fresh = part._profile(2, 100, 5.0, ())[0]
    assert np.array_equal(part.fit_times(2, 100, 5.0), fresh)
