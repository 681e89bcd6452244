"""The distributional figure's draws beyond the per-job launch delay and epilog (issue 37, branch
q37f): the OOM kill's lag, measured on the scenario's real runs, and the background loop's tick
length, measured in the kept slurmctld.logs, each drawn from its measured range."""

from __future__ import annotations

import statistics

import pytest

from asad.bench import sim_vs_real_pairs
from asad.bench.sim_vs_real import load_recordings, replay
from asad.bench.sim_vs_real_pairs import unperturbed
from asad.bench.sim_vs_real_pairs import (BF_PASS_SCALE_DIST, LOOP_TICK_DIST_S, SEED_DRAWS, by_scenario,
                                          latency_spread, oom_kill_latencies, seed_draws)
from asad.slurm.backend import JobRequest, JobState, SimTruth
from asad.slurm.sim import PartitionSpec, SimConfig, Simulator

RECORDINGS = {rec["id"]: rec for rec in load_recordings()}
pytestmark = pytest.mark.skipif(not RECORDINGS, reason="no recorded scenarios in tests/data/sim_vs_real")


def _oom_end(**cfg) -> float:
    """A lone job that passes its memory limit at half of its 40-s run: its end after its start."""
    part = (PartitionSpec("main", nodes=1, cores_per_node=4, mem_per_node_mb=4000, default=True),)
    sim = Simulator(SimConfig(partitions=part, backfill="none", warmup_s=0.0, **cfg))
    jid = sim.submit(JobRequest(name="oom", command="true", partition="main", nodes=1, ntasks=1, cpus_per_task=1,
                                mem_mb=500, time_limit_s=600, truth=SimTruth(runtime_s=40.0, peak_mem_mb=1000.0)))
    sim.run_until(sim.now() + 1000)
    st = sim.poll([jid])[jid]
    assert st.state is JobState.OUT_OF_MEMORY
    return st.end_time - st.start_time


def test_an_oom_kill_comes_its_drawn_lag_after_the_limit_is_passed():
    """jobacct_gather's OverMemoryKill samples the step's RSS once a JobAcctGatherFrequency and
    kills it at the first sample over the limit: the kill lags the allocation by a drawn lag."""
    assert _oom_end() == pytest.approx(20.0)
    assert _oom_end(oom_kill_lag_dist_s=(2.5, 2.5, 2.5)) == pytest.approx(22.5)
    lags = {round(_oom_end(oom_kill_lag_dist_s=(1.0, 2.0, 3.0), latency_seed=s) - 20.0, 6) for s in range(6)}
    assert len(lags) > 1 and all(1.0 <= lag <= 3.0 for lag in lags)
    with pytest.raises(ValueError, match="oom_kill_lag_dist_s"):
        SimConfig(partitions=(PartitionSpec("main", nodes=1, cores_per_node=1, mem_per_node_mb=10),),
                  oom_kill_lag_dist_s=(2.0, 1.0, 3.0)).validate()


def test_the_oom_lag_draw_leaves_the_other_latency_draws_as_they_were():
    """Its own generator: adding it moves no launch delay or epilog draw of the same seed."""
    rec = RECORDINGS.get("contention-fifo") or next(iter(RECORDINGS.values()))
    draws = {"launch_delay_dist_s": (0.03, 0.05, 0.13), "epilog_dist_s": (0.08, 0.4, 0.54)}
    plain = replay(rec, **draws, latency_seed=3)
    assert replay(rec, **draws, latency_seed=3, oom_kill_lag_dist_s=(1.0, 2.0, 3.0)) == plain  # no OOM jobs


@pytest.mark.skipif(not {"timeouts-oom", "ends-deps"} <= {r["scenario"] for r in RECORDINGS.values()},
                    reason="needs the timeouts-oom and ends-deps recordings")
def test_the_oom_kill_latency_is_measured_on_the_scenarios_runs():
    """Whole seconds from start to end beyond oom_after_s: timeouts-oom runs 1-2 and 4-5 1-3 s
    (median 1), ends-deps runs 1-5 1-8 s (median 4; runs 4-5 of the ninth session kill sooner than
    runs 1-3's 4-8 s); the lag drawn is that less the launch latency (the program starts after it),
    and the replay then takes no fixed 1.5 s on top."""
    groups = by_scenario(list(RECORDINGS.values()))
    assert oom_kill_latencies(groups["timeouts-oom"]) == (1.0, 1.0, 3.0)
    assert oom_kill_latencies(groups["ends-deps"]) == (1.0, 4.0, 8.0)
    assert oom_kill_latencies([r for r in groups["ends-deps"] if r["run"] <= 3]) == (4.0, 5.0, 8.0)
    assert oom_kill_latencies(groups["deps-fifo"]) is None
    rec = groups["ends-deps"][0]
    got = seed_draws(rec, groups["ends-deps"], 0)
    assert got["oom_kill_lag_dist_s"] == (0.95, 3.95, 7.95)
    assert "oom_kill_lag_dist_s" not in seed_draws(rec, groups["ends-deps"], 0, frozenset())
    mem = [j["label"] for j in rec["jobs"] if j["oom_after_s"] is not None]
    fixed = replay(rec)
    late = []
    for seed in range(3):
        drawn = replay(rec, **seed_draws(rec, groups["ends-deps"], seed, frozenset({"oom_kill"})))
        late += [drawn[k]["end"] - drawn[k]["start"] - (fixed[k]["end"] - fixed[k]["start"]) for k in mem]
    # the drawn lag (median 3.95 s) in place of the fixed 1.5 s, not on top of it (whole seconds)
    assert 2 <= statistics.median(late) <= 4, late


def test_the_loop_tick_range_is_measured_in_the_kept_logs():
    """LOOP_TICK_DIST_S is the (min, median, max) of the tick lengths between the loop's logged
    passes that are a countable number of ticks apart (sim_vs_real_logs.loop_tick_spans)."""
    from asad.bench.sim_vs_real_logs import loop_tick_spans

    ticks = sorted(t for rec in RECORDINGS.values() for _, _, t in loop_tick_spans(rec))
    if not ticks:
        pytest.skip("no kept slurmctld.logs")
    assert len(ticks) >= 10
    assert LOOP_TICK_DIST_S == pytest.approx((ticks[0], statistics.median(ticks), ticks[-1]), abs=1e-4)
    assert all(1.0 < t < 1.01 for t in ticks)


def test_each_seed_draws_its_loop_tick_from_the_measured_range():
    rec = RECORDINGS.get("aged-deps.run5") or next(iter(RECORDINGS.values()))
    ticks = [seed_draws(rec, [rec], seed)["loop_tick_s"] for seed in range(20)]
    assert len(set(ticks)) == 20 and all(LOOP_TICK_DIST_S[0] <= t <= LOOP_TICK_DIST_S[2] for t in ticks)
    assert seed_draws(rec, [rec], 4)["loop_tick_s"] == ticks[4]  # a seed repeats it
    assert "loop_tick_s" not in seed_draws(rec, [rec], 0, frozenset({"oom_kill"}))
    # the tick moves the replay: the loop's full passes and time-limit checks sit on it
    starts = {tuple(sorted((k, v["start"]) for k, v in replay(rec, loop_tick_s=t).items())) for t in ticks[:6]}
    assert len(starts) > 1


def test_the_figure_replays_each_seed_with_every_draw(monkeypatch):
    """latency_spread hands each seed's draws to the replay (the default: SEED_DRAWS)."""
    seen = []

    def fake_replay(rec, **kw):  # noqa: ANN001, ANN003
        seen.append(kw)
        return {j["label"]: {"start": j["start"], "end": j["end"], "state": j["state"]} for j in rec["jobs"]}

    monkeypatch.setattr(sim_vs_real_pairs, "replay", fake_replay)
    recs = [r for r in RECORDINGS.values() if r["scenario"] == "timeouts-oom"]
    if len(by_scenario(recs).get("timeouts-oom", [])) < 2:
        pytest.skip("needs two unperturbed runs of timeouts-oom")
    runs = by_scenario(recs)["timeouts-oom"]  # the unperturbed runs (4 since the ninth session)
    rows = latency_spread(recs, 3)
    assert SEED_DRAWS == {"oom_kill", "loop_tick", "bf_pass"}
    assert len(rows) == len(runs) and all(r["sim_tau_median"] == 1.0 for r in rows)
    assert len(seen) == 3 * len(runs) and {kw["latency_seed"] for kw in seen} == {0, 1, 2}
    assert all("oom_kill_lag_dist_s" in kw and LOOP_TICK_DIST_S[0] <= kw["loop_tick_s"] <= LOOP_TICK_DIST_S[2]
               for kw in seen)
    assert all(("bf_pass_cost_s" in kw) == unperturbed(rec) for kw, rec in zip(seen, [r for r in runs for _ in range(3)]))


def test_the_backfill_pass_scale_range_is_measured_in_the_kept_logs():
    """BF_PASS_SCALE_DIST: each kept log's measured pass drift over BF_PASS_COST_S's fit (the fit
    over all of them), (min, median, max): the runs' passes were 0.80-1.38 times the fit."""
    from asad.bench.sim_vs_real import BF_PASS_COST_S
    from asad.bench.sim_vs_real_logs import bf_pass_scales

    scales = sorted(bf_pass_scales(list(RECORDINGS.values()), BF_PASS_COST_S).values())
    if not scales:
        pytest.skip("no kept slurmctld.logs")
    assert len(scales) >= 10
    assert BF_PASS_SCALE_DIST == pytest.approx((scales[0], statistics.median(scales), scales[-1]), abs=1e-3)


def test_each_seed_scales_the_backfill_pass_length_within_the_measured_range():
    from asad.bench.sim_vs_real import BF_PASS_COST_S

    rec = RECORDINGS.get("ties-fifo") or next(iter(RECORDINGS.values()))
    got = [seed_draws(rec, [rec], seed)["bf_pass_cost_s"] for seed in range(10)]
    scales = [cost[0] / BF_PASS_COST_S[0] for cost in got]
    assert len(set(scales)) == 10 and all(BF_PASS_SCALE_DIST[0] <= x <= BF_PASS_SCALE_DIST[2] for x in scales)
    assert all(cost[1] / BF_PASS_COST_S[1] == pytest.approx(x) for cost, x in zip(got, scales))
    assert "bf_pass_cost_s" not in seed_draws(rec, [rec], 0, frozenset({"loop_tick"}))
    perturbed = next((r for r in RECORDINGS.values() if not unperturbed(r)), None)
    if perturbed is not None:  # DebugFlags=Backfill: its own fixed drift, no scaled fit
        assert "bf_pass_cost_s" not in seed_draws(perturbed, [perturbed], 0)


def test_the_seed_misses_script_finds_the_first_start_second_difference_and_parting():
    """scripts/sim_seed_misses.py's reading: the first job in Slurm's start order (ties by id)
    replayed in another second, and the first more than 2 s off."""
    from tests.script_module import load_script

    module = load_script("sim_seed_misses")
    rec = {"jobs": [{"label": "a", "job_id": 2, "submit": 100.0, "start": 101.0},
                    {"label": "b", "job_id": 1, "submit": 100.0, "start": 101.0},
                    {"label": "c", "job_id": 3, "submit": 100.0, "start": 110.0},
                    {"label": "d", "job_id": 4, "submit": 100.0, "start": None}]}
    sim = {"a": {"start": 102.0}, "b": {"start": 101.0}, "c": {"start": 140.0}, "d": {"start": 150.0}}
    assert module.first_difference(rec, sim) == ("a", 1.0, 1.0)
    assert module.first_difference(rec, sim, module.FAR_S) == ("c", 10.0, 30.0)
    assert module.first_difference(rec, {**sim, "a": {"start": 101.0}, "c": {"start": 110.0}}) is None
