"""``hedge_top_groups: floor+cluster`` (issue 38, fourteenth round): the better of a global and a
contextual top level, chosen by the learner. Both top levels are kept as they are alone, each
with its own weights over the learners (the back-off and the panel's mixture): the cluster's
(``<cluster>#top``, every wait) and the pending floor share's (``<cluster>#floor:<bucket>#top``,
the waits told in that bucket; hedge_context.py). A meta level per cluster (``<cluster>#meta``)
keeps exponential weights over the two (Hedge with the top level's rate and fixed share), each
paying for the wait what the learner it followed would have been told: ``hedge_meta_loss``
"win" (1 for the top level farther from the wait, 0 for both when they followed the same
learner) or "window" (its median |error| over the cluster's last ``hedge_top_window`` waits).
The answer is the learner the chosen top level follows, chosen by a seeded draw from the meta
weights or as the heavier (ties to the cluster's; ``hedge_meta_combine``).

Why: judged on the rolling windows, the per-floor-share draw beat the back-off's median error
in 2 of Graham's 3 windows and lost Cedar's last two, where the per-cluster draw won all four
(docs/results/learn.md, thirteenth round): which context helps differs by cluster and time,
so the learner should choose it, up to the regret of two experts.

What each top level would have answered is taken as it stands when the wait arrives (the
learners' answers as the job was told, the followed learner now), as the top level itself is
judged; the meta weights are saved with the cluster's row, the draws are not (after a restart
the heavier is followed until the next wait)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from asad.learn.experts_config import ExpertsConfig
from asad.learn.hedge_memory import RunningMedian, window_losses
from asad.learn.hedge_panel import Panel

META_SUFFIX = "#meta"
META_TOPS = ("cluster", "floor")  # the meta level's experts, in weight order


def cluster_top(panel: Panel) -> str:
    """The cluster's top group of a panel (``<cluster>#top``)."""
    return f"{panel.group.split('#', 1)[0]}#top"


def meta_group(panel: Panel) -> str:
    """The meta level's weight group of a panel, one per cluster (``<cluster>#meta``)."""
    return f"{panel.group.split('#', 1)[0]}{META_SUFFIX}"


class MetaLevel:
    """The meta level's methods of a :class:`asad.learn.hedge.HedgePool` (a mixin; its draws are
    kept in the pool's ``_drawn`` under the meta group, its windows in ``_window``)."""

    config: ExpertsConfig
    log_weights: dict[str, list[float]]
    _window: dict[tuple[str, int], RunningMedian]
    _drawn: dict[str, int]
    _rng: random.Random

    def prior(self, spoke: Sequence[int]) -> dict[int, float]:
        raise NotImplementedError

    def _step(self, group: str, weights: list[float], losses: dict[int, float],
              at_s: float | None, prior_of: Any, eta: float, alpha: float) -> None:
        raise NotImplementedError

    @property
    def has_meta(self) -> bool:
        return self.config.hedge_top != "none" and self.config.hedge_top_groups == "floor+cluster"

    def meta_weights(self, group: str) -> list[float]:
        """The meta group's log weights, made from the prior (``hedge_prior`` on the cluster's)."""
        weights = self.log_weights.get(group)
        if weights is None:
            n = len(META_TOPS)
            prior = self.prior(range(n))
            weights = self.log_weights[group] = [math.log(prior[i] * n) for i in range(n)]
        return weights

    def meta_choice(self, panel: Panel) -> int:
        """Which top level answers now (0: the cluster's, 1: the floor share's): the drawn one
        (``draw``, once a wait has drawn), else the heavier, ties to the cluster's."""
        group = meta_group(panel)
        drawn = self._drawn.get(group)
        if self.config.hedge_meta_combine == "draw" and drawn is not None:
            return drawn
        weights = self.log_weights.get(group)
        return 0 if weights is None or weights[0] >= weights[1] else 1

    def meta_top(self, panel: Panel) -> str:
        """The top group the meta level follows for this panel."""
        return cluster_top(panel) if self.meta_choice(panel) == 0 else (panel.top or cluster_top(panel))

    def _update_meta(self, panel: Panel, answers: tuple[float, float], y: float, at_s: float | None) -> None:
        """One Hedge round of the meta level: each top level pays for what it would have told
        (``answers``: the cluster's, the floor share's), then ``draw`` draws the one followed next."""
        cfg = self.config
        group = meta_group(panel)
        errors = [abs(a - y) for a in answers]
        if cfg.hedge_meta_loss == "win":
            losses = {i: 1.0 if e > min(errors) else 0.0 for i, e in enumerate(errors)}
        else:
            losses = window_losses(self._window, group, errors, cfg.hedge_top_window)
        eta = cfg.hedge_top_eta or cfg.hedge_eta
        share = cfg.hedge_share if cfg.hedge_top_share < 0 else cfg.hedge_top_share
        weights = self.meta_weights(group)
        self._step(group, weights, losses, at_s, self.prior, eta, share)
        if cfg.hedge_meta_combine == "draw":
            top = max(weights)
            raw = [math.exp(w - top) for w in weights]
            self._drawn[group] = 0 if self._rng.random() * sum(raw) < raw[0] else 1
