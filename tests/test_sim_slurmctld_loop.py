"""slurmctld's background loop as the simulator models it (issue 37): the time-limit check (whole seconds,
every 30 s of the drifting loop; a job killed at the first check whose second reaches its whole-second
start + limit) and the pass a submission asks for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asad.slurm.backend import JobRequest, JobState, SimTruth
from asad.slurm.sim import DEFAULT_START_TIME, make_simulator
from asad.slurm.sim.limit_checks import LimitChecks


def c_loop_checks(origin: float, tick: float, n_ticks: int) -> list[tuple[float, int]]:
    """_slurmctld_background transcribed: last_timelimit_time = time(NULL) before the loop; each
    ~1 s tick, ``if (difftime(now, last_timelimit_time) >= PERIODIC_TIMEOUT)`` checks and sets it."""
    last = math.floor(origin)
    out = []
    for k in range(1, n_ticks):
        t = origin + k * tick
        now = math.floor(t)
        if now - last >= 30:
            last = now
            out.append((t, now))
    return out


@pytest.mark.parametrize("origin,tick", [(1795450088.792, 1.0022), (1000.25, 1.0069), (500.5, 1.0)])
def test_checks_fall_where_slurmctlds_loop_puts_them(origin, tick):
    truth = c_loop_checks(origin, tick, 2000)
    checks = LimitChecks(origin, tick, 30)
    for due in range(int(origin) + 1, int(truth[-1][1]) + 1, 7):
        want = next(t for t, sec in truth if sec >= due)
        assert checks.kill_at(due) == pytest.approx(want, abs=1e-6), due


def test_a_job_started_late_in_a_second_dies_at_the_check_of_its_whole_second_limit():
    # Slurm's end_time is the whole-second start + limit: a job started at T+0.7 with a 60-s limit
    # is past it at the T+60 check (end_time T+60 <= now T+60). Comparing fractional instants
    # (T+60.7 > T+60) let it run to the T+90 check: 89 s instead of Slurm's 60.
    sim = make_simulator("small", load=0.0, seed=1)
    assert DEFAULT_START_TIME % 30 == 0  # the small preset's checks fall on multiples of 30 s
    sim.run_until(DEFAULT_START_TIME + 0.7)
    jid = sim.submit(JobRequest(name="over", command="true", cpus_per_task=1, mem_mb=100, time_limit_s=60,
                                truth=SimTruth(runtime_s=500)))
    sim.run_until(DEFAULT_START_TIME + 600)
    st = sim.poll([jid])[jid]
    assert st.state is JobState.TIMEOUT
    assert st.start_time == pytest.approx(DEFAULT_START_TIME + 0.7)
    assert st.end_time == pytest.approx(DEFAULT_START_TIME + 60)


def test_a_submission_waits_for_the_loop_pass_it_asked_for():
    # sbatch only queues a scheduler request (queue_job_scheduler, proc_req.c): the background
    # loop runs the pass once batch_sched_delay (3 s) has passed since its last one. Before the fix
    # the request leaked into the next unrelated event (here the priority recalculation at t=2),
    # which ran a main pass there.
    from asad.slurm.sim import PartitionSpec, SimConfig, Simulator

    part = (PartitionSpec("main", nodes=2, cores_per_node=4, mem_per_node_mb=4000, max_time_s=None, default=True),)
    sim = Simulator(SimConfig(partitions=part, start_time=0.0, backfill="none", priority="multifactor",
                              priority_calc_period_s=1.0, batch_sched_delay_s=3.0, warmup_s=0.0,
                              sched_interval_s=60.0, timer_origin_s=0.0))

    def job(name: str) -> int:
        return sim.submit(JobRequest(name=name, command="true", cpus_per_task=1, mem_mb=100, time_limit_s=600,
                                     truth=SimTruth(runtime_s=100)))

    sim.run_until(0.2)
    first = job("first")
    sim.run_until(1.5)
    assert sim.poll([first])[first].start_time == pytest.approx(1.0)  # the loop's next tick
    second = job("second")
    sim.run_until(10.0)
    assert sim.poll([second])[second].start_time == pytest.approx(4.0)  # 3 s after the pass at 1


@pytest.mark.parametrize("runtime,state", [(60.5, JobState.TIMEOUT), (59.9, JobState.COMPLETED)])
def test_a_clean_exit_in_a_second_past_the_limit_is_a_timeout(runtime, state):
    # job_complete (job_mgr.c): a job that exits 0 when end_time + OverTimeLimit < now (whole
    # seconds) is TIMEOUT, at its own end. Started at T+1.7 with a 60-s limit (end_time T+61; the
    # next check is at T+90): ending at T+62.2 is past it, at T+61.6 it is not.
    sim = make_simulator("small", load=0.0, seed=1)
    sim.run_until(DEFAULT_START_TIME + 1.7)
    jid = sim.submit(JobRequest(name="edge", command="true", cpus_per_task=1, mem_mb=100, time_limit_s=60,
                                truth=SimTruth(runtime_s=runtime)))
    sim.run_until(DEFAULT_START_TIME + 600)
    st = sim.poll([jid])[jid]
    assert st.state is state
    assert st.end_time == pytest.approx(DEFAULT_START_TIME + 1.7 + runtime)


def c_loop_pass_ticks(origin: float, tick: float, n_ticks: int, requests: list[float], sched_interval: int,
                      batch_delay: int, first_request: float) -> list[float]:
    """_slurmctld_background's main passes transcribed (controller.c): ``last_sched_time`` and
    ``last_full_sched_time`` are the loop's start second; each tick, ``if (difftime(now,
    last_full_sched_time) >= sched_interval)`` runs a full pass and zeroes ``job_sched_cnt``, else
    ``if (job_sched_cnt && difftime(now, last_sched_time) >= batch_sched_delay)`` runs one; either
    sets ``last_sched_time``. ``sched_interval`` is the compiled-in 60 until the first
    ``_schedule()`` parses SchedulerParameters (job_scheduler.c). ``first_request``: the nodes'
    registrations queueing the first pass. Returns the passes' instants."""
    last_full = last_sched = math.floor(origin)
    interval, count, out = 60, 0, []
    pending = sorted(requests + [first_request])
    for k in range(1, n_ticks):
        t = origin + k * tick
        while pending and pending[0] < t:
            pending.pop(0)
            count += 1
        now = math.floor(t)
        if now - last_full >= interval:
            last_full, count = now, 0
        elif count and now - last_sched >= batch_delay:
            count = 0
        else:
            continue
        last_sched = now
        interval = sched_interval
        out.append(t)
    return out


@pytest.mark.parametrize("origin,tick,seed", [(1000.3, 1.0022, 1), (2000.95, 1.0022, 2), (3000.5, 1.0, 3)])
def test_after_a_restart_a_submission_starts_at_the_pass_slurmctlds_loop_runs(origin, tick, seed):
    # Issue 37: the first _schedule() after slurmctld's start comes at loop tick 5 (the nodes
    # answer the ping of tick 3 about a second later); until then sched_interval is 60, so the
    # first full pass is at tick 6, not 5 (slurmctld.log of the local Slurm: a job submitted at
    # the loop's start + 5.7 s started by "sched: Allocate" at tick 6). Every job here starts at
    # the first main pass after its submission (an empty cluster, no backfill, nothing ends).
    from asad.slurm.sim import PartitionSpec, SimConfig, Simulator

    rng = np.random.default_rng(seed)
    submits = sorted(origin + rng.uniform(4.2, 70.0, 14))
    part = (PartitionSpec("main", nodes=2, cores_per_node=16, mem_per_node_mb=32000, max_time_s=None, default=True),)
    sim = Simulator(SimConfig(partitions=part, start_time=float(math.floor(origin + 4)), backfill="none",
                              priority="fifo", batch_sched_delay_s=3.0, sched_interval_s=5.0, warmup_s=0.0,
                              timer_origin_s=origin, loop_tick_s=tick, first_sched_tick=5, epilog_s=0.0))
    ids = []
    for t in submits:
        sim.run_until(t)
        ids.append(sim.submit(JobRequest(name="j", command="true", cpus_per_task=1, mem_mb=100,
                                         time_limit_s=600, truth=SimTruth(runtime_s=500))))
    sim.run_until(origin + 100)
    passes = c_loop_pass_ticks(origin, tick, 100, list(submits), 5, 3, origin + 4 * tick + 0.02)
    assert passes[:2] == pytest.approx([origin + 5 * tick, origin + 6 * tick])  # the first full pass at 6
    got = sim.poll(ids)
    for t, jid in zip(submits, ids):
        assert got[jid].start_time == pytest.approx(next(p for p in passes if p > t)), t


def _cluster_with_one_waiting(share: float, epilog_s: float = 0.4):
    """One 4-core node filled by a job ending at 10.3 s; a 4-core job waits behind it. No backfill,
    full passes every 60 s: only the pass the end brings can start the waiting job."""
    from asad.slurm.sim import PartitionSpec, SimConfig, Simulator

    part = (PartitionSpec("main", nodes=1, cores_per_node=4, mem_per_node_mb=4000, max_time_s=None, default=True),)
    sim = Simulator(SimConfig(partitions=part, start_time=0.0, backfill="none", priority="fifo",
                              batch_sched_delay_s=3.0, warmup_s=0.0, sched_interval_s=60.0, timer_origin_s=0.0,
                              epilog_s=epilog_s, already_complete_share=share))
    first = sim.submit(JobRequest(name="first", command="true", cpus_per_task=4, mem_mb=100, time_limit_s=600,
                                  truth=SimTruth(runtime_s=9.3)))
    waiting = sim.submit(JobRequest(name="waiting", command="true", cpus_per_task=4, mem_mb=100,
                                    time_limit_s=600, truth=SimTruth(runtime_s=5)))
    sim.run_until(60.0)
    return sim.poll([first, waiting])[first], sim.poll([first, waiting])[waiting]


def test_an_end_by_slurmds_already_complete_reply_only_queues_the_pass():
    # With no Epilog, slurmd answers REQUEST_TERMINATE_JOB with ESLURMD_KILL_JOB_ALREADY_COMPLETE
    # once the batch step is gone (_rpc_terminate_job, slurmd/req.c); slurmctld's agent marks the
    # nodes idle and calls queue_job_scheduler() (agent.c), not schedule(): the waiting job starts
    # at the loop's batch pass (a tick, batch_sched_delay after the loop's last pass at 1 s), not
    # at the end + epilog as after an epilog-complete message (_slurm_rpc_epilog_complete).
    first, waiting = _cluster_with_one_waiting(share=0.0)
    assert waiting.start_time == pytest.approx(first.end_time + 0.4)
    first, waiting = _cluster_with_one_waiting(share=1.0)
    assert waiting.start_time == pytest.approx(math.ceil(first.end_time + 0.03))  # the next tick
    assert waiting.start_time > first.end_time + 0.4


def test_a_job_end_runs_no_pass_of_its_own_while_its_nodes_complete():
    # _slurm_rpc_complete_batch_script and job_complete() queue no pass (proc_req.c, job_mgr.c):
    # a job submitted at 10.1 s onto an idle node waits for the ended job's epilog message
    # (its schedule() at end + 0.4 s) or the loop's batch pass, not for the end itself (10.3 s).
    from asad.slurm.sim import PartitionSpec, SimConfig, Simulator

    part = (PartitionSpec("main", nodes=2, cores_per_node=4, mem_per_node_mb=4000, max_time_s=None, default=True),)
    for epilog_s, lag in ((0.4, 0.4), (0.0, 0.0)):  # no completing phase: the release is the end
        sim = Simulator(SimConfig(partitions=part, start_time=0.0, backfill="none", priority="fifo",
                                  batch_sched_delay_s=3.0, warmup_s=0.0, sched_interval_s=60.0, timer_origin_s=0.0,
                                  epilog_s=epilog_s, already_complete_share=0.0))
        first = sim.submit(JobRequest(name="first", command="true", cpus_per_task=4, mem_mb=100, time_limit_s=600,
                                      truth=SimTruth(runtime_s=9.3)))  # starts at tick 1
        sim.run_until(10.1)
        late = sim.submit(JobRequest(name="late", command="true", cpus_per_task=4, mem_mb=100, time_limit_s=600,
                                     truth=SimTruth(runtime_s=5)))
        sim.run_until(60.0)
        got = sim.poll([first, late])
        assert got[first].end_time == pytest.approx(10.3)
        assert got[late].start_time == pytest.approx(got[first].end_time + lag), epilog_s


def test_the_share_of_replies_is_an_even_sequence_or_a_draw():
    from asad.slurm.sim.job_end import takes_reply

    assert [takes_reply(2 / 3, None, k) for k in range(6)] == [False, True, True, False, True, True]
    assert not any(takes_reply(0.0, None, k) for k in range(10))
    assert all(takes_reply(1.0, None, k) for k in range(10))
    rng = np.random.default_rng(0)
    draws = [takes_reply(0.25, rng, k) for k in range(4000)]
    assert 0.22 < sum(draws) / len(draws) < 0.28


def _bf_pass_instants(cost: tuple[float, float] | None) -> list[tuple[float, int]]:
    """(instant, eligible pending jobs) of every backfill look while one long job holds the only
    node and ten wait behind it, arriving one by one so the pending count grows."""
    from asad.slurm.sim import PartitionSpec, SimConfig, Simulator

    part = (PartitionSpec("main", nodes=1, cores_per_node=4, mem_per_node_mb=4000, max_time_s=None, default=True),)
    sim = Simulator(SimConfig(partitions=part, start_time=0.0, backfill="slurm", priority="fifo",
                              bf_interval_s=2.0, bf_pass_cost_s=cost, batch_sched_delay_s=3.0, warmup_s=0.0,
                              sched_interval_s=60.0, timer_origin_s=0.25))
    sim.submit(JobRequest(name="long", command="true", cpus_per_task=4, mem_mb=100, time_limit_s=600,
                          truth=SimTruth(runtime_s=300)))
    seen: list[tuple[float, int]] = []
    run_passes = sim._run_passes

    def spy(now: float) -> None:
        if sim._bf_wanted:
            seen.append((now, sim.sched.eligible_count))
        run_passes(now)

    sim._run_passes = spy
    for k in range(10):
        sim.run_until(3.0 + 2.5 * k)
        sim.submit(JobRequest(name=f"w{k}", command="true", cpus_per_task=4, mem_mb=100, time_limit_s=600,
                              truth=SimTruth(runtime_s=5)))
    sim.run_until(60.0)
    return seen


def test_the_backfill_thread_sleeps_bf_interval_after_its_pass_ends():
    # backfill_agent: _my_sleep(bf_interval) comes after _attempt_backfill() returns and
    # last_backfill_time = time(NULL) is taken at its end (backfill.c): each pass's length
    # (base + per tested job) pushes every later pass. On the fixed grid (None) the looks stay
    # bf_interval apart whatever the queue.
    cost = (0.01, 0.002)
    seen = [(t, n) for t, n in _bf_pass_instants(cost) if t > 3.0]  # from w0 on something pends
    assert len(seen) >= 20
    assert any(n >= 5 for _, n in seen)
    for (t0, n0), (t1, _) in zip(seen, seen[1:]):
        assert t1 - t0 == pytest.approx(2.0 + cost[0] + cost[1] * n0, abs=1e-9), (t0, n0)
    grid = [(t, n) for t, n in _bf_pass_instants(None) if t > 3.0]
    assert {round(t1 - t0, 9) for (t0, _), (t1, _) in zip(grid, grid[1:])} == {2.0}


def test_a_negative_backfill_pass_length_is_refused():
    from asad.slurm.sim import PartitionSpec, SimConfig

    part = (PartitionSpec("main", nodes=1, cores_per_node=4, mem_per_node_mb=4000, default=True),)
    with pytest.raises(ValueError, match="bf_pass_cost_s"):
        SimConfig(partitions=part, bf_pass_cost_s=(0.001, -0.0001)).validate()


@pytest.mark.parametrize("min_interval", [0.0, 0.1, 0.3])
def test_a_pass_asked_for_within_sched_min_interval_of_the_last_waits_for_it(min_interval):
    # _sched_agent (job_scheduler.c) runs _schedule() only once delta_t > sched_min_interval since
    # the last one ended, whoever asked: the epilog message's schedule() at 5.05 s, 0.05 s after
    # the loop's full pass at 5.0 s (which found the node still busy), runs at 5.0 + the interval.
    from asad.slurm.sim import PartitionSpec, SimConfig, Simulator

    part = (PartitionSpec("main", nodes=1, cores_per_node=4, mem_per_node_mb=4000, max_time_s=None, default=True),)
    sim = Simulator(SimConfig(partitions=part, start_time=0.0, backfill="none", priority="fifo",
                              batch_sched_delay_s=3.0, warmup_s=0.0, sched_interval_s=5.0, timer_origin_s=0.0,
                              epilog_s=0.4, already_complete_share=0.0, sched_min_interval_s=min_interval))
    first = sim.submit(JobRequest(name="first", command="true", cpus_per_task=4, mem_mb=100, time_limit_s=600,
                                  truth=SimTruth(runtime_s=3.65)))  # tick 1 to 4.65, nodes back at 5.05
    waiting = sim.submit(JobRequest(name="waiting", command="true", cpus_per_task=4, mem_mb=100,
                                    time_limit_s=600, truth=SimTruth(runtime_s=5)))
    sim.run_until(60.0)
    got = sim.poll([first, waiting])
    assert got[first].start_time == pytest.approx(1.0)
    assert got[first].end_time == pytest.approx(4.65)
    assert got[waiting].start_time == pytest.approx(max(5.05, 5.0 + min_interval))


def _killed_then_waiting(timeout_epilog_s: float | None, runtime_s: float = 500.0):
    """One node; "over" (60-s limit) holds it until it is killed (or ends), "waiting" needs it."""
    from asad.slurm.sim import PartitionSpec, SimConfig, Simulator

    part = (PartitionSpec("main", nodes=1, cores_per_node=4, mem_per_node_mb=4000, max_time_s=None, default=True),)
    sim = Simulator(SimConfig(partitions=part, start_time=0.0, backfill="none", priority="fifo",
                              batch_sched_delay_s=3.0, warmup_s=0.0, sched_interval_s=60.0, timer_origin_s=0.0,
                              epilog_s=0.4, already_complete_share=1.0, timeout_epilog_s=timeout_epilog_s))
    over = sim.submit(JobRequest(name="over", command="true", cpus_per_task=4, mem_mb=100, time_limit_s=60,
                                 truth=SimTruth(runtime_s=runtime_s)))
    waiting = sim.submit(JobRequest(name="waiting", command="true", cpus_per_task=4, mem_mb=100,
                                    time_limit_s=600, truth=SimTruth(runtime_s=5)))
    sim.run_until(200.0)
    got = sim.poll([over, waiting])
    return got[over], got[waiting]


def test_a_time_limit_kill_brings_the_nodes_back_by_the_epilog_message_never_the_reply():
    # slurmctld kills a job at its limit with REQUEST_KILL_TIMELIMIT; slurmd's _rpc_timelimit
    # (slurmd/req.c, 22.05.8) signals the running step, then calls _rpc_terminate_job with the
    # connection closed, so the nodes come back by MESSAGE_EPILOG_COMPLETE and its schedule() runs
    # at once, even where every other end takes the ALREADY_COMPLETE reply (share 1.0). Measured:
    # 36 of 36 kills in the four slurmd-logged runs, the message 13-112 ms after the kill.
    over, waiting = _killed_then_waiting(0.05)
    assert over.state is JobState.TIMEOUT
    assert waiting.start_time == pytest.approx(over.end_time + 0.05)
    # without the rule the kill takes the reply like the other ends: the pass waits for a tick
    over, waiting = _killed_then_waiting(None)
    assert waiting.start_time == pytest.approx(math.ceil(over.end_time + 0.03))
    assert waiting.start_time > over.end_time + 0.5


def test_a_clean_exit_recorded_as_timeout_still_races():
    # A job whose program ends by itself in a second past its limit is recorded TIMEOUT by
    # job_complete() (job_mgr.c) at its own end, but no kill was sent: slurmd's terminate request
    # races the step's exit as for any end, so the reply (share 1.0) applies.
    over, waiting = _killed_then_waiting(0.05, runtime_s=61.5)  # ends at 62.5 s, started at 1 s
    assert over.state is JobState.TIMEOUT
    assert over.end_time < 90  # before the first check at or after its limit could kill it
    assert waiting.start_time == pytest.approx(math.ceil(over.end_time + 0.03))
