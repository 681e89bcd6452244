"""Background load: offered load, cycles, steps, presets, the packaged table."""

from __future__ import annotations

import numpy as np
import pytest

from asad.slurm.sim import DEFAULT_START_TIME as T0
from asad.slurm.sim import PRESETS, make_simulator
from asad.slurm.sim.workload import load_table


def offered(sim, t0, t1):
    arrivals = sim.workload.arrivals(t0, t1)
    work = sum(a[3] * a[6] / sim.parts[a[1]].speed for a in arrivals)
    return work / (sum(p.spec.total_cpus for p in sim.parts) * (t1 - t0)), arrivals


def test_offered_load_matches_target():
    sim = make_simulator("hpc2n", load=0.9, warmup_s=0)
    load, arrivals = offered(sim, T0, T0 + 28 * 86400)
    assert load == pytest.approx(0.9, rel=0.1)
    assert len(arrivals) > 50_000  # the real size distribution: ~100k jobs a month at 0.9


def test_load_steps_and_daily_cycle():
    sim = make_simulator("hpc2n", load=0.5, warmup_s=0, load_steps=((7 * 86400, 2.0),))
    before, _ = offered(sim, T0, T0 + 7 * 86400)
    after, _ = offered(sim, T0 + 7 * 86400, T0 + 14 * 86400)
    assert after / before == pytest.approx(2.0, rel=0.15)
    hours = np.array([(a[0] % 86400) // 3600 for a in sim.workload.arrivals(T0, T0 + 14 * 86400)])
    assert np.sum(hours == 14) > 1.8 * np.sum(hours == 2)  # day/night cycle
    flat = make_simulator("hpc2n", load=0.5, warmup_s=0, daily_cycle=False)
    hours = np.array([(a[0] % 86400) // 3600 for a in flat.workload.arrivals(T0, T0 + 14 * 86400)])
    assert 0.8 < np.sum(hours == 14) / np.sum(hours == 2) < 1.25


def test_busy_cluster_at_start_and_empty_without_load():
    busy = make_simulator("small", seed=2)  # default load 0.7, one day of warm-up
    assert busy.now() == T0
    assert busy.stats()["jobs_running"] > 0
    empty = make_simulator("small", load=0.0)
    assert empty.workload is None and empty.next_event_time() is None


def test_presets():
    assert set(PRESETS) >= {"small", "hpc2n", "uppmax", "two-speed"}
    [hpc2n] = PRESETS["hpc2n"]
    assert (hpc2n.nodes, hpc2n.cores_per_node, hpc2n.mem_per_node_mb) == (602, 28, 128000)
    [uppmax] = PRESETS["uppmax"]
    assert (uppmax.nodes, uppmax.cores_per_node) == (486, 20)
    fast, slow = PRESETS["two-speed"]
    assert fast.speed > slow.speed and fast.load != slow.load
    sim = make_simulator("two-speed", warmup_s=0)
    load_fast = offered(sim, T0, T0 + 14 * 86400)[1]
    assert {a[1] for a in load_fast} == {0, 1}


def test_packaged_table_and_bad_table(tmp_path):
    table = load_table()
    assert len(table.cpus) == 4000 and table.hour_factor.mean() == pytest.approx(1.0)
    assert (table.runtime_s <= table.time_limit_s).all()
    bad = tmp_path / "load_table.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="header"):
        load_table(str(bad))


def test_bad_config_values():
    with pytest.raises(ValueError, match="priority"):
        make_simulator("small", priority="lifo")
    with pytest.raises(ValueError, match="negative"):
        make_simulator("small", load=-1)
    with pytest.raises(ValueError, match="unknown partitions"):
        make_simulator("small", load={"nope": 0.5})
    sim = make_simulator("two-speed", load={"fast": 0.0, "slow": 0.0})
    assert sim.workload is None


def test_derive_builds_a_loadable_table(tmp_path):
    import gzip

    from asad.slurm.sim.derive import derive

    header = ("cluster,job_unique_id,cluster_id,submit_time,eligible_time,start_time,end_time,"
              "req_cpus,req_mem_total,alloc_nodes,partition_id_x,account_id,time_limit_sec,state,req_tres\n")
    rows = [
        'c,1,1,2021-05-03 10:00:00,2021-05-03 10:00:00,2021-05-03 11:00:00,2021-05-03 12:00:00,4,8000,1,1,1,7200,COMPLETED,"cpu=4"',
        'c,2,1,2021-05-04 10:00:00,2021-05-04 10:00:00,2021-05-04 11:00:00,2021-05-04 13:00:00,64,64000,2,1,1,7200,TIMEOUT,"cpu=64"',
        'c,3,1,2021-05-04 10:00:00,2021-05-04 10:00:00,2021-05-04 11:00:00,2021-05-04 13:00:00,2,4000,1,1,1,7200,COMPLETED,"cpu=2,gres/gpu=1"',
    ]
    src = tmp_path / "jobs.csv.gz"
    with gzip.open(src, "wt") as fh:
        fh.write(header + "\n".join(rows) + "\n")
    summary = derive(src, tmp_path, rows=10)
    assert (summary["kept"], summary["sampled"]) == (2, 2)  # the GPU job is left out
    assert summary["accounts"] == 1 and summary["account_job_share"]["top_1"] == 1.0
    table = load_table(str(tmp_path / "load_table.csv"))
    assert sorted(table.cpus.tolist()) == [4, 64]
    assert sorted(table.runtime_s.tolist()) == [3600, 7200]  # capped at the limit
    assert table.weekday_factor.mean() == pytest.approx(1.0)
