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

import bisect
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from asad.learn.base import clean_wait
from asad.learn.calibration import (COLD_POOL, AciAdapt, ResidualWindow, Told, is_cold_stratum,
                                   quantile_of_sorted, wait_at)
from asad.learn.experts_config import ExpertsConfig, config_from_state, config_state
from asad.learn.key_levels import key_levels, key_levels_by_slot
from asad.learn.key_stats import STATS, KeyStats, count_bucket, median_of_sorted


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
        # (cold_once_per_key) the keys whose burst a cold stratum has heard, and the levels a
        # key's burst has already missed early
        self._cold_fed: set[str] = set()
        self._cold_missed: dict[str, set[int]] = {}

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
             shifts: bool = True, key_pending: int | None = None) -> Told | None:
        """(estimate in log10(1 + s), residual stratum, ACI shifts) as a job of ``key`` is told it
        now: the learned estimate, raised to ``log10(1 + now_s - pending_since_s)`` when the
        oldest job of its pending class has already waited longer (the stratum then ends in
        ``:p``, so floored answers earn quantiles of their own); with ``aci_gamma``, the shifts
        its stratum gave at every tracked level (None: no stratum window in use). With
        ``cold_burst_edges``, a cold answer's stratum names its burst-size class
        (``key_pending``: how many jobs of ``key`` are pending as this one is told). None when
        nothing was learned yet. Hand it back to :meth:`observe` when the wait is known."""
        y = self.estimate_log(key)
        if y is None:
            return None
        stratum = self._strata.get(key)
        if self.config.cold_burst_edges and key_pending is not None and is_cold_stratum(stratum):
            stratum = f"{stratum}:b{bisect.bisect_right(self.config.cold_burst_edges, key_pending)}"
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
        if window is None:
            return
        if self.config.cold_once_per_key and is_cold_stratum(stratum):
            missed = self._cold_missed.setdefault(key, set())
            if key in self._cold_fed or level in missed:
                return  # the burst's miss at this level was heard already
            missed.add(level)
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
            if cfg.cold_once_per_key and is_cold_stratum(stratum):
                if key in self._cold_fed:
                    return  # the burst was heard through its first wait
                self._cold_fed.add(key)
                fed = tuple(self._cold_missed.pop(key, ()))  # the burst's early misses, not this job's
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
                                 "config": config_state(self.config),
                                 "stats": stats.to_state() if stats is not None else None}
        if key in self.log_weights:
            state["log_weights"] = list(self.log_weights[key])
        if key in self._cold_fed:
            state["cold_fed"] = True
        if self._cold_missed.get(key):
            state["cold_missed"] = sorted(self._cold_missed[key])
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
        if state.get("cold_fed"):
            self._cold_fed.add(key)
        if state.get("cold_missed"):
            self._cold_missed[key] = {int(level) for level in state["cold_missed"]}

    def to_state(self) -> dict[str, Any]:
        return {"kind": self.kind, "class": "experts-pool", "seed": self.seed,
                "config": config_state(self.config),
                "keys": {key: self.key_state(key) for key in sorted(set(self.stats) | set(self.log_weights))}}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "ExpertsPool":
        pool = cls(config_from_state(state["config"]), seed=int(state.get("seed", 0)), kind=state["kind"])
        for key, key_state in state["keys"].items():
            pool.load_key_state(key, key_state)
        return pool


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
                 pending_since_s: float | None = None, key_pending: int | None = None) -> float:
        """The point estimate (s); ``now_s`` and ``pending_since_s`` (when the oldest pending job
        of the key's floor class became eligible) floor it, ``key_pending`` names a cold
        answer's burst-size class (:meth:`ExpertsPool.told`)."""
        told = self.pool.told(self.key, now_s, pending_since_s, shifts=False, key_pending=key_pending)
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
                  pending_since_s: float | None = None, key_pending: int | None = None) -> list[float]:
        """The estimate shifted by the residuals' quantiles (conformal); all 0 s before any wait."""
        told = self.pool.told(self.key, now_s, pending_since_s, shifts=False, key_pending=key_pending)
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
