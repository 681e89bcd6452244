"""``asad bench backfill-cost`` without a cluster: its queue, the simulator side, and the message
when no cluster is set (the real slurmctld side: tests/slurm/test_bench_real.py)."""

from __future__ import annotations

import argparse

from asad.bench import backfill_cost


def test_job_mix_is_seeded_and_fits_the_cluster():
    jobs = backfill_cost.job_mix(500, seed=3, cores_per_node=16, max_nodes=4)
    assert jobs == backfill_cost.job_mix(500, seed=3, cores_per_node=16, max_nodes=4)
    assert jobs != backfill_cost.job_mix(500, seed=4, cores_per_node=16, max_nodes=4)
    assert all(1 <= j["nodes"] <= 4 and 1 <= j["cores"] <= 16 and j["limit_min"] >= 60 for j in jobs)
    # the three kinds are all there: small, up to a whole node, several whole nodes
    assert {j["nodes"] > 1 for j in jobs} == {False, True}
    assert any(j["nodes"] == 1 and j["cores"] == 16 for j in jobs)


def test_simulator_side_queues_the_same_jobs_and_times_both_modes():
    jobs = backfill_cost.job_mix(300, seed=7, cores_per_node=16, max_nodes=5)
    out = backfill_cost.measure_sim(jobs, nodes=5, cores=16, mem_mb=24000,
                                    params="bf_interval=30,bf_resolution=60,bf_max_job_test=100", passes=2)
    for mode in ("default", "plan_all"):
        assert out[mode]["running"] + out[mode]["pending"] == 300
        assert out[mode]["running"] >= 1 and out[mode]["cpu_per_pass_ms"] > 0
    # both modes start the same jobs (a plan for every tested job changes no start)
    assert out["default"]["running"] == out["plan_all"]["running"]


def test_without_a_cluster_it_says_how_to_start_one(monkeypatch, capsys):
    monkeypatch.delenv("SLURM_CONF", raising=False)
    args = argparse.Namespace(jobs=10, cycles=1, seed=7, sim_passes=1, json=False)
    assert backfill_cost.main(args) == 2
    assert "local-cluster.sh up" in capsys.readouterr().err


def test_counts_below_one_are_refused_before_anything_is_queued(monkeypatch, capsys):
    monkeypatch.setenv("SLURM_CONF", "/nonexistent/slurm.conf")
    args = argparse.Namespace(jobs=10, cycles=0, seed=7, sim_passes=1, json=False)
    assert backfill_cost.main(args) == 2
    assert "--cycles" in capsys.readouterr().err
