"""Prompt without polling Slurm harder: what wakes the daemon (or ``asad run``) between polls.

- ``asad submit`` and ``asad cancel`` touch ``<state dir>/wake`` after their change is committed;
  the daemon looks at that file's mtime every second, so a new workflow or a cancel is acted on at
  once instead of at the next poll (which may be minutes away when nothing runs).
- The stage wrapper writes ``<run dir>/<workflow>/<stage>.end`` the moment a stage's command
  ends. Watching those files (a ``stat`` per running stage per second, no call to slurmctld)
  tells the daemon a stage ended seconds before its next poll would; the poll that follows
  reads the truth from Slurm. Slurm stays the truth: a marker only makes asad look sooner.
  An array job has ended when every one of its tasks has written ``<stage>.<task>.end``.
- The wrapper writes ``<stage>.alloc`` the moment a stage's job starts. A pending job is polled
  only every poll interval (30 s or more), and a short stage could start and end between two polls:
  its successor was then planned at its end, with no lead (issue 35). So the allocation marker of
  every pending job wakes the daemon too (a ``stat`` per pending stage per second, and a read when
  it appears, to check the job id in it: an earlier attempt's marker does not count).
- A daemon on another host (a server store, or an SQLite file in a shared home) cannot see this
  host's wake file: ``asad submit``, ``cancel`` and ``resume`` then also write a new value to the
  store's ``wake`` row, which every daemon reads every ``STORE_WAKE_LOOK_S``.
- A job Slurm kills (out of memory, its time limit, a scancel) takes the wrapper with it and
  leaves no end marker; slurmstepd then writes why to the job's own output file
  (``<stage>-<job id>.out``, where the command's output does not go). A new such line wakes the
  daemon as an end marker does.
"""

from __future__ import annotations

import os
import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from asad.core import markers

WATCH_INTERVAL_S = 1.0  # how often the markers and the wake file are looked at
BRISK_POLL_S = 1.0  # the pause while Slurm has not yet recorded an end that a marker announced
BRISK_FOR_S = 15.0  # ... for at most this long after the marker
# What slurmstepd writes to a job's output file as it kills it (22.05: "*** JOB 387 ON n1 CANCELLED
# AT ... ***", with "DUE TO TIME LIMIT" on a time-out; "Exceeded job memory limit", or with
# task/cgroup "Detected 1 oom-kill event(s)").
KILLED_RE = re.compile(rb"slurmstepd.*(\*\*\* JOB \d+ ON \S+ CANCELLED|oom[-_]kill|[Ee]xceeded (job|step) memory limit)")
TAIL_BYTES = 4096  # slurmstepd's lines are the last ones: read no more of a long file
# A job whose dependency was just met starts (or fails) at Slurm's next scheduling pass; one that
# fails before its stage wrapper writes a marker (a failing `setup:` line, a launch failure) wakes
# nothing, so the daemon polls every RELEASED_POLL_S for RELEASED_FOR_S after the release. Without
# it such a stage showed "PD (Dependency)" for a whole poll interval after sacct said FAILED.
RELEASED_POLL_S = 2.0
RELEASED_FOR_S = 30.0


def wake_file(state_dir: Path) -> Path:
    return Path(state_dir) / "wake"


def wake_daemon(state_dir: Path) -> None:
    """Tell a running daemon to tick now (a no-op when none runs; never fails the caller)."""
    path = wake_file(state_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.touch(mode=0o600)
        os.utime(path)  # a fresh mtime even where touch of an existing file keeps the old one
    except OSError:
        pass


STORE_WAKE_KEY = "wake"  # the meta row a CLI on another host writes to wake the daemon
STORE_WAKE_LOOK_S = 2.0  # how often the daemon reads it: one primary-key read, nothing for Slurm


def wake_through_store(store) -> None:  # noqa: ANN001
    """Wake a daemon that runs on another host: a new value in the store's ``wake`` row. Never fails
    the caller (its change is committed already; the daemon would see it at its next poll)."""
    try:
        old = store.meta_value(STORE_WAKE_KEY)
        store.swap_meta(STORE_WAKE_KEY, old, f"{time.time():.6f} {socket.gethostname()} {os.getpid()}")
    except Exception:  # noqa: BLE001 - a lost race means another process woke it just now
        store.session.rollback()


@dataclass
class StoreWake:
    """The daemon's look at the store's ``wake`` row: due when its value changed since the last look."""

    last: str | None = None
    next_look: float = 0.0

    def due(self, store, now: float) -> bool:  # noqa: ANN001
        if now < self.next_look:
            return False
        self.next_look = now + STORE_WAKE_LOOK_S
        try:
            value = store.meta_value(STORE_WAKE_KEY)
        finally:
            store.session.rollback()  # no read transaction held between beats (SQLite's checkpoints)
        changed, self.last = value != self.last, value
        return changed


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


@dataclass(frozen=True)
class EndMarker:
    """What says a job ended: every one of ``paths`` exists (one stage: its ``.end``; an array job:
    each task's ``<stage>.<task>.end``), written at or after ``since`` when that is given (an
    array's markers are not removed before its tasks start, so an earlier attempt's must not count)."""

    paths: tuple[Path, ...]
    job_id: int
    since: float | None = None


@dataclass(frozen=True)
class StartMarker:
    """What says a pending job started: ``<stage>.alloc`` holding "<epoch> <host> <job id>"."""

    path: Path
    job_id: int


def _written_by(marker: StartMarker) -> bool:
    try:
        fields = marker.path.read_text().split()
    except OSError:
        return False
    return len(fields) >= 3 and fields[2] == str(marker.job_id)


@dataclass(frozen=True)
class KillLog:
    """A running job's own output file, where slurmstepd says so when it kills the job."""

    path: Path
    job_id: int


def _killed(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - TAIL_BYTES))
            return KILLED_RE.search(f.read()) is not None
    except OSError:
        return False


@dataclass
class Watch:
    """What the daemon looks at between ticks. ``markers`` is replaced whole by the tick, so the
    watcher thread never reads the runner's state while it changes."""

    state_dir: Path | None  # None: no wake file (``asad run`` is woken by markers only)
    markers: tuple[EndMarker, ...] = ()
    _wake_mtime: float | None = None
    _seen: set[EndMarker] = field(default_factory=set)
    _found: dict[EndMarker, int] = field(default_factory=dict)  # an array's task markers seen so far, in order
    logs: tuple[KillLog, ...] = ()
    _log_stamps: dict[KillLog, float] = field(default_factory=dict)  # each output file's mtime at the last read
    starts: tuple[StartMarker, ...] = ()
    _start_stamps: dict[StartMarker, float] = field(default_factory=dict)  # each .alloc's mtime at the last read
    _started: set[StartMarker] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._wake_mtime = _mtime(wake_file(self.state_dir)) if self.state_dir is not None else None

    def due(self) -> list[int]:
        """Job ids whose end marker(s) appeared since the last look, plus 0 for a wake request or
        for a pending job's start (its allocation marker): a tick is due, no end is announced."""
        out: list[int] = []
        stamp = _mtime(wake_file(self.state_dir)) if self.state_dir is not None else None
        if stamp is not None and stamp != self._wake_mtime:
            self._wake_mtime = stamp
            out.append(0)
        for marker in self.markers:
            if marker not in self._seen and self._all_there(marker):
                self._seen.add(marker)
                out.append(marker.job_id)
        for log in self.logs:  # read only when it changed: a stat a second while nothing happens
            stamp = _mtime(log.path)
            if stamp is not None and stamp != self._log_stamps.get(log):
                self._log_stamps[log] = stamp
                if _killed(log.path):
                    out.append(log.job_id)
        for start in self.starts:
            if start in self._started:
                continue
            stamp = _mtime(start.path)
            if stamp is not None and stamp != self._start_stamps.get(start):
                self._start_stamps[start] = stamp
                if _written_by(start):
                    self._started.add(start)
                    out.append(0)
        return out

    def _all_there(self, marker: EndMarker) -> bool:
        """Each path in turn, resuming where the last look stopped: a 1,000-task array costs a stat
        a second until its tasks end, not a thousand."""
        i = self._found.get(marker, 0)
        while i < len(marker.paths):
            stamp = _mtime(marker.paths[i])
            if stamp is None or (marker.since is not None and stamp < marker.since):
                self._found[marker] = i
                return False
            i += 1
        self._found[marker] = i
        return True

    def set_markers(self, markers: list[EndMarker], logs: list[KillLog] = (),
                    starts: list[StartMarker] = ()) -> None:
        self.markers = tuple(markers)
        keep = set(markers)
        self._seen &= keep  # a retried stage's new marker counts again
        self._found = {m: n for m, n in self._found.items() if m in keep}
        self.logs = tuple(logs)
        self._log_stamps = {log: t for log, t in self._log_stamps.items() if log in set(logs)}
        self.starts = tuple(starts)
        self._started &= set(starts)
        self._start_stamps = {m: t for m, t in self._start_stamps.items() if m in self._started or m in set(starts)}


def end_markers(runner, run_dir: Path) -> list[EndMarker]:  # noqa: ANN001
    """The end marker(s) of every submitted or running stage's job (the daemon may not have seen
    a job start before it ends: a short stage between two polls)."""
    from asad.common.arrays import parse_array
    from asad.core.model import JobPhase, StageState

    out = []
    for wf in runner.active.values():
        last = wf.spec.stages[-1].name
        folder = markers.folder(run_dir, wf.id)
        for name, run in wf.stages.items():
            if run.state not in (StageState.SUBMITTED, StageState.RUNNING) or (
                    wf.strategy == "big-job" and name != last):
                continue  # a big job's stages share one job: its last stage's marker is its end
            if wf.spec.stage(name).array is not None and wf.strategy != "big-job":
                for job in wf.current_jobs(name):  # one array job per chunk: each ends with all its tasks
                    if job.phase is JobPhase.LIVE and job.job_id is not None and job.request.array:
                        tasks = parse_array(job.request.array).indices
                        paths = tuple(markers.end_path(folder, f"{name}.{job.request.array_offset + i}")
                                      for i in tasks)
                        # a few seconds' slack: the markers' clock (a shared file system's) may lag Slurm's
                        since = None if job.submitted_at is None else job.submitted_at - 5.0
                        out.append(EndMarker(paths, job.job_id, since=since))
                continue
            job = wf.current_job(name)
            if job is not None and job.rides and name != job.stage:
                continue  # a shared job: watched once, by its last stage's marker (its end)
            if job is not None and job.phase is JobPhase.LIVE and job.job_id is not None:
                out.append(EndMarker((markers.end_path(folder, job.stages[-1]),), job.job_id))
    return out


def start_markers(runner, run_dir: Path) -> list[StartMarker]:  # noqa: ANN001
    """The allocation marker of every pending job asad submitted for a stage (not an array's
    tasks, which write none of their own; a shared job's first stage's marker says it began)."""
    from asad.core.model import JobPhase, JobState

    out = []
    for wf in runner.active.values():
        folder = markers.folder(run_dir, wf.id)
        for job in wf.jobs:
            if (job.phase is JobPhase.LIVE and job.job_id is not None and job.state is JobState.PENDING
                    and not job.request.array and job.stage in wf.stages):
                out.append(StartMarker(markers.alloc_path(folder, job.stage), job.job_id))
    return out


def kill_logs(runner) -> list[KillLog]:  # noqa: ANN001
    """The output file of every live job asad named (``<run dir>/<wf>/<stage>-%j.out``; not a file
    the user named with ``output:``, nor an array's per-task files)."""
    from asad.core.model import JobPhase

    out = []
    for wf in runner.active.values():
        for job in wf.jobs:
            req = job.request
            if (job.phase is JobPhase.LIVE and job.job_id is not None and not job.state.is_final and req.output
                    and not req.array and job.stage in wf.stages and not wf.spec.stage(job.stage).slurm.output):
                out.append(KillLog(Path(markers.job_output(req.output, job.job_id)), job.job_id))
    return out


def released_jobs(runner, now: float, within_s: float = RELEASED_FOR_S) -> list[int]:  # noqa: ANN001
    """Live jobs that Slurm may have started at most ``within_s`` ago: their dependency was met then
    (as asad saw it: the jobs they wait for ended, or for ``after``, started plus the offset), or,
    with none, they were submitted (or their ``--begin`` came) then. Slurm's answer about them
    (running, or already failed) comes only from a poll."""
    from asad.core.model import JobPhase

    jobs = {j.job_id: j for wf in runner.active.values() for j in wf.jobs if j.job_id is not None}
    out = []
    for job in jobs.values():
        # a job seen running is watched too: it may have started a moment ago and fail before its
        # wrapper writes a marker (seen: a poll caught the stage between start and failure)
        if job.phase is not JobPhase.LIVE or job.state.is_final or job.submitted_at is None:
            continue
        released = _released_at(job, jobs)
        if released is not None and now - within_s <= released <= now:
            out.append(job.job_id)
    return out


def _released_at(job, jobs: dict) -> float | None:  # noqa: ANN001
    """When Slurm could first start ``job`` (None: not yet, or not known)."""
    from asad.slurm.backend import DependencyType

    dep = job.request.dependency
    times = [job.submitted_at, job.request.begin or 0.0]
    if dep is not None and dep.job_ids:
        before = [jobs.get(i) for i in dep.job_ids]
        if any(b is None for b in before):
            return None  # a job of another workflow or an earlier daemon: nothing known about it
        if dep.type is DependencyType.AFTER:
            starts = [b.start_time for b in before]
            if None in starts:
                return None
            times.append(max(starts) + 60.0 * dep.offset_min)
        else:
            ends = [b.end_time if b.state.is_final else None for b in before]
            if None in ends:
                return None
            times.append(max(ends))
    return max(times)
