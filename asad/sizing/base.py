"""The sizing interface: what one stage asks of Slurm, what one attempt measured, and why.

Every sizing agent (one per abstract task: same workflow, same stage) implements
:class:`SizingAgent`. The engine asks ``propose(default, input_bytes)`` before each
first attempt and feeds every finished attempt back through ``observe(outcome)``.
Retries after an out-of-memory kill or a time-out do not go through the agent: they
go through the pure functions in :mod:`asad.sizing.retry`, so that the retry rule is the
same whichever agent sized the first attempt.

Memory is in MB, time in seconds, input size in bytes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

# A job that ends FAILED (not OUT_OF_MEMORY) counts as killed for memory when its
# recorded peak reached this share of the request: with JobAcctGatherParams=OverMemoryKill
# Slurm kills it with signal 9, and the sampled MaxRSS can lag the true peak a little.
OOM_PEAK_SHARE = 0.95

MB = 1024 * 1024
# No full cut below the user's request until this many completed runs: one run (a `sleep` that
# peaked at 1 MB) says little of the next, whose input may be larger (docs/sizing.md).
CONFIDENT_RUNS = 2
# Before that, a graduated cut (docs/sizing.md): at most to the request / UNCONFIDENT_DEPTH, and
# never below UNCONFIDENT_MARGIN × the largest peak seen (scaled up to a larger input).
# UNCONFIDENT_DEPTH 1 keeps the request until CONFIDENT_RUNS.
UNCONFIDENT_DEPTH = 4.0
UNCONFIDENT_MARGIN = 2.0

# No request below this: the batch shell and Slurm's step daemon need some memory, and a
# learned size of a few MB (a task that once exited at once) would only climb by kills.
MIN_MEM_MB = 64


class SizingError(Exception):
    """A stage cannot be sized within the partition's limits (the message says which limit)."""


@dataclass(frozen=True)
class Request:
    """What is asked of Slurm for one attempt."""

    cpus: int
    mem_mb: int
    time_s: int


@dataclass(frozen=True)
class Outcome:
    """What one finished attempt measured (from ``sacct`` or the simulator's usage)."""

    request: Request
    peak_mem_mb: float | None
    cpu_s: float | None
    elapsed_s: float | None
    input_bytes: float | None
    state: str  # "COMPLETED" | "OUT_OF_MEMORY" | "TIMEOUT" | "FAILED" | ...

    @property
    def completed(self) -> bool:
        return self.state == "COMPLETED"

    @property
    def out_of_memory(self) -> bool:
        """Killed for memory: ``OUT_OF_MEMORY`` under cgroups, or ``FAILED`` with a peak at the limit."""
        if self.state == "OUT_OF_MEMORY":
            return True
        return (self.state == "FAILED" and self.peak_mem_mb is not None
                and self.peak_mem_mb >= OOM_PEAK_SHARE * self.request.mem_mb)

    @property
    def timed_out(self) -> bool:
        return self.state == "TIMEOUT"

    @property
    def cpu_usage(self) -> float | None:
        """Cores busy on average (``TotalCPU / Elapsed``); 2.0 means two cores' worth."""
        if self.cpu_s is None or not self.elapsed_s:
            return None
        return self.cpu_s / self.elapsed_s


@dataclass(frozen=True)
class Decision:
    request: Request
    agent: str
    n_observations: int
    why: str  # one human sentence with the numbers (without the agent's name: the caller prefixes it)
    time_why: str = ""  # the part of ``why`` about the time limit


@dataclass(frozen=True)
class Caps:
    """The partition's limits a request must fit in (one node: stages are single-node)."""

    max_cpus: int
    max_mem_mb: int
    max_time_s: int | None = None  # None = UNLIMITED

    @classmethod
    def from_partition(cls, partition: Any) -> "Caps":
        """From an :class:`asad.slurm.backend.PartitionInfo` (or anything with the same fields)."""
        return cls(max_cpus=int(partition.cpus_per_node), max_mem_mb=int(partition.mem_per_node_mb),
                   max_time_s=partition.max_time_s)

    def clamp(self, request: Request) -> Request:
        time_s = request.time_s if self.max_time_s is None else min(request.time_s, self.max_time_s)
        return Request(cpus=max(1, min(request.cpus, self.max_cpus)),
                       mem_mb=max(1, min(request.mem_mb, self.max_mem_mb)),
                       time_s=max(60, time_s))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None) -> "Caps | None":
        return None if d is None else cls(**d)


def clamp(request: Request, caps: Caps | None) -> Request:
    return request if caps is None else caps.clamp(request)


@runtime_checkable
class SizingAgent(Protocol):
    name: str

    def propose(self, default: Request, input_bytes: float | None = None) -> Decision: ...

    def observe(self, outcome: Outcome) -> None: ...

    def to_state(self) -> dict: ...

    @classmethod
    def from_state(cls, state: dict) -> "SizingAgent": ...


@dataclass
class Sample:
    """One completed attempt, as the agents remember it (a real measurement, never a kill)."""

    peak_mb: float
    elapsed_s: float
    cpu_s: float | None
    input_bytes: float | None
    cpus: int
    mem_mb: int

    @property
    def cpu_usage(self) -> float | None:
        if self.cpu_s is None or self.elapsed_s <= 0:
            return None
        return self.cpu_s / self.elapsed_s


def mem_mb_ceil(x: float) -> int:
    return max(1, int(math.ceil(x)))


@dataclass
class History:
    """What an agent knows of its stage: completed samples, and lower bounds from kills.

    A killed attempt's peak is a lower bound on that task's need, not a sample: it goes
    to ``oom_floor_mb`` (the largest memory ever proven too small) and never into the
    samples a percentile or a regression is fitted on.
    """

    samples: list[Sample] = field(default_factory=list)
    max_samples: int = 5000  # a long-lived stage keeps its most recent runs only
    oom_floor_mb: float = 0.0
    n_oom: int = 0
    n_timeout: int = 0

    _cols: "GrowingColumns | None" = field(default=None, repr=False, compare=False)

    def add(self, outcome: Outcome) -> Sample | None:
        if outcome.out_of_memory:
            self.n_oom += 1
            self.oom_floor_mb = max(self.oom_floor_mb, float(outcome.request.mem_mb),
                                    float(outcome.peak_mem_mb or 0.0))
            return None
        if outcome.timed_out:
            self.n_timeout += 1
            return None
        if not outcome.completed or outcome.peak_mem_mb is None or outcome.elapsed_s is None:
            return None
        s = Sample(peak_mb=float(outcome.peak_mem_mb), elapsed_s=float(outcome.elapsed_s),
                   cpu_s=None if outcome.cpu_s is None else float(outcome.cpu_s),
                   input_bytes=None if outcome.input_bytes is None else float(outcome.input_bytes),
                   cpus=outcome.request.cpus, mem_mb=outcome.request.mem_mb)
        self.samples.append(s)
        if len(self.samples) > self.max_samples:
            del self.samples[: len(self.samples) - self.max_samples]
            self._cols = None
        elif self._cols is not None:
            self._cols.append(_sample_row(s))
        return s

    @property
    def n(self) -> int:
        return len(self.samples)

    def columns(self) -> np.ndarray:
        """(peak MB, input bytes or NaN, elapsed s, busy cores or NaN, CPUs) × runs; a view, do not modify."""
        if self._cols is None:
            self._cols = GrowingColumns(5)
            for s in self.samples:
                self._cols.append(_sample_row(s))
        return self._cols.view()

    def peaks(self) -> np.ndarray:
        return self.columns()[:, 0]

    def inputs(self) -> np.ndarray:
        return self.columns()[:, 1]

    def usages(self) -> np.ndarray:
        return self.columns()[:, 3]

    def cpus(self) -> np.ndarray:
        return self.columns()[:, 4]

    def max_peak_mb(self) -> float | None:
        return float(np.max(self.peaks())) if self.samples else None

    def to_dict(self) -> dict:
        return {"samples": [asdict(s) for s in self.samples], "oom_floor_mb": self.oom_floor_mb,
                "n_oom": self.n_oom, "n_timeout": self.n_timeout}

    @classmethod
    def from_dict(cls, d: dict) -> "History":
        return cls(samples=[Sample(**s) for s in d.get("samples", [])],
                   oom_floor_mb=float(d.get("oom_floor_mb", 0.0)), n_oom=int(d.get("n_oom", 0)),
                   n_timeout=int(d.get("n_timeout", 0)))


def _sample_row(s: Sample) -> list[float]:
    u = s.cpu_usage
    return [s.peak_mb, np.nan if s.input_bytes is None else s.input_bytes, s.elapsed_s,
            np.nan if u is None else u, float(s.cpus)]


class GrowingColumns:
    """An append-only float table that grows by doubling (cheap appends, slices are views)."""

    def __init__(self, width: int, capacity: int = 64) -> None:
        self._data = np.empty((capacity, width), dtype=float)
        self.n = 0

    def append(self, row: list[float]) -> None:
        if self.n == len(self._data):
            self._data = np.concatenate([self._data, np.empty_like(self._data)])
        self._data[self.n] = row
        self.n += 1

    def view(self) -> np.ndarray:
        return self._data[: self.n]


def rng_to_state(rng: np.random.Generator) -> dict:
    return rng.bit_generator.state


def rng_from_state(state: dict) -> np.random.Generator:
    bg = np.random.PCG64()
    bg.state = state
    return np.random.Generator(bg)
