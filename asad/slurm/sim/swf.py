"""Replay of traces in the Parallel Workloads Archive's Standard Workload Format (SWF).

One job per line, 18 whitespace-separated numeric fields, ``-1`` meaning unknown; header lines
start with ``;`` (``; MaxProcs: 128``). Fields used: 1 job number, 2 submit time (s from the trace
start), 4 run time, 5 allocated processors, 7 used memory (KB per processor), 8 requested
processors, 9 requested time, 10 requested memory (KB per processor), 16 partition number.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


class Simulator(Protocol):
    """What a replay needs of the simulator (asad/slurm/sim/simulator.py), which imports this module."""

    parts: list[Any]
    _default_part: Any

    def now(self) -> float: ...

    def add_trace_job(self, submit_time: float, partition: str, nodes: int, cpus: int,
                      mem_per_node_mb: int, time_limit_s: int, runtime_s: float,
                      origin: int | None = None) -> int | None: ...

FIELDS = 18


class SwfError(ValueError):
    """A malformed SWF file; the message names the file and line."""


@dataclass(frozen=True)
class SwfJob:
    job_number: int
    submit_s: float
    wait_s: float
    run_s: float
    alloc_procs: int
    used_mem_kb: float
    req_procs: int
    req_time_s: float
    req_mem_kb: float
    status: int
    partition: int

    @property
    def procs(self) -> int:
        return self.req_procs if self.req_procs > 0 else self.alloc_procs

    @property
    def mem_per_proc_mb(self) -> int | None:
        kb = self.req_mem_kb if self.req_mem_kb > 0 else self.used_mem_kb
        return max(1, round(kb / 1024)) if kb > 0 else None


@dataclass(frozen=True)
class SwfTrace:
    header: dict[str, str]
    jobs: list[SwfJob]


def parse_swf(text: str, source: str = "<swf>") -> SwfTrace:
    header: dict[str, str] = {}
    jobs: list[SwfJob] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            key, sep, value = line[1:].partition(":")
            if sep:
                header[key.strip()] = value.strip()
            continue
        parts = line.split()
        if len(parts) != FIELDS:
            raise SwfError(f"{source}:{lineno}: expected {FIELDS} fields, found {len(parts)}")
        try:
            v = [float(x) for x in parts]
        except ValueError:
            bad = next(x for x in parts if not _is_number(x))
            raise SwfError(f"{source}:{lineno}: field {parts.index(bad) + 1} is not a number: {bad!r}") from None
        if v[1] < 0:
            raise SwfError(f"{source}:{lineno}: field 2 (submit time) must not be negative")
        jobs.append(SwfJob(job_number=int(v[0]), submit_s=v[1], wait_s=v[2], run_s=v[3],
                           alloc_procs=int(v[4]), used_mem_kb=v[6], req_procs=int(v[7]),
                           req_time_s=v[8], req_mem_kb=v[9], status=int(v[10]),
                           partition=int(v[15])))
    return SwfTrace(header, jobs)


def read_swf(path: str | Path) -> SwfTrace:
    path = Path(path)
    return parse_swf(path.read_text(), str(path))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def replay(sim: Simulator, trace: SwfTrace, start: float | None = None) -> dict[str, int]:
    """Schedule the trace's jobs as arrivals, ``start`` (default: now) being trace time 0.

    Processors are packed onto whole nodes of the partition (partition number n = the
    simulator's n-th partition, else the default one); a missing time limit becomes the run
    time; a job too big for its partition, or without processors or run time, is skipped."""
    base = sim.now() if start is None else start
    parts = sim.parts
    default = sim._default_part
    added = skipped = 0
    for job in trace.jobs:
        part = parts[job.partition - 1] if 1 <= job.partition <= len(parts) else default
        procs = job.procs
        if procs <= 0 or job.run_s < 0:
            skipped += 1
            continue
        nodes = 1 if procs <= part.cores else -(-procs // part.cores)
        cpn = -(-procs // nodes)
        mpc = job.mem_per_proc_mb or part.spec.def_mem_per_cpu_mb
        mem = min(mpc * cpn, part.mem)
        limit = int(job.req_time_s) if job.req_time_s > 0 else max(1, int(round(job.run_s)))
        if part.spec.max_time_s is not None:
            limit = min(limit, part.spec.max_time_s)
        if sim.add_trace_job(base + job.submit_s, part.name, nodes, procs, mem, limit,
                             float(job.run_s), origin=job.job_number) is None:
            skipped += 1
        else:
            added += 1
    return {"added": added, "skipped": skipped}


def format_swf(rows: list[tuple[int, float, float, int, int, float, int]],
               header: dict[str, str]) -> str:
    """Rows of (job number, submit s, run s, procs, mem KB per proc, requested time s, status)."""
    lines = [f"; {k}: {v}" for k, v in header.items()]
    for number, submit, run, procs, mem_kb, req_time, status in rows:
        fields = [number, int(submit), -1, int(run), procs, -1, -1, procs, int(req_time), int(mem_kb),
                  status, -1, -1, -1, -1, 1, -1, -1]
        lines.append(" ".join(str(f) for f in fields))
    return "\n".join(lines) + "\n"
