"""Store trouble: a full disk, a database locked by another process, a corrupt file. Each gives a
clear message and loses nothing; the documented backup and restore procedure works."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter

import pytest
from sqlalchemy import event

from asad.daemon.wiring import make_runner, run_to_completion
from asad.common.config import Settings
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow
from asad.store.db import StoreError
from asad.store.repo import Store
from tests.conftest import EXAMPLES
from tests.test_cli import asad


class DiskLimit:
    """``PRAGMA max_page_count`` on every connection the store checks out: the database cannot
    grow past ``pages``, which SQLite reports exactly as a full disk (SQLITE_FULL)."""

    def __init__(self, store: Store):
        self.store, self.pages = store, None
        event.listen(store.engine, "checkout", self._apply)

    def _apply(self, dbapi_conn, _record, _proxy) -> None:  # noqa: ANN001
        dbapi_conn.execute(f"PRAGMA max_page_count = {self.pages or 1073741823}")

    def fill(self) -> None:
        with sqlite3.connect(self.store.url.removeprefix("sqlite:///")) as conn:
            self.pages = conn.execute("PRAGMA page_count").fetchone()[0]
        self.store.session.rollback()  # the next transaction checks a connection out again

    def free(self) -> None:
        self.pages = None
        self.store.session.rollback()


def test_disk_full_on_submit_is_clear_and_stores_nothing_half(db_url):
    store = Store(db_url)
    spec = load_workflow(EXAMPLES / "montage.yaml")
    store.add_workflow(spec, 0.0)
    limit = DiskLimit(store)
    limit.fill()
    with pytest.raises(StoreError, match="disk is full"):
        for _ in range(20):
            store.add_workflow(spec, 0.0)
    limit.free()
    # still usable, and no workflow without its stages
    rows = store.workflow_rows()
    loaded = store.load_workflows()
    assert all(len(wf.stages) == len(spec.stages) for wf in loaded)
    store.add_workflow(spec, 0.0)
    assert len(store.workflow_rows()) == len(rows) + 1
    store.close()


@pytest.mark.parametrize("fill_after_ticks", [0, 3, 8])
def test_disk_full_in_the_daemon_loses_and_doubles_nothing(db_url, fill_after_ticks):
    sim = make_simulator("small", load=0.3, seed=5)
    store = Store(db_url)
    runner = make_runner(Settings(), store, sim)
    ids = [store.add_workflow(load_workflow(EXAMPLES / f), sim.now(), strategy=s).id
           for f, s in (("montage.yaml", "asa"), ("dag.yaml", "chain"), ("statistics.yaml", "per-stage"))]
    runner.load()
    limit = DiskLimit(store)
    for _ in range(fill_after_ticks):
        runner.tick()
        sim.run_until(sim.now() + 600, stop_on=runner.live_job_ids())
    limit.fill()
    errors = []
    for _ in range(40):  # writes go on while they fit in the file's free space, then fail
        try:
            runner.tick()
        except StoreError as exc:
            errors.append(str(exc))
            if len(errors) >= 3:
                break
        sim.run_until(sim.now() + 600)
    assert errors and all("disk is full" in e for e in errors)
    # write-ahead: every job Slurm has is known to the store (its intent was committed first)
    other = Store(db_url)
    known = {j.tag for wf in other.load_workflows(ids) for j in wf.jobs}
    other.close()
    assert {st.comment for st in sim.find(f"asad:{store.store_id}:").values()} <= known
    limit.free()
    run_to_completion(runner, sim, ids)
    states = [r.state for r in store.workflow_rows(ids)]
    tags = Counter(st.comment for st in sim.find(f"asad:{store.store_id}:").values())
    store.close()
    assert states == ["COMPLETED"] * 3
    assert max(tags.values()) == 1


@pytest.mark.slow
def test_locked_database_is_a_clear_message_after_the_busy_timeout(tmp_path):
    db = tmp_path / "asad.db"
    Store(f"sqlite:///{db}").close()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(40)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.monotonic()
        proc = asad("submit", str(EXAMPLES / "blast.yaml"), "--db", f"sqlite:///{db}", check=False, timeout=60)
        waited = time.monotonic() - t0
        # readers are not blocked (WAL): status still answers at once
        status = asad("status", "--db", f"sqlite:///{db}", check=False, timeout=30)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 4, proc.stderr
    assert "locked by another process" in proc.stderr and "Traceback" not in proc.stderr
    assert waited >= 9.5  # the busy timeout was honoured before giving up
    assert status.returncode == 0
    assert asad("status", "--all", "--json", "--db", f"sqlite:///{db}").stdout.count('"stage"') == 0


def _damaged_store(tmp_path, first_page: int, pages: int, workflows: int = 30) -> str:
    """A store of ``workflows`` workflows whose pages ``first_page`` ... (4 KiB each) are overwritten."""
    db = tmp_path / "asad.db"
    store = Store(f"sqlite:///{db}")
    for _ in range(workflows):
        store.add_workflow(load_workflow(EXAMPLES / "montage.yaml"), 0.0)
    store.close()
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    page = 4096
    data[page * first_page:page * (first_page + pages)] = b"\xa5" * (page * pages)
    db.write_bytes(bytes(data))
    return f"sqlite:///{db}"


def test_corrupt_pages_are_a_clear_message(tmp_path):
    url = _damaged_store(tmp_path, 1, 5)  # the header survives; the schema and tables do not
    proc = asad("status", "--all", "--db", url, check=False)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "corrupt" in proc.stderr and "restore" in proc.stderr and "Traceback" not in proc.stderr


def _store_with_damaged_table_pages(tmp_path) -> str:
    """A store whose header and schema pages survive (it opens) but whose tables' do not: what the
    audit of 2026-11-26 made with ``dd ... seek=10 count=20 conv=notrunc``."""
    return _damaged_store(tmp_path, 10, 20, workflows=60)


def test_damaged_pages_found_after_opening_are_a_clear_message(tmp_path):
    url = _store_with_damaged_table_pages(tmp_path)
    for command in (["status", "--all"], ["history"], ["show", "1"]):
        proc = asad(*command, "--db", url, check=False)
        assert proc.returncode == 4, (command, proc.stdout + proc.stderr)
        assert "is corrupt" in proc.stderr and "restore" in proc.stderr and "Traceback" not in proc.stderr


def test_the_daemon_stops_on_a_corrupt_store_saying_how_to_restore_it(tmp_path, capsys):
    from asad.common.config import load_settings
    from asad.daemon.loop import run_daemon

    url = _store_with_damaged_table_pages(tmp_path)
    settings = load_settings({"db_url": url, "backend": "sim"})
    assert run_daemon(settings) == 4  # as it loads the workflows: not one traceback a second
    err = capsys.readouterr().err
    assert "is corrupt" in err and "restore a backup" in err and "Traceback" not in err


def test_a_store_that_fails_every_tick_is_retried_with_growing_pauses(db_url, monkeypatch, capsys):
    """The audit saw a daemon whose store went away log a traceback every second; ticks back off."""
    from sqlalchemy.exc import OperationalError

    from asad.common.config import load_settings
    from asad.daemon.loop import Pacer, run_daemon
    from asad.daemon.runner import Runner

    ticks = []
    pauses = []  # what the daemon asked to wait after each tick, not wall time (beats are 1 s apart)
    after_tick = Pacer.after_tick

    def recording_after_tick(self, **kw):  # noqa: ANN001, ANN003, ANN202
        pauses.append((kw["error"], after_tick(self, **kw)))
        return pauses[-1][1]

    def failing_tick(self):  # noqa: ANN001, ANN202
        ticks.append(time.monotonic())
        raise OperationalError("SELECT 1", {}, Exception("(2013, 'Lost connection to server during query')"))

    def failing_write(self, key, value):  # noqa: ANN001, ANN202 - the daemon's heartbeat fails too
        raise OperationalError("UPDATE daemon_status", {}, Exception("(2006, 'MySQL server has gone away')"))

    monkeypatch.setattr(Runner, "tick", failing_tick)
    monkeypatch.setattr(Pacer, "after_tick", recording_after_tick)
    monkeypatch.setattr(Store, "set_status", failing_write)
    settings = load_settings({"db_url": db_url, "backend": "sim", "poll_interval_s": 0.3, "sim_speed": 1.0})
    assert run_daemon(settings, max_ticks=4) == 0
    assert len(ticks) == 4 and all(error for error, _ in pauses), pauses
    asked = [pause for _, pause in pauses]
    assert asked[:3] == [0.6, 1.2, 2.4], asked
    out = capsys.readouterr()
    logged = out.out + out.err
    assert logged.count("the store cannot be used") == 4 and "Traceback" not in logged, logged


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 command-line shell is not installed")
def test_documented_backup_and_restore(tmp_path):
    """docs/operations.md: `sqlite3 asad.db ".backup backup.db"` while asad runs, then restore."""
    db = tmp_path / "asad.db"
    store = Store(f"sqlite:///{db}")
    ids = [store.add_workflow(load_workflow(EXAMPLES / "blast.yaml"), 0.0).id for _ in range(3)]
    # the store is open (as under a running daemon) and its latest writes are still in the WAL
    backup = tmp_path / "backup.db"
    subprocess.run(["sqlite3", str(db), f".backup {backup}"], check=True)
    store.close()
    db.unlink()
    for extra in tmp_path.glob("asad.db-*"):
        extra.unlink()
    shutil.copy(backup, db)
    db.chmod(0o600)
    out = asad("history", "--json", "--db", f"sqlite:///{db}").stdout
    assert sorted(int(x.split(":")[1].strip().rstrip(",")) for x in out.splitlines()
                  if x.strip().startswith('"id"')) == ids
    check = subprocess.run(["sqlite3", str(db), "PRAGMA integrity_check"], capture_output=True, text=True)
    assert check.stdout.strip() == "ok"


def test_a_password_in_the_store_url_is_never_shown(capsys):
    """Messages and logs show the store's URL; a password in it becomes ***."""
    from asad.cli.main import main
    from asad.store.db import shown_url

    assert shown_url("postgresql://alice:s3cret@db.example/asad") == "postgresql://alice:***@db.example/asad"
    assert main(["status", "--db", "postgresql://alice:s3cret@127.0.0.1:1/asad"]) == 4
    err = capsys.readouterr().err
    assert "s3cret" not in err and "alice:***@" in err and "Traceback" not in err
    import structlog

    structlog.reset_defaults()


def _open_fresh_store(path: str, start_at: float) -> str:
    """One process of the creation race: wait for the common start, then open the store."""
    while time.time() < start_at:
        pass
    try:
        store = Store(f"sqlite:///{path}")
        return store.store_id
    except BaseException as exc:  # noqa: BLE001 - reported back to the parent
        return f"error {type(exc).__name__}: {exc}"


def test_processes_opening_one_fresh_store_at_once_all_succeed(tmp_path):
    """Issue 13 defect 1: a daemon and a submit creating one store at the same moment must both open
    it, with one schema version and one store id (not AttributeError on a half-written meta)."""
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    with ctx.Pool(6) as pool:
        pool.map(time.sleep, [0] * 6)  # the workers are up and have imported asad
        # Several rounds: the race has more than one window (turning the file to WAL, a process
        # that wrote the meta rows first while another still creates tables); one round under
        # load hit each only now and then.
        for round_ in range(8):
            path = str(tmp_path / f"race{round_}" / "asad.db")
            start_at = time.time() + 0.3
            ids = pool.starmap(_open_fresh_store, [(path, start_at)] * 6)
            errors = [i for i in ids if i.startswith("error")]
            assert not errors, errors
            assert len(set(ids)) == 1, ids
            with sqlite3.connect(path) as conn:
                rows = dict(conn.execute("select key, value from meta").fetchall())
            assert rows["store_id"] == ids[0]


def test_a_store_found_corrupt_by_a_tick_stops_the_daemon(db_url, monkeypatch, capsys):
    from sqlalchemy.exc import DatabaseError

    from asad.common.config import load_settings
    from asad.daemon.loop import run_daemon
    from asad.daemon.runner import Runner

    def corrupt_tick(self):  # noqa: ANN001, ANN202
        raise DatabaseError("SELECT", {}, Exception("database disk image is malformed"))

    monkeypatch.setattr(Runner, "tick", corrupt_tick)
    assert run_daemon(load_settings({"db_url": db_url, "backend": "sim"})) == 4
    out = capsys.readouterr()
    assert "is corrupt: the daemon stopped" in out.err and "Traceback" not in out.out + out.err


def test_each_store_has_its_own_run_folders(tmp_path) -> None:
    # Workflow ids are a store's: two stores in one state dir both number from 1, so their stage
    # logs and markers must not share runs/<id> (the audit of 2026-11-27 saw `asad run --db ...`
    # overwrite the default store's workflow 1 logs, and markers of two workflows 18 mixed).
    state = tmp_path / "state"
    default = Settings(state_dir=state)
    other = Settings(state_dir=state, db_url=f"sqlite:///{tmp_path / 'scratch' / 'run2.db'}")
    fresh = Settings(state_dir=state, db_url=f"sqlite:///{tmp_path / 'tmpdir' / 'asad.db'}")
    server = Settings(state_dir=state, db_url="mysql+pymysql://me:secret@db.example/asad")
    assert default.run_dir == state / "runs"
    assert other.run_dir == tmp_path / "scratch" / "run2-runs"
    assert fresh.run_dir == tmp_path / "tmpdir" / "runs"
    assert server.run_dir.parent == state / "runs" and server.run_dir.name.startswith("store-")
    assert len({default.run_dir, other.run_dir, fresh.run_dir, server.run_dir}) == 4
    # one store named two ways (another state dir, or --db at the default file) has one folder
    assert Settings(state_dir=tmp_path / "elsewhere", db_url=f"sqlite:///{state / 'asad.db'}").run_dir == default.run_dir
    # the password is not part of which store it is
    assert Settings(state_dir=state, db_url="mysql+pymysql://me:other@db.example/asad").run_dir == server.run_dir
