"""``asad submit --dry-run`` prints what would be submitted, submits and stores nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLES, ROOT


def asad(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "asad", *args], cwd=ROOT, capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=120)


def test_dry_run_prints_every_chain_job_and_stores_nothing():
    res = asad("submit", str(EXAMPLES / "montage.yaml"), "--dry-run", "--backend", "sim", "--strategy", "chain")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.count("sbatch --parsable") == 9
    assert '"--dependency=afterok:${JOBID_mProjectPP}"' in out
    assert "simulated cluster" in out
    state = Path(os.environ["XDG_STATE_HOME"]) / "asad"
    assert not (state / "asad.db").exists() and not (state / "runs").exists()


def test_dry_run_of_a_per_stage_workflow_shows_only_what_goes_now():
    res = asad("submit", str(EXAMPLES / "montage.yaml"), "--dry-run", "--backend", "sim", "--strategy", "per-stage")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("sbatch --parsable") == 1 and "The other 8 stage(s)" in res.stdout


def test_dry_run_refuses_a_broken_file_like_submit(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nstages:\n  - {name: a, cpus: 100000, run: 'true'}\n")
    res = asad("submit", str(bad), "--dry-run", "--backend", "sim")
    assert res.returncode == 3 and "Traceback" not in res.stderr and "sbatch" not in res.stdout


def test_dry_run_of_big_job_says_every_stage_runs_in_the_one_allocation():
    res = asad("submit", str(EXAMPLES / "montage.yaml"), "--dry-run", "--backend", "sim", "--strategy", "big-job")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("sbatch --parsable") == 1 and "9 of 9 stages would be submitted now" in res.stdout
    assert "# big-job: one allocation; stages mProjectPP" in res.stdout and "The other" not in res.stdout


def _fake_sbatch(bin_dir: Path, received: Path) -> dict[str, str]:
    """An ``sbatch`` on PATH that keeps each batch script it is given (stdin) and prints a job id."""
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(f"#!/bin/bash\ncat >> {received}\necho '--- end of script'>> {received}\necho 4242\n")
    sbatch.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")


def test_a_run_line_like_the_old_delimiter_stays_inside_the_printed_script(tmp_path):
    """Issue 36: the here-document ended at a fixed line ``ASAD_SCRIPT``; a ``run:`` holding that
    line ended it early and the rest of the command ran in the user's own shell (the login node)."""
    escaped = tmp_path / "ran-on-the-login-node"
    wf = tmp_path / "wf.yaml"
    wf.write_text("name: heredoc\nstages:\n  - name: a\n    time: 5m\n    mem: 100M\n    run: |\n"
                  f"      echo one\n      ASAD_SCRIPT\n      touch {escaped}\n")
    res = asad("submit", str(wf), "--dry-run", "--backend", "sim")
    assert res.returncode == 0, res.stderr
    received = tmp_path / "received.txt"
    ran = subprocess.run(["bash", "-c", res.stdout], env=_fake_sbatch(tmp_path / "bin", received),
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert not escaped.exists()
    script = received.read_text()
    assert "ASAD_SCRIPT\n" in script and f"touch {escaped}" in script  # the whole command reached sbatch


def test_heredoc_delimiter_is_never_a_line_of_the_script():
    from asad.cli.dryrun import heredoc_delimiter

    word = heredoc_delimiter("echo a")
    script = f"echo a\n{word}\n{word}_1\n"
    assert heredoc_delimiter(script) not in script.splitlines()


def test_the_simulators_dry_run_shows_setup_and_the_output_file(tmp_path):
    """Issue 36: on the simulator the printed scripts had no ``setup:`` lines and no ``--output``
    (the stage's command only), unlike what a real cluster is given."""
    wf = tmp_path / "wf.yaml"
    wf.write_text("name: s\nstages:\n  - name: a\n    time: 5m\n    mem: 100M\n"
                  "    setup: ['module load gcc/12']\n    run: 'echo hi'\n")
    res = asad("submit", str(wf), "--dry-run", "--backend", "sim")
    assert res.returncode == 0, res.stderr
    assert "module load gcc/12" in res.stdout and "asad-stage.sh" in res.stdout
    assert "--output=" in res.stdout and "/runs/1/a-%j.out" in res.stdout


def test_dry_run_folder_is_private_and_this_users_own(tmp_path, monkeypatch):
    """Issue 36: the dry run's folder was the predictable ``/tmp/asad-dry-run-<uid>``, used whoever
    made it. A folder of another's (here: a link to one) is not used; one of ours is made 0700."""
    import stat
    import tempfile

    from asad.cli.dryrun import dry_run_dir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    base = tmp_path / f"asad-dry-run-{os.getuid()}"
    elsewhere = tmp_path / "someone-elses"
    elsewhere.mkdir(mode=0o777)
    base.symlink_to(elsewhere)
    got = dry_run_dir()
    assert not got.is_relative_to(base) and not got.is_relative_to(elsewhere)
    assert got.parent.is_dir() and stat.S_IMODE(got.parent.stat().st_mode) == 0o700
    assert got.parent.stat().st_uid == os.getuid()
    base.unlink()
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    assert dry_run_dir() == base / "runs" and stat.S_IMODE(base.stat().st_mode) == 0o700


def test_dry_run_folder_of_another_user_is_not_used(tmp_path, monkeypatch):
    import tempfile

    from asad.cli.dryrun import dry_run_dir

    if os.getuid() != 0:
        import pytest

        pytest.skip("making a folder another user owns needs root")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    base = tmp_path / f"asad-dry-run-{os.getuid()}"
    base.mkdir(mode=0o700)
    os.chown(base, 65534, 65534)
    assert not dry_run_dir().is_relative_to(base)
