"""asad's run folders are private (docs/operations.md: 0700): they hold every stage's log and the
markers the stage wrapper waits for. Issue 36: ``runs/`` itself was made 0755 (``mkdir(parents=True,
mode=0o700)`` gives the mode to the last folder only)."""

from __future__ import annotations

import os
import stat

from asad.daemon.wiring import CommandBuilder
from asad.common.private_dir import make_private_dir
from asad.spec.load import parse_workflow
from asad.store.repo import Store


def _mode(path) -> int:  # noqa: ANN001
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_run_root_and_each_workflows_folder_are_0700(tmp_path):
    old = os.umask(0o022)
    try:
        store = Store(f"sqlite:///{tmp_path / 'a.db'}")
        wf = store.add_workflow(parse_workflow("name: w\nstages:\n  - {name: s, run: 'true'}\n"), 0.0,
                                strategy="per-stage")
        store.close()
        runs = tmp_path / "state" / "asad" / "runs"
        CommandBuilder(runs)(wf, "s", None)
    finally:
        os.umask(old)
    assert _mode(runs) == 0o700 and _mode(runs / str(wf.id)) == 0o700
    assert _mode(runs.parent) == 0o700  # made here too: nothing of it was there


def test_a_run_root_an_earlier_version_made_0755_is_tightened(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    runs.chmod(0o755)
    make_private_dir(runs / "7", tighten=runs)
    assert _mode(runs) == 0o700 and _mode(runs / "7") == 0o700


def test_folders_above_that_exist_are_left_as_they_are(tmp_path):
    tmp_path.chmod(0o755)
    make_private_dir(tmp_path / "a" / "b")
    assert _mode(tmp_path) == 0o755 and _mode(tmp_path / "a") == 0o700
