"""Background users: accounts, the closed loop that bounds the queue, and the sim-load bench."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asad.slurm.sim import DEFAULT_START_TIME as T0
from asad.slurm.sim import PRESETS, SimConfig, Simulator, make_simulator
from asad.slurm.sim.config import PartitionSpec
from asad.slurm.sim.load_sim import ClosedLoopSimulator
from asad.slurm.sim.load_users import UserModel, UserPopulation

DAY = 86400.0
MID = (PartitionSpec("batch", nodes=12, cores_per_node=28, mem_per_node_mb=128000, default=True, load=1.0),)


def user_pending_counts(sim) -> list[int]:
    users = sim.workload.users
    return [users.pending(u) for u in range(len(users))]


def test_arrivals_carry_users_and_accounts():
    sim = make_simulator("hpc2n", warmup_s=0)
    arrivals = sim.workload.arrivals(T0, T0 + DAY)
    users = sim.workload.users
    assert len(users.accounts) == round(602 * 28 / 180)  # one account per 180 cores
    assert len(users) > len(users.accounts)
    for a in arrivals[:500]:
        assert a.user == users.user_names[a.user_index] and a.account == users.user_accounts[a.user_index]
        assert a.account.startswith("a") and a.user.startswith("u")
    # Busy accounts submit most jobs, as on the real clusters (top 10 of 779: 45 %).
    per_account = Counter(a.account for a in arrivals)
    top10 = sum(n for _, n in per_account.most_common(10)) / len(arrivals)
    assert 0.5 < top10 < 0.9


def test_users_do_not_change_the_stream_of_jobs():
    """Users draw from their own generator: the same seed gives the same job shapes and times."""
    a = make_simulator("hpc2n", warmup_s=0, seed=4).workload.arrivals(T0, T0 + DAY)
    b = make_simulator("hpc2n", warmup_s=0, seed=4,
                       extra={"users": {"accounts": 3, "closed_loop": False}}).workload.arrivals(T0, T0 + DAY)
    assert [x[:7] for x in a] == [x[:7] for x in b]
    assert {x.account for x in b} == {"a000", "a001", "a002"}


def test_closed_loop_bounds_the_queue_and_open_stream_does_not():
    results = {}
    for loop in (True, False):
        sim = ClosedLoopSimulator(SimConfig(partitions=MID, warmup_s=0.0, seed=3, load={"batch": 2.0},
                                            extra={"users": {"closed_loop": loop}}))
        caps = int(sim.workload.users.cap.sum())
        worst = 0
        for day in range(1, 9):
            sim.run_until(T0 + day * DAY)
            worst = max(worst, sim.stats()["jobs_pending_eligible"])
            if loop:
                counts = user_pending_counts(sim)
                assert all(c <= cap for c, cap in zip(counts, sim.workload.users.cap))
        results[loop] = (worst, caps, sim.counters.get("background_dropped", 0))
    worst, caps, dropped = results[True]
    assert worst <= caps and dropped > 0
    open_worst, _, open_dropped = results[False]
    assert open_dropped == 0 and open_worst > 2 * caps  # twice the capacity offered: it piles up


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), load=st.floats(0.5, 3.0), min_cap=st.integers(1, 5),
       pile_up_days=st.floats(0.05, 1.0))
def test_no_user_ever_exceeds_the_cap(seed, load, min_cap, pile_up_days):
    sim = make_simulator("small", load=load, seed=seed, warmup_s=0,
                         extra={"users": {"min_cap": min_cap, "pile_up_days": pile_up_days}})
    users = sim.workload.users
    assert (users.cap >= min_cap).all()
    t = sim.now()
    while sim.now() < t + 2 * DAY:
        if sim.advance() is None:
            break
        counts = user_pending_counts(sim)
        assert all(c <= cap for c, cap in zip(counts, users.cap))
    sim.check_invariants()


def test_population_shares_caps_and_bad_models():
    rng = np.random.default_rng(0)
    pop = UserPopulation(UserModel(accounts=5, pile_up_days=0.5, min_cap=3), 1000, 400.0, rng)
    assert pop.share.sum() == pytest.approx(1.0)
    assert pop.accounts == [f"a{i:03d}" for i in range(5)]
    # A user's cap is half a day of their own submissions, at least 3.
    assert (pop.cap == np.maximum(3, np.round(pop.share * 400 * 0.5))).all()
    picks = np.bincount(pop.pick(rng, 200_000), minlength=len(pop)) / 200_000
    assert np.abs(picks - pop.share).max() < 0.01
    for bad in ({"accounts": 0}, {"users_per_account_mean": 0.5}, {"pile_up_days": 0}, {"min_cap": 0}):
        with pytest.raises(ValueError, match="user model"):
            make_simulator("small", extra={"users": bad})


def test_bare_simulator_queues_every_arrival():
    """Only the closed-loop simulator asks the users; a bare Simulator is the open stream."""
    sim = Simulator(SimConfig(partitions=MID, warmup_s=0.0, seed=3, load={"batch": 2.0}))
    sim.run_until(T0 + 2 * DAY)
    assert sim.workload.users.admitted == sim.workload.users.dropped == 0


def test_presets_offer_more_than_they_can_pack():
    """The big presets' default offered load is above what EASY backfill packs (~0.87 on hpc2n):
    the closed loop, not an empty queue, is what keeps them steady."""
    for name in ("hpc2n", "uppmax"):
        [part] = PRESETS[name]
        assert part.load > 1.0


# ---------------------------------------------------------------- the bench --------------------
def test_pending_at_noon_and_size_classes():
    from asad.bench.sim_load import pending_at_noon, size_class

    noon = T0 + DAY / 2
    elig = np.array([noon - 10, noon + 10, noon - 3600, noon + 10, noon + 10, noon])
    start = np.array([noon + 10, noon + 20, noon - 1, noon + DAY, noon + DAY + 1, noon + 1])
    assert pending_at_noon(elig, start).tolist() == [True, False, False, False, True, True]
    assert size_class(np.array([1, 2, 8, 9, 32, 33, 640])).tolist() == [0, 1, 1, 2, 2, 3, 3]


def test_steadiness_pools_runs():
    from asad.bench.sim_load import steadiness

    week = lambda n, mean: {"started": n, "wait_sum_h": n * mean}  # noqa: E731
    one = steadiness([[week(100, 2.0), week(100, 2.0), week(100, 2.3)]])
    assert one["last_over_first"] == pytest.approx(1.15) and one["met"]
    assert not steadiness([[week(100, 2.0), week(100, 2.5)]])["met"]
    pooled = steadiness([[week(100, 1.0), week(100, 3.0)], [week(300, 3.0), week(100, 0.5)]])
    assert pooled["first_week_wait_mean_h"] == pytest.approx(2.5)
    assert pooled["last_week_wait_mean_h"] == pytest.approx(1.75) and not pooled["met"]
    assert steadiness([[week(100, 2.0)]]) is None


def test_steadiness_interval_over_seeds():
    """From five runs on, the pooled ratio comes with a 90 % interval over seeds (runs resampled
    whole): it holds the point, and it is wide only where the runs disagree."""
    from asad.bench.sim_load import steadiness

    def week(started, mean_h):
        return {"started": started, "wait_sum_h": started * mean_h}

    same = steadiness([[week(100, 2.0), week(100, 2.2)]] * 6)
    assert same["last_over_first_90pct"] == [1.1, 1.1]
    mixed = steadiness([[week(100, 2.0), week(100, h)] for h in (1.0, 1.5, 2.0, 2.5, 3.0, 6.0)])
    low, high = mixed["last_over_first_90pct"]
    assert low < mixed["last_over_first"] < high and high - low > 0.5
    assert "last_over_first_90pct" not in steadiness([[week(100, 2.0), week(100, 2.2)]] * 4)


def test_real_medians_from_a_sample(tmp_path):
    from asad.bench.sim_load import real_medians

    header = ("cluster,job_unique_id,cluster_id,submit_time,eligible_time,start_time,end_time,"
              "req_cpus,req_mem_total,alloc_nodes,partition_id_x,account_id,time_limit_sec,state,req_tres\n")
    day = "2021-05-03"
    rows = [  # cluster, id, cluster id, submit, eligible, start, end, cpus, mem, nodes, ...
        f"cedar,1,1,{day} 10:00:00,{day} 10:00:00,{day} 12:00:00,{day} 13:00:00,1,100,1,1,1,7200,COMPLETED,cpu=1",
        f"cedar,2,1,{day} 10:00:00,{day} 10:00:00,{day} 14:00:00,{day} 15:00:00,1,100,1,1,1,7200,COMPLETED,cpu=1",
        f"graham,3,1,{day} 10:00:00,{day} 11:00:00,2021-05-04 11:00:00,2021-05-04 12:00:00,64,100,2,1,1,7200,"
        "COMPLETED,cpu=64",
        f"graham,4,1,{day} 10:00:00,{day} 10:00:00,2021-05-05 10:00:00,2021-05-05 12:00:00,1,100,1,1,1,7200,"
        'COMPLETED,"cpu=1,gres/gpu=1"',
    ]
    src = tmp_path / "jobs.csv.gz"
    with gzip.open(src, "wt") as fh:
        fh.write(header + "\n".join(rows) + "\n")
    real = real_medians(str(src))
    assert real["cedar"]["1"] == {"jobs": 2, "median_h": 3.0}
    assert real["graham"][">32"] == {"jobs": 1, "median_h": 24.0}
    assert real["both"]["1"]["jobs"] == 2  # the GPU job is left out
    assert real["both"]["2-8"] == {"jobs": 0, "median_h": None}


def bench(argv: list[str]) -> int:
    """``asad bench sim-load ...`` through the real parser, without ``asad.cli.main``'s logging
    set-up (which would bind structlog to this test's captured, soon closed, stderr)."""
    from asad.cli.main import build_parser

    args = build_parser().parse_args(["bench", "sim-load", *argv])
    return args.func(args)


def test_bench_sim_load_runs_and_reports(capsys):
    assert bench(["--preset", "small", "--days", "9", "--warmup-days", "1", "--seeds", "2", "--no-real",
                  "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["preset"] == "small" and len(out["runs"]) == 2
    run = out["runs"][0]
    assert [d["day"] for d in run["per_day"]] == list(range(1, 10))
    assert all(0.0 <= d["utilisation"] <= 1.0 for d in run["per_day"])
    assert sum(d["started"] for d in run["per_day"]) > 0
    assert [w["days"] for w in run["weeks"]] == ["2-8"]
    assert out["steady_pooled"] is None  # one whole week only: nothing to compare
    assert bench(["--preset", "small", "--days", "3", "--seeds", "1", "--no-real"]) == 0
    text = capsys.readouterr().out
    assert "day  util" in text and "(warm-up)" in text
    assert bench(["--preset", "small", "--days", "3", "--seeds", "1", "--no-real", "--backfill", "slurm",
                  "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["backfill"] == "slurm"


@pytest.mark.parametrize("argv, message", [
    (["--preset", "nope"], "invalid choice: 'nope'"),
    (["--days", "0"], "--days: must be 1 or more"),
    (["--load", "-1"], "--load: must be 0 or more"),
])
def test_bench_sim_load_bad_input(capsys, argv, message):
    with pytest.raises(SystemExit) as stopped:  # a usage error of the parser
        bench(["--no-real", *argv])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and message in err and "Traceback" not in err, err


def test_calibration_against_the_real_queues_when_present():
    from tests.conftest import shared_data

    from asad.bench.sim_load import SIZE_CLASSES, real_medians

    real = real_medians(str(shared_data("slurm-queue-cedar-graham-2021", "jobs.csv.gz")))
    assert set(real) == {"cedar", "graham", "both"}
    both = real["both"]
    assert sum(both[c]["jobs"] for c in SIZE_CLASSES) == 263_144
    # Bigger jobs wait longer in the real queues: what the calibration has to reproduce.
    assert both["1"]["median_h"] < both["9-32"]["median_h"] < both[">32"]["median_h"]


def test_bench_sim_reports_the_preset_load_and_per_day_clocks(capsys):
    from asad.cli.main import build_parser

    args = build_parser().parse_args(["bench", "sim", "--preset", "small", "--days", "2", "--per-day", "--json"])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["load"] == {"main": 0.7}  # the preset's own default, not a fixed number
    assert [d["day"] for d in out["per_day"]] == [1, 2] and out["jobs"] > 0
    assert out["per_day"][0]["cpu_s"] <= out["per_day"][1]["cpu_s"]
