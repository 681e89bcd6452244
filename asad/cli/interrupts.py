"""SIGTERM on a process that drives a workflow in the terminal (``asad run``, ``asad resume --run``)
is a Ctrl-C: the workflow and the jobs it submitted are cancelled, and it says so. ``kill``, a
closing tmux pane's ``kill-session``, a batch system's time limit and ``timeout`` send SIGTERM; it
used to end the process silently and leave its jobs queued and running with nothing driving them.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the main thread is, as Ctrl-C raises KeyboardInterrupt."""


def exit_code(exc: KeyboardInterrupt) -> int:
    """The shell's code for a process ended by the signal: 143 for SIGTERM, 130 for SIGINT."""
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)


def _raise_terminated(_signum, _frame) -> None:  # noqa: ANN001
    raise Terminated


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (a KeyboardInterrupt)."""
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def uninterruptible() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM are ignored: a second one must not leave jobs behind
    while the first one's cancel is carried out."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
