"""What one key (fine or coarse) has seen: its waits, the experts' statistics of them (the last
wait, running medians, the long median with its change point), timed snapshots of what the
experts said, and the residuals of the answers it gave."""

from __future__ import annotations

import bisect
import math
from collections import deque
from typing import Any

from asad.learn.calibration import ResidualWindow

STATS = ("last", "median5", "median20", "median100", "median-long")
_WINDOWS = (1, 5, 20, 100)
HISTORY = 2000  # timed snapshots kept per key (at least this many, at most twice)


def count_bucket(count: int) -> int:
    """0: one wait, 1: 2-4, 2: 5-19, 3: 20 or more (strata of the residuals)."""
    return 0 if count < 2 else 1 if count < 5 else 2 if count < 20 else 3


def median_of_sorted(values: list[float]) -> float:
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


class KeyStats:
    """What one key (fine or coarse) has seen: its waits and its residuals, in log10(1 + s)."""

    __slots__ = ("_experts", "change_log10", "change_run", "history", "history_n", "history_s", "long_memory",
                 "misses", "n", "only_long", "recent", "residual_window", "residuals", "sorted", "sorted_residuals",
                 "strata", "trimmed")

    def __init__(self, long_memory: int, residual_window: int, change_factor: float = 3.0,
                 change_run: int = 0, only_long: bool = False) -> None:
        self.only_long = only_long  # "backoff" reads only the long median: skip the windows
        self.long_memory, self.residual_window = long_memory, residual_window
        self.change_log10, self.change_run = math.log10(change_factor), change_run
        self.misses = 0  # > 0: that many waits in a row far above the long median; < 0: below
        self.recent: deque[float] = deque()
        self.sorted: list[float] = []
        self.residuals: deque[float] = deque()
        self.sorted_residuals: list[float] = []
        self.n = 0
        self._experts: list[float] | None = None
        # (time, experts) after each timed wait: what the experts said at an earlier instant
        self.history_s: list[float] = []
        self.history: list[list[float]] = []
        self.history_n: list[int] = []  # waits behind the long median at each snapshot
        self.trimmed = False
        # residuals per stratum (only at a coarsest key, with residuals_from="stratum")
        self.strata: dict[str, ResidualWindow] = {}

    def experts_at(self, t: float | None) -> list[float] | None:
        """The experts as they stood at time ``t`` (None: now); None when the key had no wait yet."""
        snapshot = self.snapshot_at(t)
        return None if snapshot is None else snapshot[0]

    def snapshot_at(self, t: float | None) -> tuple[list[float], int] | None:
        """(experts, waits behind the long median) at time ``t`` (None: now); None before any wait."""
        if t is None or not self.history_s or t >= self.history_s[-1]:
            return (self.experts(), len(self.sorted)) if self.n else None
        i = bisect.bisect_right(self.history_s, t)
        if i == 0:
            return (self.history[0], self.history_n[0]) if self.trimmed else None
        return self.history[i - 1], self.history_n[i - 1]

    def add(self, y: float, at_s: float | None = None, detect_change: bool = True) -> None:
        detect = self.change_run and detect_change
        if detect and self.sorted:
            gap = y - median_of_sorted(self.sorted)
            if gap > self.change_log10:
                self.misses = self.misses + 1 if self.misses > 0 else 1
            elif gap < -self.change_log10:
                self.misses = self.misses - 1 if self.misses < 0 else -1
            else:
                self.misses = 0
        self.recent.append(y)
        bisect.insort(self.sorted, y)
        if len(self.recent) > self.long_memory:
            old = self.recent.popleft()
            del self.sorted[bisect.bisect_left(self.sorted, old)]
        if detect and abs(self.misses) >= self.change_run:
            # the queue changed: the long history no longer describes it
            keep = list(self.recent)[-self.change_run:]
            self.recent.clear()
            self.recent.extend(keep)
            self.sorted = sorted(keep)
            self.misses = 0
        self.n += 1
        self._experts = None
        if at_s is not None:
            self.history_s.append(at_s)
            self.history.append(self.experts())
            self.history_n.append(len(self.sorted))
            if len(self.history_s) > 2 * HISTORY:
                del self.history_s[:HISTORY], self.history[:HISTORY], self.history_n[:HISTORY]
                self.trimmed = True

    def add_residual(self, r: float) -> None:
        self.residuals.append(r)
        bisect.insort(self.sorted_residuals, r)
        if len(self.residuals) > self.residual_window:
            old = self.residuals.popleft()
            del self.sorted_residuals[bisect.bisect_left(self.sorted_residuals, old)]

    def experts(self) -> list[float]:
        """The experts' estimates (log10(1 + s)), in :data:`STATS` order; cached until the next wait."""
        if self._experts is None and self.only_long:
            self._experts = [median_of_sorted(self.sorted)] * len(STATS)
        if self._experts is None:
            recent = self.recent
            n = len(recent)
            out = []
            for k in _WINDOWS:
                if k == 1:
                    out.append(recent[-1])
                else:
                    tail = sorted(recent[i] for i in range(max(0, n - k), n))
                    out.append(median_of_sorted(tail))
            out.append(median_of_sorted(self.sorted))
            self._experts = out
        return self._experts

    def stratum(self, name: str, aci_space: str = "level") -> ResidualWindow:
        window = self.strata.get(name)
        if window is None:
            window = self.strata[name] = ResidualWindow(self.residual_window, aci_space)
        return window

    def to_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"recent": list(self.recent), "residuals": list(self.residuals), "n": self.n,
                                 "misses": self.misses}
        if self.strata:
            state["strata"] = {name: window.to_state() for name, window in sorted(self.strata.items())}
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any], long_memory: int, residual_window: int,
                   change_factor: float = 3.0, change_run: int = 0, only_long: bool = False) -> "KeyStats":
        stats = cls(long_memory, residual_window, change_factor, change_run, only_long)
        stats.misses = int(state.get("misses", 0))
        for y in state["recent"][-long_memory:]:
            stats.recent.append(float(y))
        stats.sorted = sorted(stats.recent)
        for r in state["residuals"][-residual_window:]:
            stats.residuals.append(float(r))
        stats.sorted_residuals = sorted(stats.residuals)
        stats.n = int(state["n"])
        for name, window in state.get("strata", {}).items():
            stats.strata[name] = ResidualWindow.from_state(window, residual_window)
        return stats
