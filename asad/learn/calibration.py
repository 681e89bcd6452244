"""Calibrated quantiles from residuals: a window of past residuals per stratum, read at levels
that adaptive conformal inference (ACI) or a recalibration map move until each quantile is
covered as often as asked.

A learner tells a job its estimate ``y`` (log10(1 + s)); once the wait is known, its residual
``log10(1 + wait) - y`` joins its stratum's window, and the quantile at ``q`` is ``y`` plus the
window's ``q``-quantile. Residuals of jobs that started are a biased sample while a queue
fills (short waits arrive first), so the plain window is not calibrated; ACI corrects the
level read per tracked quantile from whether the jobs' waits fell at or below what they were
*told* (``Told``), and can hear of a miss as soon as a pending job has waited past it
(:meth:`asad.learn.experts.ExpertsPool.aci_miss`). docs/asa.md §6 and docs/results/learn.md
say what was measured.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Sequence
from typing import Any


def quantile_of_sorted(values: list[float], q: float) -> float:
    position = min(max(q, 0.0), 1.0) * (len(values) - 1)
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


# What a job was told (ExpertsPool.told): the estimate in log10(1 + s), its residual stratum,
# and (ACI) the shifts that stratum gave at every tracked level, None when not in use
Told = tuple[float, "str | None", "tuple[float, ...] | None"]
ACI_QS = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)  # levels adaptive conformal inference tracks
ACI_MAX_OFFSET = 5.0  # a bound on how far an offset can run (only against runaway)
# "level": the level read from the window, clipped to its ends; "open": the same, but a level
# past 0 or 1 reads past the window's lowest or highest residual (textbook ACI reads an
# infinite quantile there, and its coverage guarantee needs a quantile that can cover any
# wait); "shift": the shift itself moves (quantile tracking)
ACI_SPACES = ("level", "open", "shift")
# "open": how far a level may read past the window, in window ranges (a finite cap, so the
# engine and the pinball loss get a number), and the range assumed for a window whose
# residuals are all alike (log10)
OPEN_LEVEL_REACH = 1.0
OPEN_MIN_RANGE = 0.1
# the longest wait a quantile tells (s): an open level's reach is bounded in residual
# ranges, a wait needs a bound in seconds too; no batch queue plans a month ahead
MAX_TOLD_WAIT_S = 30 * 86400.0
# levels whose coverage a recalibration map counts (dense in the tails, where it moves most)
MAP_LEVELS = (0.01, 0.02, 0.05, 0.1, 0.15, 0.25, 0.35, 0.5, 0.65, 0.75, 0.85, 0.9, 0.95, 0.98, 0.99)
MAP_MIN_WEIGHT = 100.0  # waits counted before a map is read


COLD_POOL = "cold"  # the coarsest key's window of every cold answer's residual (``cold_pool``)


def is_cold_stratum(stratum: str | None) -> bool:
    """Whether a residual stratum is a cold answer's: its answering level (the stratum's slot) is
    coarser than the key itself (slot 0); "all" strata tell no level."""
    return stratum is not None and stratum.split(":", 1)[0] not in ("0", "all")


def told_waits_s(told: Told) -> list[float]:
    """The waits (s) a job told ``told`` was given at every tracked level: past one while still
    pending, the job is not covered there (a miss, heard before the job starts)."""
    y, _, shifts = told
    return [wait_at(y, shift) for shift in (shifts or ())]


def wait_at(y: float, shift: float) -> float:
    """The wait (s) at estimate ``y`` (log10(1 + s)) shifted by ``shift``, within [0, MAX_TOLD_WAIT_S]."""
    return min(max(0.0, 10.0 ** min(y + shift, 12.0) - 1.0), MAX_TOLD_WAIT_S)


def _interpolate(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    i = min(max(bisect.bisect_right(xs, x) - 1, 0), len(xs) - 2)
    return ys[i] + (ys[i + 1] - ys[i]) * (x - xs[i]) / (xs[i + 1] - xs[i])


class AciAdapt:
    """Issue 38, eighth round: an ACI step that grows with the stratum's recent miss rate. Per
    tracked level a decayed mean of ``q - covered`` (halflife ``halflife`` outcomes) measures
    how far the level's recent coverage is off; in units of the outcome's own standard
    deviation sqrt(q (1 - q)), clipped at 1, it moves the step from the base rate (calibrated:
    the bias is noise near 0) towards ``gamma_max`` (every recent outcome off one way). A cold
    stratum whose residuals swing burst by burst then follows a burst fast, and one that is
    calibrated keeps the slow step that does not overshoot."""

    __slots__ = ("decay", "gamma_max")

    def __init__(self, gamma_max: float, halflife: float) -> None:
        if not 0 < gamma_max < 1 or halflife <= 0:
            raise ValueError("0 < gamma_max < 1 and halflife > 0")
        self.gamma_max = gamma_max
        self.decay = 0.5 ** (1.0 / halflife)

    def step(self, window: "ResidualWindow", i: int, miss: float, base: float) -> float:
        """Fold ``miss`` (``q - covered``) into level ``i``'s bias and return the step to take."""
        q = ACI_QS[i]
        bias = window.bias[i] = window.bias[i] * self.decay + (1.0 - self.decay) * miss
        if self.gamma_max <= base:
            return base
        return base + (self.gamma_max - base) * min(1.0, abs(bias) / math.sqrt(q * (1.0 - q)))


class ResidualWindow:
    """The last ``window`` residuals of one stratum and, with adaptive conformal inference (ACI),
    one offset per tracked level that moves until the quantile read there is covered as often
    as asked. ``space`` says what the offset moves: the "level" read from the residuals (Gibbs
    & Candes 2021), or the "shift" itself, in log10 (quantile tracking, Angelopoulos et al.
    2023: a step of ``gamma`` decades, so a run of misses cannot jump to the window's extremes)."""

    __slots__ = ("bias", "covered", "offsets", "residuals", "sorted", "space", "weight", "window")

    def __init__(self, window: int, space: str = "level") -> None:
        self.window = window
        self.space = space  # an ACI space, or "map" (a recalibration map: ``covered``, ``weight``)
        self.residuals: deque[float] = deque()
        self.sorted: list[float] = []
        self.offsets = [0.0] * len(ACI_QS)
        self.covered = [0.0] * len(MAP_LEVELS)  # decayed counts of waits at or below each told shift
        self.weight = 0.0  # decayed count of waits
        # (adaptive step) per tracked level, the decayed mean of ``q - covered``: 0 while calibrated
        self.bias = [0.0] * len(ACI_QS)

    def __len__(self) -> int:
        return len(self.residuals)

    def tracked_levels(self) -> list[float]:
        """The level read at each of :data:`ACI_QS` now (nominal plus offset, kept ordered;
        within [0, 1], or "open" up to ``OPEN_LEVEL_REACH`` beyond)."""
        if self.space == "shift":
            return list(ACI_QS)
        reach = OPEN_LEVEL_REACH if self.space == "open" else 0.0
        levels, top = [], -reach
        for q, offset in zip(ACI_QS, self.offsets):
            top = max(top, min(max(q + offset, -reach), 1.0 + reach))  # kept monotone: quantiles stay ordered
            levels.append(top)
        return levels

    def _read(self, level: float) -> float:
        """The residual at ``level``: the window's quantile, and ("open") past its ends by its
        range per unit of level."""
        values = self.sorted
        if 0.0 <= level <= 1.0 or self.space != "open":
            return quantile_of_sorted(values, level)
        span = max(values[-1] - values[0], OPEN_MIN_RANGE)
        return values[-1] + (level - 1.0) * span if level > 1.0 else values[0] + level * span

    def _level_curve(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Nominal levels against the levels read, for interpolating between tracked ones."""
        levels = self.tracked_levels()
        return (0.0, *ACI_QS, 1.0), (min(0.0, levels[0]), *levels, max(1.0, levels[-1]))

    def level(self, q: float) -> float:
        """The level read for a nominal ``q``: ACI's adjusted levels, interpolated between them;
        with a map, the level whose counted coverage is ``q``."""
        q = min(max(q, 0.0), 1.0)
        if self.space == "map":
            if self.weight < MAP_MIN_WEIGHT:
                return q
            xs, ys, top = [0.0], [0.0], 0.0
            for level, count in zip(MAP_LEVELS, self.covered):
                cover = count / self.weight
                if cover > top:  # strictly increasing for the inverse; ties keep the lowest level
                    xs.append(cover)
                    ys.append(level)
                    top = cover
            if top < 1.0:
                xs.append(1.0)
                ys.append(1.0)
            return _interpolate(xs, ys, q)
        return _interpolate(*self._level_curve(), q)

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        if self.space == "map":
            return [quantile_of_sorted(self.sorted, self.level(float(q))) for q in qs]
        if self.space in ("level", "open"):
            xs, ys = self._level_curve()
            return [self._read(_interpolate(xs, ys, min(max(float(q), 0.0), 1.0))) for q in qs]
        xs, offsets = (0.0, *ACI_QS, 1.0), (self.offsets[0], *self.offsets, self.offsets[-1])
        out, top = [], -math.inf
        for q in sorted(float(q) for q in qs):
            top = max(top, quantile_of_sorted(self.sorted, q) + _interpolate(xs, offsets, min(max(q, 0.0), 1.0)))
            out.append(top)
        by_q = dict(zip(sorted(float(q) for q in qs), out))
        return [by_q[float(q)] for q in qs]

    def told_shifts(self) -> tuple[float, ...]:
        """The shifts this window gives at every tracked level now (what a job is told): the
        ACI levels, or, for a map, the plain empirical quantiles at :data:`MAP_LEVELS`."""
        if self.space == "map":
            return tuple(quantile_of_sorted(self.sorted, level) for level in MAP_LEVELS)
        if self.space in ("level", "open"):
            return tuple(self._read(level) for level in self.tracked_levels())
        return tuple(self.quantiles(ACI_QS))

    def count(self, r: float, told_shifts: Sequence[float], halflife: float) -> None:
        """(map) Count whether ``r`` fell at or below each shift it was told; older counts weigh
        half every ``halflife`` waits."""
        decay = 0.5 ** (1.0 / halflife)
        self.weight = self.weight * decay + 1.0
        self.covered = [c * decay + (1.0 if r <= shift else 0.0) for c, shift in zip(self.covered, told_shifts)]

    def aci_step(self, i: int, covered: bool, aci_gamma: float, adapt: "AciAdapt | None" = None) -> None:
        """Move tracked level ``i``'s offset by ``aci_gamma * (q - covered)``. Not clipped to the
        levels [0, 1]: a clipped step is lost and the sum no longer telescopes (coverage then
        drifts towards the side the clip cuts); the level read is clipped instead (_levels),
        and a far-off offset walks back by itself.

        ``adapt``: the step grows with the level's recent miss bias (:class:`AciAdapt`)."""
        miss = ACI_QS[i] - (1.0 if covered else 0.0)
        if adapt is not None:
            aci_gamma = adapt.step(self, i, miss, aci_gamma)
        step = aci_gamma * miss
        self.offsets[i] = min(max(self.offsets[i] + step, -ACI_MAX_OFFSET), ACI_MAX_OFFSET)

    def add(self, r: float, aci_gamma: float = 0.0, told_shifts: Sequence[float] | None = None,
            fed: Sequence[int] = (), adapt: AciAdapt | None = None) -> None:
        """Keep residual ``r``; with ``aci_gamma``, first step every tracked level not ``fed``
        back already (:meth:`ExpertsPool.aci_miss`) on whether ``r`` fell at or below the shift
        the job was *told* (``told_shifts``): then the offsets' steps telescope and the long-run
        coverage is the nominal one, whatever the residuals do. Without ``told_shifts`` no
        step: checked against the window as it is now instead, ACI chased each batch's short
        waits and made coverage worse (docs/results/learn.md)."""
        if aci_gamma and told_shifts is not None:
            for i in range(len(ACI_QS)):
                if i not in fed:
                    self.aci_step(i, r <= told_shifts[i], aci_gamma, adapt)
        self.residuals.append(r)
        bisect.insort(self.sorted, r)
        if len(self.residuals) > self.window:
            old = self.residuals.popleft()
            del self.sorted[bisect.bisect_left(self.sorted, old)]

    def to_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"residuals": list(self.residuals), "offsets": list(self.offsets)}
        if self.space != "level":
            state["space"] = self.space
        if self.space == "map":
            state.update(covered=list(self.covered), weight=self.weight)
        if any(self.bias):
            state["bias"] = list(self.bias)
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any], window: int) -> "ResidualWindow":
        out = cls(window, state.get("space", "level"))
        out.residuals.extend(float(r) for r in state["residuals"][-window:])
        out.sorted = sorted(out.residuals)
        offsets = [float(v) for v in state.get("offsets", ())]
        if len(offsets) == len(ACI_QS):
            out.offsets = offsets
        bias = [float(v) for v in state.get("bias", ())]
        if len(bias) == len(ACI_QS):
            out.bias = bias
        covered = [float(v) for v in state.get("covered", ())]
        if len(covered) == len(MAP_LEVELS):
            out.covered, out.weight = covered, float(state.get("weight", 0.0))
        return out
