"""Logging with structlog: readable on a terminal, JSON lines otherwise (systemd's journal)."""

from __future__ import annotations

import logging
import sys

import structlog


def setup_logging(verbosity: int = 0, *, json_lines: bool | None = None) -> None:
    level = logging.WARNING - 10 * verbosity  # -v: INFO, -vv: DEBUG; -q: ERROR
    level = max(logging.DEBUG, min(logging.CRITICAL, level))
    if json_lines is None:
        json_lines = not sys.stderr.isatty()
    renderer = structlog.processors.JSONRenderer() if json_lines else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
