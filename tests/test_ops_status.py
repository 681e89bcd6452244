"""``asad status`` against the issue's contract: squeue's columns and letters, asad's own, -o, --json."""

from __future__ import annotations

import json
import time

import pytest
import structlog

from asad.daemon.wiring import make_runner
from asad.cli.main import main
from asad.common.config import Settings
from asad.slurm.sim import make_simulator
from asad.spec.load import parse_workflow
from asad.view.status import DEFAULT_FORMAT, render_status, status_rows
from asad.store.repo import Store


@pytest.fixture(autouse=True)
def _logging_back_to_defaults():
    yield
    structlog.reset_defaults()


WF = """name: st
strategy: asa
stages:
  - {name: first, cpus: 8, time: 2h, account: proj1, qos: normal, run: 'true', simulate: {runtime: 90m}}
  - {name: second, cpus: 4, time: 1h, run: 'true', simulate: {runtime: 20m}}
  - {name: third, cpus: 2, time: 30m, run: 'true', simulate: {runtime: 5m}}
"""


def _running_store(db_url):  # noqa: ANN001, ANN202
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    runner = make_runner(Settings(), store, sim)
    wf = store.add_workflow(parse_workflow(WF), sim.now(), strategy="asa")
    runner.load()
    runner.tick()
    sim.run_until(sim.now() + 600)
    runner.tick()
    store.set_status("clock", {"now": sim.now(), "wall": time.time(), "speed": 1.0})  # the daemon's clock
    store.commit()
    return store, wf


def test_default_columns_are_squeues_plus_asads(db_url):
    store, _ = _running_store(db_url)
    rows, notes = status_rows(store)
    text = render_status(rows, None, notes).splitlines()
    store.close()
    assert text.pop(0).startswith("# SIMULATED")  # the simulator's jobs are marked as such
    assert text[0].split() == ["WORKFLOW", "STAGE", "JOBID", "PARTITION", "NAME", "ST", "TIME", "NODES", "CPUS",
                               "PLANNED", "EST.WAIT", "TRY", "NODELIST(REASON)"]
    first, second, third = (line.split() for line in text[1:])
    assert first[1] == "first" and first[5] == "R" and first[-1] == "main-0"
    assert first[6] == "10:00"  # running for ten minutes, squeue's M:SS
    assert second[5] in ("PD", "PL") and third[5] == "WT" and third[-1] == "(Predecessors)"
    assert DEFAULT_FORMAT.count("%") == 13


def test_more_squeue_letters_and_json(db_url, capsys):
    store, wf = _running_store(db_url)
    rows, _ = status_rows(store)
    store.close()
    out = render_status(rows, "%A|%r|%N|%l|%L|%a|%q|%k").splitlines()
    assert out[0] == "JOBID|REASON|NODELIST|TIME_LIMIT|TIME_LEFT|ACCOUNT|QOS|COMMENT"
    job_id, reason, nodes, limit, left, account, qos, tag = out[1].split("|")
    assert job_id.isdigit() and reason == "-" and nodes == "main-0"
    assert limit == "2:00:00" and left == "1:50:00" and account == "proj1" and qos == "normal"
    assert tag.startswith("asad:") and tag.endswith(f":{wf.id}:first:1")
    capsys.readouterr()  # the runner's log lines so far
    assert main(["status", "--json", "--db", db_url]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["stage"] for s in data["stages"]] == ["first", "second", "third"]
    for key in ("job_id", "partition", "name", "st", "time_s", "nodes", "cpus", "reason", "workflow", "stage",
                "planned_at", "est_wait_s"):
        assert key in data["stages"][0]


def test_learners_show_a_picture_of_p():
    from asad.learn.registry import make_predictor
    from asad.view.learners import render_learners

    pred = make_predictor("asa-full", grid="log", log_weight_floor=8.0, seed=1)
    for wait in (30, 40, 30, 35, 30, 30):
        pred.observe(wait)
    text = render_learners([("cluster=sim|cpus=1", pred.to_state(), 6, 0.0)]).splitlines()
    assert "p over the grid" in text[0] and "log scale" in text[0]
    assert "█" in text[1] and text[1].split()[2] == "6"
    data = json.loads(render_learners([("k", pred.to_state(), 6, 0.0)], as_json=True))
    assert abs(sum(data[0]["p"]) - 1.0) < 1e-6 and len(data[0]["p"]) == len(data[0]["grid_s"])


def test_watch_refreshes_until_interrupted(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import EXAMPLES, ROOT

    db = f"sqlite:///{tmp_path / 'w.db'}"
    Store(db).add_workflow(parse_workflow((EXAMPLES / "blast.yaml").read_text()), 0.0)
    # A pytest started in the background by a non-interactive shell (scripts/test.sh runs one that
    # way) ignores SIGINT, and a child inherits that: Python then installs no KeyboardInterrupt
    # handler and the watch never ends. Ctrl-C reaches a terminal's foreground process: give it that.
    proc = subprocess.Popen([sys.executable, "-m", "asad", "status", "--db", db, "--watch", "0.2"],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT, env=os.environ.copy(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Interrupt after the second screen, however slow the start-up (not after a fixed sleep: on a
    # loaded machine the first screen alone took more than 4 s).
    seen = ""
    deadline = time.monotonic() + 120
    while seen.count("WORKFLOW") < 3 and time.monotonic() < deadline:
        seen += proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    out = seen + out
    assert proc.returncode == 130
    assert out.count("WORKFLOW") >= 2 and "blastn" in out
    assert "\033[2J" not in out  # into a pipe or a file: no screen-clear codes (audit 6)


def test_show_plot_draws_a_png_even_for_a_running_workflow(tmp_path, db_url, capsys):
    from PIL import Image

    store, wf = _running_store(db_url)
    store.close()
    out = tmp_path / "wf.png"
    assert main(["show", str(wf.id), "--db", db_url, "--plot", str(out)]) == 0
    with Image.open(out) as img:
        assert img.format == "PNG" and img.size[0] > 800
    capsys.readouterr()


def test_a_stage_whose_sbatch_is_under_way_says_so(db_url):
    """Between the write-ahead intent and sbatch's answer a stage has a job but no id: status says
    (Submitting), not Slurm's (None) of a job that exists."""
    from tests.test_crash import Crash, CrashingBackend

    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    runner = make_runner(Settings(), store, CrashingBackend(sim, crash_on=1, after_submit=False))
    store.add_workflow(parse_workflow(WF), sim.now(), strategy="asa")
    runner.load()
    with pytest.raises(Crash):  # dies inside the first sbatch: the intent is in the store
        runner.tick()
    store.session.rollback()
    rows, _ = status_rows(store)
    store.close()
    first = next(r for r in rows if r["stage"] == "first")
    assert (first["st"], first["job_id"], first["reason"]) == ("PD", None, "(Submitting)")
    assert first["partition"] == "main"  # the default partition, before any squeue names it


def test_show_gives_the_start_of_a_stage_cancelled_before_asad_saw_it_run(db_url):
    """A job that started after the daemon's last look and was then cancelled with its workflow
    still ran: asad show's START is its job's start, not '-'."""
    from asad.core.metrics import summarize

    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    runner = make_runner(Settings(), store, sim)
    wf = store.add_workflow(parse_workflow(WF), sim.now(), strategy="chain")
    runner.load()
    runner.tick()  # chain: all three submitted, the first starts
    sim.run_until(sim.now() + 90 * 60 + 120)  # the first ended, the second started: unseen
    store.request_cancel(wf.id)
    runner.tick()
    (done,) = store.load_workflows([wf.id])
    store.close()
    second = next(s for s in summarize(done)["stages"] if s["name"] == "second")
    assert done.stages["second"].state.value == "CANCELLED"
    assert second["start"] is not None and second["start"] == second["job_start"]


def test_squeue_letters_read_as_squeue_would_before_and_after_the_first_poll(db_url):
    """%T is the job's state (not the stage's SUBMITTED), a dependant not yet polled pends on
    (Dependency), a pending job's TIME_LEFT is its whole limit, a running one has its NODELIST."""
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    runner = make_runner(Settings(), store, sim)
    store.add_workflow(parse_workflow(WF), sim.now(), strategy="chain")
    runner.load()
    runner.tick()  # every stage submitted; none polled yet
    rows = {r["stage"]: r for r in status_rows(store)[0]}
    assert (rows["second"]["st"], rows["second"]["state_long"], rows["second"]["reason"]) == (
        "PD", "PENDING", "(Dependency)")
    sim.run_until(sim.now() + 60)
    runner.tick()
    rows = {r["stage"]: r for r in status_rows(store)[0]}
    store.close()
    assert (rows["first"]["state_long"], rows["first"]["nodelist"]) == ("RUNNING", "main-0")
    assert rows["second"]["time_left_s"] == rows["second"]["time_limit_s"] == 3600
    assert render_status(list(rows.values()), "%S %T %L").splitlines()[2].split() == ["second", "PENDING", "1:00:00"]


def test_min_memory_is_per_node_as_squeue_prints_it(db_url):
    """%m is squeue's MIN_MEMORY: what --mem asks of each node (the audit saw 400M for 2 x 200M)."""
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    runner = make_runner(Settings(), store, sim)
    store.add_workflow(parse_workflow("name: wide\nstages:\n  - {name: a, nodes: 2, ntasks: 2, cpus_per_task: 1, "
                                      "mem: 200M, time: 10m, run: 'true', simulate: {runtime: 5m}}\n"),
                       sim.now(), strategy="per-stage")
    before, _ = status_rows(store)  # not submitted yet: from the workflow file
    runner.load()
    runner.tick()
    after, _ = status_rows(store)
    store.close()
    for rows in (before, after):
        assert render_status(rows, "%m").splitlines()[-1].strip() == "200M", rows


def test_show_never_puts_a_stage_start_before_its_submission(db_url):
    """Slurm's times are whole seconds (truncated), asad's own a fraction later: a job that started in
    the second it was submitted showed SUBMIT +0:01, START +0:00 (the audit of 2026-11-26)."""
    from asad.daemon.wiring import run_in_process
    from asad.view.status import render_summary

    store = Store(db_url)
    (summary,) = run_in_process(store, make_simulator("small", load=0.0, seed=1), [parse_workflow(WF)])
    store.close()
    summary["created_at"] = 1000.9  # asad's clock at submission
    first = summary["stages"][0]
    first["submit"], first["start"] = 1001.7, 1001.0  # sbatch a moment later; Slurm's StartTime truncated
    row = next(line for line in render_summary(summary).splitlines() if line.strip().startswith("first"))
    submit, start = row.split()[5:7]
    assert submit == start == "+0:01", row


def test_an_arrays_task_counts_follow_its_end_markers_between_polls(tmp_path):
    """The audit saw 'R 2, PD 6' while Slurm had 4 tasks done, 2 running, 2 pending: the counts of
    the daemon's last poll, old by the time status ran."""
    from asad.core.model import JobPhase, JobRecord
    from asad.slurm.backend import JobRequest
    from asad.core.array_view import with_task_markers

    job = JobRecord(row_id=1, workflow_id=1, stage="work", attempt=1, tag="t", phase=JobPhase.LIVE,
                    request=JobRequest(name="asad.1.work", command="c", array="0-7%2",
                                       output=str(tmp_path / "work-%A_%a.out")),
                    geometry_key="k", job_id=94, submitted_at=1000.0)
    polled = {"R": 2, "PD": 6}
    assert with_task_markers(polled, str(tmp_path), "work", job) == polled  # nothing ended since
    (tmp_path / "work.0.end").write_text("0 900\n")  # an earlier attempt's: does not count
    assert with_task_markers(polled, str(tmp_path), "work", job) == polled
    for task, code in ((0, 0), (1, 0), (2, 0), (3, 1)):
        (tmp_path / f"work.{task}.alloc").write_text(f"{1000 + task} n1 {95 + task}\n")
        (tmp_path / f"work.{task}.end").write_text(f"{code} {1010 + task}\n")
    for task in (4, 5):  # running now
        (tmp_path / f"work.{task}.alloc").write_text(f"{1020 + task} n1 {95 + task}\n")
    assert with_task_markers(polled, str(tmp_path), "work", job) == {"CD": 3, "F": 1, "R": 2, "PD": 2}
    # a poll from before any task ran (all pending): the markers say which run now
    assert with_task_markers({"PD": 8}, str(tmp_path), "work", job) == {"CD": 3, "F": 1, "R": 2, "PD": 2}


def test_the_status_help_names_every_format_field():
    # audit 6: the -o letters were listed only in an error message, and %S/%W differ from squeue's
    import re

    from asad.cli.main import build_parser
    from asad.view.status import _FIELDS

    status = build_parser()._subparsers._group_actions[0].choices["status"]
    help_text = next(a.help for a in status._actions if "--format" in a.option_strings) % {}
    assert set(re.findall(r"%\.?\d*([A-Za-z])", help_text)) >= set(_FIELDS), help_text


def test_show_never_puts_a_stage_end_before_its_start(db_url):
    """Issue 36: ``show`` printed END before START. A stage's start can come from its wrapper's
    marker (fractions of a second) and its end from Slurm (whole seconds, truncated)."""
    from asad.daemon.wiring import run_in_process
    from asad.core.metrics import summarize
    from asad.view.status import render_summary

    store = Store(db_url)
    run_in_process(store, make_simulator("small", load=0.0, seed=1), [parse_workflow(WF)])
    (wf,) = store.load_workflows()
    store.close()
    first = wf.stages["first"]
    first.start_time = wf.created_at + 5.6  # the command's start marker
    first.end_time = wf.created_at + 5.0  # Slurm's EndTime, truncated: it ended in that second
    summary = summarize(wf)
    assert summary["stages"][0]["end"] >= summary["stages"][0]["start"]
    row = next(line for line in render_summary(summary).splitlines() if line.strip().startswith("first"))
    start, end = row.split()[6:8]
    assert start == end == "+0:06", row


GPU_ARRAY_WF = """name: arr
strategy: chain
stages:
  - {name: a, cpus: 1, time: 2h, run: 'true', simulate: {runtime: 1h}}
  - {name: b, cpus: 1, time: 1h, run: 'true', array: 0-19, after: [a], gpus: 1, simulate: {runtime: 10m}}
"""


def _chain_submitted(db_url: str):  # noqa: ANN202
    """GPU_ARRAY_WF with both stages submitted (chain): ``a`` runs, the array ``b`` waits on it."""
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    store.add_workflow(parse_workflow(GPU_ARRAY_WF), sim.now(), strategy="chain")
    runner = make_runner(Settings(db_url=db_url), store, sim)
    runner.load()
    runner.tick()
    sim.run_until(sim.now() + 60)
    runner.tick()
    return store


def test_a_pending_array_says_why_it_waits(db_url):
    """Issue 36: an array stage waiting on its predecessor showed ``PD 20`` where squeue says
    ``(Dependency)``."""
    store = _chain_submitted(db_url)
    rows, _ = status_rows(store)
    store.close()
    b = next(r for r in rows if r["stage"] == "b")
    assert b["st"] == "PD" and b["reason"] == "(Dependency) PD 20", b["reason"]


def test_gpus_are_shown_where_a_stage_asks_for_them(db_url):
    """Issue 36: GPUs were shown nowhere. ``status`` adds a GPUS column (``%b``) and ``show`` one
    in its stage table when a stage asks for GPUs; a CPU-only workflow's output is unchanged."""
    from asad.core.metrics import summarize
    from asad.view.status import DEFAULT_FORMAT, render_summary

    store = _chain_submitted(db_url)
    rows, _ = status_rows(store)
    (wf,) = store.load_workflows()
    store.close()
    table = render_status(rows).splitlines()
    head = table[0].split()
    assert "GPUS" in head and head.index("GPUS") == head.index("CPUS") + 1
    gpus = {line.split()[1]: line.split()[head.index("GPUS")] for line in table[1:]}
    assert gpus == {"a": "-", "b": "1"}
    assert render_status(rows, "%S %b").splitlines()[1:] == ["a -", "b 1"]
    shown = render_summary(summarize(wf)).splitlines()
    header = next(line for line in shown if line.strip().startswith("STAGE")).split()
    b_row = next(line for line in shown if line.strip().startswith("b ")).split()
    assert header[header.index("CPUS") + 1] == "GPUS" and b_row[header.index("GPUS")] == "1"
    assert "GPUS" not in render_status([dict(r, gpus="") for r in rows]).splitlines()[0]
    assert "%b" not in DEFAULT_FORMAT


def test_asads_own_resubmissions_are_not_tries(db_url):
    """Issue 36: a job asad cancelled itself to submit it again (an allocation that came too early,
    a --begin made too late, a dependency that can no longer be met) counted as a try: TRY 2 for a
    stage that never failed. It is the same try, as for the retry budgets; a real failure is a new one."""
    from dataclasses import replace

    from asad.daemon.wiring import run_in_process
    from asad.core.metrics import summarize
    from asad.slurm.backend import JobState
    from asad.view.status import _stage_rows, render_summary

    store = Store(db_url)
    run_in_process(store, make_simulator("small", load=0.0, seed=1), [parse_workflow(WF)])
    (wf,) = store.load_workflows()
    store.close()
    first = wf.current_job("first")
    replaced = replace(first, row_id=-1, job_id=first.job_id + 1000, state=JobState.CANCELLED,
                       cancelled_by_asad=True, start_time=None, end_time=None)
    wf.jobs = [replaced, replace(first, attempt=2), *[j for j in wf.jobs if j is not first]]
    wf.stages["first"].attempt = 2
    wf.stages["first"].job_row = first.row_id
    assert _stage_rows(wf, time.time())[0]["attempts"] == 1
    summary = summarize(wf)
    assert summary["stages"][0]["attempts"] == 1
    shown = render_summary(summary)
    assert "asad resubmitted it (replanned; the same try)" in shown
    # a real failure before it: two tries
    failed = replace(replaced, cancelled_by_asad=False, state=JobState.OUT_OF_MEMORY)
    wf.jobs[0] = failed
    assert _stage_rows(wf, time.time())[0]["attempts"] == 2 and summarize(wf)["stages"][0]["attempts"] == 2
