"""The top level over whole learners (``hedge_top: learners``, issue 38's fourth round on), as a
part of :class:`asad.learn.hedge.HedgePool`: Hedge, with its own loss, rate and share, over the
back-off's answer and the panel's mixture (and with ``learners-median20`` the answering level's
running median of 20), with weights per top group (the cluster's ``<cluster>#top``, or per
account or context, ``hedge_top_groups``); followed as the leader, a seeded draw or the weighted
mean (``hedge_top_combine``); optionally over a long memory (hedge_memory.py).

Split from hedge.py (fourteenth round) so the pool stays near 600 lines: the methods are the
pool's, unchanged; they read the pool's config, weights (``log_weights``), panel mixture
(``mix``), Hedge step (``_step``) and prior, and the state its ``__init__`` makes (``_window``,
``_drawn``, ``_kept``, ``_memory``, ``_rng``, ``_tau_recent``, ``_tau_sorted``)."""

from __future__ import annotations

import bisect
import math
import random
from collections import deque
from collections.abc import Sequence

from asad.learn.experts_config import ExpertsConfig
from asad.learn.hedge_memory import RunningMedian, TopMemory, follow, window_losses
from asad.learn.hedge_meta import MetaLevel, cluster_top
from asad.learn.hedge_panel import PANEL, TOP, TOP_MEDIAN20, TOP_TAU_WINDOW, Panel


class TopLevel(MetaLevel):
    """The top level's methods of a :class:`asad.learn.hedge.HedgePool` (a mixin: no state of
    its own; the pool's ``__init__`` makes it)."""

    config: ExpertsConfig
    log_weights: dict[str, list[float]]
    _window: dict[tuple[str, int], RunningMedian]
    _drawn: dict[str, int]
    _kept: dict[str, int]
    _memory: dict[str, TopMemory]
    _rng: random.Random
    _tau_recent: dict[str, deque[float]]
    _tau_sorted: dict[str, list[float]]

    # the pool's, used here (and prior, _step: see MetaLevel)
    def mix(self, panel: Panel) -> float:
        raise NotImplementedError

    def loss(self, answer: float, y: float) -> float:
        raise NotImplementedError


    @property
    def has_top(self) -> bool:
        return self.config.hedge_top != "none"

    @property
    def has_memory(self) -> bool:
        return self.has_top and self.config.hedge_top_memory_s >= 0

    @property
    def top_names(self) -> tuple[str, ...]:
        return TOP_MEDIAN20 if self.config.hedge_top == "learners-median20" else TOP

    @staticmethod
    def top_group(panel: Panel) -> str:
        """The top level's weights are kept per coarsest key (the cluster; the learners answer
        every job, so one group sees every wait), or per account (``hedge_top_groups``)."""
        return panel.top or f"{panel.group.split('#', 1)[0]}#top"

    def top_values(self, panel: Panel) -> tuple[float, ...]:
        """What the learners say: the back-off's answer and the panel's mixture (and with
        ``learners-median20`` the answering level's running median of 20)."""
        if self.config.hedge_top == "learners-median20":
            return panel.backoff, self.mix(panel), float(panel.values[PANEL.index("median20")])  # type: ignore[arg-type]
        return panel.backoff, self.mix(panel)

    def top_weights(self, group: str) -> list[float]:
        weights = self.log_weights.get(group)
        if weights is None:
            n = len(self.top_names)
            prior = self.prior(range(n))
            weights = self.log_weights[group] = [math.log(prior[i] * n) for i in range(n)]
        return weights

    def followed_group(self, panel: Panel) -> str:
        """The top group whose weights answer for this panel: its own, or with the meta level
        (``floor+cluster``, hedge_meta.py) the one the meta level follows."""
        return self.meta_top(panel) if self.has_meta else self.top_group(panel)

    def top_shares(self, panel: Panel) -> list[tuple[int, float]]:
        """(learner index, share of the weight) at the top level; shares sum to 1."""
        return self.group_shares(self.followed_group(panel))

    def group_shares(self, group: str) -> list[tuple[int, float]]:
        weights = self.top_weights(group)
        top = max(weights)
        raw = [math.exp(w - top) for w in weights]
        total = sum(raw)
        return [(i, w / total) for i, w in enumerate(raw)]

    def top_followed(self, panel: Panel) -> int:
        """The learner a ``leader``/``draw`` top level follows now (see :meth:`followed_in`)."""
        return self.followed_in(self.followed_group(panel))

    def followed_in(self, group: str) -> int:
        """The learner the top group ``group`` follows now: the drawn one (``draw``, once a round
        has drawn), else the kept one (margin, memory), else the heaviest (ties to the back-off)."""
        drawn = self._drawn.get(group)
        if self.config.hedge_top_combine == "draw" and drawn is not None:
            return drawn
        if self.config.hedge_top_margin or self.has_memory:
            return self._kept.get(group, 0)
        return max(self.group_shares(group), key=lambda item: (item[1], -item[0]))[0]

    def top_mix(self, panel: Panel) -> float:
        values = self.top_values(panel)
        if self.config.hedge_top_combine in ("leader", "draw"):
            return values[self.top_followed(panel)]
        return sum(share * values[i] for i, share in self.top_shares(panel))

    def _update_top(self, panel: Panel, learners: tuple[float, ...], y: float, at_s: float | None) -> None:
        """The top level's round for one wait; with the meta level (``floor+cluster``) the
        cluster's and the floor share's rounds, then the meta level's, which judges what each
        would have answered before its round."""
        if not self.has_meta:
            self._update_top_group(self.top_group(panel), panel, learners, y, at_s)
            return
        groups = (cluster_top(panel), self.top_group(panel))
        answers = (self._group_answer(groups[0], learners), self._group_answer(groups[1], learners))
        for group in groups:
            self._update_top_group(group, panel, learners, y, at_s)
        self._update_meta(panel, answers, y, at_s)

    def _group_answer(self, group: str, learners: Sequence[float]) -> float:
        """What the top group ``group`` answers from the learners' answers (as ``top_mix``)."""
        if self.config.hedge_top_combine in ("leader", "draw"):
            return float(learners[self.followed_in(group)])
        return sum(share * float(learners[i]) for i, share in self.group_shares(group))

    def _update_top_group(self, group: str, panel: Panel, learners: tuple[float, ...], y: float,
                          at_s: float | None) -> None:
        """Hedge with fixed share over the learners, in the top group ``group``, with the top
        level's own loss, rate and share; then ``draw`` draws the learner it follows next."""
        cfg = self.config
        eta = cfg.hedge_top_eta or cfg.hedge_eta
        if self.has_memory:
            self._remember(group, panel, learners, y, at_s, eta)
            return
        losses = self.top_losses(group, learners, y)
        share = cfg.hedge_share if cfg.hedge_top_share < 0 else cfg.hedge_top_share
        weights = self.top_weights(group)
        self._step(group, weights, losses, at_s, self.prior, eta, share)
        if cfg.hedge_top_margin:
            # hysteresis: a switch of the learner followed moves every told answer (and the
            # residuals that calibrate the quantiles), so a learner is followed only once its
            # running median error beats the followed one's by the margin, not on every lead
            kept = self._kept.get(group, 0)
            best = min(losses, key=lambda i: (losses[i], i))
            if losses[best] < losses[kept] - cfg.hedge_top_margin:
                self._kept[group] = best
        if cfg.hedge_top_combine == "draw":
            top = max(weights)
            raw = [math.exp(w - top) for w in weights]
            u, drawn = self._rng.random() * sum(raw), 0
            while drawn < len(raw) - 1 and u >= raw[drawn]:
                u -= raw[drawn]
                drawn += 1
            self._drawn[group] = drawn

    def _remember(self, group: str, panel: Panel, learners: tuple[float, ...], y: float,
                  at_s: float | None, eta: float) -> None:
        """The long memory's round (``hedge_top_memory_s``): the wait joins the group's memory
        (the waits older than its span leave), the weights become ``exp(-eta * n * statistic)``
        and the leader is chosen from the statistic, with the minimum count and the margin."""
        cfg = self.config
        median = cfg.hedge_top_loss == "window"
        memory = self._memory.get(group)
        if memory is None:
            memory = self._memory[group] = TopMemory(len(learners), cfg.hedge_top_memory_s, median)
        if median:  # the score itself: each learner's median |error| over the memory
            paid = tuple(abs(float(v) - y) for v in learners)
        else:
            cluster_top = f"{panel.group.split('#', 1)[0]}#top"
            losses = self.top_losses(group, learners, y, cluster_top if cfg.hedge_top_tau_scope == "cluster" else None)
            paid = tuple(losses[i] for i in range(len(learners)))
        memory.add(at_s, paid)
        statistic = memory.statistic()
        weights = self.top_weights(group)
        log_w = [-eta * memory.n * s for s in statistic]
        top = max(log_w)
        weights[:] = [w - top for w in log_w]
        self._kept[group] = follow(statistic, memory.n, self._kept.get(group, 0), cfg.hedge_top_min_n,
                                   cfg.hedge_top_margin)

    def top_losses(self, group: str, learners: Sequence[float], y: float,
                   tau_group: str | None = None) -> dict[int, float]:
        """What each learner pays at the top level for the wait ``y`` (see ``hedge_top_loss``);
        ``tau_group``: whose running threshold ``over`` reads (None: the top group's own)."""
        cfg = self.config
        if cfg.hedge_top_loss == "charged":
            return {i: self.loss(float(v), y) for i, v in enumerate(learners)}
        errors = [abs(float(v) - y) for v in learners]
        if cfg.hedge_top_loss == "clip":
            return {i: min(e, cfg.hedge_top_tau) / cfg.hedge_top_tau for i, e in enumerate(errors)}
        if cfg.hedge_top_loss == "win":
            best = min(errors)
            return {i: 1.0 if e > best else 0.0 for i, e in enumerate(errors)}
        if cfg.hedge_top_loss == "window":
            return window_losses(self._window, group, errors, cfg.hedge_top_window)
        tau = cfg.hedge_top_tau or self.running_tau(tau_group or group, errors[0])
        return {i: 1.0 if e > tau else 0.0 for i, e in enumerate(errors)}

    def running_tau(self, group: str, backoff_error: float) -> float:
        """The median of the back-off's |error| over the group's last waits before this one
        (log10 3, the score's factor, before any), then this wait's error joins the window."""
        recent = self._tau_recent.setdefault(group, deque())
        ordered = self._tau_sorted.setdefault(group, [])
        tau = ordered[len(ordered) // 2] if ordered else math.log10(3.0)
        recent.append(backoff_error)
        bisect.insort(ordered, backoff_error)
        if len(recent) > TOP_TAU_WINDOW:
            del ordered[bisect.bisect_left(ordered, recent.popleft())]
        return tau
