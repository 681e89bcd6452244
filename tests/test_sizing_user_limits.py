"""Sizing never takes CPUs a stage did not give up, and learned time limits that stick.

End to end on the simulator (virtual time): a stage that keeps only part of its CPUs
busy keeps the file's ``cpus`` unless it says ``sizing_cpus: shrink``.
"""

from __future__ import annotations

import numpy as np
import pytest

from asad.slurm.sim import make_simulator
from asad.sizing.base import Request
from asad.sizing.cpus import keep_user_cpus
from asad.spec.load import SpecError, parse_workflow
from asad.view.explain import render_explain
from asad.store.repo import Store
from tests.test_sizing_engine import OOM_WF, _run

CPU_WF = """
name: threads
strategy: per-stage
sizing: sizey-like
stages:
  - name: align
    cpus: 28
    mem: 8G
    time: 1h
    run: bwa mem -t 28 ref.fa reads.fq
    simulate: {runtime: 10m, peak_mem: 2G, cpu_efficiency: 0.5}
"""




def test_keep_user_cpus_is_a_floor_unless_shrink():
    proposed = Request(cpus=14, mem_mb=2048, time_s=600)
    kept, why = keep_user_cpus(proposed, 28)
    assert kept == Request(cpus=28, mem_mb=2048, time_s=600)
    assert "kept at the file's 28" in why and "sizing_cpus: shrink" in why
    shrunk, why = keep_user_cpus(proposed, 28, "shrink")
    assert shrunk == proposed and "28 -> 14" in why
    same, why = keep_user_cpus(Request(cpus=28, mem_mb=1, time_s=60), 28)
    assert same.cpus == 28 and why == ""
    with pytest.raises(ValueError):
        keep_user_cpus(proposed, 28, "maybe")


def test_a_stage_keeps_its_cpus_over_runs(db_url):
    summaries, wfs = _run(db_url, CPU_WF, runs=4)
    assert all(s["state"] == "COMPLETED" for s in summaries)
    assert [s["stages"][0]["cpus"] for s in summaries] == [28, 28, 28, 28]
    mems = [s["stages"][0]["mem_mb"] for s in summaries]
    assert mems[-1] < 8 * 1024, mems  # memory is still sized
    why = render_explain(wfs[-1], "align")
    assert "kept at the file's 28" in why


def test_a_stage_that_opts_in_may_get_fewer_cpus(db_url):
    text = CPU_WF.replace("    run: bwa", "    sizing_cpus: shrink\n    run: bwa")
    summaries, wfs = _run(db_url, text, runs=4)
    cpus = [s["stages"][0]["cpus"] for s in summaries]
    assert cpus[0] == 28 and cpus[-1] < 28, cpus  # the runs kept ~14 cores busy
    assert "sizing_cpus: shrink" in render_explain(wfs[-1], "align")


def test_sizing_cpus_is_parsed_and_checked():
    assert parse_workflow(CPU_WF).stage("align").sizing_cpus == "keep"
    spec = parse_workflow(CPU_WF.replace("    run: bwa", "    sizing_cpus: shrink\n    run: bwa"))
    assert spec.stage("align").sizing_cpus == "shrink"
    assert type(spec).from_dict(spec.to_dict()).stage("align").sizing_cpus == "shrink"
    with pytest.raises(SpecError, match="keep or shrink"):
        parse_workflow(CPU_WF.replace("    run: bwa", "    sizing_cpus: less\n    run: bwa"))
    mpi = CPU_WF.replace("cpus: 28", "ntasks: 4\n    cpus_per_task: 7").replace(
        "    run: bwa", "    sizing_cpus: shrink\n    run: bwa")
    with pytest.raises(SpecError, match="ntasks"):
        parse_workflow(mpi)


TIMEOUT_WF = """
name: slow
strategy: per-stage
sizing: sizey-like
stages:
  - name: crunch
    cpus: 2
    mem: 2G
    time: 10m
    run: crunch
    simulate: {runtime: 15m, peak_mem: 1G}
"""


def test_a_timeout_raises_the_limit_for_the_next_run_too(db_url):
    summaries, wfs = _run(db_url, TIMEOUT_WF, runs=3)
    assert all(s["state"] == "COMPLETED" for s in summaries)
    attempts = [s["stages"][0]["attempts"] for s in summaries]
    assert attempts == [2, 1, 1], attempts  # 10 m timed out once; later runs start at 20 m
    assert "TIMEOUT at 600 s" in summaries[0]["stages"][0]["message"]
    why = render_explain(wfs[-1], "crunch")
    assert "timed out at 600 s" in why and "time 20:00 (file 10:00)" in why, why


def test_the_raised_limit_stays_within_the_partition(db_url):
    from asad.sizing.base import Caps
    from asad.sizing.timelimit import TimeLimitLearner

    t = TimeLimitLearner()
    t.observe_timeout(3000)
    limit, why = t.limit(600, 1, None, Caps(max_cpus=4, max_mem_mb=1000, max_time_s=3600))
    assert limit == 3600 and "capped" in why
    limit, _ = t.limit(600, 1, None, None)
    assert limit == 6000
    back = TimeLimitLearner.from_dict(t.to_dict())
    assert back.timeout_floor_s == 6000 and back.timed_out_at_s == 3000


def test_show_and_explain_list_every_attempt_and_why(db_url):
    from asad.view.status import render_summary

    (summary,), wfs = _run(db_url, OOM_WF)
    (stage,) = summary["stages"]
    tries = stage["attempt_list"]
    assert [t["state"] for t in tries] == ["OUT_OF_MEMORY", "OUT_OF_MEMORY", "COMPLETED"]
    assert [t["mem_mb"] for t in tries] == [1024, 2048, 4096]
    assert tries[0]["why"] == "first attempt"
    assert tries[1]["why"].startswith("after OUT_OF_MEMORY with 1G")
    assert tries[2]["why"].startswith("after OUT_OF_MEMORY with 2G")
    text = render_summary(summary)
    header = next(line for line in text.splitlines() if "STAGE" in line)
    row = next(line for line in text.splitlines() if line.strip().startswith("grow"))
    assert header.split()[3] == "TRY" and row.split()[3] == "3"
    assert "attempt 3 (after OUT_OF_MEMORY with 2G" in text and "job" in text and "4G" in text
    explain = render_explain(wfs[-1], "grow")
    assert "attempt 2 (after OUT_OF_MEMORY with 1G" in explain


def test_status_shows_the_attempt_and_why_it_was_retried(db_url):
    from asad.daemon.wiring import make_runner
    from asad.common.config import Settings
    from asad.view.status import render_status, status_rows

    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    try:
        runner = make_runner(Settings(), store, sim)
        store.add_workflow(parse_workflow(TIMEOUT_WF), sim.now(), strategy="per-stage")
        runner.load()
        for _ in range(6):  # 10 min: the first attempt times out and the retry is running
            runner.tick()
            sim.run_until(sim.now() + 180)
        runner.tick()
        rows, notes = status_rows(store)
    finally:
        store.close()
    out = render_status(rows, None, notes).splitlines()
    assert "# workflow 1 stage crunch: attempt 2 after TIMEOUT at 10:00: now 2 CPU(s), 2G, limit 20:00" in out, out
    header = out[[i for i, line in enumerate(out) if not line.startswith("#")][0]].split()
    (row,) = [line.split() for line in out if " crunch " in line and not line.startswith("#")]
    assert row[header.index("TRY")] == "2" and row[header.index("ST")] in ("PD", "R"), out


def test_the_gantt_draws_the_earlier_attempts(db_url, tmp_path):
    pytest.importorskip("matplotlib")
    from asad.view.plots import plot_workflow

    (summary,), _ = _run(db_url, OOM_WF)
    tries = summary["stages"][0]["attempt_list"]
    assert all(t["start_time"] is not None and t["end_time"] is not None for t in tries)
    assert tries[0]["end_time"] <= tries[1]["start_time"]
    plot_workflow(summary, tmp_path / "g.png")
    assert (tmp_path / "g.png").stat().st_size > 0


def test_a_learned_limit_never_exceeds_the_users_unless_a_timeout_proved_it_short():
    from asad.sizing.base import Sample
    from asad.sizing.timelimit import TimeLimitLearner

    t = TimeLimitLearner(margin=2.0, slack_s=600, min_samples=2)
    for elapsed in (1000.0, 1100.0):
        t.observe(Sample(peak_mb=1.0, elapsed_s=elapsed, cpu_s=None, input_bytes=None, cpus=1, mem_mb=10))
    limit, why = t.limit(1800, 1, None, None)  # 2 × 1100 + 600 = 2800 s: the user's 1800 s held every run
    assert limit == 1800 and "kept at the user's 1800 s" in why
    limit, why = t.limit(7200, 1, None, None)
    assert limit == 2820  # 2800 rounded up to a minute, and said (audit 6: "660 s = 2 × 7 s + 600 s")
    assert why.startswith("time limit 2820 s = 2 × longest run 1100 s + 600 s over 2 runs (2800 s, rounded up"), why
    # a run predicted past the user's limit (twice the input: 2200 s) is not held to it
    t.observe(Sample(peak_mb=1.0, elapsed_s=1000.0, cpu_s=None, input_bytes=1e9, cpus=1, mem_mb=10))
    assert t.limit(1800, 1, 2.2e9, None)[0] == 60 * -(-(2 * 2420 + 600) // 60)
    t.observe_timeout(1800)
    assert t.limit(1800, 1, None, None)[0] == 3600  # the retry's limit is the floor now


def test_the_margin_widens_with_the_spread_of_run_times():
    from asad.sizing.base import Sample
    from asad.sizing.timelimit import TimeLimitLearner

    def learner(runs):
        t = TimeLimitLearner(margin=1.25, slack_s=60, min_samples=3, spread_k=2.0)
        for elapsed in runs:
            t.observe(Sample(peak_mb=1.0, elapsed_s=elapsed, cpu_s=None, input_bytes=None, cpus=1, mem_mb=10))
        return t

    steady, erratic = learner([1000.0, 1000.0, 1000.0]), learner([200.0, 600.0, 1000.0])
    assert steady.margin_for(1) == pytest.approx(1.25)
    assert steady.limit(86400, 1, None, None)[0] == 1320  # 1.25 × 1000 + 60 = 1310 → 22 min
    cv = float(np.std([200.0, 600.0, 1000.0]) / 600.0)
    assert erratic.margin_for(1) == pytest.approx(1.25 + 2.0 * cv)
    assert erratic.limit(86400, 1, None, None)[0] > steady.limit(86400, 1, None, None)[0]
    back = TimeLimitLearner.from_dict(erratic.to_dict())
    assert back.spread_k == 2.0 and back.limit(86400, 1, None, None) == erratic.limit(86400, 1, None, None)


MULTI_NODE_WF = """
name: mpi
strategy: per-stage
sizing: sizey-like
stages:
  - name: solve
    nodes: 2
    ntasks: 2
    cpus_per_task: 4
    mem: 4G
    time: 2h
    run: srun solver
    simulate: {runtime: 10m, peak_mem: 1G}
"""


def test_a_multi_node_stage_learns_its_time_limit_but_keeps_its_shape(db_url):
    summaries, wfs = _run(db_url, MULTI_NODE_WF, runs=11)
    assert all(s["state"] == "COMPLETED" for s in summaries)
    first, last = (s["stages"][0]["attempt_list"][0] for s in (summaries[0], summaries[-1]))
    assert first["time_s"] == 7200  # the user's, until 10 runs were seen
    assert last["time_s"] == 2400, last  # sizey-like: 3 × 600 s + 600 s, learned
    assert (last["cpus"], last["mem_mb"]) == (first["cpus"], first["mem_mb"])  # the user's shape
    why = render_explain(wfs[-1], "solve")
    assert "CPUs and memory stay the user's" in why, why
