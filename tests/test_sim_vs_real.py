"""Runs recorded on the local real Slurm 22.05 (tests/data/sim_vs_real/, recorded by
``asad bench sim-vs-real --record``) replayed in the simulator, without a cluster.

The targets (Kendall tau >= 0.95, median abs start difference <= 2 s) are reported by
``asad bench sim-vs-real`` and docs/results/sim.md; these tests pin what the replay must keep:
every recorded job gets the final state Slurm gave it (but for knife-edge cases), the Slurm
backfill model stays at least as close to the real order as the measured floors below (a
regression guard, a little under what commit time measured), and the model is closer to Slurm
than the EASY model it replaced.
"""

from __future__ import annotations

import pytest

from asad.bench.sim_vs_real import (compare, compare_runs, kendall_tau, load_recordings, noise_floor, replay,
                                    sim_settings, submit_instants)

RECORDINGS = {rec["id"]: rec for rec in load_recordings()}  # every run of every scenario
# Kendall tau of start order measured at commit time (asad bench sim-vs-real), minus 0.03 (issue 37,
# branch j37f: the held priority and the first full pass after slurmctld's start raised aged-deps'
# floors and lowered fairshare-shares.run2's, multifactor.run2's and fairshare-users' runs;
# branch k37f: no fair-share charge at a job's end without enforced limits lowered fairshare's two
# runs, 0.973 -> 0.916, and fairshare-users' runs 1-2, 0.895 -> 0.859 and 0.860 -> 0.844; the
# ALREADY_COMPLETE reply on 2 of 3 ends lowered aged-deps' runs 1 and 3, 0.998 -> 0.937 and
# 0.999 -> 0.946, and ends-deps' run 1, 0.928 -> 0.889, and raised others: docs/results/sim.md)
TAU_FLOOR = {"contention-fifo": 0.93, "contention-fifo.run2": 0.93, "contention-fifo.run3": 0.94,
             "deps-fifo": 0.94, "deps-fifo.run2": 0.97, "deps-fifo.run3": 0.95,
             "multifactor": 0.91, "multifactor.run2": 0.90, "multifactor.run3": 0.90,
             "timeouts-oom": 0.94, "timeouts-oom.run2": 0.95, "timeouts-oom.run3": 0.92,
             "aged-deps": 0.90, "aged-deps.run2": 0.85, "fairshare": 0.88, "fairshare.run2": 0.88,
             "fairshare-shares": 0.78, "fairshare-shares.run2": 0.82,
             "fairshare-users": 0.82, "fairshare-users.run2": 0.81,
             # recorded for issue 37 (2026-11-27)
             "aged-deps.run3": 0.91, "fairshare-shares.run3": 0.79, "fairshare-users.run3": 0.88,
             "deps-fifo.run4": 0.96, "multifactor.run4": 0.84, "ends-deps": 0.85, "ends-deps.run2": 0.74,
             "ends-deps.run3": 0.89,
             # recorded with its slurmctld.log (logs/), 2026-11-27 (branch j37f)
             "aged-deps.run4": 0.92, "multifactor.run5": 0.95,
             "fairshare-shares.run4": 0.81}
TAU_FLOOR.update({"ties-fifo": 0.96, "ties-fifo.run2": 0.91, "ties-fifo.run3": 0.96})
# branch n37f: the decay thread on whole seconds raised fairshare-shares run 4, 0.867 -> 0.887; no
# pass at a job's end itself raised fairshare's runs, 0.916 -> 0.929 and 0.930 (less 0.03, floored)
TAU_FLOOR.update({"fairshare-shares.run4": 0.85, "fairshare": 0.89, "fairshare.run2": 0.89})
# branch o37f: the backfill thread sleeps bf_interval after its pass ends, each pass as long as
# its queue (BF_PASS_COST_S): fairshare 0.929 / 0.930 -> 0.995 / 0.997, multifactor 0.950 ->
# 0.974, fairshare-users 0.869 -> 0.893 (less 0.03); deps-fifo run 4 falls 0.996 -> 0.959 (its
# pair rows still met)
TAU_FLOOR.update({"fairshare": 0.96, "fairshare.run2": 0.96, "multifactor": 0.94, "fairshare-users": 0.86,
                  "deps-fifo.run4": 0.93})
# deps-fifo runs 2-4: 1.000, 0.986, 0.996 since a will-run batch takes away only its own jobs
# (branch m37f; 0.934, 0.946, 0.944 before); ties-fifo (recorded by m37f) 0.994, 0.940 (0.905
# without that rule), 0.998. The floors are those less 0.03.
# branch p37g: ties-fifo run 3's first _schedule() is read as the loop's fifth tick (5.008 s after
# its start; it was rounded down to the fourth), so the first full pass comes at tick 6 as logged
# (m0 and s00 allocated at 12.563 s) and m1 starts in its logged second; later passes diverge:
# 0.979 -> 0.932 (see docs/results/sim.md, branch p37g).
TAU_FLOOR.update({"ties-fifo.run3": 0.90})

pytestmark = pytest.mark.skipif(not RECORDINGS, reason="no recorded scenarios in tests/data/sim_vs_real")


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_replay_gives_jobs_slurms_final_state(name):
    # Knife-edge cases may differ: a job whose run equals its limit (sleep 60 under a 60 s limit:
    # ends-deps' e28, fairshare-users' u42) is TIMEOUT in Slurm only if its launch latency carries
    # its exit into the second after its limit (job_complete, job_mgr.c). At most one such job per
    # recording (3 of 1,414 jobs in all; multifactor's m39 became right with that rule).
    rec = RECORDINGS[name]
    sim = replay(rec)
    assert set(sim) == {j["label"] for j in rec["jobs"]}
    wrong = [(j["label"], j["state"], sim[j["label"]]["state"]) for j in rec["jobs"]
             if sim[j["label"]]["state"] != j["state"]]
    assert len(wrong) <= 1, wrong
    assert all(j["runtime_s"] >= j["limit_s"] for j in rec["jobs"] if j["label"] in {w[0] for w in wrong})


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_replay_start_order_stays_close_to_slurms(name):
    rec = RECORDINGS[name]
    got = compare(rec, replay(rec))
    assert got["started_both"] == sum(j["start"] is not None for j in rec["jobs"])
    assert got["kendall_tau"] >= TAU_FLOOR.get(name, 0.8), got


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_slurm_backfill_model_is_closer_to_slurm_than_easy(name):
    rec = RECORDINGS[name]
    slurm = compare(rec, replay(rec))
    easy = compare(rec, replay(rec, backfill="easy", node_select="bestfit", batch_sched_delay_s=None))
    assert slurm["kendall_tau"] >= easy["kendall_tau"], (slurm, easy)


def test_submit_instants_stay_in_the_recorded_second():
    for rec in RECORDINGS.values():
        at = submit_instants(rec)
        assert all(j["submit"] <= at[j["label"]] < j["submit"] + 1 for j in rec["jobs"])
        # the recorder's order of submission is kept
        order = sorted(rec["jobs"], key=lambda j: (j["submit_s"], j["label"]))
        assert [at[j["label"]] for j in order] == sorted(at[j["label"]] for j in order)


def test_a_run_against_itself_is_the_perfect_noise_floor():
    rec = next(iter(RECORDINGS.values()))
    got = compare_runs(rec, rec)
    assert got["kendall_tau"] == 1.0 and got["max_abs_start_diff_s"] == 0.0 and got["same_final_state"] == 1.0
    floor = noise_floor(list(RECORDINGS.values()))
    assert {r["scenario"] for r in floor} <= {r["scenario"] for r in RECORDINGS.values()}
    assert all(r["against"] == "real run 1" for r in floor)


def test_settings_mirror_the_recorded_slurm_conf():
    rec = RECORDINGS.get("contention-fifo") or next(iter(RECORDINGS.values()))
    got = sim_settings(rec)
    assert got["bf_interval_s"] == 2 and got["sched_interval_s"] == 5 and got["bf_resolution_s"] == 1
    # sched_min_interval=100000 (microseconds) in every recording's SchedulerParameters
    assert got["sched_min_interval_s"] == pytest.approx(0.1)
    conf = {**rec["slurm_config"], "SchedulerParameters": "bf_interval=2"}
    assert sim_settings({**rec, "slurm_config": conf})["sched_min_interval_s"] == 0.0  # Slurm's 2 us: left out
    assert got["timer_origin_s"] < min(j["submit"] for j in rec["jobs"])


def test_the_replay_charges_fair_share_at_a_job_end_only_where_slurm_conf_enforces_limits():
    """The recorder never passed --enforce: no AccountingStorageEnforce, so no priority_p_job_end
    (fairshare.py). A recording that names limits (or safe, all) gets it."""
    rec = RECORDINGS.get("fairshare") or next(iter(RECORDINGS.values()))
    assert sim_settings(rec)["accounting_enforce_limits"] is False
    for value, want in (("associations,limits", True), ("safe", True), ("all", True), ("none", False),
                        ("associations,qos", False), (None, False)):
        conf = {**rec["slurm_config"], "AccountingStorageEnforce": value}
        assert sim_settings({**rec, "slurm_config": conf})["accounting_enforce_limits"] is want, value


def test_kendall_tau():
    assert kendall_tau([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)


def test_planning_every_tested_job_changes_no_start():
    # bf_plan_all plans what slurmctld plans (and logs with DebugFlags=Backfill); the default plans
    # only what a later start depends on. The starts must be the same.
    rec = RECORDINGS.get("contention-fifo.run3") or next(iter(RECORDINGS.values()))
    lazy, eager = replay(rec), replay(rec, bf_plan_all=True)
    assert {k: v["start"] for k, v in lazy.items()} == {k: v["start"] for k, v in eager.items()}


@pytest.mark.parametrize("name", sorted(n for n in RECORDINGS if n.startswith("aged-deps")))
def test_a_dependant_with_a_begin_overtakes_its_twin_as_on_slurm(name):
    """aged-deps: each head has two whole-node afterok dependants of one shape, one submitted with
    a --begin 3 s ahead (Slurm keeps its accrue time while held), one without. On the real Slurm
    the first starts well before its twin; the simulator shows the same gap only with the accrue
    rule (asad.slurm.sim.priority), not where limits reset it. Per run the reset replay's gap is
    below the modelled one; below half the real gap in six runs of seven, not in run 7 (t37f:
    58.6 s against 97.2 / 2; its head 1 waits 136 s either way in the replay), so that part is
    checked over the scenario's runs (the next test)."""
    rec = RECORDINGS[name]
    real = {j["label"]: j["start"] for j in rec["jobs"]}
    modelled = _aged_gap({k: v["start"] for k, v in replay(rec).items()})
    reset = _aged_gap({k: v["start"] for k, v in replay(rec, accounting_enforce_limits=True).items()})
    assert _aged_gap(real) > 60
    assert _aged_gap(real) / 2 <= modelled <= _aged_gap(real) * 2
    assert reset < modelled


def _aged_gap(starts: dict) -> float:
    """aged-deps: mean seconds by which the dependant with the --begin starts before its twin."""
    return sum(starts[f"plain{k}"] - starts[f"aged{k}"] for k in range(5)) / 5


def test_without_the_accrue_rule_the_aged_dependants_lose_most_of_their_lead():
    runs = [RECORDINGS[n] for n in sorted(RECORDINGS) if n.startswith("aged-deps")]
    if not runs:
        pytest.skip("no aged-deps recordings")
    real = [_aged_gap({j["label"]: j["start"] for j in rec["jobs"]}) for rec in runs]
    reset = [_aged_gap({k: v["start"] for k, v in replay(rec, accounting_enforce_limits=True).items()})
             for rec in runs]
    assert sum(reset) / len(reset) < sum(real) / len(real) / 2
    assert sum(r < g / 2 for r, g in zip(reset, real)) >= len(runs) - 1


def _mean_wait(rec: dict, starts: dict, field: str, value: str) -> float:
    """Mean wait of the recording's jobs whose ``field`` (account, user) is ``value``, the
    cluster-filling jobs left out."""
    waits = [starts[j["label"]] - j["submit"] for j in rec["jobs"]
             if j[field] == value and not j["label"].startswith("fill")]
    return sum(waits) / len(waits)


@pytest.mark.parametrize("name", sorted(n for n in RECORDINGS if n.split(".")[0] in ("fairshare", "fairshare-shares")))
def test_fair_share_holds_back_the_account_with_usage_as_on_slurm(name):
    """fairshare (and fairshare-shares, where fsa holds 4 shares to the others' 1): fsa fills the
    cluster first, then fsa, fsb and fsc share a queue ordered by fair-share alone. With equal
    shares fsa's later jobs wait longest on the real Slurm; in both the simulator's Fair Tree
    gives each account's mean wait within a factor of 2 of Slurm's (or within 20 s), and
    without fair-share the order it gives is further from Slurm's."""
    rec = RECORDINGS[name]
    real = {j["label"]: j["start"] for j in rec["jobs"]}
    modelled = {k: v["start"] for k, v in replay(rec).items()}
    if rec["scenario"] == "fairshare":
        assert _mean_wait(rec, real, "account", "fsa") > max(_mean_wait(rec, real, "account", "fsb"),
                                                             _mean_wait(rec, real, "account", "fsc"))
    for account in ("fsa", "fsb", "fsc"):
        got, want = _mean_wait(rec, modelled, "account", account), _mean_wait(rec, real, "account", account)
        assert abs(got - want) <= max(20.0, want), (account, got, want)
    without = compare(rec, replay(rec, weight_fairshare=0.0))
    assert compare(rec, replay(rec))["kendall_tau"] > without["kendall_tau"]


@pytest.mark.skipif("fairshare-shares.run4" not in RECORDINGS, reason="no fairshare-shares run 4")
def test_the_decay_run_on_whole_seconds_ranks_fsb_above_fsa_as_slurm_did():
    """fairshare-shares run 4 (its slurmctld.log in logs/): after the decay run at 115 s Slurm
    started fsb's g44 (1 x 16 cores) at 122 s and g25 at 134 s, before fsa's g10 (146 s), which
    fits where g25 does. fsa's and fsb's level_fs are then within 1 %: on slurmctld's whole
    seconds (time_t: the run's time(NULL), g_last_ran, the jobs' start_time) fsb ranks above fsa,
    on exact instants below, and the replay started g10 at 122 s and g44 at 188 s."""
    rec = RECORDINGS["fairshare-shares.run4"]
    t0 = min(j["submit"] for j in rec["jobs"])
    got = {k: v["start"] - t0 for k, v in replay(rec).items()}
    real = {j["label"]: j["start"] - t0 for j in rec["jobs"]}
    assert (real["g44"], real["g25"], real["g10"]) == (122, 134, 146)
    assert got["g44"] == 122
    assert got["g44"] < got["g10"] and got["g25"] < got["g10"]


@pytest.mark.skipif(not any(n.startswith("fairshare-shares") for n in RECORDINGS), reason="no fairshare-shares run")
def test_the_recorded_shares_bring_the_order_closer_to_slurms():
    """fairshare-shares: fsa holds 4 raw shares to fsb's and fsc's 1. Replayed with those shares,
    the start order is closer to Slurm's than replayed with equal shares, on the mean over the
    recorded runs: 0.815 against 0.806 (run 1), 0.912 against 0.873 (run 2), but 0.825 against
    0.833 on run 3 (recorded 2026-11-27), so not on every run (docs/results/sim.md)."""
    recs = [rec for n, rec in RECORDINGS.items() if n.startswith("fairshare-shares")]
    shares = [compare(rec, replay(rec))["kendall_tau"] for rec in recs]
    equal = [compare(rec, replay(rec, fairshare_shares=None))["kendall_tau"] for rec in recs]
    assert sum(shares) / len(shares) > sum(equal) / len(equal), (shares, equal)


@pytest.mark.parametrize("name", sorted(n for n in RECORDINGS if n.startswith("fairshare-users")))
def test_fair_tree_ranks_users_within_their_accounts_as_on_slurm(name):
    """fairshare-users: accounts fua and fub of equal shares, two users each; ua1 (fua) fills the
    cluster first. Fair Tree ranks fub above fua, then each account's users by their own usage.
    Each user's mean wait is within a factor of 2 of Slurm's (or within 20 s), and the order is
    closer to Slurm's than when every job is filed under one user per account (root's, as the
    other fair-share scenarios are)."""
    rec = RECORDINGS[name]
    real = {j["label"]: j["start"] for j in rec["jobs"]}
    modelled = {k: v["start"] for k, v in replay(rec).items()}
    for user in ("ua1", "ua2", "ub1", "ub2"):
        got, want = _mean_wait(rec, modelled, "user", user), _mean_wait(rec, real, "user", user)
        assert abs(got - want) <= max(20.0, want), (user, got, want)
    as_root = {**rec, "jobs": [{**j, "user": None} for j in rec["jobs"]]}
    assert compare(rec, replay(rec))["kendall_tau"] > compare(rec, replay(as_root))["kendall_tau"]


def test_the_timer_phases_come_from_slurmctlds_own_log():
    """aged-deps.run4 keeps the slurmctld.log it was recorded with (logs/). The loop's start is
    its "mcs:" line (the decay thread started just before it, in priority_g_init: the priority
    recalculation's phase), and the first _schedule() logged "SchedulerParameters=" at the loop's
    fifth tick; the replay's settings take both."""
    import gzip
    import tempfile
    from pathlib import Path

    from asad.bench.sim_vs_real import DATA_DIR, first_sched_tick
    from asad.bench.sim_vs_real_record import timer_phases

    rec = RECORDINGS.get("aged-deps.run4")
    if rec is None:
        pytest.skip("aged-deps.run4 not recorded")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "slurmctld.log"
        log.write_bytes(gzip.decompress((DATA_DIR / "logs" / "aged-deps.run4.slurmctld.log.gz").read_bytes()))
        marks = timer_phases(log, rec["t0"])
    assert marks == rec["timers"]
    assert marks["first_sched"] > rec["t0"]  # after the recorder's start: the log is read past it
    assert first_sched_tick(marks) == 5
    settings = sim_settings(rec)
    assert settings["prio_origin_s"] == marks["loop_start"] and settings["first_sched_tick"] == 5


def test_a_recording_keeps_slurmctlds_log_beside_it(tmp_path, monkeypatch):
    import gzip

    from asad.bench.sim_vs_real_cli import keep_log

    (tmp_path / "cluster" / "log").mkdir(parents=True)
    (tmp_path / "cluster" / "log" / "slurmctld.log").write_text("[2026-11-27T14:34:25.755] sched: Allocate\n")
    monkeypatch.setenv("ASAD_CLUSTER_DIR", str(tmp_path / "cluster"))
    rec = tmp_path / "data" / "aged-deps.run5.json"
    rec.parent.mkdir()
    rec.write_text("{}")
    keep_log(rec)
    kept = tmp_path / "data" / "logs" / "aged-deps.run5.slurmctld.log.gz"
    assert gzip.decompress(kept.read_bytes()).decode().endswith("sched: Allocate\n")



def test_a_recording_keeps_each_nodes_slurmd_log_only_at_a_debug_level(tmp_path, monkeypatch):
    # slurmd names an end's path only at debug levels (issue 37, ninth session): those logs are
    # kept from a minute before the first submission on; at info there is nothing to keep
    import gzip
    import json
    from datetime import datetime, timezone

    from asad.bench.sim_vs_real_cli import keep_log

    log = tmp_path / "cluster" / "log"
    log.mkdir(parents=True)
    (log / "slurmctld.log").write_text("[2026-11-28T11:55:00.000] x\n")
    (log / "slurmd-n1.log").write_text(
        "[2026-11-28T11:50:00.000] debug:  an earlier run\n"
        "[2026-11-28T11:54:30.000] debug:  _rpc_terminate_job: uid = 0 JobId=7\n"
        "  an unstamped continuation\n")
    monkeypatch.setenv("ASAD_CLUSTER_DIR", str(tmp_path / "cluster"))
    t0 = datetime(2026, 11, 28, 11, 55, tzinfo=timezone.utc).timestamp()
    (tmp_path / "data").mkdir()
    for level, kept in (("debug", True), ("info", False)):
        rec = tmp_path / "data" / f"ends-deps.run{4 if kept else 6}.json"
        rec.write_text(json.dumps({"t0": t0, "slurm_config": {"SlurmdDebug": level}}))
        keep_log(rec)
        out = tmp_path / "data" / "logs" / f"{rec.stem}.slurmd-n1.log.gz"
        assert out.is_file() is kept, level
        if kept:
            text = gzip.decompress(out.read_bytes()).decode()
            assert text.startswith("[2026-11-28T11:54:30.000]") and text.endswith("continuation\n")
