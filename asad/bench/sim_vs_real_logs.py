"""What a recording's own slurmctld.log measures (issue 37): the latency from a job's start to its
end beyond its program's ``sleep``, which the replay then takes for that recording.

slurmctld logs a start ("sched: Allocate JobId=N" or "sched/backfill: _start_job: Started JobId=N")
and the batch script's end ("_job_complete: JobId=N done") to the millisecond. Between them lie
the launch (slurmd, slurmstepd, the shell) and the report of the exit; the recorded job runs
``sleep runtime_s``. Measured over a recording's completed jobs this is 0.08-0.33 s in the logs
kept (medians 0.16-0.23 s per run), against 0.03-0.13 s (median 0.05) in the earlier logs the
default was measured in: the machine's load at recording time sets it, so a recording with its
log is replayed with its own. Recordings without a log keep the default.
"""

from __future__ import annotations

import gzip
import math
import re
import statistics
from collections.abc import Iterator
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

LOG_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "sim_vs_real" / "logs"
MIN_JOBS = 10  # fewer measured jobs than this: no measurement

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] (.*)$")
_START = re.compile(r"(?:sched: Allocate JobId=|_start_job: Started JobId=)(\d+) ")
_END = re.compile(r"_job_complete: JobId=(\d+) done")


def log_path(rec: dict) -> Path | None:
    """The recording's gzipped slurmctld.log (``logs/ID.slurmctld.log.gz``), if it was kept."""
    rid = rec.get("id")
    if not rid:
        return None
    path = LOG_DIR / f"{rid}.slurmctld.log.gz"
    return path if path.is_file() else None


def launch_latencies(rec: dict) -> tuple[float, float, float] | None:
    """(min, median, max) seconds from a job's logged start to its logged end, less its run time,
    over the recording's jobs that completed by themselves (no OOM kill, no time limit, exit 0);
    None without a log or with fewer than ``MIN_JOBS`` such jobs."""
    path = log_path(rec)
    if path is None:
        return None
    runtime = {int(j["job_id"]): float(j["runtime_s"]) for j in rec["jobs"]
               if j.get("state") == "COMPLETED" and j.get("oom_after_s") is None and not j.get("exit_code")}
    t0 = min(j["submit"] for j in rec["jobs"])
    got = _latencies(str(path), tuple(sorted(runtime.items())), t0)
    return got


def _log_lines(path: str, pattern: re.Pattern, t0: float) -> Iterator[tuple[float, re.Match]]:
    """The log's lines that match ``pattern`` (its group 1 the timestamp), with their instant, from
    5 s before the recording's first submission to 4 h after: another session's jobs may share the
    log."""
    with gzip.open(path, "rt", errors="replace") as fh:
        for line in fh:
            m = pattern.match(line)
            if not m:
                continue
            t = datetime.fromisoformat(m.group(1)).replace(tzinfo=timezone.utc).timestamp()
            if t0 - 5 <= t <= t0 + 4 * 3600:
                yield t, m


@lru_cache(maxsize=64)
def _latencies(path: str, runtime: tuple[tuple[int, float], ...], t0: float) -> tuple[float, float, float] | None:
    run_s = dict(runtime)
    start: dict[int, float] = {}
    out: list[float] = []
    for t, m in _log_lines(path, _LINE, t0):
        text = m.group(2)
        s = _START.search(text)
        if s and int(s.group(1)) in run_s:
            start.setdefault(int(s.group(1)), t)
            continue
        e = _END.search(text)
        if e:
            jid = int(e.group(1))
            if jid in start and jid in run_s:
                out.append(t - start.pop(jid) - run_s[jid])
    if len(out) < MIN_JOBS:
        return None
    return (round(min(out), 3), round(statistics.median(out), 3), round(max(out), 3))


# ------------------------------------------------------------ the backfill thread's drift ======
_BF_START = re.compile(r"^\[(\S+)\] sched/backfill: _start_job: Started JobId=\d+")


def bf_drift_spans(rec: dict, bf_interval: float = 2.0) -> list[tuple[float, int, float, float]]:
    """The backfill thread's drift between its logged passes: (offset of the first pass from the
    first submission, passes n, drift per pass in ms, mean eligible pending jobs at the n + 1
    passes). backfill_agent sleeps bf_interval after a pass *ends* (backfill.c), so each pass's
    length moves the next. The logs (info level) print no pass lengths, but every job the thread
    starts ("sched/backfill: _start_job: Started JobId=N") stamps its pass to the millisecond
    (starts within 0.15 s: one pass). Between two such passes ``g`` s apart lie
    ``n = round(g / bf_interval)`` passes and a drift of ``g - n * bf_interval``; spans with an
    idle look of ``_more_work`` (a whole-second shift: |drift| > 0.3 s) or more than 15 passes
    are left out. Empty without a log."""
    path = log_path(rec)
    if path is None:
        return []
    jobs = tuple(((j.get("eligible") or j["submit"]), j.get("start")) for j in rec["jobs"])
    return list(_bf_drift_spans(str(path), jobs, min(j["submit"] for j in rec["jobs"]), bf_interval))


@lru_cache(maxsize=64)
def _bf_drift_spans(path: str, jobs: tuple[tuple[float, float | None], ...], t0: float,
                    bf_interval: float) -> tuple[tuple[float, int, float, float], ...]:
    passes: list[float] = []
    last = -math.inf
    for t, _m in _log_lines(path, _BF_START, t0):
        if t - last >= 0.15:
            passes.append(t)
        last = t

    def pending(t: float) -> int:
        return sum(1 for eligible, start in jobs if eligible <= t and (start is None or start > t))

    out = []
    for a, b in zip(passes, passes[1:]):
        n = round((b - a) / bf_interval)
        drift = b - a - n * bf_interval
        if 1 <= n <= 15 and abs(drift) <= 0.3:
            pend = statistics.mean(pending(a + bf_interval * k) for k in range(n + 1))
            out.append((a - t0, n, 1000.0 * drift / n, pend))
    return tuple(out)


def fit_bf_pass_cost(recs: list[dict]) -> tuple[float, float, int, int]:
    """(base s, s per pending job, spans, passes): the least-squares line of the drift per pass
    on the pending count over every span of the recordings' logs (weighted by its passes).
    Recordings with DebugFlags=Backfill (a perturbed, slower pass) are left out."""
    xs: list[float] = []
    ys: list[float] = []
    ws: list[float] = []
    for rec in recs:
        if "Backfill" in (rec.get("slurm_config", {}).get("DebugFlags") or ""):
            continue
        for _, n, drift_ms, pend in bf_drift_spans(rec):
            xs.append(pend)
            ys.append(drift_ms / 1000.0)
            ws.append(float(n))
    if len(xs) < 2:
        raise ValueError("fewer than two spans of backfill passes in the kept slurmctld.logs")
    w = sum(ws)
    mx = sum(wi * x for wi, x in zip(ws, xs)) / w
    my = sum(wi * y for wi, y in zip(ws, ys)) / w
    sxx = sum(wi * (x - mx) ** 2 for wi, x in zip(ws, xs))
    sxy = sum(wi * (x - mx) * (y - my) for wi, x, y in zip(ws, xs, ys))
    slope = sxy / sxx
    return my - slope * mx, slope, len(xs), int(w)


def bf_pass_scales(recs: list[dict], cost: tuple[float, float]) -> dict[str, float]:
    """Per kept log (no DebugFlags): its backfill passes' measured drift over the drift ``cost``
    (base s, s per pending job) predicts for its spans, weighted by their passes: how much longer
    or shorter that run's passes were than the fit over every log."""
    out = {}
    for rec in recs:
        if "Backfill" in (rec.get("slurm_config", {}).get("DebugFlags") or ""):
            continue
        spans = bf_drift_spans(rec)
        if spans:
            measured = sum(n * drift_ms / 1000.0 for _, n, drift_ms, _ in spans)
            out[rec["id"]] = measured / sum(n * (cost[0] + cost[1] * pend) for _, n, _, pend in spans)
    return out


_REGISTERED = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] error: Node \S+ appears to have a different "
                         r"slurm\.conf")


def first_registration(rec: dict) -> float | None:
    """When the first node registered with the recorded slurmctld after its start: slurmctld logs
    "Node N appears to have a different slurm.conf" as each node's registration arrives (the
    local cluster's nodes read their own copy); within 10 s of the background loop's start.
    None without a log or without such a line (three of the ten logs kept have none)."""
    path = log_path(rec)
    loop = (rec.get("timers") or {}).get("loop_start")
    if path is None or loop is None:
        return None
    with gzip.open(path, "rt", errors="replace") as fh:
        for line in fh:
            m = _REGISTERED.match(line)
            if m:
                t = datetime.fromisoformat(m.group(1)).replace(tzinfo=timezone.utc).timestamp()
                if loop <= t <= loop + 10:
                    return t
    return None


# ------------------------------------------------------------ the background loop's tick ======
_ALLOCATE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] (?:sched: Allocate JobId=|(_job_complete: JobId=\d+ done))")
EPILOG_PASS_S = 2.0  # a "sched: Allocate" this soon after a "_job_complete" may be its epilog message's pass
TICK_SPAN = (5, 60)  # ticks between two loop passes: fewer lets a pass's own lag dominate; more is ambiguous
TICK_BOUNDS = (1.0, 1.010)  # a tick is 10 x usleep(100000) plus its work: never below a second


def loop_tick_spans(rec: dict) -> list[tuple[float, int, float]]:
    """The background loop's tick length between its logged passes: (start of the span after the
    loop's start, ticks n, mean tick length s). ``_slurmctld_background`` (controller.c) sleeps
    10 x usleep(100000) and then does its tick's work (the full or batch pass among it), so a tick
    is a little over a second and the lateness accumulates with the machine's load. The ticks the
    info-level log shows: the first ``_schedule()`` ("SchedulerParameters=", tick 5) and the
    main passes that allocate a job and follow no "_job_complete" within ``EPILOG_PASS_S`` (not an
    epilog message's pass). Between two such passes ``g`` s apart lie n ticks (every pair), kept
    when exactly one n in ``TICK_SPAN`` gives a tick length within ``TICK_BOUNDS`` (longer spans
    are ambiguous by a tick). Empty without a log."""
    path = log_path(rec)
    timers = rec.get("timers") or {}
    if path is None or timers.get("first_sched") is None:
        return []
    return list(_loop_tick_spans(str(path), timers["loop_start"], timers["first_sched"],
                                 min(j["submit"] for j in rec["jobs"])))


@lru_cache(maxsize=64)
def _loop_tick_spans(path: str, loop_start: float, first_sched: float, t0: float) -> tuple[tuple[float, int, float], ...]:
    ends: list[float] = []
    passes = [first_sched]
    for t, m in _log_lines(path, _ALLOCATE, min(t0, loop_start)):
        if m.group(2):
            ends.append(t)
        elif t > passes[-1] + 0.05 and not any(0.0 <= t - e <= EPILOG_PASS_S for e in ends):
            passes.append(t)
    out = []
    for i, a in enumerate(passes):
        for b in passes[i + 1:]:
            g = b - a
            fits = [n for n in range(TICK_SPAN[0], TICK_SPAN[1] + 1) if TICK_BOUNDS[0] <= g / n <= TICK_BOUNDS[1]]
            if len(fits) == 1:
                out.append((round(a - loop_start, 3), fits[0], g / fits[0]))
    return tuple(out)
