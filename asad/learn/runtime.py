"""Per-stage run-time estimate: when will the running stage end?

ASA submits the next stage at ``expected_end - estimated_wait``; the expected end is
``start + runtime estimate``. An underestimate of the run time makes the next stage's
allocation arrive early (idle core-seconds in naive mode), so the estimate leans high:
a high quantile of the recent run times of the same stage (default the 90th percentile
of the last 20), never above the stage's time limit, and the time limit itself until
``min_observations`` runs have been seen.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class RuntimeEstimateConfig:
    quantile: float = 0.9  # 1.0 = max of the window
    window: int = 20
    min_observations: int = 1
    margin: float = 1.0  # multiply the quantile (e.g. 1.1 for 10 % headroom)

    def __post_init__(self) -> None:
        if not 0.0 <= self.quantile <= 1.0 or self.window < 1 or self.min_observations < 0 or self.margin <= 0:
            raise ValueError("quantile in [0, 1], window >= 1, min_observations >= 0, margin > 0")


class RuntimeEstimator:
    """Learns one stage's run time from its earlier runs."""

    def __init__(self, config: RuntimeEstimateConfig | None = None) -> None:
        self.config = config or RuntimeEstimateConfig()
        self._recent: deque[float] = deque(maxlen=self.config.window)
        self._n = 0

    @property
    def n_observations(self) -> int:
        return self._n

    @property
    def recent(self) -> tuple[float, ...]:
        """The run times in the window, oldest first (their spread prices ``auto``'s lead)."""
        return tuple(self._recent)

    def observe(self, runtime_s: float) -> None:
        runtime = float(runtime_s)
        if not np.isfinite(runtime) or runtime < 0:
            raise ValueError(f"runtime must be finite and >= 0, got {runtime_s!r}")
        self._recent.append(runtime)
        self._n += 1

    def estimate(self, time_limit_s: float) -> float:
        """Expected run time (s) of the next run, at most ``time_limit_s``."""
        if self._n < max(1, self.config.min_observations) or not self._recent:
            return float(time_limit_s)
        value = float(np.quantile(np.asarray(self._recent), self.config.quantile)) * self.config.margin
        return min(value, float(time_limit_s))

    def to_state(self) -> dict[str, Any]:
        return {"config": vars(self.config).copy(), "recent": list(self._recent), "n": self._n}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "RuntimeEstimator":
        estimator = cls(RuntimeEstimateConfig(**state["config"]))
        estimator._recent.extend(float(v) for v in state["recent"])
        estimator._n = int(state["n"])
        return estimator
