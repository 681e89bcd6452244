"""The two learner benches: convergence (paper Fig. 5) and the real-data predictor replay."""

from __future__ import annotations

import gzip
import json
import math
import os

import numpy as np
import pytest

from asad.bench.convergence import run_convergence, targets
from asad.bench.predictors import DEFAULT_DATA, KEY_CONFIGS, load_jobs, replay, run_bench, score
from asad.cli.main import main

HEADER = ("cluster,job_unique_id,cluster_id,submit_time,eligible_time,start_time,end_time,req_cpus,req_mem_total,"
          "alloc_nodes,partition_id_x,account_id,time_limit_sec,state,req_tres")


def write_jobs(path, jobs):
    """jobs: (cluster, eligible 'HH:MM:SS', start 'HH:MM:SS', cpus)."""
    with gzip.open(path, "wt") as handle:
        handle.write(HEADER + "\n")
        for i, (cluster, eligible, start, cpus) in enumerate(jobs):
            handle.write(f"{cluster},{i},1,2021-05-01 {eligible},2021-05-01 {eligible},2021-05-01 {start},"
                         f"2021-05-02 00:00:00,{cpus},1000,1,7,1,3600,COMPLETED,cpu={cpus}\n")


def test_replay_learns_a_wait_only_after_the_job_started(tmp_path):
    path = tmp_path / "jobs.csv.gz"
    write_jobs(path, [
        ("cedar", "00:00:00", "00:16:40", 4),  # wait 1000 s, starts at 1000
        ("cedar", "00:08:20", "00:10:00", 4),  # eligible at 500: job 0 not started yet -> cold
        ("cedar", "00:25:00", "00:25:10", 4),  # at 1500 both started
        ("cedar", "00:25:00", "00:25:10", 8),  # another geometry: cold
    ])
    jobs = load_jobs(str(path))
    assert jobs.wait_s.tolist() == [1000.0, 100.0, 10.0, 10.0]
    out = replay(jobs, [("last", "last", {}), ("median-all", "median-all", {})])
    last = out["estimates"]["last"]
    assert math.isnan(last[0]) and math.isnan(last[1]) and math.isnan(last[3])
    assert last[2] == 1000.0  # waits arrive in start order: job 1 (at 600 s), then job 0 (at 1000 s)
    assert out["estimates"]["median-all"][2] == 550.0
    assert out["keys"] == 2


def test_score_metrics_on_known_errors():
    estimates = np.array([9.0, 99.0, np.nan, 999.0])
    waits = np.array([9.0, 999.0, 5.0, 99.0])  # errors in log10(1+s): 0, -1, (cold), +1
    s = score(estimates, waits)
    assert s["n"] == 3
    assert s["median_abs_log10"] == pytest.approx(1.0)
    assert s["mean_abs_log10"] == pytest.approx(2 / 3)
    assert s["mse_log10"] == pytest.approx(2 / 3)
    assert s["within_x2"] == pytest.approx(1 / 3)
    assert s["coverage"] == pytest.approx(2 / 3)


def test_bench_filters_and_reports(tmp_path):
    path = tmp_path / "jobs.csv.gz"
    write_jobs(path, [("cedar", f"0{h}:00:00", f"0{h}:10:00", 4) for h in range(8)]
               + [("graham", "01:00:00", "01:00:30", 4)])
    result = run_bench(str(path), "cedar", None, None, 0,
                       [("last", "last", {}), ("asa", "asa", {}), ("experts", "experts", {})])
    assert result["jobs"] == 8 and result["cold_jobs"] == 1
    rows = result["scopes"]["all"]["rows"]
    assert rows["last"]["mean_abs_log10"] == 0.0  # every wait is 600 s
    assert rows["experts"]["mean_abs_log10"] == pytest.approx(0.0)
    assert rows["experts"]["n"] == rows["last"]["n"] == 7  # the same (warm) jobs for every predictor
    assert set(result["scopes"]) == {"all", "cedar"}
    assert set(rows["experts"]["quantile_coverage"]) == {"0.1", "0.25", "0.5", "0.75", "0.9"}


def test_bench_scores_quantile_coverage_and_pinball():
    waits = np.array([10.0, 100.0, 1000.0, 10000.0])
    quantiles = np.array([[100.0, 1000.0]] * 4)  # 10% and 90% quantiles
    s = score(np.array([100.0] * 4), waits, quantiles, (0.1, 0.9))
    assert s["quantile_coverage"] == {"0.1": 0.5, "0.9": 0.75}
    y, lo, hi = np.log10(1 + waits), math.log10(101), math.log10(1001)
    expected = np.mean([np.mean([max(0.1 * (v - lo), -0.9 * (v - lo)), max(0.9 * (v - hi), -0.1 * (v - hi))])
                        for v in y])
    assert s["pinball_log10"] == pytest.approx(expected)


def test_convergence_bench_shape_and_learning():
    result = run_convergence(seed=0)
    preds = result["predictors"]
    assert set(preds) == {"asa-greedy", "asa", "asa-tuned", "recommended"}
    assert [s["start"] for s in preds["asa-tuned"]["segments"]] == [0, 200, 400, 600, 800]
    # tuned follows every change; the paper's default is slower on average
    assert all(s["settle"] is not None for s in preds["asa-tuned"]["segments"])
    assert preds["asa-tuned"]["mae_log10"] < preds["asa"]["mae_log10"]
    assert {"tuned_settles_within_5", "recommended_settles_within_5"} <= set(targets(result))


def test_convergence_noise_scores_a_running_median():
    result = run_convergence(seed=1, noise_sigma=0.5, policies=("asa",))
    assert set(result["predictors"]) == {"asa", "median-k", "median-3", "median-5", "median-20", "median-50",
                                         "recommended"}
    assert {"paper_default_no_worse_than_running_median", "recommended_default_no_worse_than_running_median",
            "recommended_no_worse_than_best_running_median"} <= set(targets(result))


def test_cli_convergence_json_and_plot(tmp_path, capsys):
    plot = tmp_path / "c.png"
    assert main(["bench", "convergence", "--json", "--plot", str(plot), "--predictors", "asa-tuned"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["predictors"]["asa-tuned"]["segments"][0]["level_s"] == 3000.0
    assert plot.stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(DEFAULT_DATA), reason=f"real data not present at {DEFAULT_DATA}")
def test_predictors_on_a_week_of_real_data():
    result = run_bench(DEFAULT_DATA, "cedar", "2021-05-01", "2021-05-03", 0,
                       [("median-all", "median-all", {}), ("asa-full", "asa-full", {})])
    assert result["jobs"] > 1000
    for label in ("median-all", "asa-full"):
        s = result["scopes"]["all"]["rows"][label]
        assert s["n"] > 100 and 0 < s["mean_abs_log10"] < 1.5


def test_convergence_feeds_a_slurm_estimate():
    with_estimate = run_convergence(seed=0, policies=("slurm-estimate",), slurm_sigma=0.1, noise_sigma=0.5)
    without = run_convergence(seed=0, policies=("slurm-estimate",), noise_sigma=0.5)  # falls back to the last wait
    assert with_estimate["predictors"]["slurm-estimate"]["mae_log10"] < 0.1
    assert without["predictors"]["slurm-estimate"]["mae_log10"] > with_estimate["predictors"]["slurm-estimate"]["mae_log10"]


def test_replay_floors_on_jobs_still_pending_and_only_those(tmp_path):
    path = tmp_path / "jobs.csv.gz"
    write_jobs(path, [
        ("cedar", "00:00:00", "00:00:10", 4),  # wait 10 s: the learned median
        ("cedar", "00:01:00", "02:00:00", 4),  # pending from 60 s to 7200 s
        ("cedar", "01:00:00", "01:00:05", 4),  # at 3600 s job 1 has waited 3540 s: the floor
        ("cedar", "03:00:00", "03:00:05", 4),  # at 10800 s nothing is pending: no floor
    ])
    jobs = load_jobs(str(path), key_config=KEY_CONFIGS["account"])
    out = replay(jobs, [("mb", "median-backoff", {}), ("flat", "median-backoff", {"pending_floor": []})])
    mb, flat = out["estimates"]["mb"], out["estimates"]["flat"]
    assert flat[2] == pytest.approx(10.0) and mb[2] == pytest.approx(3540.0)
    assert mb[3] == flat[3]  # job 1 started at 7200 s: no floor any more
    assert mb[1] == pytest.approx(10.0)  # job 0 started before job 1 was eligible: nothing pending


def test_replay_feeds_aci_a_miss_once_a_pending_job_has_waited_past_its_quantile(tmp_path):
    path = tmp_path / "jobs.csv.gz"
    quick = [("cedar", f"00:0{i}:00", f"00:0{i}:{10 + 5 * i}", 4) for i in range(8)]  # waits of 10-45 s
    write_jobs(path, [*quick,
                      ("cedar", "00:10:00", "03:00:00", 4),  # told ~30 s, waits 10,200 s
                      ("cedar", "01:00:00", "01:00:10", 4)])  # at 3600 s the job above is still pending
    jobs = load_jobs(str(path), key_config=KEY_CONFIGS["account"])
    params = {"aci_gamma": 0.05, "min_residuals": 3, "pending_floor": []}
    out = replay(jobs, [("early", "median-backoff", params),
                        ("late", "median-backoff", {**params, "aci_early_misses": False})], quantiles=(0.25, 0.5))
    early, late = out["quantiles"]["early"], out["quantiles"]["late"]
    assert np.allclose(early[:9], late[:9], equal_nan=True)  # the same until a miss is visible
    assert early[9, 1] > late[9, 1] and early[9, 0] > late[9, 0]  # heard at 3600 s, not at 10,800 s
