"""Issue 36, item 3: a store deleted under a running daemon is noticed, and a new store's workflows
never write into an earlier store's run folders."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from asad.spec.load import load_workflow
from asad.store.identity import StoreFile, highest_run_folder
from asad.store.repo import Store
from tests.conftest import EXAMPLES

ROOT = Path(__file__).resolve().parent.parent


def test_store_file_identity_sees_deletion_and_replacement(tmp_path):
    url = f"sqlite:///{tmp_path / 'asad.db'}"
    Store(url).close()
    ident = StoreFile.of(url)
    assert ident is not None and ident.gone() is None
    os.rename(tmp_path / "asad.db", tmp_path / "old.db")
    assert "deleted" in ident.gone()
    Store(url).close()  # a new store at the same path
    assert "replaced" in ident.gone()


def test_a_new_stores_workflow_ids_skip_an_earlier_stores_run_folders(tmp_path):
    runs = tmp_path / "runs"
    for i in (1, 2, 7):
        (runs / str(i)).mkdir(parents=True)
    (runs / "asad-stage-abc.sh").write_text("")
    assert highest_run_folder(runs) == 7
    store = Store(f"sqlite:///{tmp_path / 'asad.db'}")
    spec = load_workflow(EXAMPLES / "blast.yaml")
    assert store.add_workflow(spec, 0.0, first_id=highest_run_folder(runs) + 1).id == 8
    assert store.add_workflow(spec, 0.0, first_id=highest_run_folder(runs) + 1).id == 9  # its own ids go on
    store.close()


def test_the_daemon_stops_when_its_store_is_deleted(tmp_path):
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    db = tmp_path / "state" / "asad" / "asad.db"
    daemon = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "sim", "--speed", "100",
                               "--load", "0", "--poll", "5"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not (db.exists() and Path(str(db) + ".lock").exists()) and time.time() < deadline:
            time.sleep(0.5)
        time.sleep(3)
        for path in db.parent.glob("asad.db*"):  # rm asad.db*
            path.unlink()
        out, err = daemon.communicate(timeout=120)
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(30)
    assert daemon.returncode == 4, (out, err)
    assert "was deleted while the daemon ran" in err and "start the daemon again" in err
