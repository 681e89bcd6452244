"""Baseline wait predictors a user would try instead of ASA (same interface).

- :class:`LastWaitPredictor` (``last``): the last observed wait.
- :class:`MovingMedianPredictor` (``median-k``): median of the last ``k`` waits.
- :class:`MedianAllPredictor` (``median-all``): median of every wait seen.
- :class:`QbetsPredictor` (``qbets``): QBETS-style upper confidence bound on a quantile
  (Nurmi, Brevik, Wolski 2007): among the ``n`` most recent waits (sorted), the
  ``k``-th smallest is an upper bound on the ``q``-quantile with confidence ``c`` when
  ``P[Binomial(n, q) < k] >= c``; the smallest such ``k`` is used. With too few waits
  for that confidence it returns the largest wait seen. Like QBETS it forgets: when
  more consecutive waits exceed the bound than a rare-event test allows, history is
  trimmed to the recent waits (QBETS' change-point rule, simplified).
- :class:`SlurmEstimatePredictor` (``slurm-estimate``): Slurm's own estimate, fed by the
  caller (``sbatch --test-only`` / ``squeue --start``), falling back to the last wait.

Before the first observation every baseline predicts 0 s (submit when the predecessor
ends: the Per-Stage behaviour).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from asad.learn.base import clean_wait, empirical_quantiles


class LastWaitPredictor:
    kind = "last"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._last: float | None = None
        self._n = 0

    @property
    def n_observations(self) -> int:
        return self._n

    def estimate(self, *, slurm_estimate_s: float | None = None) -> float:
        return 0.0 if self._last is None else self._last

    def observe(self, wait_s: float, *, slurm_estimate_s: float | None = None) -> None:
        self._last = clean_wait(wait_s)
        self._n += 1

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        return [self.estimate() for _ in qs]

    def to_state(self) -> dict[str, Any]:
        return {"kind": self.kind, "class": "last", "seed": self.seed, "last": self._last, "n": self._n}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "LastWaitPredictor":
        predictor = cls(seed=int(state.get("seed", 0)))
        predictor.kind = state["kind"]
        predictor._last, predictor._n = state["last"], int(state["n"])
        return predictor


class MovingMedianPredictor:
    kind = "median-k"

    def __init__(self, k: int = 10, seed: int = 0) -> None:
        if k < 1:
            raise ValueError("k must be >= 1")
        self.k, self.seed = k, seed
        self._recent: deque[float] = deque(maxlen=k)
        self._n = 0

    @property
    def n_observations(self) -> int:
        return self._n

    def estimate(self, *, slurm_estimate_s: float | None = None) -> float:
        return self.quantiles([0.5])[0]

    def observe(self, wait_s: float, *, slurm_estimate_s: float | None = None) -> None:
        self._recent.append(clean_wait(wait_s))
        self._n += 1

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        return empirical_quantiles(sorted(self._recent), qs)

    def to_state(self) -> dict[str, Any]:
        return {"kind": self.kind, "class": "median-k", "seed": self.seed, "k": self.k,
                "recent": list(self._recent), "n": self._n}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "MovingMedianPredictor":
        predictor = cls(k=int(state["k"]), seed=int(state.get("seed", 0)))
        predictor.kind = state["kind"]
        predictor._recent.extend(float(v) for v in state["recent"])
        predictor._n = int(state["n"])
        return predictor


class MedianAllPredictor:
    """Median of every wait seen. Keeps them all (sorted): state grows with the history."""

    kind = "median-all"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._sorted: list[float] = []

    @property
    def n_observations(self) -> int:
        return len(self._sorted)

    def estimate(self, *, slurm_estimate_s: float | None = None) -> float:
        return self.quantiles([0.5])[0]

    def observe(self, wait_s: float, *, slurm_estimate_s: float | None = None) -> None:
        bisect.insort(self._sorted, clean_wait(wait_s))

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        return empirical_quantiles(self._sorted, qs)

    def to_state(self) -> dict[str, Any]:
        return {"kind": self.kind, "class": "median-all", "seed": self.seed, "sorted": list(self._sorted)}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "MedianAllPredictor":
        predictor = cls(seed=int(state.get("seed", 0)))
        predictor.kind = state["kind"]
        predictor._sorted = [float(v) for v in state["sorted"]]
        return predictor


@lru_cache(maxsize=65536)
def binomial_upper_index(n: int, quantile: float, confidence: float) -> int | None:
    """Smallest ``k`` (1-based) with ``P[Binomial(n, quantile) <= k - 1] >= confidence``, or None.

    Then the ``k``-th smallest of ``n`` samples bounds the ``quantile`` from above with at
    least that confidence (the number of samples below the true quantile is Binomial).
    """
    if n <= 0:
        return None
    if quantile >= 1.0:
        return None
    if quantile <= 0.0:
        return 1
    log_q, log_1q = math.log(quantile), math.log1p(-quantile)
    cdf = 0.0
    for j in range(n + 1):
        log_pmf = math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * log_q + (n - j) * log_1q
        cdf += math.exp(log_pmf)
        if cdf >= confidence:
            k = j + 1
            return k if k <= n else None
    return None


class QbetsPredictor:
    kind = "qbets"

    def __init__(self, quantile: float = 0.95, confidence: float = 0.95, history: int = 1000,
                 seed: int = 0) -> None:
        if not (0.0 < quantile < 1.0 and 0.0 < confidence < 1.0) or history < 1:
            raise ValueError("quantile and confidence in (0, 1), history >= 1")
        self.quantile, self.confidence, self.history, self.seed = quantile, confidence, history, seed
        self._recent: deque[float] = deque()
        self._sorted: list[float] = []
        self._misses_in_a_row = 0
        self._n = 0

    @property
    def n_observations(self) -> int:
        return self._n

    def estimate(self, *, slurm_estimate_s: float | None = None) -> float:
        return self._bound(self.quantile)

    def observe(self, wait_s: float, *, slurm_estimate_s: float | None = None) -> None:
        wait = clean_wait(wait_s)
        if self._sorted and wait > self._bound(self.quantile):
            self._misses_in_a_row += 1
        else:
            self._misses_in_a_row = 0
        self._append(wait)
        self._n += 1
        # Change point: this many misses in a row has probability < 1 - confidence if the
        # bound were right, so the queue changed; keep only the waits since it did.
        if self._misses_in_a_row >= self._rare_run_length():
            recent = list(self._recent)[-self._misses_in_a_row :]
            self._recent.clear()
            self._sorted = []
            for value in recent:
                self._append(value)
            self._misses_in_a_row = 0

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        return [self._bound(q) for q in qs]

    def _rare_run_length(self) -> int:
        # smallest r with (1 - q)^r < 1 - confidence; at least 2
        return max(2, math.ceil(math.log(1.0 - self.confidence) / math.log(1.0 - self.quantile)))

    def _append(self, wait: float) -> None:
        self._recent.append(wait)
        bisect.insort(self._sorted, wait)
        if len(self._recent) > self.history:
            old = self._recent.popleft()
            del self._sorted[bisect.bisect_left(self._sorted, old)]

    def _bound(self, quantile: float) -> float:
        if not self._sorted:
            return 0.0
        k = binomial_upper_index(len(self._sorted), round(float(quantile), 6), self.confidence)
        return self._sorted[-1] if k is None else self._sorted[k - 1]

    def to_state(self) -> dict[str, Any]:
        return {"kind": self.kind, "class": "qbets", "seed": self.seed, "quantile": self.quantile,
                "confidence": self.confidence, "history": self.history, "recent": list(self._recent),
                "misses_in_a_row": self._misses_in_a_row, "n": self._n}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "QbetsPredictor":
        predictor = cls(quantile=float(state["quantile"]), confidence=float(state["confidence"]),
                        history=int(state["history"]), seed=int(state.get("seed", 0)))
        predictor.kind = state["kind"]
        for value in state["recent"]:
            predictor._append(float(value))
        predictor._misses_in_a_row = int(state["misses_in_a_row"])
        predictor._n = int(state["n"])
        return predictor


class SlurmEstimatePredictor:
    """Slurm's own estimate of the wait, as the caller last reported it."""

    kind = "slurm-estimate"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._slurm_estimate_s: float | None = None
        self._last_wait: float | None = None
        self._n = 0

    @property
    def n_observations(self) -> int:
        return self._n

    def estimate(self, *, slurm_estimate_s: float | None = None) -> float:
        if slurm_estimate_s is not None:
            self._slurm_estimate_s = clean_wait(slurm_estimate_s)
        if self._slurm_estimate_s is not None:
            return self._slurm_estimate_s
        return 0.0 if self._last_wait is None else self._last_wait

    def observe(self, wait_s: float, *, slurm_estimate_s: float | None = None) -> None:
        self._last_wait = clean_wait(wait_s)
        if slurm_estimate_s is not None:
            self._slurm_estimate_s = clean_wait(slurm_estimate_s)
        self._n += 1

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        return [self.estimate() for _ in qs]

    def to_state(self) -> dict[str, Any]:
        return {"kind": self.kind, "class": "slurm-estimate", "seed": self.seed,
                "slurm_estimate_s": self._slurm_estimate_s, "last_wait": self._last_wait, "n": self._n}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "SlurmEstimatePredictor":
        predictor = cls(seed=int(state.get("seed", 0)))
        predictor.kind = state["kind"]
        predictor._slurm_estimate_s = state["slurm_estimate_s"]
        predictor._last_wait = state["last_wait"]
        predictor._n = int(state["n"])
        return predictor
