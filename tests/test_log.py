"""The daemon's log under systemd (JSON lines): a logged exception keeps its text."""

from __future__ import annotations

import json

import structlog

from asad.common.log import setup_logging


def test_a_logged_exception_keeps_its_traceback_in_json_lines(capsys):
    before = structlog.get_config()
    setup_logging(1, json_lines=True)
    try:
        raise FileNotFoundError(2, "No such file or directory", "/proc/nope")
    except FileNotFoundError:
        structlog.get_logger("asad.test").exception("tick failed; retrying")
    finally:
        structlog.configure(**before)  # the other tests' logging as it was
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert line["event"] == "tick failed; retrying" and line["level"] == "error"
    assert "FileNotFoundError" in line["exception"] and "/proc/nope" in line["exception"]


def test_the_daemon_says_it_started_without_v(tmp_path):
    """Issue 36: ``asad daemon`` logged nothing at start without ``-v``, while the systemd docs
    promise "daemon started" in its log."""
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = dict(os.environ, ASAD_STATE_DIR=str(tmp_path / "state"), ASAD_DB_URL=f"sqlite:///{tmp_path / 'd.db'}")
    proc = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "sim", "--speed", "1"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    import threading

    stop = threading.Timer(30.0, proc.send_signal, (signal.SIGTERM,))  # without the line: stop it anyway
    stop.start()
    try:
        lines = []
        for line in proc.stderr:  # until the daemon says it started (or has stopped)
            lines.append(line)
            if "daemon started" in line:
                break
        proc.send_signal(signal.SIGTERM)
        _out, rest = proc.communicate(timeout=60)
        err = "".join(lines) + rest
    finally:
        stop.cancel()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    events = [json.loads(line)["event"] for line in err.splitlines() if line.startswith("{")]
    assert "daemon started" in events and "daemon stopped" in events, err
