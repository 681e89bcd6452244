"""ASA's learner: Algorithm 1 of Souza et al. (paper 3.2), one instance per job geometry.

The learner keeps a probability vector ``p`` over ``m`` waiting-time alternatives
(:mod:`asad.learn.grid`), stored as log-weights so long runs never underflow.

    estimate():  sample an alternative a ~ p and plan with theta_a   (the "pending" action)
    observe(w):  score the pending action: L[a] += loss(a; w)          (sample now if none pending)
                 if max(L) > 1: p <- p * exp(-gamma_t * L) / N;  L <- 0   (a round closes)

Policies (paper 4.4):
- ``default``: one scored action per observed wait.
- ``tuned``: after the pending action, ``repetitions`` more actions are sampled from the
  current ``p`` and scored against the same wait (paper: R = 50).
- ``greedy``: plan with the alternative of least accumulated (all-time) loss, ties to the
  lowest wait; only that action is scored.

Beyond the paper (all off by default; measured in docs/results/learn.md):
- ``loss="cost"``: the cost-aware loss of :mod:`asad.learn.losses`.
- ``full_information``: once ``w`` is known every alternative's loss is, so all are scored.
- ``slurm_expert``: Slurm's own estimate is one more alternative (its value changes).
- ``point``: plan with the sampled action (paper), or the median / mode of ``p``.
- ``log_weight_floor``: keep every alternative within ``exp(-floor)`` of the best, so a
  long-converged ``p`` can still move when the queue changes (fixed-share style).
- ``discount``: multiply the log-weights by this factor at each round close, so old
  losses fade (exponential forgetting; 1 = the paper's infinite memory).

gamma_t is ``gamma`` (constant; allowed by the paper) or ``gamma / sqrt(1 + rounds)``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from asad.learn.base import clean_wait, rng_from_state
from asad.learn.grid import PAPER_GRID_S, make_grid
from asad.learn.losses import LossConfig, alternative_losses

POLICIES = ("default", "tuned", "greedy")
POINTS = ("sample", "median", "mode")
GAMMA_SCHEDULES = ("constant", "sqrt")


@dataclass(frozen=True)
class AsaConfig:
    grid: tuple[float, ...] = PAPER_GRID_S
    policy: str = "default"
    repetitions: int = 50  # tuned: extra sample-and-score steps per observed wait
    gamma: float = 1.0
    gamma_schedule: str = "constant"
    loss: LossConfig = field(default_factory=LossConfig)
    full_information: bool = False
    point: str = "sample"
    slurm_expert: bool = False
    log_weight_floor: float | None = None
    discount: float = 1.0  # < 1: log-weights shrink by this factor at each round close (forgetting)

    def __post_init__(self) -> None:
        object.__setattr__(self, "grid", make_grid(self.grid))
        if isinstance(self.loss, dict):
            object.__setattr__(self, "loss", LossConfig(**self.loss))
        if self.policy not in POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}; one of {POLICIES}")
        if self.point not in POINTS:
            raise ValueError(f"unknown point {self.point!r}; one of {POINTS}")
        if self.gamma_schedule not in GAMMA_SCHEDULES:
            raise ValueError(f"unknown gamma_schedule {self.gamma_schedule!r}")
        if self.gamma <= 0 or self.repetitions < 0:
            raise ValueError("gamma must be > 0 and repetitions >= 0")
        if self.log_weight_floor is not None and self.log_weight_floor <= 0:
            raise ValueError("log_weight_floor must be > 0 (or None)")
        if not 0.0 < self.discount <= 1.0:
            raise ValueError("discount must be in (0, 1]")


class AsaPredictor:
    """Algorithm 1 behind the :class:`~asad.learn.base.WaitPredictor` interface."""

    def __init__(self, config: AsaConfig | None = None, seed: int = 0, kind: str = "asa") -> None:
        self.kind = kind
        self.config = config or AsaConfig()
        self.seed = seed
        self._rng = rng_from_state(seed, None)
        self._grid = np.asarray(self.config.grid, dtype=float)
        n_alternatives = len(self._grid) + (1 if self.config.slurm_expert else 0)
        self._log_weights = np.zeros(n_alternatives)  # uniform p
        self._round_loss = np.zeros(n_alternatives)  # L of the open round
        self._total_loss = np.zeros(n_alternatives)  # all time (greedy, diagnostics)
        self._p = self._normalised()
        self.rounds_closed = 0
        self.played_loss = 0.0  # the learner's own cumulative loss (regret bound)
        self._n_observations = 0
        self._pending: int | None = None
        self._pending_value: float | None = None
        self._slurm_estimate_s: float | None = None

    # -- the interface ------------------------------------------------------------------

    @property
    def n_observations(self) -> int:
        return self._n_observations

    @property
    def p(self) -> np.ndarray:
        """The distribution over the grid (plus Slurm's expert last, if enabled); a copy."""
        return self._p.copy()

    def estimate(self, *, slurm_estimate_s: float | None = None) -> float:
        if slurm_estimate_s is not None:
            self._set_slurm_estimate(slurm_estimate_s)
        if self._pending is None and not self.config.full_information:
            self._pending = self._choose_action()
            self._pending_value = float(self._values()[self._pending])
        if self.config.point == "sample":
            if self._pending is None:  # full information and sampling: draw without scoring
                self._pending = self._choose_action()
                self._pending_value = float(self._values()[self._pending])
            assert self._pending_value is not None
            return self._pending_value
        if self.config.point == "median":
            return self.quantiles([0.5])[0]
        return float(self._values()[int(np.argmax(self._p))])

    def observe(self, wait_s: float, *, slurm_estimate_s: float | None = None) -> None:
        wait = clean_wait(wait_s)
        values = self._values(slurm_estimate_s)
        losses = alternative_losses(values, wait, self.config.loss, self._grid)
        if not self._expert_available(slurm_estimate_s):
            losses = losses.copy()
            losses[len(self._grid) :] = 0.0  # an expert that said nothing is not scored
        if self._pending is None:
            self._pending = self._choose_action()
        played = self._pending
        self.played_loss += float(losses[played])
        self._total_loss[played] += losses[played]
        if self.config.full_information:
            self._total_loss += losses
            self._total_loss[played] -= losses[played]
            self._add_round_loss(losses)
        else:
            self._add_round_loss_at(played, float(losses[played]))
            if self.config.policy == "tuned":
                self._repeat_sample_and_score(losses)
        self._pending = None
        self._pending_value = None
        if slurm_estimate_s is not None:
            self._set_slurm_estimate(slurm_estimate_s)
        self._n_observations += 1

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        if not self.config.slurm_expert:  # values are the sorted grid: use the cached cdf
            if self._cdf is None:
                self._sample(0.0)
            cdf = self._cdf
            targets = (np.clip(np.asarray(qs, dtype=float), 0.0, 1.0) - 1e-12) * cdf[-1]
            idx = np.minimum(cdf.searchsorted(targets, side="left"), len(cdf) - 1)
            return [float(self._grid[i]) for i in idx]
        values = self._values()
        probs = self._p
        if not self._expert_available(None):
            values, probs = values[: len(self._grid)], probs[: len(self._grid)]
        order = np.argsort(values, kind="stable")
        cdf = np.cumsum(probs[order])
        cdf /= cdf[-1]
        idx = np.searchsorted(cdf, np.clip(np.asarray(qs, dtype=float), 0.0, 1.0) - 1e-12, side="left")
        idx = np.minimum(idx, len(order) - 1)
        return [float(values[order[i]]) for i in idx]

    # -- Algorithm 1 --------------------------------------------------------------------

    def _choose_action(self) -> int:
        if self.config.policy == "greedy":
            candidates = self._total_loss.copy()
            if not self._expert_available(None):
                candidates[len(self._grid) :] = np.inf
            return int(np.argmin(candidates))  # ties: lowest index = shortest wait
        return self._sample(float(self._rng.random()))

    def _sample(self, uniform: float) -> int:
        if self._cdf is None:  # cached until p changes (a round closes)
            probs = self._p
            if not self._expert_available(None) and len(probs) > len(self._grid):
                probs = probs[: len(self._grid)]
            self._cdf = np.cumsum(probs)
        cdf = self._cdf
        return min(int(cdf.searchsorted(uniform * cdf[-1], side="right")), len(cdf) - 1)

    def _repeat_sample_and_score(self, losses: np.ndarray) -> None:
        """Score ``repetitions`` actions sampled one after another from the current ``p``.

        A plain loop over Python floats: with R = 50 per observation this is the hot path
        of a replay, and numpy's per-call overhead dominates on 53-element arrays.
        """
        loss_of = losses.tolist()
        round_loss = self._round_loss.tolist()
        cdf = self._cdf_list()
        for uniform in self._rng.random(self.config.repetitions).tolist():
            action = min(bisect.bisect_right(cdf, uniform * cdf[-1]), len(cdf) - 1)
            round_loss[action] += loss_of[action]
            if round_loss[action] > 1.0:
                self._round_loss[:] = round_loss
                self._close_round()
                round_loss = [0.0] * len(round_loss)
                cdf = self._cdf_list()
        self._round_loss[:] = round_loss

    def _cdf_list(self) -> list[float]:
        if self._cdf is None:
            self._sample(0.0)  # builds the cache
        return self._cdf.tolist()

    def _add_round_loss_at(self, action: int, loss: float) -> None:
        self._round_loss[action] += loss
        if self._round_loss[action] > 1.0:
            self._close_round()

    def _add_round_loss(self, losses: np.ndarray) -> None:
        self._round_loss += losses
        if float(self._round_loss.max()) > 1.0:
            self._close_round()

    def _close_round(self) -> None:
        if self.config.discount < 1.0:
            self._log_weights *= self.config.discount
        self._log_weights -= self._gamma_t() * self._round_loss
        self._log_weights -= self._log_weights.max()
        if self.config.log_weight_floor is not None:
            np.maximum(self._log_weights, -self.config.log_weight_floor, out=self._log_weights)
        self._round_loss[:] = 0.0
        self.rounds_closed += 1
        self._p = self._normalised()

    def _gamma_t(self) -> float:
        if self.config.gamma_schedule == "sqrt":
            return self.config.gamma / math.sqrt(1.0 + self.rounds_closed)
        return self.config.gamma

    # -- helpers ------------------------------------------------------------------------

    def _normalised(self) -> np.ndarray:
        self._cdf: np.ndarray | None = None
        weights = np.exp(self._log_weights - self._log_weights.max())
        return weights / weights.sum()

    def _set_slurm_estimate(self, slurm_estimate_s: float) -> None:
        if self._slurm_estimate_s is None:
            self._cdf = None  # the expert becomes sampleable
        self._slurm_estimate_s = clean_wait(slurm_estimate_s)

    def _expert_available(self, slurm_estimate_s: float | None) -> bool:
        return self.config.slurm_expert and (slurm_estimate_s is not None or self._slurm_estimate_s is not None)

    def _values(self, slurm_estimate_s: float | None = None) -> np.ndarray:
        if not self.config.slurm_expert:
            return self._grid
        if self._pending == len(self._grid) and self._pending_value is not None:
            expert = self._pending_value  # score what was actually planned with
        elif slurm_estimate_s is not None:
            expert = clean_wait(slurm_estimate_s)
        else:
            expert = self._slurm_estimate_s if self._slurm_estimate_s is not None else 0.0
        return np.append(self._grid, expert)

    # -- persistence --------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        config = asdict(self.config)
        config["grid"] = list(self.config.grid)
        return {
            "kind": self.kind,
            "class": "asa",
            "seed": self.seed,
            "config": config,
            "log_weights": self._log_weights.tolist(),
            "round_loss": self._round_loss.tolist(),
            "total_loss": self._total_loss.tolist(),
            "rounds_closed": self.rounds_closed,
            "played_loss": self.played_loss,
            "n_observations": self._n_observations,
            "pending": self._pending,
            "pending_value": self._pending_value,
            "slurm_estimate_s": self._slurm_estimate_s,
            "rng": self._rng.bit_generator.state,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "AsaPredictor":
        config = dict(state["config"])
        config["grid"] = tuple(config["grid"])
        config["loss"] = LossConfig(**config["loss"])
        predictor = cls(AsaConfig(**config), seed=int(state["seed"]), kind=state["kind"])
        predictor._rng = rng_from_state(predictor.seed, state["rng"])
        predictor._log_weights = np.asarray(state["log_weights"], dtype=float)
        predictor._round_loss = np.asarray(state["round_loss"], dtype=float)
        predictor._total_loss = np.asarray(state["total_loss"], dtype=float)
        predictor._p = predictor._normalised()
        predictor.rounds_closed = int(state["rounds_closed"])
        predictor.played_loss = float(state["played_loss"])
        predictor._n_observations = int(state["n_observations"])
        predictor._pending = state["pending"]
        predictor._pending_value = state["pending_value"]
        predictor._slurm_estimate_s = state["slurm_estimate_s"]
        return predictor
