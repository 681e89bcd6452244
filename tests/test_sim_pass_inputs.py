"""What ``backfill.compiled_pass`` hands the pass kernel (``pass_inputs``): the running pieces'
order kept from pass to pass equals a fresh sort, the tested jobs are the queued ones in
priority order, the plans kept as arrays read back as the records the old loop made, and each
planned job's earliest planned start is what the old loop made it."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asad.slurm.sim import pass_inputs, plan_kernel
from asad.slurm.sim.cluster import PartitionState
from asad.slurm.sim.config import PartitionSpec
from asad.slurm.sim.jobs import SimJob
from asad.slurm.sim.scheduler import JobQueue

N = 6

# a start: nodes (distinct), cores and memory per node, end (few values: ties in end are common)
start_st = st.tuples(st.lists(st.integers(0, N - 1), min_size=1, max_size=3, unique=True),
                     st.integers(1, 2), st.integers(0, 100), st.sampled_from([100.0, 160.0, 200.0, 250.0]))
step_st = st.tuples(st.lists(st.integers(0, 40), max_size=3),  # jobs to end (indices into the running)
                    st.lists(start_st, max_size=3),
                    st.booleans())  # whether the pass asks for the order after this step


@pytest.mark.skipif(plan_kernel.njit is None, reason="numba is not installed")
@settings(max_examples=200, deadline=None)
@given(st.lists(step_st, min_size=1, max_size=10), st.permutations(list(range(40))))
def test_kept_running_order_equals_a_fresh_sort(steps, job_ids) -> None:  # noqa: ANN001
    """Jobs start and end between passes (freed slots are taken by later pieces, job ids are not
    in end order); at every pass the kept order (``running_sorted``) equals the numpy lexsort
    over the active slots (``running_sorted_numpy``), array for array. Fails when the sort of the
    new pieces is not stable (a job's pieces in slot order; freed slots are reused out of order)
    and when a slot taken over by another piece is kept at its old place (both checked by
    breaking them)."""
    part = PartitionState(PartitionSpec("p", N, 8, 1000), 0)
    running: list[tuple[list[int], int, int, list[int]]] = []
    ids = iter(job_ids)
    for ends, starts, ask in steps:
        for k in ends:
            if running:
                nodes, c, m, slots = running.pop(k % len(running))
                part.release(nodes, c, m, slots)
        for nodes, c, m, end in starts:
            if all(part.free_c[n] >= c and part.free_m[n] >= m for n in nodes):
                jid = next(ids, None)
                if jid is None:
                    break
                slots = part.allocate(nodes, c, m, end, owner=jid)
                running.append((nodes, c, m, slots))
        if ask:
            got = pass_inputs.running_sorted(part)
            want = pass_inputs.running_sorted_numpy(part)
            assert len(got) == len(want) == 5
            for a, b in zip(got, want):
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)


def _job(jid: int, limit: float = 3600) -> SimJob:
    job = SimJob(jid, "j", [], 1, 2, 100, limit, 0.0, 10.0, background=True)
    job.sort_key = (0.0, jid)
    job.queued = True
    return job


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), min_size=0, max_size=60), st.integers(0, 20))
def test_tested_positions_are_the_queued_jobs_in_order(gone, max_test) -> None:  # noqa: ANN001
    """The positions are those of the loop they replace: from the head, the queued jobs, at most
    ``max_test`` (0: no bound). Jobs leave the queue as a start dequeues them (frozen: no
    compaction), the first ones included (the head moves)."""
    queue = JobQueue()
    queue.frozen = True
    jobs = [_job(i) for i in range(len(gone))]
    for job in jobs:
        queue.add(job)
    for job, g in zip(jobs, gone):
        if g:
            job.queued = False
            queue.remove(job)
    want = []
    for i in range(queue.first_live(), len(queue.jobs)):
        if queue.jobs[i].queued:
            want.append(i)
            if len(want) == max_test:
                break
    got = pass_inputs.tested_positions(queue, max_test).tolist()
    assert got == want
    assert [queue.jobs[i].job_id for i in got] == [j.job_id for j in jobs if j.queued][: max_test or None]


def test_float_limits_kept_and_restored_from_an_older_pickle() -> None:
    """The kernel reads the limit as the job holds it (a_limit_f); a queue pickled before the
    field existed gets it from its jobs on load."""
    queue = JobQueue()
    for i, limit in enumerate([60, 3600.5, 7200]):
        queue.add(_job(i, limit))
    np.testing.assert_array_equal(queue.a_limit_f[:3], [60.0, 3600.5, 7200.0])
    state = dict(queue.__dict__)
    del state["a_limit_f"]
    old = JobQueue.__new__(JobQueue)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    np.testing.assert_array_equal(old.a_limit_f[:3], [60.0, 3600.5, 7200.0])
    # and one pickled with them loads as it was
    again = pickle.loads(pickle.dumps(queue))
    for name in JobQueue._FIELDS:
        np.testing.assert_array_equal(getattr(again, name), getattr(queue, name))


def test_recorded_plans_lower_the_earliest_planned_start_and_read_back_in_start_order() -> None:
    """``record_plans``: each planned job's ``res_time_min`` becomes the earlier of its own and
    this plan's start (a job planned before keeps an earlier value, a job never planned gets
    this one), also for a job whose value was lowered outside the queue's mirror; the partition's
    reservations read back as the records the old loop made, sorted by start, ties as made."""
    part = PartitionState(PartitionSpec("p", N, 8, 1000), 0)
    queue = JobQueue()
    queue.frozen = True
    jobs = [_job(i, 100 * (i + 1)) for i in range(4)]
    jobs[1].res_time_min = 150.0  # earlier than this pass's plan: kept
    jobs[2].res_time_min = 900.0  # later: lowered
    for job in jobs:
        queue.add(job)
    jobs[3].res_time_min = 100.0  # lowered outside record_plans: the mirror still says inf
    live = pass_inputs.tested_positions(queue, 0)
    which = np.array([2, 1, 0, 3])
    ts = np.array([500.0, 200.0, 500.0, 300.0])
    plans = pass_inputs.record_plans(queue, live, which, ts, np.array([0, 2, 3, 5]), np.array([2, 1, 2, 1]),
                                     np.array([4, 5, 0, 1, 2, 3]))
    assert [j.res_time_min for j in jobs] == [500.0, 150.0, 500.0, 100.0]
    part.set_plans(plans)
    got = [(r.job_id, r.start, r.end, r.nodes, r.cores, r.mem_mb, r.slack_c) for r in part.reservations]
    assert got == [(1, 200.0, 400.0, [0], 2, 100, {0: 0}), (3, 300.0, 700.0, [3], 2, 100, {3: 0}),
                   (2, 500.0, 800.0, [4, 5], 2, 100, {4: 0, 5: 0}), (0, 500.0, 600.0, [1, 2], 2, 100, {1: 0, 2: 0})]
    # a second pass plans job 0 earlier: the mirror lets it through
    pass_inputs.record_plans(queue, live, np.array([0]), np.array([50.0]), np.array([0]), np.array([1]),
                             np.array([0]))
    assert jobs[0].res_time_min == 50.0
