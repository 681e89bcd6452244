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

**Waits the learner has seen few of** (issue 35, third stop). A learned wait's quantiles rest on
``n`` samples (``Learned.wait_quantile_basis``: the waits or residuals their spread was read
from). A grid of ``n`` samples puts no mass outside them: after one wait it is a point, and a
predecessor that outwaits every wait seen is taken to start "now". So the rule priced almost no
risk of a late predecessor and led by too much (on the real Slurm with limits every pending
predecessor ended 48-81 s later than planned). What the samples do say, whatever the
distribution (the order statistics' coverage, Hill's A(n)): a further wait of ``n``
exchangeable ones falls beyond the largest with probability ``1 / (n + 1)``, and below the
smallest with the same. When the rule prices a barrier (:func:`with_unseen_tails`):

- the *top* gap has no end the samples can name, so its mass is put at :data:`UNSEEN` (never):
  the newsvendor quantile of a predecessor's start lands there, and the rule waits for that
  predecessor to start, whenever ``1 / (k + 1)`` (``k`` waits seen above the wait so far)
  exceeds the successor's ``tau``. A 28-core stage (``tau`` 0.11 at ``idle_price`` 0.3) then
  leads a pending predecessor only after 9 waits above its wait so far; a 2-core stage
  (``tau`` 0.63) after one. The lead from a *running* predecessor is unchanged by this.
- the *bottom* gap lies between 0 and the smallest wait seen; the successor's own wait (a short
  one idles it at the barrier) gets that mass spread evenly over it.

No constant was tuned: the coverage is exact for exchangeable waits, and the price is the rule's
own ``tau``. The run times are not widened: a stage's run time repeats closely run to run, its
wait does not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The quantile levels every distribution here is kept at (the wait learner's grid, asad.core.context).
GRID = tuple(round(0.01 + 0.02 * i, 2) for i in range(50))
# Where the mass beyond the largest wait seen goes: an instant no plan reaches (epoch seconds, finite
# so that sums and quantiles stay numbers). An eligible instant at or past UNSEEN / 2 means "no lead".
UNSEEN = 1e15


def unseen_share(basis: int) -> float:
    """The chance that a further wait falls beyond the largest (or below the smallest) of ``basis``
    exchangeable waits seen: ``1 / (basis + 1)``; 1 with none seen."""
    return 1.0 / (max(0, basis) + 1.0)


def _reweighted(points: np.ndarray, low: float, high: float) -> np.ndarray:
    """``points`` (equally likely) with mass ``low`` spread evenly from 0 to their smallest and
    mass ``high`` put at :data:`UNSEEN`, as quantiles at ``GRID``."""
    levels = np.asarray(GRID)
    seen = max(1e-12, 1.0 - low - high)
    points = np.sort(points)
    # equally likely points stand at the middle of their share of [0, 1] (a GRID-sized grid at GRID)
    inner = np.interp((levels - low) / seen, (np.arange(points.size) + 0.5) / points.size, points)
    bottom = points[0] * np.clip(levels / low, 0.0, 1.0) if low > 0 else inner
    out = np.where(levels < low, bottom, inner)
    return np.where(levels > 1.0 - high, UNSEEN, out)


def with_unseen_tails(wait_grid: Sequence[float], basis: int, *, top: bool, bottom: bool) -> np.ndarray:
    """A learned wait's quantiles (``wait_grid``, resting on ``basis`` samples) with the mass its
    samples leave unseen: ``1 / (basis + 1)`` beyond the largest (``top``: at :data:`UNSEEN`) and
    below the smallest (``bottom``: spread evenly down to 0). See the module's docstring."""
    share = unseen_share(basis)
    return _reweighted(np.asarray(wait_grid, dtype=float), share if bottom else 0.0, share if top else 0.0)


def on_grid(samples: np.ndarray) -> np.ndarray:
    """A distribution given by (equally likely) samples, reduced to its quantiles at ``GRID``."""
    return np.quantile(np.asarray(samples, dtype=float).ravel(), GRID)


def remaining_wait(wait_grid: Sequence[float], waited_s: float, basis: int | None = None) -> np.ndarray:
    """The learned wait's quantiles given that the job has waited ``waited_s`` already.

    The grid points above the wait so far are the conditional distribution's points (equally
    likely, as they were before). Without ``basis``, a job that has outwaited every one of
    them is taken to start now (the learner's best guess, for a median). With ``basis`` (the
    samples the grid rests on; for pricing a barrier) the ``k`` samples above the wait so far
    leave ``1 / (k + 1)`` of the remaining wait unseen, at :data:`UNSEEN`: all of it once the
    job has outwaited every wait seen.
    """
    grid = np.asarray(wait_grid, dtype=float)
    above = grid[grid > waited_s]
    if basis is None:
        return above if above.size else np.array([float(waited_s)])
    if not above.size:
        return np.full(len(GRID), UNSEEN)
    k = max(0, basis) * above.size / grid.size  # the samples still above the wait so far
    return _reweighted(above, 0.0, unseen_share(round(k)))


def pending_start(eligible_at: float, wait_grid: Sequence[float], now: float,
                  basis: int | None = None) -> np.ndarray:
    """Where a pending job's allocation is expected: eligible instant plus its remaining wait,
    never before now (``basis``: see :func:`remaining_wait`)."""
    waited = max(0.0, now - eligible_at)
    return np.maximum(now, eligible_at + remaining_wait(wait_grid, waited, basis))


def held_start(eligible: np.ndarray, wait_grid: Sequence[float], now: float,
               basis: int | None = None) -> np.ndarray:
    """Where the allocation of a job held by a dependency (``afterok``) is expected: its eligible
    instant (``eligible``: quantiles of its predecessors' end, issue 35's fourth stop) plus its
    learned wait, never before now. Once every point of ``eligible`` has passed, the latest is when
    it became eligible and it is a pending job like any other (:func:`pending_start`); while they
    are ahead, it has waited nothing yet and its whole learned wait is still to come (``basis``:
    see :func:`remaining_wait`)."""
    eligible = np.asarray(eligible, dtype=float)
    if float(eligible.max()) <= now:
        return pending_start(float(eligible.max()), wait_grid, now, basis)
    grid = np.asarray(wait_grid, dtype=float)
    rest = grid if basis is None else _reweighted(grid, 0.0, unseen_share(basis))  # all of it to come
    return np.maximum(now, on_grid(eligible[:, None] + rest[None, :]))


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
