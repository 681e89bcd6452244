"""``hedge``: exponential weights (Hedge, with fixed share) over the back-off's panel of experts.

ASA's idea (weights over candidate waits, ``w <- w * exp(-eta * loss)``) applied to *experts*
whose answers a queue-wait learner can trust: the panel of the level that answers a job in
``median-backoff`` (the finest key along :data:`asad.learn.key_levels.BACKOFF_LEVELS` that has
seen a wait):

- ``backoff``: ``median-backoff``'s own answer (that level's long median since its last change);
- ``last``, ``median5``, ``median20``, ``median100``: that level's last wait and short running
  medians;
- ``parent``: the long median of the next coarser level that has seen a wait.

All speak in ``log10(1 + s)``. Weights are shared per *group*: the coarsest key (the cluster)
and which level answered (``hedge_groups: slot``), optionally with how many waits that level
had (``slot-count``). A fine key sees too few waits to learn weights (issue 38: ``experts`` kept
them per fine key and lost 45 % to the back-off); a group sees thousands. When a wait arrives
every expert of the panel as it stood when the job was told (timed snapshots, so a batch's
early starters do not favour short memories in hindsight) pays ``min(|error|, cap)``
(``hedge_loss: abs``; cap ``hedge_cap``, else ``max_loss``), its square, or 1 past the cap
(``miss``). The preset caps at 0.2 decades: uncapped, the loss bounds the *mean* error, where
the back-off ties with the short medians, while the score is the *median* error (issue 38's
diagnosis, docs/results/learn.md). With batched feedback (``hedge_batch_s`` >= 0, the preset
0) the waits of a group that start together are one round of mean losses. Then fixed share mixes ``hedge_share`` of the prior
(``hedge_prior`` on the back-off, the rest equal; uniform at 0) back
in (Herbster & Warmuth's tracking of the best expert: an expert that fell behind can win again
after the queue changes). The answer is the weighted mean of the panel in log10 (``mean``) or
the heaviest expert's (``leader``). Because ``backoff`` is in the panel, the mixture's loss is at
most the back-off's plus the regret term ``ln N / eta + eta * T / 8``-like overheads; the
measured gap is in docs/results/learn.md.

A top level over whole learners (``hedge_top: learners``, issue 38's fourth round): Hedge,
with the same loss, eta, fixed share, prior and batching, over two experts that are learners
themselves, the back-off's answer and the panel's mixture, with weights per coarsest key
(``<cluster>#top``); the answer is the leader (ties to the back-off) or the weighted mean
(``hedge_top_combine``). Its charged loss is the better learner's up to the regret of two
experts. On the rolling windows it still trails the back-off on Graham (docs/results/learn.md).
The fifth round gives the top level its own loss (``hedge_top_loss``: ``win``, 1 for the
learner farther from the wait; ``over``, 1 past a threshold such as the back-off's running
median error), rate and share, and a seeded ``draw`` of the learner to follow: the score is a
median error and a share within x3, which a 0/1 loss counts and a capped |error| does not.
The sixth round: ``hedge_top_loss: window`` charges each learner its own median |error| over
the top group's last ``hedge_top_window`` waits (the score itself); ``hedge_top_groups:
account`` keeps the top weights per account; ``hedge_top: learners-median20`` adds the
answering level's running median of 20 as a third learner; ``hedge_top_told`` judges the
learners after the pending floor, as the job was told (when the floor bound the told answer).
The eleventh round: ``hedge_top_memory_s`` keeps each top group's judged waits over a long
memory (asad/learn/hedge_memory.py) and follows the learner with the smaller mean loss (or
median |error|) over it, the back-off until the group has ``hedge_top_min_n`` of them; the
``clip`` loss, min(|error|, tau) / tau; ``hedge_top_tau_scope: cluster``, the ``over`` loss's
running threshold over the cluster's waits when the weights are per account. The twelfth and
thirteenth: top weights per context (asad/learn/hedge_context.py), ``disagreement`` or ``floor``.
The fourteenth: the top level's methods in asad/learn/hedge_top.py, and ``floor+cluster``, a meta
level choosing between the cluster's and the floor share's top levels (asad/learn/hedge_meta.py).

The pending floor (the oldest job of the same class still pending, raising the answer), the
strata of calibrated quantiles and ACI are the back-off's (:class:`ExpertsPool`, ``backoff``
mode), applied to the mixture's answer: the floor after the mix, the residuals of the mixture.
Slurm's own start estimate (issue 38's missing expert, ``hedge_slurm``): ``slurm`` answers
``log10(1 + start - probe time)`` of an ``sbatch --test-only`` probe of the job's geometry, which the
daemon takes at most once per geometry per poll interval (asad.daemon.slurm_probe) and notes here
with :meth:`HedgePool.note_slurm`. It speaks only for the predictions that had a probe (the shares
are renormalised over the experts that spoke) and pays only for the waits it answered; a job told
while no probe was current is judged on the panel without it. Its weight starts as any
non-back-off expert's. The replay of the Cedar/Graham jobs has no Slurm to ask: no probe is
noted there, so its panel and figures are the six experts' above.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from asad.learn.base import clean_wait
from asad.learn.calibration import Told
from asad.learn.experts import ExpertsPool
from asad.learn.hedge_context import (FLOOR_GROUPS, NO_FLOOR, UNSET, ToldIn, disagreement_bucket, floor_share_bucket,
                                      floor_top, told_context)
from asad.learn.hedge_memory import RunningMedian, TopMemory
from asad.learn.hedge_meta import META_SUFFIX, META_TOPS
from asad.learn.hedge_panel import (PANEL, SLURM, SLURM_PROBES_KEPT, TOP, TOP_MEDIAN20, TOP_TAU_WINDOW, Dominant,
                                    Panel)
from asad.learn.hedge_top import TopLevel
from asad.learn.key_levels import key_levels_by_slot
from asad.learn.key_stats import count_bucket

# ``hedge_top_groups: account``: the level whose key names an account's top-level weights
ACCOUNT_LEVEL = (("cluster", "account"),)
__all__ = ["ACCOUNT_LEVEL", "PANEL", "SLURM", "SLURM_PROBES_KEPT", "TOP", "TOP_MEDIAN20", "TOP_TAU_WINDOW", "Dominant",
           "HedgePool", "Panel"]  # the panel's names, read from here by scripts and tests


@dataclass
class _Batch:
    """One group's round of batched feedback: the waits that started within ``hedge_batch_s``
    of ``start_s``, and the group's log weights before them."""

    start_s: float
    base: list[float]
    loss_sum: dict[int, float]
    count: dict[int, int]


class HedgePool(TopLevel, ExpertsPool):
    """An :class:`ExpertsPool` in back-off mode whose answer is a Hedge mixture of its panel."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the open batch per weight group (batched feedback); not persisted: after a restart the
        # next wait opens a new batch, from the weights as saved
        self._batches: dict[str, _Batch] = {}
        # the top level's running threshold (``over``, tau 0): the back-off's last errors per group,
        # in arrival order and sorted
        self._tau_recent: dict[str, deque[float]] = {}
        self._tau_sorted: dict[str, list[float]] = {}
        # ``hedge_top_loss: window``: each learner's last |errors| per top group (not saved: after
        # a restart the window refills)
        self._window: dict[tuple[str, int], RunningMedian] = {}
        # ``hedge_top_combine: draw``: the learner followed per top group until its next round,
        # drawn from the weights by a seeded generator (not saved: after a restart the leader
        # answers until the next wait)
        self._rng = random.Random(self.seed)
        self._drawn: dict[str, int] = {}
        # Slurm's estimate per key (hedge_slurm): (noted at, log10(1 + wait) or None: withdrawn)
        self._slurm: dict[str, deque[tuple[float, float | None]]] = {}
        # ``hedge_top_margin``: the learner followed per top group, kept until another's running
        # median error is lower by the margin (not saved: after a restart the back-off leads)
        self._kept: dict[str, int] = {}
        # ``hedge_top_memory_s``: each top group's judged waits over its long memory (not saved)
        self._memory: dict[str, TopMemory] = {}

    # -- Slurm's estimate (hedge_slurm) -----------------------------------------------
    @property
    def takes_slurm(self) -> bool:
        return bool(self.config.hedge_slurm)

    def note_slurm(self, key: str, at_s: float, wait_s: float | None) -> None:
        """Slurm's estimate of ``key``'s wait from a probe at ``at_s`` (None: no current probe)."""
        if not self.takes_slurm:
            return
        value = None if wait_s is None else math.log10(1.0 + clean_wait(wait_s))
        probes = self._slurm.setdefault(key, deque(maxlen=SLURM_PROBES_KEPT))
        if probes and probes[-1][0] > at_s:
            probes.clear()  # a clock that went back: keep the timeline ordered
        probes.append((float(at_s), value))
        self._estimates.pop(key, None)

    def slurm_answer(self, key: str, at_s: float | None = None) -> float | None:
        """``slurm``'s answer (log10(1 + s)) now or as it stood at ``at_s``; None: no probe then."""
        probes = self._slurm.get(key)
        if not probes:
            return None
        if at_s is None:
            return probes[-1][1]
        for noted, value in reversed(probes):
            if noted <= at_s:
                return value
        return None

    # -- the panel ------------------------------------------------------------------
    def panel(self, key: str, at_s: float | None = None) -> Panel | None:
        """The panel as it stood at ``at_s`` (None: now); None when no level had a wait."""
        found = self._backoff(key, at_s)
        if found is None:
            return None
        backoff, stratum = found
        answering: tuple[int, list[float], int] | None = None
        parent = None
        for slot, (level_experts, count) in self.level_snapshots(key, at_s):
            if answering is None:
                answering = (slot, level_experts, count)
            else:
                parent = level_experts[-1]
                break
        assert answering is not None  # the back-off found a level
        slot, experts, count = answering
        group = f"{self.levels(key)[-1]}#{slot}"
        if self.config.hedge_groups == "slot-count":
            group += f":{count_bucket(count)}"
        top = f"{self.levels(key)[-1]}#top"
        if self.config.hedge_top_groups == "account":
            top = f"{key_levels_by_slot(key, ACCOUNT_LEVEL)[0]}#top"
        slurm = self.slurm_answer(key, at_s) if self._slurm else None
        panel = Panel(backoff, stratum, group,
                      (backoff, experts[0], experts[1], experts[2], experts[3], parent, slurm), top)
        if self.config.hedge_top_groups == "disagreement":
            # the context both learners' answers give (hedge_context.py); "#top" last, so the
            # group is saved and loaded with the cluster's row like the others
            context = disagreement_bucket(backoff, self.mix(panel))
            panel = dataclasses.replace(panel, top=f"{self.levels(key)[-1]}#{context}#top")
        elif self.config.hedge_top_groups in FLOOR_GROUPS:
            # the "none" bucket's; a job told under a floor: told() moves it to its bucket's
            panel = dataclasses.replace(panel, top=floor_top(panel.group, NO_FLOOR))
        return panel

    def told(self, key: str, now_s: float | None = None, pending_since_s: float | None = None,
             shifts: bool = True, key_pending: int | None = None) -> Told | None:
        """With ``hedge_top_groups: floor``, the answer of the top group of the floor's share the
        job is told under (hedge_context.py), carried with what it was told (:class:`ToldIn`)."""
        if not (self.has_top and self.config.hedge_top_groups in FLOOR_GROUPS):
            return super().told(key, now_s, pending_since_s, shifts, key_pending)
        panel = self.panel(key)
        if panel is None:
            return None
        floor = None
        if self.config.pending_floor and now_s is not None and pending_since_s is not None:
            floor = math.log10(1.0 + max(0.0, float(now_s) - float(pending_since_s)))
        context = floor_share_bucket(floor, panel.backoff)
        if context == NO_FLOOR:  # the answer cached per key is the "none" context's
            told = super().told(key, now_s, pending_since_s, shifts, key_pending)
        else:  # this job's context's answer, put in the cache for the floor and the strata to read,
            # then the cache put back as it was (the "none" context's, or nothing)
            saved = [(cache, cache.get(key, UNSET)) for cache in (self._estimates, self._strata)]
            panel = dataclasses.replace(panel, top=floor_top(panel.group, context))
            self._estimates[key], self._strata[key] = self.answer(panel), self.stratum(panel)
            try:
                told = super().told(key, now_s, pending_since_s, shifts, key_pending)
            finally:
                for cache, value in saved:
                    if value is UNSET:
                        cache.pop(key, None)
                    else:
                        cache[key] = value
        return None if told is None else ToldIn(told, context)

    def prior(self, spoke: Sequence[int]) -> dict[int, float]:
        """The prior over the experts that spoke (sums to 1): ``hedge_prior`` on the back-off,
        the rest shared equally; uniform when ``hedge_prior`` is 0 or the back-off is silent."""
        p = self.config.hedge_prior
        if not p or 0 not in spoke or len(spoke) == 1:
            return {i: 1.0 / len(spoke) for i in spoke}
        rest = (1.0 - p) / (len(spoke) - 1)
        return {i: p if i == 0 else rest for i in spoke}

    def initial_weights(self) -> list[float]:
        """The prior over the panel without ``slurm`` (so a panel without probes starts as it did
        before that expert existed), and ``slurm`` starting as the other non-back-off experts."""
        n = len(PANEL) - 1
        prior = self.prior(range(n))
        weights = [math.log(prior[i] * n) for i in range(n)]
        return [*weights, weights[-1]]

    def group_weights(self, group: str) -> list[float]:
        weights = self.log_weights.get(group)
        if weights is None:
            weights = self.log_weights[group] = self.initial_weights()
        return weights

    def shares(self, panel: Panel) -> list[tuple[int, float]]:
        """(expert index, share of the weight) of the experts that spoke; shares sum to 1."""
        weights = self.log_weights.get(panel.group) or self.initial_weights()
        spoke = [i for i, v in enumerate(panel.values) if v is not None]
        top = max(weights[i] for i in spoke)
        raw = [(i, math.exp(weights[i] - top)) for i in spoke]
        total = sum(w for _, w in raw)
        return [(i, w / total) for i, w in raw]

    def mix(self, panel: Panel) -> float:
        shares = self.shares(panel)
        if self.config.hedge_combine == "leader":
            # ties go to the lower index: the back-off first
            best = max(shares, key=lambda item: (item[1], -item[0]))[0]
            return float(panel.values[best])  # type: ignore[arg-type]
        if self.config.hedge_combine == "median":
            # the weighted median: the answer the heavier half of the weight lies at or below
            pairs = sorted((float(panel.values[i]), share) for i, share in shares)  # type: ignore[arg-type]
            acc = 0.0
            for value, share in pairs:
                acc += share
                if acc >= 0.5:
                    return value
            return pairs[-1][0]
        return sum(share * float(panel.values[i]) for i, share in shares)  # type: ignore[arg-type]

    def answer(self, panel: Panel) -> float:
        """The pool's answer for a panel: the top level's, or the panel's mixture."""
        return self.top_mix(panel) if self.has_top else self.mix(panel)

    def dominant(self, key: str) -> Dominant | None:
        """The expert with the largest share in ``key``'s prediction now (None: nothing learned).
        With the top level, the back-off when it leads there (its top-level share), else the
        panel's heaviest expert."""
        panel = self.panel(key)
        if panel is None:
            return None
        if self.has_top:
            shares = dict(self.top_shares(panel))
            if self.config.hedge_top_combine == "mean":
                followed = max(shares, key=lambda i: (shares[i], -i))
            else:
                followed = self.top_followed(panel)
            if followed == 0:
                return Dominant("backoff", shares[0], self.followed_group(panel), panel.backoff)
            if followed == 2:
                return Dominant("median20", shares[2], self.followed_group(panel),
                                self.top_values(panel)[2])
        i, share = max(self.shares(panel), key=lambda item: (item[1], -item[0]))
        return Dominant(PANEL[i], share, panel.group, float(panel.values[i]))  # type: ignore[arg-type]

    def stratum(self, panel: Panel) -> str:
        """The residual stratum of the panel's answer: the back-off's (its answering level), and
        with ``hedge_top_strata`` the learner the top level follows too (``:L<i>``), so each
        learner's answers are calibrated by the residuals its own answers earned."""
        if self.config.hedge_top_strata and self.has_top and self.config.hedge_top_combine != "mean":
            return f"{panel.stratum}:L{self.top_followed(panel)}"
        return panel.stratum

    # -- learning -------------------------------------------------------------------
    def _estimate_log(self, key: str) -> float | None:
        panel = self.panel(key)
        self._strata[key] = None if panel is None else self.stratum(panel)
        return None if panel is None else self.answer(panel)

    def _update(self, panel: Panel, y: float, at_s: float | None = None) -> None:
        """Hedge with fixed share over the panel, in the panel's weight group."""
        losses = {i: self.loss(float(v), y) for i, v in enumerate(panel.values) if v is not None}
        cfg = self.config
        weights = self.group_weights(panel.group)
        before = list(weights)
        self._step(panel.group, weights, losses, at_s, self.prior, cfg.hedge_eta, cfg.hedge_share)
        took_part = SLURM in losses
        if not took_part and cfg.hedge_batch_s >= 0 and at_s is not None:
            batch = self._batches.get(panel.group)  # it answered an earlier wait of this round
            took_part = batch is not None and SLURM in batch.count
        if not took_part:
            # ``slurm`` sat this round out: keep its standing against the others' total, which
            # the round renormalised (else it would come back with the initial scale's weight)
            others = list(losses)
            weights[SLURM] = before[SLURM] + _logsumexp(weights, others) - _logsumexp(before, others)

    def _step(self, group: str, weights: list[float], losses: dict[int, float],
              at_s: float | None, prior_of: Any, eta: float, alpha: float) -> None:
        """One Hedge round with fixed share: every expert that spoke pays its loss (times
        ``eta``), then each keeps at least ``alpha / N`` of the weight (``hedge_share``, or the
        top level's own; normalised over those that spoke; ``prior_of(spoke)`` says how the
        shared mass is spread). With batched feedback
        (``hedge_batch_s`` >= 0) the waits of the group that start together are one round: the
        weights are recomputed from where they stood before the batch, each expert paying its
        mean loss over the batch so far."""
        cfg = self.config
        if cfg.hedge_batch_s < 0 or at_s is None:
            base, mean_loss = list(weights), losses
        else:
            batch = self._batches.get(group)
            if batch is None or not 0 <= at_s - batch.start_s <= cfg.hedge_batch_s:
                batch = self._batches[group] = _Batch(at_s, list(weights), {}, {})
            for i, loss in losses.items():
                batch.loss_sum[i] = batch.loss_sum.get(i, 0.0) + loss
                batch.count[i] = batch.count.get(i, 0) + 1
            base = batch.base
            mean_loss = {i: batch.loss_sum[i] / batch.count[i] for i in batch.count}
        new = list(base)
        spoke = sorted(mean_loss)
        for i in spoke:
            new[i] -= eta * mean_loss[i]
        top = max(new[i] for i in spoke)
        raw = {i: math.exp(new[i] - top) for i in spoke}
        total = sum(raw.values())
        prior = prior_of(spoke)
        for i in spoke:
            new[i] = math.log((1.0 - alpha) * raw[i] / total + alpha * prior[i])
        weights[:] = new

    def loss(self, answer: float, y: float) -> float:
        """What an expert that answered ``answer`` pays when the wait was ``y`` (both log10(1 + s))."""
        cfg = self.config
        cap = cfg.hedge_cap or cfg.max_loss
        error = abs(answer - y)
        if cfg.hedge_loss == "miss":
            return 1.0 if error > cap else 0.0
        error = min(error, cap)
        return error if cfg.hedge_loss == "abs" else error * error

    def observe(self, key: str, wait_s: float, at_s: float | None = None,
                told: Told | None = None, fed: Sequence[int] = ()) -> None:
        """Score the panel as it stood when the job was told (``at_s - wait``), then learn the
        wait as the back-off does (its residual against what the job was told)."""
        wait = clean_wait(wait_s)
        decided_s = None if at_s is None else float(at_s) - wait
        panel = self.panel(key, decided_s)
        if panel is not None and self.config.hedge_top_groups in FLOOR_GROUPS:
            # the context it was told in (the floor is not known now)
            panel = dataclasses.replace(panel, top=floor_top(panel.group, told_context(told)))
        if panel is not None:
            if told is None:  # rebuilt: the mixture as it stood (the weights since moved little)
                told = (self.answer(panel), self.stratum(panel), None)
            y, at = math.log10(1.0 + wait), None if at_s is None else float(at_s)
            # the learners' answers before this wait moves the panel's weights
            learners = self.top_values(panel) if self.has_top else None
            if learners is not None and self.config.hedge_top_told and told[1] is not None and told[1].endswith(":p"):
                learners = tuple(max(v, float(told[0])) for v in learners)  # the floor bound: told[0] is it
            self._update(panel, y, at)
            if learners is not None:
                self._update_top(panel, learners, y, at)
        super().observe(key, wait, at_s, told, fed)

    # -- persistence: the groups' weights live in the coarsest key's row --------------
    def key_state(self, key: str) -> dict[str, Any]:
        state = super().key_state(key)
        prefix = f"{key}#"
        groups = {g: list(w) for g, w in sorted(self.log_weights.items()) if g.startswith(prefix)}
        if groups:
            state["hedge_weights"] = groups
        return state

    def load_key_state(self, key: str, state: dict[str, Any]) -> None:
        super().load_key_state(key, state)
        for group, weights in state.get("hedge_weights", {}).items():
            if group.endswith(META_SUFFIX):  # the meta level's (hedge_meta.py): one per top level
                if len(weights) == len(META_TOPS):
                    self.log_weights[group] = [float(w) for w in weights]
                continue
            if not group.endswith("#top") and len(weights) == len(PANEL) - 1:
                # saved before the ``slurm`` expert: it joins with a non-back-off expert's prior
                # share of the saved weights' total (on their scale, which rounds renormalised)
                share = self.prior(range(len(PANEL) - 1))[1]
                weights = [*weights, _logsumexp(weights, range(len(weights))) + math.log(share)]
            if len(weights) == (len(self.top_names) if group.endswith("#top") else len(PANEL)):
                self.log_weights[group] = [float(w) for w in weights]

    def to_state(self) -> dict[str, Any]:
        state = super().to_state()
        state["keys"] = {key: self.key_state(key) for key in sorted(self.stats)}
        return state


def _logsumexp(weights: Sequence[float], indices: Sequence[int]) -> float:
    top = max(weights[i] for i in indices)
    return top + math.log(sum(math.exp(weights[i] - top) for i in indices))
