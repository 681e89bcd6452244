"""One driver per store across hosts: a lease in the store itself.

The daemon and ``asad run`` drive a store (they submit its stages); two drivers would submit the
same stages twice. On one host the store's lock file settles that (``Settings.lock_file``). A store
on a database server, or an SQLite file in a home folder that several login nodes share, can be
reached from another host where that file lock is not seen, or not reliable (``flock`` over NFS).
So a driver also holds a lease: a row in the store naming its host and process, renewed at every
tick (and at least every ``RENEW_S``). Another host may take the store over only when the lease
has not been renewed for ``lease_s`` (a crashed driver's host); on the same host, the file lock
already proved the earlier holder gone. The lease is taken and renewed by compare-and-set, so two
hosts starting at the same instant cannot both win.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from dataclasses import asdict, dataclass

KEY = "driver_lease"
RENEW_S = 60.0  # a holder renews at least this often while it ticks
MIN_LEASE_S = 600.0  # ... and is presumed dead after this long without renewal (or twice its longest pause)


class LeaseHeld(Exception):
    """Another host's driver holds the store."""


class LeaseLost(Exception):
    """Another host took the store over: this driver must stop driving it."""


@dataclass(frozen=True)
class Holder:
    host: str
    pid: int
    token: str
    renewed_at: float  # wall-clock seconds (the holder's clock)
    lease_s: float
    released: bool = False

    def fresh(self, now: float) -> bool:
        return not self.released and now - self.renewed_at <= self.lease_s

    def describe(self, now: float) -> str:
        return (f"the asad driver on host {self.host} (pid {self.pid}) holds this store; it renewed its lease "
                f"{now - self.renewed_at:.0f} s ago")


def _holder(raw: str | None) -> Holder | None:
    return None if raw is None else Holder(**json.loads(raw))


def current_holder(store) -> Holder | None:  # noqa: ANN001
    return _holder(store.meta_value(KEY))


def driver_elsewhere(store) -> Holder | None:  # noqa: ANN001
    """A live driver of this store on another host (its lease is fresh), else None."""
    holder = current_holder(store)
    if holder is None or holder.host == socket.gethostname() or not holder.fresh(time.time()):
        return None
    return holder


def lease_seconds(max_pause_s: float) -> float:
    """Long enough that a holder idling at its longest pause still renews in time."""
    return max(MIN_LEASE_S, 2 * max_pause_s + RENEW_S)


class Lease:
    """This process's lease on a store (taken by ``acquire``, kept by ``renew``)."""

    def __init__(self, store, *, lease_s: float, host: str | None = None, clock=time.time) -> None:  # noqa: ANN001
        self.store, self.lease_s, self.clock = store, lease_s, clock
        self.host = host or socket.gethostname()
        self.token = secrets.token_hex(8)
        self._raw: str | None = None
        self._renewed = -float("inf")

    def _record(self, *, released: bool = False) -> str:
        holder = Holder(self.host, os.getpid(), self.token, self.clock(), self.lease_s, released)
        return json.dumps(asdict(holder), sort_keys=True)

    def acquire(self) -> None:
        """Take the store, or raise ``LeaseHeld`` naming the other holder and when it may be taken."""
        for _ in range(5):  # lost a compare-and-set race: read again
            raw = self.store.meta_value(KEY)
            other, now = _holder(raw), self.clock()
            if other is not None and other.host != self.host and other.fresh(now):
                free_at = time.strftime("%H:%M:%S %Z", time.localtime(other.renewed_at + other.lease_s))
                raise LeaseHeld(f"{other.describe(now)}. One driver per store: stop that one first "
                                f"(systemctl --user stop asad, on {other.host}). If that host is down, "
                                f"this store is free at {free_at}; or give this one a store of its own (--db).")
            new = self._record()
            if self.store.swap_meta(KEY, raw, new):
                self._raw, self._renewed = new, time.monotonic()
                return
        raise LeaseHeld("another asad driver is taking this store at the same moment; try again")

    def renew(self, *, force: bool = False) -> bool:
        """Renew when ``RENEW_S`` passed (or ``force``); False when another host took the store over
        (this one was presumed dead): stop driving it."""
        if not force and time.monotonic() - self._renewed < RENEW_S:
            return True
        new = self._record()
        if not self.store.swap_meta(KEY, self._raw, new):
            return False
        self._raw, self._renewed = new, time.monotonic()
        return True

    def release(self) -> None:
        """A clean stop: the store is free at once, for this host or another."""
        if self._raw is not None and self.store.swap_meta(KEY, self._raw, self._record(released=True)):
            self._raw = None
