"""Witt, Wagner & Leser (2019): feedback-based memory prediction per abstract task.

* ``pc50`` / ``pc95``: memory = the 50th / 95th percentile of the peaks of the
  successful runs so far (ready after 1 observation).
* ``lr-mean±`` / ``lr-mean-`` / ``lr-max-``: a linear regression of peak memory on the
  task's total input size, plus an offset from the fitted model's errors (eq. 1–3):
  the residuals' sample standard deviation; the same over under-predictions only; the
  largest under-prediction. Ready after 2 observations.

Only memory is learned (the paper sizes nothing else): CPUs stay the user's.
"""

from __future__ import annotations

import numpy as np

from asad.sizing.agent import AgentBase
from asad.sizing.base import Request

LR_OFFSETS = ("mean±", "mean-", "max-")


def fit_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least squares ``y ≈ intercept + slope·x`` (slope 0 when x does not vary)."""
    if len(x) < 2:
        return float(np.mean(y)), 0.0
    mx, my = float(np.mean(x)), float(np.mean(y))
    dx = x - mx
    var = float(np.dot(dx, dx))
    if var <= 0.0:
        return my, 0.0
    slope = float(np.dot(dx, y - my)) / var
    return my - slope * mx, slope


def lr_offset(residuals: np.ndarray, kind: str) -> float:
    """Witt eq. 1–3 on ``residuals = y - f(x)`` (positive = the model under-predicted)."""
    if kind == "mean±":
        return float(np.sqrt(np.sum(residuals**2) / max(len(residuals) - 1, 1)))
    if kind == "mean-":
        under = residuals[residuals > 0]
        if len(under) == 0:
            return 0.0
        return float(np.sqrt(np.sum(under**2) / max(len(under) - 1, 1)))
    if kind == "max-":
        return float(max(0.0, np.max(residuals)))
    raise ValueError(f"unknown LR offset {kind!r} (one of {', '.join(LR_OFFSETS)})")


class PercentileAgent(AgentBase):
    """Memory = the p-th percentile of successful peaks."""

    kind = "percentile"

    def __init__(self, percentile: float = 95.0, **kw) -> None:
        super().__init__(percentile=percentile, **kw)
        self.percentile = float(percentile)
        self.name = f"pc{self.percentile:g}"

    def _size(self, default: Request, input_bytes: float | None):
        if self.history.n < 1:
            return None
        mem = float(np.percentile(self.history.peaks(), self.percentile))
        return default.cpus, self._cap_mem(mem), (
            f"the {self.percentile:g}th percentile of {self.history.n} peak(s) is {mem:.0f} MB")


class RegressionAgent(AgentBase):
    """Memory = linear fit of peak on input size + an offset (Witt's LR mean±, mean-, max-)."""

    kind = "regression"

    def __init__(self, offset: str = "mean-", **kw) -> None:
        if offset not in LR_OFFSETS:
            raise ValueError(f"unknown LR offset {offset!r} (one of {', '.join(LR_OFFSETS)})")
        super().__init__(offset=offset, **kw)
        self.offset = offset
        self.name = f"lr-{offset}"

    def _size(self, default: Request, input_bytes: float | None):
        samples = self.history.samples
        if len(samples) < 2:
            return None
        have_x = input_bytes is not None and all(s.input_bytes is not None for s in samples)
        y = self.history.peaks()
        x = np.array([s.input_bytes for s in samples], dtype=float) if have_x else np.zeros(len(y))
        intercept, slope = fit_line(x, y)
        residuals = y - (intercept + slope * x)
        off = lr_offset(residuals, self.offset)
        base = intercept + slope * (float(input_bytes) if have_x else 0.0)
        mem = max(1.0, base + off)
        on = f"input {float(input_bytes) / 2**20:.0f} MiB" if have_x else "no input size (mean peak)"
        return default.cpus, self._cap_mem(mem), (
            f"fit over {len(samples)} runs gives {base:.0f} MB for {on}, "
            f"+ offset {off:.0f} MB = {mem:.0f} MB")
