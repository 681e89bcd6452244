"""Logging with structlog: readable on a terminal, JSON lines otherwise (systemd's journal)."""

from __future__ import annotations

import logging
import sys

import structlog


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when a line is written, not when logging was set up: a stream
    replaced since (pytest's capture, a daemon's redirection) must not receive writes once closed."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def setup_logging(verbosity: int = 0, *, json_lines: bool | None = None) -> None:
    level = logging.WARNING - 10 * verbosity  # -v: INFO, -vv: DEBUG; -q: ERROR
    level = max(logging.DEBUG, min(logging.CRITICAL, level))
    if json_lines is None:
        json_lines = not sys.stderr.isatty()
    renderer = structlog.processors.JSONRenderer() if json_lines else structlog.dev.ConsoleRenderer(colors=False)
    # JSON lines carry a logged exception's traceback as text ("exception"); without this they said
    # only "exc_info": true. The console renderer formats it itself.
    exceptions = [structlog.processors.format_exc_info] if json_lines else []
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *exceptions,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),
        cache_logger_on_first_use=False,
    )
