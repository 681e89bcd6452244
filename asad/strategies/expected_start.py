"""When a stage's work is expected to start and end, as a distribution: the quantile rule's input.

The quantile rule (``asad.strategies.auto``) makes a successor eligible at the ``1 - tau`` quantile of
``Y = S + R - W``: its predecessor's work start ``S``, plus the predecessor's run time ``R``, minus the
successor's own wait ``W``. While the predecessor runs, ``S`` is known. While it is still pending it
is not, and waiting for it to start made the rule useless where leads exceed run times (issue 35:
a 20-s stage first seen running at its end, a 105-128-s lead that no running predecessor could give).
So ``S`` is a distribution too: the predecessor's eligible instant plus its learned wait, *given that
it has waited so long already* (the part of the learned distribution above the wait so far).

Everything here is a fixed-size grid of quantiles (``GRID``), so a chain of pending stages combines
in ``O(len(GRID)^2)`` per step, not in a product that grows with the chain.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The quantile levels every distribution here is kept at (the wait learner's grid, asad.core.context).
GRID = tuple(round(0.01 + 0.02 * i, 2) for i in range(50))


def on_grid(samples: np.ndarray) -> np.ndarray:
    """A distribution given by (equally likely) samples, reduced to its quantiles at ``GRID``."""
    return np.quantile(np.asarray(samples, dtype=float).ravel(), GRID)


def remaining_wait(wait_grid: Sequence[float], waited_s: float) -> np.ndarray:
    """The learned wait's quantiles given that the job has waited ``waited_s`` already.

    The grid points above the wait so far are the conditional distribution's points (equally
    likely, as they were before); when the job has outwaited every one of them, the learner
    has nothing to say beyond "soon": it is taken to start now.
    """
    grid = np.asarray(wait_grid, dtype=float)
    above = grid[grid > waited_s]
    return above if above.size else np.array([float(waited_s)])


def pending_start(eligible_at: float, wait_grid: Sequence[float], now: float) -> np.ndarray:
    """Where a pending job's allocation is expected: eligible instant plus its remaining wait,
    never before now."""
    waited = max(0.0, now - eligible_at)
    return np.maximum(now, eligible_at + remaining_wait(wait_grid, waited))


def end_of(starts: np.ndarray, runtimes_s: Sequence[float]) -> np.ndarray:
    """The end distribution of a stage whose start and run time (recent runs, equally likely)
    are independent."""
    return on_grid(np.asarray(starts, dtype=float)[:, None] + np.asarray(runtimes_s, dtype=float)[None, :])


def later_of(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distribution of ``max(A, B)`` for independent ``A`` and ``B`` (a stage held at its
    barrier starts its work at the later of its allocation and its predecessors' end)."""
    return on_grid(np.maximum(np.asarray(a, dtype=float)[:, None], np.asarray(b, dtype=float)[None, :]))


def eligible_instant(starts: np.ndarray, runtimes_s: Sequence[float], wait_grid: Sequence[float],
                     tau: float) -> float:
    """The instant that minimises ``idle_price·c·E[(Y - x)+] + E[(x - Y)+]`` with
    ``Y = S + R - W``: ``P(Y <= x) = 1 - tau`` (``asad.strategies.auto``)."""
    y = (np.asarray(starts, dtype=float)[:, None, None] + np.asarray(runtimes_s, dtype=float)[None, :, None]
         - np.asarray(wait_grid, dtype=float)[None, None, :])
    return float(np.quantile(y.ravel(), 1.0 - tau))
