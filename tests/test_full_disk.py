"""Issue 36: a full disk under asad's run folder failed the stages whose logs and markers go there,
with no word why. ``asad status`` and the daemon's log now say so, with the ``output:`` way out.

A real full file system: a small tmpfs, filled (root only; skipped elsewhere)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from asad.spec.load import parse_workflow
from asad.store.repo import Store
from tests.conftest import EXAMPLES, ROOT


@pytest.fixture
def full_disk(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(folder) -> None:  # noqa: ANN001
    with open(folder / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def test_status_says_the_run_folders_disk_is_full_and_how_out(full_disk):
    state = full_disk / "asad"
    store = Store(f"sqlite:///{state / 'asad.db'}")
    wf = store.add_workflow(parse_workflow((EXAMPLES / "blast.yaml").read_text()), 0.0)
    store.commit()
    store.close()
    env = dict(os.environ, ASAD_STATE_DIR=str(state))
    ok = subprocess.run([sys.executable, "-m", "asad", "status"], cwd=ROOT, env=env, capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0 and "is full" not in ok.stdout, ok.stdout + ok.stderr
    _fill(full_disk)
    res = subprocess.run([sys.executable, "-m", "asad", "status"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    note = next(line for line in res.stdout.splitlines() if "is full" in line)
    assert str(state / "runs") in note and "output:" in note and "free space" in note, note
    assert str(wf.id) in res.stdout


def test_the_daemon_logs_a_full_run_disk_once_and_its_end(full_disk):
    from structlog.testing import capture_logs

    from asad.daemon.disk import FULL_BELOW_MB, free_mb
    from asad.daemon.loop import _tell_disk

    state: dict = {}
    with capture_logs() as logs:
        _tell_disk(state, full_disk / "runs")
        _fill(full_disk)
        _tell_disk(state, full_disk / "runs")
        _tell_disk(state, full_disk / "runs")
        # Truncate before unlinking: an unlinked file keeps its pages while any process holds it
        # open, and a process forked elsewhere in the suite (a subprocess started by another
        # thread) inherits every open descriptor until it execs; CI saw the disk still full 10 s
        # after a bare unlink. A truncated tmpfs file gives its pages back at once, held or not.
        os.truncate(full_disk / "filler", 0)
        (full_disk / "filler").unlink()
        deadline = time.monotonic() + 10
        while (free_mb(full_disk) or 0) < FULL_BELOW_MB and time.monotonic() < deadline:
            time.sleep(0.1)
        free_after = free_mb(full_disk)
        _tell_disk(state, full_disk / "runs")
    assert [e["log_level"] for e in logs] == ["warning", "info"], (logs, free_after)
    assert "is full" in logs[0]["event"] and "output:" in logs[0]["event"]
