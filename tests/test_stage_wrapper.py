"""slurm-scripts/asad-stage.sh without Slurm: markers, exit codes, the naive-mode wait."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

WRAPPER = Path(__file__).resolve().parent.parent / "slurm-scripts" / "asad-stage.sh"


def run(run_dir: Path, stage: str, command: str, timeout: float = 20, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ASAD_", "SLURM_"))}
    full.update(ASAD_RUN_DIR=str(run_dir), ASAD_STAGE=stage, ASAD_COMMAND=command, ASAD_WAIT_POLL_S="0.1",
                SLURM_JOB_ID="4242")
    full.update(env)
    return subprocess.run(["bash", str(WRAPPER)], env=full, capture_output=True, text=True, timeout=timeout)


def test_markers_log_and_exit_code(tmp_path):
    res = run(tmp_path / "wf", "a", "echo out; echo err >&2; exit 7", STAGE_VALUE="v", SLURMD_NODENAME="n3")
    assert res.returncode == 7
    d = tmp_path / "wf"
    assert (d / "a.end").read_text().split()[0] == "7"
    start = (d / "a.start").read_text().split()
    assert start[2] == "4242" and int(start[0]) <= int((d / "a.end").read_text().split()[1])
    assert start[1] == "n3" and (d / "a.alloc").read_text().split()[1] == "n3"  # the node as squeue names it
    assert (d / "a.log").read_text() == "out\nerr\n"


def test_stage_env_reaches_command(tmp_path):
    res = run(tmp_path, "a", 'echo "$STAGE_VALUE"', STAGE_VALUE="x, y")
    assert res.returncode == 0 and (tmp_path / "a.log").read_text() == "x, y\n"


def test_script_path_with_and_without_exec_bit(tmp_path):
    script = tmp_path / "s.sh"
    script.write_text("echo from-script\nexit 5\n")
    assert run(tmp_path, "a", str(script)).returncode == 5
    script.chmod(0o755)
    assert run(tmp_path, "b", str(script)).returncode == 5
    assert (tmp_path / "b.log").read_text() == "from-script\n"


def test_a_script_without_exec_bit_runs_with_its_interpreter(tmp_path):
    # audit 5: a 0644 hello.py ran with bash ("syntax error near unexpected token")
    py = tmp_path / "hello.py"
    py.write_text('import sys\nprint("hello from", "python")\nsys.exit(3)\n')
    res = run(tmp_path, "py", str(py))
    assert res.returncode == 3 and (tmp_path / "py.log").read_text() == "hello from python\n"
    # a #! line wins over the suffix, with its arguments
    odd = tmp_path / "step.sh"
    odd.write_text('#!/usr/bin/env python3 -u\nprint("via shebang")\n')
    res = run(tmp_path, "sb", str(odd))
    assert res.returncode == 0 and (tmp_path / "sb.log").read_text() == "via shebang\n"
    perl = tmp_path / "p.pl"
    perl.write_text('print "perl ", 6 * 7, "\\n";\n')
    if subprocess.run(["which", "perl"], capture_output=True).returncode == 0:
        assert run(tmp_path, "pl", str(perl)).returncode == 0 and (tmp_path / "pl.log").read_text() == "perl 42\n"


def test_naive_waits_for_predecessor_end(tmp_path):
    def finish_later():
        time.sleep(0.6)
        (tmp_path / "p.end").write_text("0 123\n")

    t = threading.Thread(target=finish_later)
    t.start()
    t0 = time.monotonic()
    res = run(tmp_path, "b", "echo ran", ASAD_WAIT_FOR="p")
    t.join()
    assert res.returncode == 0 and time.monotonic() - t0 >= 0.5
    assert (tmp_path / "b.log").read_text() == "ran\n"
    assert int((tmp_path / "b.start").read_text().split()[0]) >= int((tmp_path / "b.alloc").read_text().split()[0])


def test_naive_failed_predecessor_means_not_running(tmp_path):
    (tmp_path / "p1.end").write_text("0 1\n")
    (tmp_path / "p2.end").write_text("137 2\n")
    res = run(tmp_path, "b", f"touch {tmp_path}/ran", ASAD_WAIT_FOR="p1 p2")
    assert res.returncode == 3
    assert not (tmp_path / "ran").exists() and not (tmp_path / "b.start").exists()
    assert (tmp_path / "b.end").read_text().startswith("3 ") and "p2 failed with exit code 137" in res.stderr
    # the failure cascades to the next stage in the chain
    assert run(tmp_path, "c", "true", ASAD_WAIT_FOR="b").returncode == 3


def test_wait_timeout(tmp_path):
    res = run(tmp_path, "b", "true", ASAD_WAIT_FOR="never", ASAD_WAIT_TIMEOUT_S="1")
    assert res.returncode == 4 and (tmp_path / "b.end").read_text().startswith("4 ")


def test_new_attempt_clears_old_markers(tmp_path):
    run(tmp_path, "a", "exit 1")
    assert (tmp_path / "a.end").read_text().startswith("1 ")
    run(tmp_path, "a", "sleep 0.3", )
    assert (tmp_path / "a.end").read_text().startswith("0 ")


def test_sigterm_is_passed_on_and_recorded(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASAD_", "SLURM_"))}
    env.update(ASAD_RUN_DIR=str(tmp_path), ASAD_STAGE="a", ASAD_COMMAND="sleep 30")
    proc = subprocess.Popen(["bash", str(WRAPPER)], env=env)
    for _ in range(100):
        if (tmp_path / "a.start").exists():
            break
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 143
    assert (tmp_path / "a.end").read_text().startswith("143 ")


def test_only_task_zero_writes_markers(tmp_path):
    res = run(tmp_path, "a", "echo task", SLURM_PROCID="1")
    assert res.returncode == 0 and not (tmp_path / "a.end").exists() and not (tmp_path / "a.start").exists()


@pytest.mark.parametrize("missing", ["ASAD_RUN_DIR", "ASAD_STAGE", "ASAD_COMMAND"])
def test_usage_errors(tmp_path, missing):
    res = run(tmp_path, "a", "true", **{missing: ""})
    assert res.returncode == 2 and missing in res.stderr


def test_a_new_attempt_keeps_the_last_attempts_log(tmp_path):
    first = run(tmp_path, "a", "echo first try; exit 1", SLURM_JOB_ID="100")
    assert first.stderr == ""  # no earlier attempt: nothing to keep, and nothing said about it
    run(tmp_path, "a", "echo second try", SLURM_JOB_ID="101")
    assert (tmp_path / "a.log").read_text() == "second try\n"
    assert (tmp_path / "a.log.100").read_text() == "first try\n"
    run(tmp_path, "a", "echo requeued", SLURM_JOB_ID="101")  # the same job again (a requeue): no copy
    assert (tmp_path / "a.log").read_text() == "requeued\n" and not (tmp_path / "a.log.101").exists()
