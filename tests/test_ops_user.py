"""Issue 13, "a real user's first hour": what tripped a new user, each with a test that failed
before its fix (the store creation race is in test_ops_store.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

import asad.cli.main as cli
from asad.daemon import wiring as app
from asad.core.model import JobPhase
from asad.slurm.backend import JobState
from asad.spec.load import parse_workflow
from asad.store.repo import Store
from tests.conftest import EXAMPLES, ROOT
from tests.test_cli import asad


# -- defect 8: read-only store, unknown workflow, unknown format letter, Ctrl-C on run ---------------
@pytest.fixture
def read_only_dir(tmp_path):
    """A read-only file system (a read-only bind mount): the errno 30 a user sees, which root's
    permission checks would not give."""
    src, mnt = tmp_path / "src", tmp_path / "ro"
    (src / "asad").mkdir(parents=True)
    mnt.mkdir()
    proc = subprocess.run(["mount", "--bind", "-o", "ro", str(src), str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here: {proc.stderr.strip()}")
    try:
        yield src, mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_read_only_store_is_a_clear_message_and_exit_4(read_only_dir, monkeypatch):
    src, mnt = read_only_dir
    monkeypatch.setenv("ASAD_STATE_DIR", str(mnt / "fresh"))  # no store yet: the folder cannot be made
    for args in (["status"], ["submit", str(EXAMPLES / "blast.yaml")], ["daemon", "--backend", "sim"]):
        proc = asad(*args, check=False)
        assert proc.returncode == 4, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert "Read-only file system" in proc.stderr and "ASAD_STATE_DIR" in proc.stderr, proc.stderr
    # an existing store on a file system that became read-only: what writes says so and stops
    Store(f"sqlite:///{src / 'asad' / 'asad.db'}").close()
    monkeypatch.setenv("ASAD_STATE_DIR", str(mnt / "asad"))
    for args in (["submit", str(EXAMPLES / "blast.yaml")], ["daemon", "--backend", "sim"]):
        proc = asad(*args, check=False)
        assert proc.returncode == 4, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "read-only file system" in proc.stderr.lower(), proc.stderr


def test_the_commands_that_only_show_read_a_store_on_a_read_only_file_system(read_only_dir, monkeypatch):
    """Issue 36: status, show, explain ... could not read a store on a read-only file system (a
    snapshot, a backup mounted read-only): they opened it for writing. They open it read-only now
    (SQLite's mode=ro, immutable there), WAL file and all, and write nothing."""
    import hashlib

    src, mnt = read_only_dir
    store = Store(f"sqlite:///{src / 'asad' / 'asad.db'}")
    wf = store.add_workflow(parse_workflow((EXAMPLES / "blast.yaml").read_text()), 0.0)
    store.commit()
    store.close()
    (src / "asad" / "asad.db.lock").write_text("")  # the lock file a daemon that ran here left
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (src / "asad").iterdir()}
    monkeypatch.setenv("ASAD_STATE_DIR", str(mnt / "asad"))
    for args in (["status"], ["status", "--all", "--json"], ["history"], ["show", str(wf.id)],
                 ["explain", str(wf.id)], ["learners"], ["predict", "--cpus", "4", "--cluster", "sim"]):
        proc = asad(*args, check=False)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert "blast" in asad("history", check=False).stdout
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (src / "asad").iterdir()}
    assert after == before


def test_the_commands_that_only_show_write_nothing_to_a_writable_store(tmp_path, monkeypatch):
    """Opened read-only on a writable file system too: a status beside a daemon never writes."""
    import hashlib

    db = tmp_path / "s" / "asad.db"
    store = Store(f"sqlite:///{db}")
    wf = store.add_workflow(parse_workflow((EXAMPLES / "blast.yaml").read_text()), 0.0)
    store.commit()
    store.close()
    monkeypatch.setenv("ASAD_DB_URL", f"sqlite:///{db}")
    sums = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in db.parent.iterdir() if p.is_file()}
    for args in (["status", "--all"], ["show", str(wf.id)], ["explain", str(wf.id)]):
        proc = asad(*args, check=False)
        assert proc.returncode == 0, (args, proc.stderr)
    assert sums == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in db.parent.iterdir()
                    if p.is_file() and p.name in sums}


def test_status_of_an_unknown_workflow_exits_non_zero():
    proc = asad("status", "999", check=False)
    assert proc.returncode == 3 and "no workflow 999" in proc.stderr


def test_status_refuses_an_unknown_format_letter_and_lists_the_valid_ones():
    proc = asad("status", "-o", "%i %Z", check=False)
    assert proc.returncode == 3
    assert "%Z" in proc.stderr and "%i JOBID" in proc.stderr and "%t ST" in proc.stderr
    assert proc.stdout == ""


class _InterruptedSim:
    """The simulator, with a Ctrl-C arriving once the workflow has a job in the queue."""

    def __init__(self, sim):
        self._sim = sim

    def __getattr__(self, name):
        return getattr(self._sim, name)

    def run_until(self, t, stop_on=()):
        if list(stop_on):
            raise KeyboardInterrupt
        return self._sim.run_until(t, stop_on)


def test_ctrl_c_on_run_cancels_the_jobs_it_submitted_and_says_so(monkeypatch, capsys):
    real = app.make_backend
    made = []

    def make_backend(*args, **kwargs):
        made.append(_InterruptedSim(real(*args, **kwargs)))
        return made[-1]

    monkeypatch.setattr(app, "make_backend", make_backend)
    code = cli.main(["run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0"])
    err = capsys.readouterr().err
    assert code == 130
    store = Store(app.Settings().database_url)
    try:
        wf = store.load_workflows()[0]
        jobs = [j for j in wf.jobs if j.job_id is not None]
        assert wf.state.value == "CANCELLED" and jobs
        statuses = made[0].poll([j.job_id for j in jobs])
        assert all(s.state is JobState.CANCELLED for s in statuses.values()), statuses
        assert all(j.phase is not JobPhase.LIVE or j.state.is_final for j in wf.jobs)
    finally:
        store.close()
    assert f"workflow {wf.id} cancelled" in err and str(jobs[0].job_id) in err


class _TerminatedSim(_InterruptedSim):
    """The simulator, with a SIGTERM (``kill``, ``timeout``, a closing tmux) arriving once the
    workflow has a job in the queue."""

    def run_until(self, t, stop_on=()):
        if list(stop_on):
            os.kill(os.getpid(), signal.SIGTERM)
        return self._sim.run_until(t, stop_on)


def test_sigterm_on_run_cancels_the_jobs_it_submitted_and_says_so(monkeypatch, capsys):
    """Issue 36: ``asad run`` killed by SIGTERM exited silently and left its jobs (Ctrl-C worked)."""
    real = app.make_backend
    made = []

    def make_backend(*args, **kwargs):
        made.append(_TerminatedSim(real(*args, **kwargs)))
        return made[-1]

    def unhandled(_signum, _frame):
        raise RuntimeError("SIGTERM reached the test: asad run left it to the default (death, jobs left)")

    monkeypatch.setattr(app, "make_backend", make_backend)
    previous = signal.signal(signal.SIGTERM, unhandled)
    try:
        code = cli.main(["run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0"])
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert code == 143
    store = Store(app.Settings().database_url)
    try:
        wf = store.load_workflows()[0]
        jobs = [j for j in wf.jobs if j.job_id is not None]
        assert wf.state.value == "CANCELLED" and jobs
        statuses = made[0].poll([j.job_id for j in jobs])
        assert all(s.state is JobState.CANCELLED for s in statuses.values()), statuses
    finally:
        store.close()
    assert f"terminated (SIGTERM): workflow {wf.id} cancelled" in err and str(jobs[0].job_id) in err


# -- defects 2 and 3: the backend is chosen visibly; simulated output is marked -------------------
@pytest.fixture
def no_slurm(tmp_path, monkeypatch):
    """A machine where no Slurm answers: no SLURM_CONF, a 'sinfo' that fails as Debian's does without
    a configuration, and asad's own default backend."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "sinfo"
    fake.write_text("#!/bin/sh\necho 'sinfo: fatal: Could not establish a configuration source' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.delenv("ASAD_BACKEND")
    from asad.daemon.backend_choice import slurm_answers

    slurm_answers.cache_clear()
    yield bin_dir
    slurm_answers.cache_clear()


def test_daemon_never_falls_into_the_simulator_by_default(no_slurm):
    for args in (["daemon"], ["run", str(EXAMPLES / "blast.yaml")]):
        proc = asad(*args, check=False, timeout=60)
        assert proc.returncode == 3, (args, proc.stdout, proc.stderr)
        assert "no Slurm cluster answers" in proc.stderr and "--backend sim" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert json.loads(asad("status", "--all", "--json").stdout)["stages"] == []  # nothing was run
    # submit stores the workflow for a daemon to come, unchecked (as when Slurm is down), and says so:
    # never checked against the simulator
    big = no_slurm.parent / "big.yaml"
    big.write_text("name: big\nstages:\n  - {name: a, cpus: 2, mem: 64G, time: 1h, run: 'true'}\n")
    proc = asad("submit", str(big), check=False)
    assert proc.returncode == 0 and "not checked against a cluster" in proc.stderr, proc.stderr
    # the simulator is named as the way to it if that is what was meant, never as the daemon to start
    assert "pass --backend sim to use the simulator" in proc.stderr
    assert "asad daemon --backend sim" not in proc.stderr and proc.stderr.rstrip().endswith("asad daemon")
    assert "SIMULATED" not in asad("status").stdout
    # the simulator, asked for by name, still works (the README's first command)
    out = json.loads(asad("run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0", "--json").stdout)
    assert out["state"] == "COMPLETED" and out["simulated"] is True


def test_auto_is_slurm_when_slurm_answers(no_slurm, monkeypatch):
    from asad.daemon.backend_choice import resolve_backend, slurm_answers

    (no_slurm / "sinfo").write_text("#!/bin/sh\necho main\n")
    assert resolve_backend("auto") == "slurm"
    slurm_answers.cache_clear()
    (no_slurm / "sinfo").write_text("#!/bin/sh\nexit 1\n")
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/slurm.conf")  # set: Slurm is meant, even if down now
    assert resolve_backend("auto") == "slurm"
    assert resolve_backend("sim") == "sim"



def test_submit_while_slurm_is_down_stores_nothing(no_slurm):
    """SLURM_CONF is set (Slurm is meant) but it does not answer: submit cannot check the stage
    sizes, so it refuses (exit 5) and stores nothing, rather than accepting a workflow that may
    fail later."""
    (no_slurm / "sinfo").write_text("#!/bin/sh\necho 'sinfo: error: slurm_load_partitions: Unexpected message "
                                    "received' >&2\nexit 1\n")
    env = {**os.environ, "SLURM_CONF": "/etc/slurm/slurm.conf"}
    proc = asad("submit", str(EXAMPLES / "blast.yaml"), check=False, env=env)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "Slurm did not answer" in proc.stderr and "Nothing was stored or submitted" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads(asad("history", "--json").stdout) == []

def test_submit_validates_against_the_running_daemons_backend(no_slurm, tmp_path):
    """With no flag and no Slurm here, the daemon that holds the store decides: it records its backend."""
    from asad.common.config import load_settings
    from asad.daemon.loop import acquire_lock

    settings = load_settings()
    store = Store(settings.database_url)
    store.set_status("daemon", {"pid": os.getpid(), "backend": "sim"})
    store.commit()
    store.close()
    lock = acquire_lock(settings)
    try:
        proc = asad("submit", str(EXAMPLES / "blast.yaml"), check=False)
    finally:
        os.close(lock)
    assert proc.returncode == 0, proc.stderr
    status = asad("status").stdout.splitlines()
    assert status[0].startswith("# SIMULATED")  # the daemon drives the simulator: said on top


def test_simulated_output_is_marked_and_real_output_is_not(tmp_path):
    asad("run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0")
    assert "SIMULATED" in asad("show", "1").stdout.splitlines()[1]
    assert asad("history").stdout.splitlines()[1].split()[-1] == "SIMULATED"
    assert json.loads(asad("history", "--json").stdout)[0]["simulated"] is True
    assert asad("status", "--all").stdout.startswith("# SIMULATED")
    # a workflow no simulator touched (submitted, no daemon yet) is not marked
    other = f"sqlite:///{tmp_path / 'other.db'}"
    asad("submit", str(EXAMPLES / "blast.yaml"), "--db", other)
    assert "SIMULATED" not in asad("status", "--db", other).stdout
    assert "SIMULATED" not in asad("history", "--db", other).stdout
    assert asad("history", "--db", other).stdout.splitlines()[1].split()[-1] == "-"  # no job yet
    assert json.loads(asad("history", "--json", "--db", other).stdout)[0]["backend"] is None
    assert json.loads(asad("history", "--json").stdout)[0]["backend"] == "sim"


# -- defect 6: asad run beside a daemon on the same store ----------------------------------------
def test_run_refuses_clearly_while_a_daemon_drives_the_store(tmp_path):
    """Two drivers on one store submit the same stages (the daemon's ticks then fail on
    ``UNIQUE constraint failed: jobs.tag``): asad run refuses and submits nothing."""
    import os

    from asad.common.config import load_settings
    from asad.daemon.loop import acquire_lock

    settings = load_settings()
    lock = acquire_lock(settings)  # what a running daemon holds
    try:
        proc = asad("run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0", check=False)
    finally:
        os.close(lock)
    assert proc.returncode == 3, proc.stderr
    assert "asad submit" in proc.stderr and "Nothing was submitted" in proc.stderr
    assert json.loads(asad("history", "--json").stdout) == []
    lock = acquire_lock(settings)
    try:  # resume --run beside a daemon: the advice that resumes it (audit 6: it said 'asad submit')
        resumed = asad("resume", "5", "--run", check=False)
    finally:
        os.close(lock)
    assert resumed.returncode == 3 and "Fix: 'asad resume 5' without --run" in resumed.stderr, resumed.stderr
    # the lock is the store's, not the state dir's: another state dir naming the same store is refused
    # too, and the store of its own that the message suggests is not
    lock = acquire_lock(settings)
    try:
        elsewhere = asad("run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0", "--db",
                         settings.database_url, check=False, env={**os.environ, "ASAD_STATE_DIR": str(tmp_path / "other")})
        own = asad("run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0", "--db",
                   f"sqlite:///{tmp_path / 'own' / 'asad.db'}", check=False)
    finally:
        os.close(lock)
    assert elsewhere.returncode == 3 and "Nothing was submitted" in elsewhere.stderr, elsewhere.stderr
    assert own.returncode == 0, own.stderr
    assert json.loads(asad("history", "--json").stdout) == []
    # and while asad run drives the store (it holds the same lock), a daemon refuses to start beside it
    from asad.cli.commands import _run_lock

    lock = _run_lock(settings)
    try:
        daemon = asad("daemon", "--backend", "sim", check=False, timeout=60)
    finally:
        os.close(lock)
    assert daemon.returncode == 6 and "asad run" in daemon.stdout, daemon.stdout


# -- defect 5: where a stage's output is -------------------------------------------------------------
class _RealLike:
    """The simulator under another name: the runner then writes batch scripts and output paths as
    for a real cluster (<run dir>/<workflow id>/<stage>-%j.out), on virtual time."""

    name = "slurm-like"

    def __init__(self, sim):
        self._sim = sim

    def __getattr__(self, attr):
        return getattr(self._sim, attr)


def test_show_and_status_print_each_stages_log_path():
    import sqlite3

    from asad.daemon.wiring import run_in_process
    from asad.common.config import load_settings
    from asad.slurm.sim import make_simulator
    from asad.spec.load import load_workflow

    settings = load_settings()
    store = Store(settings.database_url)
    try:
        run_in_process(store, _RealLike(make_simulator("small", load=0.0)),
                       [load_workflow(EXAMPLES / "blast.yaml")], settings=settings)
        job_ids = {j.stage: j.job_id for j in store.jobs_for(1)}
    finally:
        store.close()
    run_dir = settings.run_dir / "1"
    show = asad("show", "1").stdout
    for stage, job_id in job_ids.items():
        assert f"log {run_dir}/{stage}.log   Slurm output {run_dir}/{stage}-{job_id}.out" in show, show
    data = json.loads(asad("show", "1", "--json").stdout)
    assert {st["name"]: st["log"] for st in data["stages"]} == {s: f"{run_dir}/{s}.log" for s in job_ids}
    # a failed stage: asad status says where to look, without being asked
    with sqlite3.connect(settings.database_url.removeprefix("sqlite:///")) as db:
        db.execute("update stages set state = 'FAILED', message = 'sbatch refused it' where name = 'blastn'")
    # no log (the simulator writes none; on a cluster: refused, or killed before its command ran)
    status = asad("status", "--all").stdout
    assert "# workflow 1 stage blastn failed before its command wrote any output: sbatch refused it" in status
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "blastn.log").write_text("what the command printed\n")
    status = asad("status", "--all").stdout
    assert (f"# workflow 1 stage blastn failed: its output is in {run_dir}/blastn.log "
            f"(Slurm's: {run_dir}/blastn-{job_ids['blastn']}.out)") in status, status


# -- defect 4: status between two polls of the daemon ---------------------------------------------------
TWO_WIDE = """name: wide
strategy: per-stage
stages:
  - {name: a, nodes: 4, ntasks: 112, time: 2h, run: 'true', simulate: {runtime: 90m}}
  - {name: b, after: [], nodes: 4, ntasks: 112, time: 2h, run: 'true', simulate: {runtime: 90m}}
"""


def _rows_at(store, now: float) -> dict[str, dict]:
    import time

    from asad.view.status import status_rows

    store.set_status("clock", {"now": now, "wall": time.time(), "speed": 1.0})
    store.commit()
    return {r["stage"]: r for r in status_rows(store, include_finished=True)[0]}


def test_time_counts_only_while_running_and_stops_at_cancel():
    from asad.daemon.wiring import make_runner
    from asad.common.config import load_settings
    from asad.core.metrics import summarize
    from asad.slurm.sim import make_simulator
    from asad.spec.load import parse_workflow

    settings = load_settings()
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(settings.database_url)
    try:
        runner = make_runner(settings, store, sim)
        wf = store.add_workflow(parse_workflow(TWO_WIDE), sim.now(), strategy="per-stage")
        runner.load()
        runner.tick()
        sim.run_until(sim.now() + 600)
        runner.tick()
        t = sim.now()
        rows = _rows_at(store, t)
        running, pending = sorted(rows.values(), key=lambda r: r["st"] != "R")
        assert running["st"] == "R" and pending["st"] == "PD"
        assert pending["time_s"] is None  # squeue: a pending job has run 0:00, whatever its age
        assert running["time_s"] == pytest.approx(600, abs=5)
        assert _rows_at(store, t + 3600)[pending["stage"]]["time_s"] is None
        # cancelled: the running job's TIME stops at the cancel, and show gives it an END
        store.request_cancel(wf.id)
        runner.tick()
        later = _rows_at(store, t + 7200)
        assert later[running["stage"]]["st"] == "CA"
        assert later[running["stage"]]["time_s"] == pytest.approx(600, abs=5)
        assert later[pending["stage"]]["time_s"] is None
        summary = summarize(store.load_workflows([wf.id])[0])
        ends = {s["name"]: s["end"] for s in summary["stages"]}
        assert ends[running["stage"]] == pytest.approx(t, abs=5), summary
    finally:
        store.close()


def test_a_started_job_shows_r_before_the_daemons_next_poll():
    """The stage wrapper's allocation marker says the job started: R, its host and its TIME."""
    from asad.daemon.wiring import make_runner
    from asad.common.config import load_settings
    from asad.slurm.sim import make_simulator
    from asad.spec.load import parse_workflow

    settings = load_settings()
    sim = _RealLike(make_simulator("small", load=0.0, seed=1))
    store = Store(settings.database_url)
    try:
        runner = make_runner(settings, store, sim)
        store.add_workflow(parse_workflow(TWO_WIDE), sim.now(), strategy="per-stage")
        runner.load()
        runner.tick()  # both submitted; no poll since
        t = sim.now()
        rows = _rows_at(store, t + 120)
        assert [r["st"] for r in rows.values()] == ["PD", "PD"]
        job_id = rows["a"]["job_id"]
        (settings.run_dir / "1" / "a.alloc").write_text(f"{t + 60} node7 {job_id}\n")
        (settings.run_dir / "1" / "b.alloc").write_text(f"{t + 60} node7 999999\n")  # another job's: ignored
        rows = _rows_at(store, t + 120)
        assert rows["a"]["st"] == "R" and rows["a"]["reason"] == "node7"
        assert rows["a"]["time_s"] == pytest.approx(60, abs=2)
        assert rows["b"]["st"] == "PD" and rows["b"]["time_s"] is None
        # its command ended (the wrapper's start and end markers of this job): the clock stops there
        # rather than counting until a daemon polls Slurm again (or forever, with none running)
        (settings.run_dir / "1" / "a.start").write_text(f"{t + 61} node7 {job_id}\n")
        (settings.run_dir / "1" / "a.end").write_text(f"0 {t + 91}\n")
        rows = _rows_at(store, t + 600)
        assert (rows["a"]["st"], rows["a"]["state_long"], rows["a"]["reason"]) == ("CD", "COMPLETED", "")
        assert rows["a"]["time_s"] == pytest.approx(30, abs=2)
    finally:
        store.close()


def test_status_says_how_old_the_daemons_last_poll_is():
    import time

    from asad.common.config import load_settings
    from asad.view.status import status_rows

    store = Store(load_settings().database_url)
    try:
        store.set_status("daemon", {"pid": 1, "backend": "slurm"})
        store.set_status("clock", {"now": time.time() - 200, "wall": time.time() - 200, "speed": 1.0})
        store.commit()
        notes = status_rows(store)[1]
        assert any(n.startswith("states as of the daemon's last poll of Slurm, 3:") for n in notes), notes
        store.set_status("clock", {"now": time.time(), "wall": time.time(), "speed": 1.0})
        store.commit()
        assert status_rows(store)[1] == []
    finally:
        store.close()


# -- defect 9: a systemd unit with the right paths and environment -------------------------------------
def test_service_writes_a_unit_that_runs_this_asad_with_this_shells_slurm(tmp_path, monkeypatch):
    import shlex
    import shutil

    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/site's slurm.conf")
    monkeypatch.setenv("PATH", f"/opt/slurm 100%/bin:{os.environ['PATH']}")
    unit = tmp_path / "asad.daemon.service"
    res = asad("service", "--backend", "slurm", "--output", str(unit))
    assert res.returncode == 0 and str(unit) in res.stdout, res.stderr
    # outside systemd's own folders the unit is enabled by its path, which links it in (audit 6: the
    # advice named a unit systemd could not find)
    assert f"systemctl --user enable --now {unit.resolve()}" in res.stdout, res.stdout
    text = unit.read_text()
    lines = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    words = shlex.split(lines["ExecStart"].replace("$$", "$"))
    assert words[words.index("daemon"):] == ["daemon", "--backend", "slurm"]
    from asad.daemon.service import EXIT_ALREADY_RUNNING  # a second daemon on this host: no restart loop

    assert lines["RestartPreventExitStatus"] == str(EXIT_ALREADY_RUNNING)
    version = subprocess.run([*words[:words.index("daemon")], "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("asad "), version  # this very asad
    env = [shlex.split(line.split("=", 1)[1])[0].replace("%%", "%")
           for line in text.splitlines() if line.startswith("Environment=")]
    assert "SLURM_CONF=/etc/slurm/site's slurm.conf" in env and f"PATH={os.environ['PATH']}" in env
    again = asad("service", "--output", str(unit), check=False)
    assert again.returncode == 3 and "--force" in again.stderr
    assert unit.stat().st_mode & 0o777 == 0o600  # it may hold the store's password
    # a server store's URL goes to the (private) environment, never to the command line ps shows
    asad("service", "--backend", "slurm", "--db", "mysql+pymysql://me:s3cret@db/asad", "--output", str(unit),
         "--force")
    text = unit.read_text()
    exec_start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert "s3cret" not in exec_start and "--db" not in exec_start
    assert 'Environment="ASAD_DB_URL=mysql+pymysql://me:s3cret@db/asad"' in text
    assert unit.stat().st_mode & 0o777 == 0o600
    # a relative SQLite path is made absolute: systemd starts the service in $HOME
    asad("service", "--backend", "slurm", "--db", "rel/asad.db", "--output", str(unit), "--force")
    assert f'Environment="ASAD_DB_URL=sqlite:///{ROOT}/rel/asad.db"' in unit.read_text()
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed: the unit's syntax was not checked by systemd")
    verify = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stderr


# -- audit 5, finding 6: asad cancel with no daemon leaves status and show wrong -----------------------
class _SimAsSlurm:
    """The simulator standing in for a real Slurm (a workflow whose jobs asad cancel must scancel)."""

    name = "slurm"
    cluster_name = "fake"

    def __init__(self, sim):
        self._sim = sim

    def __getattr__(self, name):
        return getattr(self._sim, name)


def test_cancel_with_no_daemon_records_the_workflow_as_cancelled_at_once(monkeypatch, capsys):
    """The daemon died while a stage ran and the next ones waited in Slurm's queue: ``asad cancel``
    scancels them and records the cancellation as the daemon would, so status says CA (not the
    running stage's F from its end marker, nor PD for jobs gone from the queue) and show CANCELLED;
    a daemon started later agrees. A workflow that submitted nothing is cancelled at once too."""
    from asad.daemon.wiring import make_runner
    from asad.core.model import StageState
    from asad.slurm.sim import make_simulator
    from asad.spec.load import load_workflow
    from asad.view.status import status_rows

    settings = app.Settings()
    sim = _SimAsSlurm(make_simulator("small", load=0.0, seed=1))
    store = Store(settings.database_url)
    runner = make_runner(settings, store, sim)
    wf = store.add_workflow(load_workflow(str(EXAMPLES / "blast.yaml")), sim.now(), strategy="chain")
    runner.load()
    for _ in range(50):
        runner.tick()
        if runner.active[wf.id].stages["blastn"].state is StageState.RUNNING:
            break
        sim.run_until(sim.now() + 30)
    jobs = [j.job_id for j in runner.active[wf.id].jobs if j.job_id is not None]
    assert len(jobs) == 2  # blastn running, merge queued behind it
    idle = store.add_workflow(load_workflow(str(EXAMPLES / "blast.yaml")), sim.now())  # submitted, no job yet
    store.close()  # the daemon is gone (killed): nothing drives the store
    monkeypatch.setattr(app, "make_backend", lambda *a, **k: sim)

    assert cli.main(["cancel", str(wf.id)]) == 0
    out = capsys.readouterr().out
    assert "cancelled" in out and all(str(j) in out for j in jobs), out
    assert all(s.state is JobState.CANCELLED for s in sim.poll(jobs).values())
    assert cli.main(["cancel", str(idle.id)]) == 0
    assert "not submitted any job" in capsys.readouterr().out
    store = Store(settings.database_url)
    try:
        assert [r.state for r in store.workflow_rows([wf.id, idle.id])] == ["CANCELLED", "CANCELLED"]
        rows, _ = status_rows(store, wf.id, include_finished=True)
        assert [r["st"] for r in rows] == ["CA", "CA"], rows
        rows, _ = status_rows(store, idle.id, include_finished=True)
        assert [r["st"] for r in rows] == ["CA", "CA"], rows
        assert not store.cancel_requested_ids()
    finally:
        store.close()
