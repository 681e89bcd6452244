"""The interface every queue-wait predictor implements, and small shared helpers.

A predictor holds what has been learned about the queue wait of one job geometry
(see :mod:`asad.learn.geometry`). The engine asks it for the wait to plan with
(:meth:`WaitPredictor.estimate`), tells it the true wait once the job has started
(:meth:`WaitPredictor.observe`) and persists it with :meth:`WaitPredictor.to_state`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class WaitPredictor(Protocol):
    kind: str  # the registry name (see asad.learn.registry)

    def estimate(self, *, slurm_estimate_s: float | None = None) -> float:
        """The wait (s) to plan with now.

        May sample (ASA), but is deterministic given the state: calling it twice
        without an ``observe`` in between returns the same value.
        ``slurm_estimate_s`` is Slurm's own current estimate for this geometry, if
        the caller has one; predictors that do not use it ignore it.
        """
        ...

    def observe(self, wait_s: float, *, slurm_estimate_s: float | None = None) -> None:
        """Learn from one true wait (``start - eligible``, seconds)."""
        ...

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        """Quantiles (s) of the predictor's current belief about the wait."""
        ...

    @property
    def n_observations(self) -> int: ...

    def to_state(self) -> dict[str, Any]:
        """JSON-serialisable; includes the RNG state so a restart resumes exactly."""
        ...

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "WaitPredictor": ...


def clean_wait(wait_s: float) -> float:
    """A wait as the learners use it: finite and non-negative (clock skew can make it < 0)."""
    wait = float(wait_s)
    if not np.isfinite(wait):
        raise ValueError(f"wait must be finite, got {wait_s!r}")
    return max(0.0, wait)


def rng_from_state(seed: int, bit_generator_state: dict[str, Any] | None) -> np.random.Generator:
    rng = np.random.Generator(np.random.PCG64(seed))
    if bit_generator_state is not None:
        rng.bit_generator.state = bit_generator_state
    return rng


def empirical_quantiles(sorted_values: Sequence[float], qs: Sequence[float]) -> list[float]:
    """Linear-interpolation quantiles (numpy's default) of already sorted values; 0.0 when none.

    Plain Python: called once per prediction in replays, on short lists, where numpy's
    per-call overhead would dominate.
    """
    n = len(sorted_values)
    if n == 0:
        return [0.0 for _ in qs]
    out = []
    for q in qs:
        position = min(max(float(q), 0.0), 1.0) * (n - 1)
        low = int(position)
        high = min(low + 1, n - 1)
        fraction = position - low
        out.append(float(sorted_values[low]) + (float(sorted_values[high]) - float(sorted_values[low])) * fraction)
    return out
