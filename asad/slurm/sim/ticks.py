"""slurmctld's periodic timers as grids of ticks ``origin + k * interval`` on virtual time."""

from __future__ import annotations

import math


def next_tick(now: float, interval: float, origin: float = 0.0) -> float:
    """The first tick of the grid ``origin + k * interval`` strictly after ``now``. A tick
    computed earlier from the same grid may sit a rounding error below its own ``k``: the
    division is nudged so that such a tick counts as passed (else the same tick comes again)."""
    t = origin + (math.floor((now - origin) / interval + 1e-9) + 1) * interval
    return t if t > now else t + interval


def tick_at_or_after(t: float, interval: float, origin: float = 0.0) -> float:
    return origin + math.ceil((t - origin) / interval - 1e-9) * interval
