"""The daemon: one per store (a lock file on this host, a lease in the store across hosts:
asad/daemon/lease.py), APScheduler wakes the runner on time.

The pause between two ticks adapts (polite to slurmctld): it starts at ``poll_interval_s``,
grows by half each time nothing changed up to ``max_poll_interval_s``, and shrinks again to
reach a planned submission or an expected stage end on time. Between ticks a watcher looks
every second at the wake file (``asad submit``/``cancel``), the running stages' end markers and the
pending jobs' allocation markers (``asad.daemon.wake``), and brings the next tick forward when one changed. When Slurm fails, pauses grow
up to ``OUTAGE_RETRY_MAX_S``; after ``PAUSE_AFTER`` failures in a row the daemon says it is paused
(``asad status`` shows it) and keeps retrying at that interval, resuming on its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime

import structlog
from sqlalchemy.exc import SQLAlchemyError

from asad.common.config import Settings
from asad.daemon.lease import Lease, LeaseHeld, LeaseLost, lease_seconds
from asad.daemon.service import EXIT_ALREADY_RUNNING
from asad.store.db import StoreError, explain_failure, is_corrupt, shown_url
from asad.store.identity import StoreFile
from asad.daemon.wake import (BRISK_FOR_S, BRISK_POLL_S, RELEASED_POLL_S, WATCH_INTERVAL_S, StoreWake, Watch,
                              end_markers, kill_logs, released_jobs, start_markers)

log = structlog.get_logger("asad.daemon.loop")

PAUSE_AFTER = 5
# While Slurm does not answer, one failing call a minute costs slurmctld nothing, and the daemon
# notices its return within a minute (at 300 s, the audit of 2026-11-25 saw recovery wait 5 min).
OUTAGE_RETRY_MAX_S = 60.0


# A standby daemon (another host drives the store) looks again this often: a takeover comes at the
# earliest when the other one stops cleanly, and one read of a row costs the store nothing.
STANDBY_LOOK_S = 30.0
EXIT_STORE_FAILED = 4  # as the CLI's EXIT_STORE: the store cannot be used


class AlreadyRunning(Exception):
    pass


def _open_lock(settings: Settings) -> int:
    settings.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    settings.lock_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    return os.open(settings.lock_file, os.O_CREAT | os.O_RDWR, 0o600)


def acquire_lock(settings: Settings) -> int:
    fd = _open_lock(settings)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise AlreadyRunning(f"another asad daemon (or an 'asad run') holds {settings.lock_file}; one per user and store. "
                             "Stop it first (systemctl --user stop asad), or give this one a store of its own (--db).") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def daemon_running(settings: Settings) -> bool:
    if not settings.lock_file.exists():
        return False
    try:  # only to look: read-only (the state may be on a read-only file system); flock needs no write
        fd = os.open(settings.lock_file, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def sd_notify(message: str) -> None:
    """Tell systemd (Type=notify) we are ready; a no-op outside systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(address)
            sock.sendall(message.encode())
        except OSError:
            pass


@dataclass
class Pacer:
    """How long to pause before the next tick (in the backend's seconds)."""

    min_s: float
    max_s: float
    current_s: float = 0.0
    failures: int = 0

    def __post_init__(self) -> None:
        self.current_s = self.min_s

    def after_tick(self, *, changed: bool, error: bool, now: float, wake_at: float, next_end: float) -> float:
        if error:
            self.failures += 1
            return min(self.max_s, OUTAGE_RETRY_MAX_S, self.min_s * 2 ** self.failures)
        self.failures = 0
        self.current_s = self.min_s if changed else min(self.max_s, self.current_s * 1.5)
        target = min(wake_at, next_end)
        pause = self.current_s
        if not math.isinf(target):
            pause = min(pause, max(1.0, target - now))
        return pause

    @property
    def paused(self) -> bool:
        return self.failures >= PAUSE_AFTER


def _store_message(settings: Settings, exc: Exception) -> str:
    """What a store failure means and how to fix it (a StoreError says so already)."""
    return str(exc) if isinstance(exc, StoreError) else explain_failure(settings.database_url, exc)


def _interrupt(_signum, _frame) -> None:  # noqa: ANN001
    raise KeyboardInterrupt


def _tell_disk(state: dict, run_dir) -> None:  # noqa: ANN001
    """Log once when the run folder's disk fills up (stages fail there) and once when it has room again."""
    from asad.daemon.disk import full_disk_note

    note = full_disk_note(run_dir)
    if note and not state.get("disk_full"):
        log.warning(note)
    elif not note and state.get("disk_full"):
        log.info("the disk holding the run folder has room again", run_dir=str(run_dir))
    state["disk_full"] = bool(note)


def _remote_wake_due(store_wake: StoreWake, store) -> bool:  # noqa: ANN001
    try:
        return store_wake.due(store, time.monotonic())
    except Exception as exc:  # noqa: BLE001 - a store that cannot be read now is the tick's to report
        log.debug("cannot read the store's wake row", error=str(exc))
        return False


def _acquire_or_stand_by(lease: Lease, store, look_s: float) -> bool:  # noqa: ANN001
    """Take the store's lease, or stand by while another host's driver holds it and take over when
    that one stops or its lease lapses (a failover, rather than exiting and being restarted by
    systemd every few seconds). False if interrupted while standing by."""
    told = False
    while True:
        try:
            lease.acquire()
            if told:
                log.info("the store is free: this daemon drives it now")
            return True
        except LeaseHeld as exc:
            if not told:
                print(f"asad: {exc}\nasad: standing by: this daemon drives the store once that one stops "
                      f"or its lease lapses.", flush=True)
                told = True
            sd_notify(f"READY=1\nSTATUS=standing by: {exc}")  # up and waiting, not failed
        store.session.rollback()  # the next look reads the row afresh
        try:
            time.sleep(look_s)
        except KeyboardInterrupt:
            return False


def _start_when_slurm_answers(settings: Settings, store, make_backend, make_runner, lease):  # noqa: ANN001, ANN202
    """(backend, runner) once Slurm answers the questions a runner starts with (partitions,
    priority rules); None if stopped first. A daemon started during an outage (a reboot, a
    slurmctld restart) waits with growing pauses, says so in ``asad status``, and starts by itself,
    rather than exiting and leaving the outage to whatever restarts it."""
    from asad.slurm.backend import SlurmUnavailable

    pause_s, since = settings.poll_interval_s, time.time()
    while True:
        try:
            backend = make_backend(settings, wall_clock=True)
            return backend, make_runner(settings, store, backend)
        except SlurmUnavailable as exc:
            sd_notify("READY=1\nSTATUS=waiting for Slurm to answer")  # systemd: up and waiting, not failed
            log.warning("slurm does not answer; the daemon starts when it does", error=str(exc), retry_s=pause_s)
            try:
                store.set_status("backend", {"ok": False, "error": str(exc), "since": since})
                store.commit()
            except StoreError:
                store.session.rollback()
        try:
            time.sleep(pause_s)
        except KeyboardInterrupt:
            return None
        try:
            if not lease.renew():
                log.error("another host's asad took this store over while this one waited for Slurm; stopping")
                return None
        except StoreError:
            store.session.rollback()
        pause_s = min(settings.max_poll_interval_s, OUTAGE_RETRY_MAX_S, pause_s * 2)


def run_daemon(settings: Settings, *, max_ticks: int | None = None) -> int:
    from apscheduler.schedulers import SchedulerNotRunningError
    from apscheduler.schedulers.background import BackgroundScheduler

    from asad.daemon.wiring import make_backend, make_runner
    from asad.store.repo import Store

    try:
        lock_fd = acquire_lock(settings)
    except AlreadyRunning as exc:
        print(f"asad: error: {exc}")
        return EXIT_ALREADY_RUNNING
    store = Store(settings.database_url)
    store_file = StoreFile.of(settings.database_url)  # the file opened, to notice its deletion
    lease = Lease(store, lease_s=lease_seconds(settings.max_poll_interval_s))
    # Until the scheduler runs (and installs its own handler), SIGTERM is a Ctrl-C: a stop while
    # standing by or waiting for Slurm is a clean stop that frees the lease at once.
    signal.signal(signal.SIGTERM, _interrupt)
    started = None
    try:
        # the file lock covers this host; the lease, other hosts
        if _acquire_or_stand_by(lease, store, look_s=min(STANDBY_LOOK_S, settings.max_poll_interval_s)):
            started = _start_when_slurm_answers(settings, store, make_backend, make_runner, lease)
    except (StoreError, SQLAlchemyError) as exc:  # e.g. damaged pages found while loading the workflows
        print(f"asad: error: {_store_message(settings, exc)}", file=sys.stderr)
        with contextlib.suppress(Exception):
            store.close()
        os.close(lock_fd)
        return EXIT_STORE_FAILED
    except KeyboardInterrupt:
        started = None
    if started is None:
        with contextlib.suppress(StoreError):
            lease.release()
        store.close()
        os.close(lock_fd)
        return 0
    stop_signal: list[int] = []

    def stop(signum, _frame) -> None:  # noqa: ANN001
        # Only note it: a handler that called into the scheduler could interrupt the main thread
        # inside the scheduler's own locks (a deadlock), and one that came before start() was lost.
        stop_signal.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    backend, runner = started
    runner.lease = lease
    speed = float(getattr(backend, "speed", 1.0))
    pacer = Pacer(settings.poll_interval_s, settings.max_poll_interval_s)
    watch = Watch(settings.state_dir)
    store_wake = StoreWake()  # a CLI on another host wakes this daemon through the store
    _remote_wake_due(store_wake, store)  # what is there now is no request
    markers = backend.name != "sim"  # the stage wrapper writes end markers on a real cluster only
    # One periodic job (never a job that reschedules itself: APScheduler 3 can lose such a job when it
    # ends before the scheduler's loop has removed it). Every beat looks at the wake file and the end
    # markers; a tick runs when its pause is over or something woke it.
    beat_s = WATCH_INTERVAL_S if speed <= 1 else min(WATCH_INTERVAL_S, max(0.02, settings.poll_interval_s / speed))
    state = {"ticks": 0, "next_tick": 0.0, "brisk_until": 0.0, "ended": set(), "lost": False}
    scheduler = BackgroundScheduler(timezone="UTC")
    # A beat skipped or late while a long tick runs is expected, not worth a warning per beat.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)

    def beat() -> None:
        try:
            if store_gone():
                return
            due = watch.due()
            if _remote_wake_due(store_wake, store):
                due.append(0)
            if any(due):
                state["brisk_until"] = time.monotonic() + BRISK_FOR_S
                state["ended"] |= {j for j in due if j}
            if due or time.monotonic() >= state["next_tick"]:
                state["next_tick"] = time.monotonic() + tick() / speed
        except Exception:  # never a beat per second that fails the same way: pause as after an error
            log.exception("the daemon's beat failed; retrying")
            state["next_tick"] = time.monotonic() + OUTAGE_RETRY_MAX_S / speed

    def store_gone() -> bool:
        """The store file deleted or replaced under the daemon: stop, loudly, rather than go on with a
        file no other asad command sees (they would create and read a new one at its path)."""
        what = store_file.gone() if store_file is not None else None
        if what is None:
            return False
        log.error("stopping: the store file is gone", error=what)
        state["store_gone"] = what
        scheduler.shutdown(wait=False)
        return True

    def tick() -> float:
        """One tick of the runner; returns the pause (backend seconds) before the next one."""
        if store_gone():  # looked at before every tick: nothing is submitted into a deleted store
            return math.inf
        state["ticks"] += 1
        try:
            report = runner.tick()
        except LeaseLost as exc:
            log.error("stopping", reason=str(exc))
            state["lost"] = True
            scheduler.shutdown(wait=False)
            return math.inf
        except (StoreError, SQLAlchemyError) as exc:  # disk full, locked, server down ...: the message says what to do
            with contextlib.suppress(Exception):
                store.session.rollback()
            message = _store_message(settings, exc)
            if is_corrupt(exc):  # it will not mend itself: stop, saying how to restore it
                log.error("stopping: the store is corrupt", error=message)
                state["store_failed"] = True
                scheduler.shutdown(wait=False)
                return math.inf
            log.error("the store cannot be used; nothing was submitted past it, retrying", error=message)
            report = None
        except Exception:  # never die on one bad tick: log it and try again later
            log.exception("tick failed; retrying")
            report = None
        now = backend.now()
        pause = pacer.after_tick(changed=bool(report and (report.changed or report.submitted or report.cancelled)),
                                 error=report is None or report.backend_error is not None, now=now,
                                 wake_at=report.wake_at if report else math.inf,
                                 next_end=runner.next_expected_end())
        state["ended"] &= set(runner.live_job_ids())  # announced by a marker, not yet ended in Slurm's view
        # A marker announced an end Slurm has not recorded yet: look again soon, but only while
        # Slurm answers. During an outage the back-off rules (a second a poll would hammer a
        # slurmctld that is down or struggling).
        if (state["ended"] and time.monotonic() < state["brisk_until"] and report is not None
                and report.backend_error is None):
            pause = min(pause, BRISK_POLL_S)
        released = (released_jobs(runner, now) if report is not None and report.backend_error is None
                    and backend.name != "sim" else [])
        if released:
            pause = min(pause, RELEASED_POLL_S)  # it starts, or fails leaving no marker, any second now
        if markers:
            watch.set_markers(end_markers(runner, settings.run_dir), kill_logs(runner),
                              start_markers(runner, settings.run_dir))
            _tell_disk(state, settings.run_dir)
        log.debug("tick", pause_s=round(pause, 1), watched=len(watch.markers), released=released)
        try:
            store.set_status("clock", {"now": now, "wall": time.time(), "speed": speed})
            store.set_status("daemon", {"pid": os.getpid(), "paused": pacer.paused, "retry_s": pause,
                                        "backend": backend.name, "active": len(runner.active)})
            store.commit()
        except (StoreError, SQLAlchemyError) as exc:  # keep ticking whatever happens
            with contextlib.suppress(Exception):
                store.session.rollback()
            if report is not None:  # a tick that failed on the store has said so already
                log.error("cannot record the daemon's status in the store", error=str(exc))
        if max_ticks is not None and state["ticks"] >= max_ticks:
            scheduler.shutdown(wait=False)
        return pause

    scheduler.add_job(beat, "interval", seconds=beat_s, id="beat", next_run_time=datetime.now().astimezone(),
                      coalesce=True, max_instances=1, misfire_grace_time=None)
    log.info("daemon started", backend=backend.name, store=shown_url(settings.database_url), pid=os.getpid())
    try:
        scheduler.start()
        sd_notify("READY=1")
        while not stop_signal and scheduler.running:
            time.sleep(0.2)
        if stop_signal:
            log.info("stopping", signal=signal.Signals(stop_signal[0]).name)
        with contextlib.suppress(SchedulerNotRunningError):
            scheduler.shutdown(wait=True)  # waits for a tick in progress: the store closes after it
    finally:
        if not state.get("lost"):
            with contextlib.suppress(StoreError, SQLAlchemyError):
                lease.release()  # a clean stop: another host may take the store at once
        with contextlib.suppress(Exception):
            store.close()
        os.close(lock_fd)
    log.info("daemon stopped")
    if state.get("store_gone"):
        print(f"asad: error: {state['store_gone']} while the daemon ran: the daemon stopped rather than go on "
              "with a store that no other asad command reads. The jobs it had submitted were left as they are "
              "in Slurm (squeue --me lists them). Fix: restore the store from a backup if it was deleted by "
              "mistake (docs/operations.md, 'Back up and restore'), then start the daemon again; it drives "
              "whatever store is at that path (systemd's Restart=on-failure starts it again by itself).",
              file=sys.stderr)
        return EXIT_STORE_FAILED
    if state.get("store_failed"):
        print(f"asad: error: the store {shown_url(settings.database_url)} is corrupt: the daemon stopped. "
              "Nothing was submitted past it. Fix: move it aside and restore a backup "
              "(docs/operations.md, 'Back up and restore').", file=sys.stderr)
        return EXIT_STORE_FAILED
    return 1 if state.get("lost") else 0
