"""``experts``: exponential weights over simple wait experts, with keys from fine to coarse.

Algorithm 1 of the paper weighs a grid of candidate waits. Here the alternatives are
*experts* instead (the "expert advice" reading of exponential weights):

- statistics of one key's past waits: the last wait, running medians of the last 5, 20
  and 100, and the median of the long history (up to ``long_memory`` waits);
- the same statistics of *coarser* keys (the geometry with fields dropped or rounded,
  :data:`DEFAULT_LEVELS`), so a geometry with no or few waits borrows from neighbours.

All experts speak in ``log10(1 + wait s)``. Each fine key keeps log-weights over its
experts; when one of its waits arrives every available expert pays its absolute log10
error, ``w -= eta * loss`` (full information), and the weights are kept within
``log_weight_floor`` of the best (fixed share: a long-memory expert that fell behind after
a change of the queue can win again within a few waits, and vice versa). The point
estimate is the weighted median of the available experts.

Quantiles are calibrated by conformal correction: every observed wait leaves its residual
(``log10(1 + wait) - log10(1 + estimate)``, the estimate as it stood before the wait was
learned) in a window at each level of its key; ``quantiles(qs)`` is the estimate shifted by
the residuals' empirical quantiles at the coarsest (or finest) level holding ``min_residuals``
of them. ``median-backoff`` (``residuals_from="stratum"``) keeps them instead per coarsest key
and per *answering level* (the key itself, or which coarser key answered), so a borrowed
answer gets the wider quantiles such answers earned, and corrects the level each window is
read at by adaptive conformal inference (:mod:`asad.learn.calibration`).

One :class:`ExpertsPool` holds every key (the statistics of a coarse key are shared by
all keys under it; one key's statistics: :mod:`asad.learn.key_stats`; the coarser keys:
:mod:`asad.learn.key_levels`); :meth:`ExpertsPool.view` gives the per-key
:class:`asad.learn.base.WaitPredictor` the engine and the benches use. A pool made by
``make_predictor("experts")`` alone has one key (the empty one) and behaves as a plain
per-geometry predictor.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from asad.learn.base import clean_wait
from asad.learn.calibration import (ACI_SPACES, COLD_POOL, AciAdapt, ResidualWindow, Told, is_cold_stratum,
                                   quantile_of_sorted, wait_at)
from asad.learn.key_levels import DEFAULT_LEVELS, key_levels, key_levels_by_slot
from asad.learn.key_stats import STATS, KeyStats, count_bucket, median_of_sorted


@dataclass(frozen=True)
class ExpertsConfig:
    eta: float = 4.0  # learning rate of the weights, per unit of absolute log10 error
    log_weight_floor: float = 6.0  # every expert within exp(-floor) of the best
    long_memory: int = 5000  # waits kept per key for the long median (bounded state)
    levels: tuple[tuple[str, ...], ...] = DEFAULT_LEVELS
    residual_window: int = 5000  # residuals kept per key for the quantiles
    min_residuals: int = 500  # a level needs this many before its residuals are used
    residuals_from: str = "coarsest"  # the "coarsest" level (e.g. the cluster), or the "finest" with min_residuals
    max_loss: float = 3.0  # losses capped (three decades), so one wild wait cannot erase an expert
    # "hedge": exponential weights over all experts; "backoff": the long median of the finest
    # key that has seen a wait (no weights)
    mode: str = "hedge"
    # change point: after ``change_run`` waits in a row more than ``change_factor`` times above
    # (or all below) a key's long median, its long history is cut to those waits (0: never)
    change_factor: float = 3.0
    change_run: int = 0
    # where the change point is looked for: at "all" levels of a key, or at the "key" itself only
    # (a coarse level mixes geometries and batches, whose runs of far-off waits are no change
    # of the queue: cutting its history there made the real replay worse)
    change_scope: str = "all"
    # the floor from waits already under way: the fields of the class (e.g. the same account's
    # jobs of this partition and walltime bucket) whose oldest pending job, eligible since t,
    # floors the estimate at log10(1 + now - t); () = no floor. The caller says when the
    # oldest pending job became eligible (``pending_since_s``): a wait still running is a
    # right-censored observation that the medians of finished waits do not see yet.
    pending_floor: tuple[str, ...] = ()
    # "backoff" only: shrink each key's median towards its coarser key's estimate with this
    # many pseudo-waits, ``(n m + k parent) / (n + k)`` in log10 (0: the finest key alone)
    prior_n: float = 0.0
    # "stratum" residuals ("backoff" only): kept per (coarsest key, which level answered, how
    # many waits it had), so a cold geometry's quantiles are as wide as cold answers were
    # adaptive conformal inference (Gibbs & Candes 2021; asad/learn/calibration.py): each
    # stratum moves the level it reads by ``aci_gamma * (q - covered)`` per outcome, covered
    # = the wait fell at or below the quantile the job was told (0: off)
    aci_gamma: float = 0.0
    # what ACI moves: the "level" read from the residuals (clipped to the window's ends, or
    # "open" past them), or the "shift" (log10) itself (asad/learn/calibration.py)
    aci_space: str = "level"
    # whether the caller feeds ACI a miss as soon as a pending job has waited past a told
    # quantile (ExpertsPool.aci_miss), or only when the job starts
    aci_early_misses: bool = True
    # recalibration map (instead of ACI): each stratum counts how often the waits fell at or
    # below the shifts they were told at :data:`MAP_LEVELS`, weighted down by half every this
    # many waits, and reads a nominal q at the level whose counted coverage is q (0: off)
    recalibrate_halflife: float = 0.0
    # strata of "stratum" residuals: "level-count" (which level answered, and its waits), "level"
    # (warm key or which coarser level), or "none" (one window per coarsest key)
    strata: str = "level-count"
    # the point estimate: the key's (shrunk) median as is ("median"), or shifted by the median
    # residual of its stratum ("calibrated": e.g. cold answers that ran low are raised;
    # "calibrated-cold": only answers borrowed from a coarser key)
    point: str = "median"
    # Hedge over the back-off's panel (asad/learn/hedge.py, kind "hedge"; "backoff" mode only):
    # the learning rate per unit of loss (0: no mixture, the back-off median alone), the fixed
    # share (each round every expert keeps at least this share over N), the loss ("abs": |log10
    # error|, "sq": its square), how the panel is combined ("mean": weighted mean in log10,
    # "leader": the heaviest expert's answer) and what the weights are shared by ("slot": the
    # coarsest key and which level answered, "slot-count": and how many waits it had)
    hedge_eta: float = 0.0
    hedge_share: float = 0.0
    hedge_loss: str = "abs"
    hedge_combine: str = "mean"
    hedge_groups: str = "slot"
    # the loss's cap in log10 (0: max_loss): "abs" pays min(|error|, cap); "miss" pays 1 when
    # |error| > cap, else 0 (the score counts waits missed by more than a factor, not how far)
    hedge_cap: float = 0.0
    # a prior over the panel: the share the back-off's own answer gets of the weight every
    # expert starts with and of the mass fixed share gives back (0: uniform, 1/N each)
    hedge_prior: float = 0.0
    # batched feedback: the waits of one weight group that start within ``hedge_batch_s`` of the
    # first of them are one round of Hedge, each expert paying its mean loss over them (a batch of
    # one key's jobs starting together is one piece of news about the queue, not n); -1: off,
    # every wait is its own round
    hedge_batch_s: float = -1.0
    # a top level over whole learners (issue 38, fourth round): "learners" weighs the back-off's
    # answer against the panel's mixture with Hedge (same eta, share, loss, cap, prior and
    # batching), per coarsest key, and answers with the "leader" (ties to the back-off) or the
    # weighted "mean" in log10 (``hedge_top_combine``); "none": the panel's mixture is the answer
    hedge_top: str = "none"
    hedge_top_combine: str = "leader"
    # the top level's own loss, rate and share (issue 38, fifth round). "charged": the panel's
    # loss; "win": a learner pays 1 when its |error| exceeds the other's (0 on a tie), so the
    # weights move to the learner that is nearer more often, which is what a *median* error
    # scores; "over": pays 1 when its |error| exceeds ``hedge_top_tau`` (0: the running median
    # of the back-off's own errors in the group over its last ``asad.learn.hedge.TOP_TAU_WINDOW`` waits).
    # ``hedge_top_eta`` 0 and ``hedge_top_share`` -1: the panel's. "draw" (combine): follow the
    # learner drawn from the weights after each round (seeded; Hedge's bound then holds in
    # expectation for a 0/1 loss, which is not convex)
    hedge_top_loss: str = "charged"
    hedge_top_tau: float = 0.0
    hedge_top_eta: float = 0.0
    hedge_top_share: float = -1.0
    # issue 38, sixth round. "window" (loss): a learner pays its own median |error| over the top
    # group's last ``hedge_top_window`` waits, this one included: the score itself (a median
    # error), where "win" and "over" count proxies of it. ``hedge_top_groups``: the top level's
    # weights per "cluster" (one group sees every wait) or per "account" (the key's cluster and
    # account; a key without an account, as in real use, is its cluster). ``hedge_top``
    # "learners-median20" adds a third learner, the answering level's running median of its last
    # 20 waits (the panel's nearest to the ``median-k`` baseline)
    hedge_top_window: int = 1000
    hedge_top_groups: str = "cluster"
    # judge the top level's learners on what the job would have been told: when the pending floor
    # raised the answer the job was told (its stratum ends ":p"), every learner's answer is raised
    # to that floor too before it pays (the score is taken after the floor; a learner's answer
    # below it was never told). Without it, the learners pay on their answers before the floor
    hedge_top_told: bool = False
    # Slurm's own start estimate as one more expert of the panel (issue 38's missing expert,
    # ``slurm`` in asad/learn/hedge.py): it speaks where the daemon noted a ``sbatch --test-only``
    # probe of the geometry (asad/daemon/slurm_probe.py; setting ``slurm_expert``). Off: the
    # panel of the replay, which has no Slurm to ask
    hedge_slurm: bool = False
    # issue 38, seventh round: with the window loss and the leader, follow a learner only once its
    # running median error beats the followed one's by this margin (log10; 0: the heaviest)
    hedge_top_margin: float = 0.0
    # residual strata per learner the top level follows (leader or draw), not per level alone
    hedge_top_strata: bool = False
    # issue 38, seventh round: cold answers (a stratum whose answering level is coarser than the
    # key, the key had no wait of its own) step ACI at their own rate (0: ``aci_gamma``), and
    # while their stratum is short of residuals read the pooled residuals of cold answers
    # (``cold_pool``) rather than of every answer, mostly warm and narrower (asad/learn/calibration.py)
    aci_gamma_cold: float = 0.0
    cold_pool: bool = False
    # issue 38, eighth round: a cold stratum's ACI step grows with its recent miss bias, from its
    # base rate up to ``aci_cold_adapt_max`` (0: off), the bias decayed with this halflife in
    # outcomes (asad/learn/calibration.py AciAdapt)
    aci_cold_adapt_max: float = 0.0
    aci_cold_adapt_halflife: float = 50.0

    @property
    def only_long(self) -> bool:
        """Whether a key's statistics need only the long median (the plain back-off)."""
        return self.mode == "backoff" and not self.hedge_eta

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(tuple(level) for level in self.levels))
        if self.eta <= 0 or self.log_weight_floor <= 0 or self.max_loss <= 0:
            raise ValueError("eta, log_weight_floor and max_loss must be > 0")
        if self.mode not in ("hedge", "backoff"):
            raise ValueError(f"mode must be 'hedge' or 'backoff', not {self.mode!r}")
        if self.change_factor <= 1 or self.change_run < 0:
            raise ValueError("change_factor > 1 and change_run >= 0")
        if self.change_scope not in ("all", "key"):
            raise ValueError(f"change_scope must be 'all' or 'key', not {self.change_scope!r}")
        object.__setattr__(self, "pending_floor", tuple(self.pending_floor))
        if self.prior_n < 0 or not 0 <= self.aci_gamma < 1 or not 0 <= self.aci_gamma_cold < 1:
            raise ValueError("prior_n >= 0, 0 <= aci_gamma < 1 and 0 <= aci_gamma_cold < 1")
        if not 0 <= self.aci_cold_adapt_max < 1 or self.aci_cold_adapt_halflife <= 0:
            raise ValueError("0 <= aci_cold_adapt_max < 1 and aci_cold_adapt_halflife > 0")
        if self.recalibrate_halflife < 0 or (self.recalibrate_halflife and self.aci_gamma):
            raise ValueError("recalibrate_halflife >= 0, and not together with aci_gamma")
        if self.aci_space not in ACI_SPACES:
            raise ValueError(f"aci_space must be one of {ACI_SPACES}, not {self.aci_space!r}")
        if self.point not in ("median", "calibrated", "calibrated-cold"):
            raise ValueError("point must be 'median', 'calibrated' or 'calibrated-cold'")
        if self.residuals_from not in ("coarsest", "finest", "stratum"):
            raise ValueError("residuals_from must be 'coarsest', 'finest' or 'stratum'")
        if self.hedge_eta < 0 or not 0 <= self.hedge_share < 1 or (self.hedge_eta and self.mode != "backoff"):
            raise ValueError("hedge_eta >= 0 (with mode 'backoff' only) and 0 <= hedge_share < 1")
        if (self.hedge_loss not in ("abs", "sq", "miss") or self.hedge_combine not in ("mean", "leader", "median")
                or self.hedge_groups not in ("slot", "slot-count")):
            raise ValueError("hedge_loss 'abs'|'sq'|'miss', hedge_combine 'mean'|'leader'|'median', "
                             "hedge_groups 'slot'|'slot-count'")
        if self.hedge_cap < 0 or not 0 <= self.hedge_prior < 1:
            raise ValueError("hedge_cap >= 0 and 0 <= hedge_prior < 1")
        if self.hedge_batch_s < 0 and self.hedge_batch_s != -1:
            raise ValueError("hedge_batch_s >= 0 (seconds), or -1 for no batching")
        if (self.hedge_top not in ("none", "learners", "learners-median20")
                or self.hedge_top_combine not in ("leader", "mean", "draw")):
            raise ValueError("hedge_top 'none'|'learners'|'learners-median20', hedge_top_combine 'leader'|'mean'|'draw'")
        if (self.hedge_top_loss not in ("charged", "win", "over", "window") or self.hedge_top_tau < 0
                or self.hedge_top_eta < 0 or not (self.hedge_top_share == -1 or 0 <= self.hedge_top_share < 1)):
            raise ValueError("hedge_top_loss 'charged'|'win'|'over'|'window', hedge_top_tau >= 0, hedge_top_eta >= 0 "
                             "(0: hedge_eta), 0 <= hedge_top_share < 1 (-1: hedge_share)")
        if self.hedge_top_window < 1 or self.hedge_top_groups not in ("cluster", "account"):
            raise ValueError("hedge_top_window >= 1 (waits) and hedge_top_groups 'cluster'|'account'")
        if self.hedge_top_margin < 0 or (self.hedge_top_margin and (self.hedge_top_loss, self.hedge_top_combine)
                                         != ("window", "leader")):
            raise ValueError("hedge_top_margin >= 0 (log10), with hedge_top_loss 'window' and the 'leader' only")
        if self.long_memory < 100 or self.residual_window < 1 or self.min_residuals < 1:
            raise ValueError("long_memory >= 100, residual_window >= 1, min_residuals >= 1")


class ExpertsPool:
    """Every key's statistics and weights. ``view(key)`` is the per-key predictor."""

    def __init__(self, config: ExpertsConfig | None = None, seed: int = 0, kind: str = "experts") -> None:
        self.config = config or ExpertsConfig()
        self.seed, self.kind = seed, kind
        self.stats: dict[str, KeyStats] = {}
        # one weight vector per coarsest key (e.g. per cluster), shared by every key under it:
        # which kind of expert to trust is learned from all its jobs, not from one key's few
        self.log_weights: dict[str, list[float]] = {}
        self._slots: dict[str, list[tuple[int, str]]] = {}
        self._levels: dict[str, list[str]] = {}
        self._estimates: dict[str, float | None] = {}  # estimate_log per key; cleared by any wait
        self._strata: dict[str, str | None] = {}  # "backoff": which stratum the estimate came from
        self._adapt: AciAdapt | None = None  # built on first use (aci_cold_adapt_max)

    # -- structure ------------------------------------------------------------------
    def levels(self, key: str) -> list[str]:
        levels = self._levels.get(key)
        if levels is None:
            levels = self._levels[key] = key_levels(key, self.config.levels)
        return levels

    def slots(self, key: str) -> list[tuple[int, str]]:
        """(slot, level key): slot 0 is the key itself, slot i its i-th configured coarser level
        (a level equal to a finer one has no slot of its own)."""
        slots = self._slots.get(key)
        if slots is None:
            slots, seen = [(0, key)], {key}
            for i, level_key in enumerate(key_levels_by_slot(key, self.config.levels), start=1):
                if level_key not in seen:
                    seen.add(level_key)
                    slots.append((i, level_key))
            self._slots[key] = slots
        return slots

    def weight_owner(self, key: str) -> str:
        return self.levels(key)[-1]

    @property
    def n_weights(self) -> int:
        return (1 + len(self.config.levels)) * len(STATS)

    def _stats(self, key: str) -> KeyStats:
        stats = self.stats.get(key)
        if stats is None:
            cfg = self.config
            stats = self.stats[key] = KeyStats(cfg.long_memory, cfg.residual_window, cfg.change_factor,
                                               cfg.change_run, cfg.only_long)
        return stats

    def _weights(self, key: str) -> list[float]:
        owner = self.weight_owner(key)
        weights = self.log_weights.get(owner)
        if weights is None:
            weights = self.log_weights[owner] = [0.0] * self.n_weights
        return weights

    def view(self, key: str = "") -> "ExpertsPredictor":
        return ExpertsPredictor(self, key)

    # -- learning -------------------------------------------------------------------
    def _available(self, key: str, at_s: float | None = None) -> list[tuple[int, float]]:
        """(expert index, estimate) of every expert whose key had seen a wait (now, or at ``at_s``)."""
        out = []
        width = len(STATS)
        for level, level_key in self.slots(key):
            stats = self.stats.get(level_key)
            if stats is None or not stats.n:
                continue
            values = stats.experts() if at_s is None else stats.experts_at(at_s)
            if values is not None:
                base = level * width
                out.extend((base + i, value) for i, value in enumerate(values))
        return out

    def estimate_log(self, key: str) -> float | None:
        """Weighted median of the available experts (log10(1 + s)); None when nothing was seen."""
        if key in self._estimates:
            return self._estimates[key]
        value = self._estimate_log(key)
        self._estimates[key] = value
        return value

    def _estimate_log(self, key: str) -> float | None:
        if self.config.mode == "backoff":
            found = self._backoff(key)
            self._strata[key] = None if found is None else found[1]
            return None if found is None else found[0]
        return self._combine(key, self._available(key))

    def level_snapshots(self, key: str, at_s: float | None = None) -> Iterator[tuple[int, tuple[list[float], int]]]:
        """(slot, (the level's expert answers, waits behind them)) for each of ``key``'s levels, fine to
        coarse, that had seen a wait (now, or at ``at_s``)."""
        for slot, level_key in self.slots(key):
            stats = self.stats.get(level_key)
            if stats is None or not stats.n:
                continue
            snapshot = stats.snapshot_at(at_s)
            if snapshot is not None:
                yield slot, snapshot

    def _backoff(self, key: str, at_s: float | None = None) -> tuple[float, str] | None:
        """("backoff") The long median of the finest key that had seen a wait (now, or at ``at_s``),
        shrunk towards its coarser keys' with ``prior_n`` pseudo-waits; and its stratum
        (which level answered, how many waits it had) for the quantiles."""
        found: list[tuple[int, float, int]] = []  # (slot, long median, waits behind it), fine to coarse
        prior_n = self.config.prior_n
        for slot, (experts, count) in self.level_snapshots(key, at_s):
            found.append((slot, experts[-1], count))
            if not prior_n:
                break
        if not found:
            return None
        value = found[-1][1]
        for _, median, count in reversed(found[:-1]):
            value = (count * median + prior_n * value) / (count + prior_n)
        slot, _, count = found[0]
        strata = self.config.strata
        return value, (f"{slot}:{count_bucket(count)}" if strata == "level-count" else
                       str(slot) if strata == "level" else "all")

    def _combine(self, key: str, available: list[tuple[int, float]]) -> float | None:
        if not available:
            return None
        weights = None if self.config.mode == "backoff" else self.log_weights.get(self.weight_owner(key))
        if weights is None:
            # no weights yet: the finest available key's long median
            return available[len(STATS) - 1][1]
        top = max(weights[i] for i, _ in available)
        pairs = sorted((value, math.exp(weights[i] - top)) for i, value in available)
        half = 0.5 * sum(w for _, w in pairs)
        acc = 0.0
        for value, w in pairs:
            acc += w
            if acc >= half:
                return value
        return pairs[-1][0]

    def n_observations(self, key: str) -> int:
        stats = self.stats.get(key)
        return stats.n if stats is not None else 0

    def floor_key(self, key: str) -> str | None:
        """The class whose oldest pending job floors ``key``'s estimate (None: no floor configured)."""
        if not self.config.pending_floor:
            return None
        return key_levels_by_slot(key, (self.config.pending_floor,))[0]

    def told(self, key: str, now_s: float | None = None, pending_since_s: float | None = None,
             shifts: bool = True) -> Told | None:
        """(estimate in log10(1 + s), residual stratum, ACI shifts) as a job of ``key`` is told it
        now: the learned estimate, raised to ``log10(1 + now_s - pending_since_s)`` when the
        oldest job of its pending class has already waited longer (the stratum then ends in
        ``:p``, so floored answers earn quantiles of their own); with ``aci_gamma``, the shifts
        its stratum gave at every tracked level (None: no stratum window in use). None when
        nothing was learned yet. Hand it back to :meth:`observe` when the wait is known."""
        y = self.estimate_log(key)
        if y is None:
            return None
        stratum = self._strata.get(key)
        if self.config.pending_floor and now_s is not None and pending_since_s is not None:
            floor = math.log10(1.0 + max(0.0, float(now_s) - float(pending_since_s)))
            if floor > y:
                y, stratum = floor, (None if stratum is None else f"{stratum}:p")
        cfg = self.config
        calibrated = shifts and (cfg.aci_gamma or cfg.recalibrate_halflife)
        window = self._stratum_window(key, stratum) if calibrated else None
        return y, stratum, (None if window is None else window.told_shifts())

    def _stratum_window(self, key: str, stratum: str | None, min_residuals: int | None = None) -> ResidualWindow | None:
        """The residual window of ``stratum`` at ``key``'s coarsest key, once it holds
        ``min_residuals`` (default: the config's)."""
        if stratum is None or self.config.residuals_from != "stratum" or self.config.mode != "backoff":
            return None
        coarsest = self.stats.get(self.levels(key)[-1])
        window = None if coarsest is None else coarsest.strata.get(stratum)
        need = self.config.min_residuals if min_residuals is None else min_residuals
        return window if window is not None and len(window) >= need else None

    def aci_miss(self, key: str, told: Told, level: int) -> None:
        """ACI feedback before the wait is known: a job told ``told`` is still pending when it
        has waited longer than the quantile it was told at tracked level ``level`` (so it is
        not covered there). Misses then reach ACI as early as hits do, instead of when the
        job starts; pass the levels fed this way to :meth:`observe` as ``fed``."""
        _, stratum, shifts = told
        if not self.config.aci_gamma or shifts is None:
            return
        window = self._stratum_window(key, stratum, min_residuals=0)  # it was in use when told
        if window is not None:
            window.aci_step(level, False, self._aci_gamma(stratum), self._aci_adapt(stratum))

    def _aci_gamma(self, stratum: str | None) -> float:
        """ACI's step for ``stratum``: ``aci_gamma_cold`` for a cold answer's when set."""
        cfg = self.config
        return cfg.aci_gamma_cold if cfg.aci_gamma_cold and is_cold_stratum(stratum) else cfg.aci_gamma

    def _aci_adapt(self, stratum: str | None) -> AciAdapt | None:
        """The adaptive step for a cold answer's stratum when ``aci_cold_adapt_max`` is set."""
        cfg = self.config
        if not cfg.aci_cold_adapt_max or not is_cold_stratum(stratum):
            return None
        if self._adapt is None:
            self._adapt = AciAdapt(cfg.aci_cold_adapt_max, cfg.aci_cold_adapt_halflife)
        return self._adapt

    def observe(self, key: str, wait_s: float, at_s: float | None = None,
                told: Told | None = None, fed: Sequence[int] = ()) -> None:
        """Learn one wait. ``at_s``: when the job started (the wait is known from then on).

        With ``at_s`` the experts are scored on what they said when the job was submitted
        (``at_s - wait``), not on what they say now: between the two, the waits of the jobs
        that started first (the shorter ones of a batch) have arrived, and scoring against
        them would favour the short memories, which look good only in hindsight.

        ``told``: what :meth:`told` said when the job was submitted (then its residual is
        scored against that answer, floor included); without it, the answer is rebuilt from
        the keys' state at ``at_s - wait``.
        """
        wait = clean_wait(wait_s)
        y = math.log10(1.0 + wait)
        decided_s = None if at_s is None else float(at_s) - wait
        stratum = None
        if self.config.mode == "backoff":
            available: list[tuple[int, float]] = []
            found = told if told is not None else self._backoff(key, decided_s)
            before, stratum = (None, None) if found is None else found[:2]
            told_shifts = found[2] if found is not None and len(found) > 2 else None
        else:
            available = self._available(key, decided_s)
            before = self._combine(key, available)
        self._estimates.clear()
        self._strata.clear()
        if available and self.config.mode == "hedge":
            cfg = self.config
            weights = self._weights(key)
            for i, value in available:
                weights[i] -= cfg.eta * min(abs(value - y), cfg.max_loss)
            # normalise over the experts that spoke (others keep their weight for their keys)
            top = max(weights[i] for i, _ in available)
            floor = -cfg.log_weight_floor
            for i, _ in available:
                weights[i] = max(weights[i] - top, floor)
        key_only = self.config.change_scope == "key"
        for level_key in self.levels(key):
            stats = self._stats(level_key)
            if before is not None and self.config.residuals_from != "stratum":
                stats.add_residual(y - before)
            stats.add(y, at_s, detect_change=not key_only or level_key == key)
        if before is not None and stratum is not None and self.config.residuals_from == "stratum":
            coarsest = self._stats(self.levels(key)[-1])
            coarsest.add_residual(y - before)  # the pooled fallback for a stratum still short of residuals
            cfg = self.config
            window = coarsest.stratum(stratum, "map" if cfg.recalibrate_halflife else cfg.aci_space)
            if cfg.recalibrate_halflife and told_shifts is not None:
                window.count(y - before, told_shifts, cfg.recalibrate_halflife)
            window.add(y - before, self._aci_gamma(stratum), told_shifts, fed, self._aci_adapt(stratum))
            if cfg.cold_pool and is_cold_stratum(stratum):
                coarsest.stratum(COLD_POOL, cfg.aci_space).add(y - before)

    def borrowed(self, key: str) -> bool:
        """("backoff") Whether the key's estimate comes from a coarser key (it has no wait of its own)."""
        return self.estimate_log(key) is not None and not self.n_observations(key)

    def residual_quantiles(self, key: str, qs: Sequence[float], stratum: str | None = None) -> list[float] | None:
        """Quantiles of the residuals that answers like ``key``'s earned (``stratum``: the one
        :meth:`told` gave; by default the unfloored estimate's)."""
        source = self._residual_source(key, stratum)
        return None if source is None else source[1](qs)

    def residual_basis(self, key: str, stratum: str | None = None) -> int:
        """How many samples the shape of :meth:`residual_quantiles` rests on (0: it has none, the
        answer is a point). A barrier priced from a few waits must know it is a few
        (``asad.strategies.expected_start.with_unseen_tails``)."""
        source = self._residual_source(key, stratum)
        return 0 if source is None else source[0]

    def _residual_source(self, key: str, stratum: str | None
                         ) -> tuple[int, Callable[[Sequence[float]], list[float]]] | None:
        """(sample count, quantile function) of the residuals :meth:`residual_quantiles` reads."""
        levels = self.levels(key)
        if self.config.residuals_from == "stratum" and self.config.mode == "backoff":
            self.estimate_log(key)
            coarsest = self.stats.get(levels[-1])
            stratum = stratum or self._strata.get(key)
            if coarsest is not None and stratum is not None:
                window = self._stratum_window(key, stratum)
                if window is not None:
                    return len(window), window.quantiles
                pooled = coarsest.strata.get(COLD_POOL) if self.config.cold_pool and is_cold_stratum(stratum) else None
                if pooled is not None and len(pooled) >= self.config.min_residuals:
                    return len(pooled), pooled.quantiles
                if len(coarsest.sorted_residuals) >= self.config.min_residuals:
                    return len(coarsest.sorted_residuals), _sorted_quantiles(coarsest.sorted_residuals)
        for level_key in (levels if self.config.residuals_from == "finest" else levels[::-1]):
            stats = self.stats.get(level_key)
            if stats is not None and len(stats.sorted_residuals) >= self.config.min_residuals:
                return len(stats.sorted_residuals), _sorted_quantiles(stats.sorted_residuals)
        # too few residuals anywhere: the spread of the finest key's own waits around their median
        for level_key in self.levels(key):
            stats = self.stats.get(level_key)
            if stats is not None and stats.n >= 2:
                mid = median_of_sorted(stats.sorted)
                values = stats.sorted
                return len(values), lambda qs: [quantile_of_sorted(values, float(q)) - mid for q in qs]
        return None

    # -- persistence ----------------------------------------------------------------
    def key_state(self, key: str) -> dict[str, Any]:
        """State of one key's own statistics (and weights, for a fine key)."""
        stats = self.stats.get(key)
        state: dict[str, Any] = {"kind": self.kind, "class": "experts", "seed": self.seed,
                                 "config": _config_state(self.config),
                                 "stats": stats.to_state() if stats is not None else None}
        if key in self.log_weights:
            state["log_weights"] = list(self.log_weights[key])
        return state

    def load_key_state(self, key: str, state: dict[str, Any]) -> None:
        self._estimates.clear()
        self._strata.clear()
        if state.get("stats") is not None:
            cfg = self.config
            self.stats[key] = KeyStats.from_state(state["stats"], cfg.long_memory, cfg.residual_window,
                                                  cfg.change_factor, cfg.change_run, cfg.only_long)
        weights = state.get("log_weights")
        if weights is not None and len(weights) == self.n_weights:
            self.log_weights[key] = [float(w) for w in weights]

    def to_state(self) -> dict[str, Any]:
        return {"kind": self.kind, "class": "experts-pool", "seed": self.seed,
                "config": _config_state(self.config),
                "keys": {key: self.key_state(key) for key in sorted(set(self.stats) | set(self.log_weights))}}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "ExpertsPool":
        pool = cls(config_from_state(state["config"]), seed=int(state.get("seed", 0)), kind=state["kind"])
        for key, key_state in state["keys"].items():
            pool.load_key_state(key, key_state)
        return pool


def _config_state(config: ExpertsConfig) -> dict[str, Any]:
    state = asdict(config)
    state["levels"] = [list(level) for level in config.levels]
    return state


def config_from_state(state: dict[str, Any]) -> ExpertsConfig:
    return ExpertsConfig(**{**state, "levels": tuple(tuple(level) for level in state["levels"])})


class ExpertsPredictor:
    """One key's view of an :class:`ExpertsPool` (the :class:`WaitPredictor` interface)."""

    def __init__(self, pool: ExpertsPool | None = None, key: str = "") -> None:
        self.pool = pool if pool is not None else ExpertsPool()
        self.key = key

    @property
    def kind(self) -> str:
        return self.pool.kind

    @property
    def n_observations(self) -> int:
        return self.pool.n_observations(self.key)

    def estimate(self, *, slurm_estimate_s: float | None = None, now_s: float | None = None,
                 pending_since_s: float | None = None) -> float:
        """The point estimate (s); ``now_s`` and ``pending_since_s`` (when the oldest pending job
        of the key's floor class became eligible) floor it (:meth:`ExpertsPool.told`)."""
        told = self.pool.told(self.key, now_s, pending_since_s, shifts=False)
        if told is None:
            return 0.0
        y, stratum = told[:2]
        point = self.pool.config.point
        if point == "calibrated" or (point == "calibrated-cold" and self.pool.borrowed(self.key)):
            y += (self.pool.residual_quantiles(self.key, (0.5,), stratum) or [0.0])[0]
        return max(0.0, 10.0**y - 1.0)

    def observe(self, wait_s: float, *, slurm_estimate_s: float | None = None, at_s: float | None = None,
                told: Told | None = None, fed: Sequence[int] = ()) -> None:
        self.pool.observe(self.key, wait_s, at_s, told, fed)

    def quantiles(self, qs: Sequence[float], *, now_s: float | None = None,
                  pending_since_s: float | None = None) -> list[float]:
        """The estimate shifted by the residuals' quantiles (conformal); all 0 s before any wait."""
        told = self.pool.told(self.key, now_s, pending_since_s, shifts=False)
        if told is None:
            return [0.0 for _ in qs]
        y, stratum = told[:2]
        shifts = self.pool.residual_quantiles(self.key, qs, stratum) or [0.0 for _ in qs]
        return [wait_at(y, shift) for shift in shifts]

    def quantile_basis(self) -> int:
        """How many samples the spread of :meth:`quantiles` rests on (0 before any wait, or while
        the answer is a point)."""
        told = self.pool.told(self.key, None, None, shifts=False)
        return 0 if told is None else self.pool.residual_basis(self.key, told[1])

    def to_state(self) -> dict[str, Any]:
        """The whole pool (a standalone predictor); the engine stores keys one by one instead."""
        return {**self.pool.to_state(), "view_key": self.key}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "ExpertsPredictor":
        return cls(ExpertsPool.from_state(state), key=state.get("view_key", ""))


def _sorted_quantiles(values: list[float]) -> Callable[[Sequence[float]], list[float]]:
    return lambda qs: [quantile_of_sorted(values, float(q)) for q in qs]
