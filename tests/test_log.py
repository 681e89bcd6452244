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
