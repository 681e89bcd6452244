"""The top level's long memory per group (issue 38, eleventh round; ``hedge_top_memory_s``).

Why: the tenth round kept the top level's weights per account, but its ``win`` loss charged
whichever learner was farther wait by wait, so an account where the panel is nearer on about
half of the waits kept near-even weights and followed the panel about half of the time, while
the score, a *median* error, preferred the back-off there. The hindsight analysis's per-account
choice made on each account's previous 4 weeks (docs/results/learn.md, ninth round) followed
the panel on 12-21 % of Graham's warm jobs and was no worse than the back-off. This memory lets
the top level choose like that: over a group's (an account's) judged waits of the last
``span_s`` seconds (0: every wait since its first), each learner's **mean** loss (with a 0/1
``over`` loss: the share of waits it missed by more than the threshold; with the clipped loss:
its mean clipped error) or, for ``window``, its **median** |error|. Hedge's weights are then
``exp(-eta * n * statistic)`` (for a mean: ``exp(-eta * summed loss)``, each wait having
multiplied its learner's weight by ``exp(-eta * loss)`` and a wait leaving the memory giving
its factor back), and the heavier is the learner with the smaller statistic.

Not persisted (like the window loss's medians): after a restart the memory refills from the
next waits, and until a group has ``hedge_top_min_n`` of them it follows the back-off.
"""

from __future__ import annotations

import bisect
from collections import deque


class TopMemory:
    """One top group's judged waits: per learner the sum (mean) or the sorted values (median)
    of what it paid, over the waits of the last ``span_s`` seconds (0: all, kept as sums only
    when the statistic is the mean, so a cumulative memory of means does not grow)."""

    def __init__(self, learners: int, span_s: float, median: bool) -> None:
        self.span_s = span_s
        self.median = median
        self.n = 0
        self.sums = [0.0] * learners
        # the waits in order, kept only when they can leave (a span): a cumulative median reads
        # ``ordered`` alone
        self.keep = span_s > 0
        self.times: deque[float] = deque()
        self.values: deque[tuple[float, ...]] = deque()
        self.ordered: list[list[float]] = [[] for _ in range(learners)] if median else []

    def add(self, at_s: float | None, values: tuple[float, ...]) -> None:
        """One judged wait (at ``at_s``, None: no clock, nothing leaves), what each learner paid."""
        if at_s is not None and self.span_s > 0:
            self.forget_before(at_s - self.span_s)
        self.n += 1
        for i, v in enumerate(values):
            self.sums[i] += v
            if self.median:
                bisect.insort(self.ordered[i], v)
        if self.keep:
            self.times.append(-1.0 if at_s is None else float(at_s))
            self.values.append(values)

    def forget_before(self, cutoff_s: float) -> None:
        while self.times and self.times[0] < cutoff_s:
            self.times.popleft()
            old = self.values.popleft()
            self.n -= 1
            for i, v in enumerate(old):
                self.sums[i] -= v
                if self.median:
                    del self.ordered[i][bisect.bisect_left(self.ordered[i], v)]

    def statistic(self) -> list[float]:
        """Each learner's mean loss (or median |error|) over the memory; 0 when it is empty."""
        if not self.n:
            return [0.0] * len(self.sums)
        if self.median:
            return [values[len(values) // 2] for values in self.ordered]
        return [s / self.n for s in self.sums]


def follow(statistic: list[float], n: int, kept: int, min_n: int, margin: float) -> int:
    """The learner to follow: the back-off (0) until the memory holds ``min_n`` judged waits;
    then the one followed so far, unless another's statistic is lower by more than ``margin``
    (hysteresis: a switch moves every told answer and the residuals behind the quantiles).
    Ties go to the lower index, the back-off."""
    if n < max(1, min_n):
        return 0
    best = min(range(len(statistic)), key=lambda i: (statistic[i], i))
    return best if statistic[best] < statistic[kept] - margin else kept


class RunningMedian:
    """The median of the last ``size`` values added (kept in arrival order and sorted); the
    ``window`` loss's per learner and top group (asad/learn/hedge.py)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.recent: deque[float] = deque()
        self.ordered: list[float] = []

    def add(self, value: float) -> None:
        self.recent.append(value)
        bisect.insort(self.ordered, value)
        if len(self.recent) > self.size:
            del self.ordered[bisect.bisect_left(self.ordered, self.recent.popleft())]

    def median(self) -> float:
        return self.ordered[len(self.ordered) // 2]


def window_losses(windows: dict[tuple[str, int], RunningMedian], group: str, errors: list[float],
                  size: int) -> dict[int, float]:
    """The ``window`` loss: each learner's median |error| over the group's last ``size`` waits,
    this wait's included (the score itself, per group: a top group or a meta group)."""
    out = {}
    for i, error in enumerate(errors):
        window = windows.get((group, i))
        if window is None:
            window = windows[(group, i)] = RunningMedian(size)
        window.add(error)
        out[i] = window.median()
    return out
