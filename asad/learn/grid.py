"""The grid of waiting-time alternatives ASA chooses among (paper 4.3).

The paper uses m = 53 alternatives from 0 s to 100,000 s (~28 h), "multiples of
10's, 100's, 1k's, 10k's and 100k", denser in the tens and hundreds of seconds
because small jobs' waits vary most there. The exact points are not published;
:data:`PAPER_GRID_S` is our reading of that description:

    tens        0, 10, ..., 90                        10 points
    hundreds    100, 150, ..., 950                    18 points
    thousands   1000, 1500, ..., 4500, 5000, ..., 9000 13 points
    ten-thousands 10k, 15k, 20k, 25k, 30k, 40k, ..., 100k 12 points
                                                      -- 53

:func:`log_grid` gives a geometric alternative (same m) that reaches further,
for queues whose waits exceed 28 h (see docs/results/learn.md for which one the
real data prefers). Any strictly increasing, non-negative sequence works.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PAPER_GRID_S: tuple[float, ...] = tuple(
    [float(s) for s in range(0, 100, 10)]
    + [float(s) for s in range(100, 1000, 50)]
    + [float(s) for s in range(1000, 5000, 500)]
    + [float(s) for s in range(5000, 10000, 1000)]
    + [10000.0, 15000.0, 20000.0, 25000.0]
    + [float(s) for s in range(30000, 100001, 10000)]
)
assert len(PAPER_GRID_S) == 53


def log_grid(m: int = 53, low_s: float = 10.0, high_s: float = 1_000_000.0) -> tuple[float, ...]:
    """0 s followed by ``m - 1`` geometrically spaced points from ``low_s`` to ``high_s``."""
    if m < 2:
        raise ValueError("a grid needs at least 2 alternatives")
    points = np.geomspace(low_s, high_s, m - 1)
    return (0.0, *(float(round(p, 3)) for p in points))


def make_grid(spec: str | Sequence[float] = "paper") -> tuple[float, ...]:
    """A grid by name (``"paper"``, ``"log"``, ``"log:M:LOW:HIGH"``) or an explicit list."""
    if isinstance(spec, str):
        if spec == "paper":
            grid = PAPER_GRID_S
        elif spec == "log":
            grid = log_grid()
        elif spec.startswith("log:"):
            m, low, high = spec.split(":")[1:]
            grid = log_grid(int(m), float(low), float(high))
        else:
            raise ValueError(f"unknown grid {spec!r} (use 'paper', 'log', 'log:M:LOW:HIGH' or a list)")
    else:
        grid = tuple(float(s) for s in spec)
    arr = np.asarray(grid)
    if len(arr) < 2 or not np.all(np.isfinite(arr)) or arr[0] < 0 or np.any(np.diff(arr) <= 0):
        raise ValueError("a grid must be >= 2 finite, non-negative, strictly increasing values")
    return tuple(grid)


def nearest_index(grid: np.ndarray, wait_s: float) -> int:
    """Index of the alternative closest to ``wait_s`` (linear distance, as eq. 3; ties go low)."""
    right = int(np.searchsorted(grid, wait_s))
    if right <= 0:
        return 0
    if right >= len(grid):
        return len(grid) - 1
    return right if grid[right] - wait_s < wait_s - grid[right - 1] else right - 1
