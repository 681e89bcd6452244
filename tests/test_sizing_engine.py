"""Sizing inside the engine, end to end on the simulator: out-of-memory and time-out retries,
learned requests on later runs, and the explanation a user reads."""

from __future__ import annotations

import pytest

from asad.daemon.wiring import run_in_process
from asad.slurm.sim import make_simulator
from asad.spec.load import parse_workflow
from asad.view.explain import render_explain
from asad.view.status import render_summary
from asad.store.repo import Store

OOM_WF = """
name: oomy
strategy: per-stage
sizing: off
stages:
  - name: grow
    cpus: 2
    mem: 1G
    time: 1h
    run: grow --big
    simulate: {runtime: 20m, peak_mem: 3G}
"""


def _run(db_url, text, runs=1, seed=0):
    store = Store(db_url)
    out = []
    try:
        for i in range(runs):
            sim = make_simulator("small", load=0.0, seed=seed + i)
            out += run_in_process(store, sim, [parse_workflow(text)])
        wfs = store.load_workflows()
    finally:
        store.close()
    return out, wfs


def test_out_of_memory_is_retried_with_more_until_it_fits(db_url):
    (summary,), _ = _run(db_url, OOM_WF)
    assert summary["state"] == "COMPLETED", summary["message"]
    (stage,) = summary["stages"]
    assert stage["attempts"] == 3  # 1G -> killed, 2G -> killed, 4G -> fits a 3G peak
    assert stage["mem_mb"] == 4096
    assert "OUT_OF_MEMORY" in stage["message"]


def test_out_of_memory_beyond_the_node_fails_clearly(db_url):
    text = OOM_WF.replace("peak_mem: 3G", "peak_mem: 200G").replace("mem: 1G", "mem: 64G")
    (summary,), _ = _run(db_url, text)
    assert summary["state"] == "FAILED"
    assert "cannot fit" in summary["message"] and "per node" in summary["message"]
    assert summary["stages"][0]["attempts"] == 2  # 64G, then the node's 128000 MB, then the clear failure


def test_out_of_memory_retries_are_bounded(db_url):
    (summary,), _ = _run(db_url, OOM_WF.replace("peak_mem: 3G", "peak_mem: 100G"))
    assert summary["state"] == "FAILED"
    assert summary["stages"][0]["attempts"] == 4  # first try + max_oom_retries (3)
    assert "raise the stage's mem or max_oom_retries" in summary["message"]


def test_timeout_is_retried_with_a_longer_limit(db_url):
    text = OOM_WF.replace("mem: 1G", "mem: 4G").replace("time: 1h", "time: 10m").replace("runtime: 20m", "runtime: 15m")
    (summary,), wfs = _run(db_url, text)
    assert summary["state"] == "COMPLETED"
    assert summary["stages"][0]["attempts"] == 2  # 10 m -> TIMEOUT, 20 m fits the 15 m run
    assert "TIMEOUT at 600 s; retrying with 1200 s" in summary["stages"][0]["message"]
    # explain gives the reason for the 20 m beside the file's 10 m (it told only the first attempt's)
    assert "retried after TIMEOUT at 600 s, so 1200 s" in render_explain(wfs[-1], None)


def test_timeout_retries_follow_the_stages_max_oom_retries(db_url):
    # workflow.md: max_oom_retries counts the retries after OUT_OF_MEMORY or TIMEOUT. The engine
    # used its own budget of 2 for timeouts, so max_oom_retries: 0 still retried twice (audit 5).
    text = OOM_WF.replace("mem: 1G", "mem: 4G").replace("time: 1h", "time: 10m").replace("runtime: 20m", "runtime: 2h")
    (summary,), _ = _run(db_url, text.replace("    run: grow --big", "    max_oom_retries: 0\n    run: grow --big"))
    assert summary["state"] == "FAILED" and summary["stages"][0]["attempts"] == 1
    assert "TIMEOUT in 1 attempts" in summary["message"] and "max_oom_retries" in summary["message"]
    (summary,), _ = _run(db_url, text.replace("    run: grow --big", "    max_oom_retries: 1\n    run: grow --big"))
    assert summary["state"] == "FAILED" and summary["stages"][0]["attempts"] == 2


def test_sizing_learns_smaller_requests_over_runs(db_url):
    text = OOM_WF.replace("sizing: off", "sizing: sizey-like").replace("mem: 1G", "mem: 16G") \
        .replace("peak_mem: 3G", "peak_mem: 2G")
    summaries, wfs = _run(db_url, text, runs=6)
    mems = [s["stages"][0]["mem_mb"] for s in summaries]
    assert mems[0] == 16 * 1024  # the user's value until the agent has seen runs
    assert mems[-1] < 8 * 1024, mems  # learned: far below the user's 16G, above the 2G peak
    assert all(s["state"] == "COMPLETED" for s in summaries)
    why = render_explain(wfs[-1], None)
    assert "sizey-like" in why


def test_a_stage_whose_failure_comes_with_the_workflows_end_shows_its_job(db_url):
    # audit 5: two stages failed between the same two polls; the one that would have been retried
    # was shown with no job ("-", CANCELLED) and "retrying" in a FAILED workflow. Its attempt is
    # what happened to it: FAILED, with that job.
    from asad.daemon.wiring import make_runner
    from asad.common.config import Settings
    text = """
name: both
strategy: per-stage
sizing: off
stages:
  - {name: slow, cpus: 1, mem: 1G, time: 10m, max_oom_retries: 1, run: slow, simulate: {runtime: 2h, peak_mem: 100M}}
  - {name: hog, after: [], cpus: 1, mem: 1G, time: 1h, max_oom_retries: 0, run: hog, simulate: {runtime: 40m, peak_mem: 3G}}
"""
    store = Store(db_url)
    try:
        sim = make_simulator("small", load=0.0, seed=0)
        runner = make_runner(Settings(), store, sim)
        wf = store.add_workflow(parse_workflow(text), sim.now(), strategy="per-stage")
        runner.load()
        runner.tick()  # both submitted
        sim.run_until(sim.now() + 2 * 3600)  # both end (TIMEOUT, OUT_OF_MEMORY) before asad looks
        for _ in range(3):
            runner.tick()
        (row,) = store.workflow_rows([wf.id])
        stages = {s["name"]: s for s in row.summary["stages"]}
    finally:
        store.close()
    assert row.summary["state"] == "FAILED" and "stage hog failed" in row.summary["message"]
    slow = stages["slow"]
    assert slow["state"] == "FAILED" and slow["job_id"] is not None, slow
    assert slow["message"] == "TIMEOUT; not retried: the workflow ended", slow
    # both ran before asad saw them run: their perceived waits come from their jobs' starts, as
    # WAIT does (show printed "WAIT 0:01  PERCEIVED -", and a total perceived wait of 0:00)
    for st in stages.values():
        assert st["start"] is not None and st["perceived_wait_s"] is not None, st
        assert st["perceived_wait_s"] == pytest.approx(st["start"] - row.summary["created_at"]), st
    # show names a stage's log files only if its job ran (it listed files that were never written)
    shown = dict(row.summary, stages=[dict(st, log=f"/r/{st['name']}.log", slurm_output=f"/r/{st['name']}-1.out",
                                           job_start=None if st["name"] == "hog" else st["job_start"])
                                      for st in row.summary["stages"]])
    text = render_summary(shown)
    assert "log /r/slow.log   Slurm output /r/slow-1.out" in text and "/r/hog" not in text, text


def test_no_deep_cut_from_one_run_and_every_cut_shown_in_status_and_show(db_url):
    # issue 39: after one run of a `mem: 1G` stage that peaked far below, the next run asked
    # --mem=64M and only `asad explain` told. Now: the file's request for the first run, a cut of
    # at most 4× (the request / unconfident_depth) until the agent's confident_runs (2) have
    # completed, and every cut marked in `asad status` and `asad show`.
    from asad.view.status import status_rows

    text = OOM_WF.replace("sizing: off", "sizing: sizey-like").replace("peak_mem: 3G", "peak_mem: 100M")
    summaries, wfs = _run(db_url, text, runs=3)
    mems = [s["stages"][0]["mem_mb"] for s in summaries]
    assert mems[:2] == [1024, 256] and mems[2] < 256, mems
    assert "held at 256 MB: with 1 completed run(s) of the 2 a deeper cut waits for" in render_explain(wfs[1], None)
    assert not summaries[0]["stages"][0]["sized_below"]
    assert summaries[1]["stages"][0]["sized_below"] == "sized below the file: mem 256M (file 1G)"
    cut = summaries[2]["stages"][0]["sized_below"]
    assert cut == f"sized below the file: mem {mems[2]}M (file 1G)"
    assert cut in render_summary(summaries[2])
    store = Store(db_url)
    try:
        wf_id = summaries[2]["id"]
        rows, notes = status_rows(store, wf_id, include_finished=True)
    finally:
        store.close()
    assert rows[0]["sized_below"] == cut


def test_status_marks_a_running_stage_sized_below_its_file(db_url):
    from asad.daemon.wiring import make_runner
    from asad.common.config import Settings
    from asad.view.status import render_status, status_rows

    text = OOM_WF.replace("sizing: off", "sizing: sizey-like").replace("peak_mem: 3G", "peak_mem: 100M")
    _run(db_url, text, runs=2)  # two completed runs: the agent may now cut
    sim = make_simulator("small", load=0.0, seed=7)
    store = Store(db_url)
    try:
        runner = make_runner(Settings(), store, sim)
        wf_id = store.add_workflow(parse_workflow(text), sim.now(), strategy="per-stage").id
        runner.load()
        for _ in range(3):  # the 20-minute stage is submitted and running
            runner.tick()
            sim.run_until(sim.now() + 120)
        runner.tick()
        rows, notes = status_rows(store, wf_id)
    finally:
        store.close()
    out = render_status(rows, None, notes)
    (row,) = rows
    assert row["state"] not in ("COMPLETED", "FAILED") and row["sized_below"].startswith("sized below the file: mem ")
    assert (f"# workflow {wf_id} stage grow: {row['sized_below']} by its sizing agent "
            f"(asad explain {wf_id} grow says why)") in out, out
