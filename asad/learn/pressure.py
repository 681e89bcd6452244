"""A geometry's queue wait conditioned on the queue's pending load when the job became eligible.

Issue 35's diagnosis: one geometry key mixes the queue's calm spells (waits of 0–180 s) with its
congested ones (0.5–4 h), so an unconditioned wait distribution is wrong both ways: its low
quantiles never lead against a congested spell's wait, and a lead learned in a congested spell
idles in a calm one. What tells them apart at planning time is how many CPUs already queue for the
holes such a job needs (``asad.slurm.pending_load``: every user's competing pending jobs at least
as wide as one node's share of this job; +0.68 against a fresh job's log wait on the simulator).

The rule, kept simple: every wait learned for a key is kept with the pressure it met (the most
recent :data:`KEEP`); the wait's quantiles *now* are the empirical quantiles of the ``k`` waits
whose pressure was nearest the current one, on a log scale (``log2(1 + CPUs)``, read in steps of
``step`` so that the answer changes only when the queue does). With fewer than ``k`` such waits the
caller backs off to the unconditioned learner. Nearest neighbours rather than fixed buckets: no
bucket edges to choose, and a pressure beyond every one seen takes the waits of the nearest seen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

KEEP = 200  # waits kept per key, newest first: the queue's regime drifts over weeks
STEP_LOG2 = 0.5  # the default step: half a log2 step (x1.41), so quantiles move with the queue, not its jitter


def log_pressure(cpus_queued: float) -> float:
    return math.log2(1.0 + max(0.0, float(cpus_queued)))


def pressure_level(cpus_queued: float, step: float = STEP_LOG2) -> float:
    """The pressure as the rule compares it: ``log2(1 + CPUs)`` rounded to ``step``."""
    return _level(log_pressure(cpus_queued), step)


def _level(log2_pressure: float, step: float) -> float:
    return round(log2_pressure / step) * step


def key_shape(key: str) -> tuple[str, int] | None:
    """(partition, CPUs per node) of a geometry key (``asad.learn.geometry``), the queued jobs that
    compete with it: those at least one node's share as wide. None for a key without the CPUs."""
    fields = dict(part.split("=", 1) for part in key.split("|") if "=" in part)
    try:
        cpus, nodes = int(fields["cpus"]), max(1, int(fields.get("nodes", "1")))
    except (KeyError, ValueError):
        return None
    return fields.get("partition", ""), max(1, cpus // nodes)


class PressureSamples:
    """One key's recent waits, each with the pressure it met (``log2(1 + CPUs)``)."""

    def __init__(self, samples: Sequence[Sequence[float]] = ()):
        self.samples: list[tuple[float, float]] = [(float(p), float(w)) for p, w in samples][:KEEP]

    @property
    def n(self) -> int:
        return len(self.samples)

    def observe(self, cpus_queued: float, wait_s: float) -> None:
        self.samples.insert(0, (log_pressure(cpus_queued), max(0.0, float(wait_s))))
        del self.samples[KEEP:]

    def quantiles(self, qs: Sequence[float], cpus_queued: float, neighbours: int,
                  step: float = STEP_LOG2) -> list[float] | None:
        """The wait's quantiles among the ``neighbours`` waits whose pressure level is nearest the
        current one (ties: the newer first); None with fewer waits than that (back off)."""
        if neighbours <= 0 or self.n < neighbours:
            return None
        level = pressure_level(cpus_queued, step)
        arr = np.asarray(self.samples)
        levels = np.round(arr[:, 0] / step) * step
        order = np.argsort(np.abs(levels - level), kind="stable")[:neighbours]
        return [float(v) for v in np.quantile(arr[order, 1], list(qs))]

    def to_state(self) -> dict:
        return {"samples": [list(s) for s in self.samples]}

    @classmethod
    def from_state(cls, state: dict | None) -> PressureSamples:
        return cls(state.get("samples", []) if state else [])
