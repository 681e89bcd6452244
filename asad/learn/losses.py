"""Loss functions that score waiting-time alternatives once the true wait ``w`` is known.

Every function returns the loss of each alternative value in ``[0, 1]`` (Algorithm 1
closes a round when an alternative's accumulated loss passes 1, so losses must stay
in that range).

- ``zero_one`` (paper eq. 3): 0 for the alternative closest to ``w``, 1 for the rest.
  A value that is not on the grid (Slurm's estimate as an expert) competes too: when it
  is strictly closer it alone scores 0; when equally close both score 0.
- ``cost`` (ours): what a wrong estimate costs a proactive submission. Planning with
  ``a > w`` submits too early: the allocation idles ``a - w`` seconds (core-seconds,
  weighted by ``early_cost``); ``a < w`` submits too late: the workflow loses ``w - a``
  seconds of makespan (weighted by ``late_cost``). Divided by ``max(a, w, floor_s)``
  and by the larger weight, so it is a relative error in ``[0, 1]``: comparable across
  geometries whose waits differ by orders of magnitude.
- ``log`` (ours): ``|log10(1 + a) - log10(1 + w)| / log_decades``, capped at 1: the error
  measure the real-data benchmark scores, so full-information updates with it drive p
  towards the median of log waits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOSS_KINDS = ("zero_one", "cost", "log")


@dataclass(frozen=True)
class LossConfig:
    kind: str = "zero_one"
    early_cost: float = 1.0  # weight of an idle second (allocation ready before it is needed)
    late_cost: float = 1.0  # weight of a lost makespan second (allocation ready too late)
    floor_s: float = 60.0  # below this, differences count relative to floor_s: 0 s vs 10 s is not "100 % wrong"
    log_decades: float = 3.0  # log loss: this many decades off (x1000) is a loss of 1

    def __post_init__(self) -> None:
        if self.kind not in LOSS_KINDS:
            raise ValueError(f"unknown loss {self.kind!r}; one of {LOSS_KINDS}")
        if self.early_cost < 0 or self.late_cost < 0 or max(self.early_cost, self.late_cost) <= 0:
            raise ValueError("early_cost and late_cost must be >= 0 and not both 0")
        if self.floor_s <= 0 or self.log_decades <= 0:
            raise ValueError("floor_s and log_decades must be > 0")


def alternative_losses(values: np.ndarray, wait_s: float, config: LossConfig, grid: np.ndarray) -> np.ndarray:
    """Loss of planning with each of ``values`` when the true wait is ``wait_s``."""
    if config.kind == "zero_one":
        losses = np.ones(len(values))
        nearest = int(np.argmin(np.abs(grid - wait_s)))  # ties go low, as nearest_index
        grid_distance = abs(float(grid[nearest]) - wait_s)
        expert_distance = np.abs(values[len(grid) :] - wait_s)  # off-grid experts, if any
        if not np.any(expert_distance < grid_distance):
            losses[nearest] = 0.0
        if len(expert_distance):
            best = min(grid_distance, float(expert_distance.min()))
            losses[len(grid) :] = np.where(expert_distance <= best, 0.0, 1.0)
        return losses
    if config.kind == "log":
        return np.minimum(np.abs(np.log10(1.0 + values) - np.log10(1.0 + wait_s)) / config.log_decades, 1.0)
    early = np.maximum(values - wait_s, 0.0) * config.early_cost
    late = np.maximum(wait_s - values, 0.0) * config.late_cost
    scale = np.maximum(np.maximum(values, wait_s), config.floor_s) * max(config.early_cost, config.late_cost)
    return np.clip((early + late) / scale, 0.0, 1.0)
