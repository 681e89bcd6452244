"""Two ASA learners with different memories, and a small learner that picks between them.

On real queues a long memory wins (waits are noisy, the typical wait of a geometry
drifts slowly); after a real step change a short memory wins. ``asa-mix`` runs both
(by default ``asa-full-cost``, infinite memory, and ``asa-full-fast``, weight floor) and plans
with the one whose recent losses are lower: exponential weights over the two members,
updated with each member's loss on every observed wait, with a weight floor so the
choice can switch back within a few waits (the "tracking the best expert" idea on top of
the paper's algorithm).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from asad.learn.asa import AsaPredictor
from asad.learn.base import clean_wait
from asad.learn.losses import LossConfig, alternative_losses


@dataclass(frozen=True)
class MixConfig:
    members: tuple[str, ...] = ("asa-full-cost", "asa-full-fast")
    meta_gamma: float = 2.0
    meta_log_weight_floor: float = 3.0
    loss: LossConfig = LossConfig(kind="cost")

    def __post_init__(self) -> None:
        if isinstance(self.loss, dict):
            object.__setattr__(self, "loss", LossConfig(**self.loss))
        if len(self.members) < 1 or self.meta_gamma <= 0 or self.meta_log_weight_floor <= 0:
            raise ValueError("at least one member, meta_gamma > 0, meta_log_weight_floor > 0")


class AsaMixPredictor:
    def __init__(self, config: MixConfig, members: list[AsaPredictor], seed: int = 0, kind: str = "asa-mix") -> None:
        """``members``: one predictor per name in ``config.members``, made by the registry
        (``make_predictor``), which knows the names; this module does not import it."""
        if len(members) != len(config.members):
            raise ValueError(f"{len(members)} members given for {len(config.members)} names {config.members}")
        self.kind = kind
        self.config = config
        self.seed = seed
        self._members = list(members)
        self._meta_log_weights = np.zeros(len(self._members))

    @property
    def n_observations(self) -> int:
        return self._members[0].n_observations

    @property
    def chosen(self) -> int:
        """Index of the member planned with now (ties: the first, the long memory)."""
        return int(np.argmax(self._meta_log_weights))

    def estimate(self, *, slurm_estimate_s: float | None = None) -> float:
        estimates = [m.estimate(slurm_estimate_s=slurm_estimate_s) for m in self._members]
        return estimates[self.chosen]

    def observe(self, wait_s: float, *, slurm_estimate_s: float | None = None) -> None:
        wait = clean_wait(wait_s)
        estimates = np.array([m.estimate(slurm_estimate_s=slurm_estimate_s) for m in self._members])
        losses = alternative_losses(estimates, wait, self.config.loss, estimates)
        self._meta_log_weights -= self.config.meta_gamma * losses
        self._meta_log_weights -= self._meta_log_weights.max()
        np.maximum(self._meta_log_weights, -self.config.meta_log_weight_floor, out=self._meta_log_weights)
        for member in self._members:
            member.observe(wait, slurm_estimate_s=slurm_estimate_s)

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        return self._members[self.chosen].quantiles(qs)

    @property
    def p(self) -> np.ndarray:
        return self._members[self.chosen].p

    def to_state(self) -> dict[str, Any]:
        config = asdict(self.config)
        config["members"] = list(self.config.members)
        return {"kind": self.kind, "class": "asa-mix", "seed": self.seed, "config": config,
                "meta_log_weights": self._meta_log_weights.tolist(),
                "members": [m.to_state() for m in self._members]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "AsaMixPredictor":
        config = dict(state["config"])
        config["members"] = tuple(config["members"])
        config["loss"] = LossConfig(**config["loss"])
        members = [AsaPredictor.from_state(s) for s in state["members"]]
        predictor = cls(MixConfig(**config), members, seed=int(state["seed"]), kind=state["kind"])
        predictor._meta_log_weights = np.asarray(state["meta_log_weights"], dtype=float)
        return predictor
