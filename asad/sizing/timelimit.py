"""Time limits: learn how long a stage runs and ask for a limit that fits, with a margin.

Short limits backfill sooner, so a tight limit also shortens queue waits; a limit that
is too short ends in ``TIMEOUT`` and the retry (:func:`asad.sizing.retry.retry_request`)
asks for a longer one.

Run time is modelled as work-conserving: a sample that kept ``u`` cores busy for ``e``
seconds on ``c_i`` CPUs would take ``e × max(1, u/c) / max(1, u/c_i)`` on ``c`` CPUs (fewer
cores than it can use stretch it; more do not speed it up). A larger input than any seen
stretches the prediction in proportion.

The defaults (2 × the longest of the last 200 runs + 10 min, after 10 runs) are chosen for
bursts: when many tasks of a stage are submitted before the first ends, the first to end
are the shortest, and a limit learned from them alone times out the rest (measured with
``asad bench sizing --delayed`` on the six nf-core traces, 14,736 tasks: 1.5 × + 1 min after
3 runs caused 75 time-outs, these defaults 51; 4 when each run is known before the next starts).
``spread_k`` > 0 widens the margin where run times vary; it did not pay on those traces and is
off (docs/results/sizing.md).

The margin never takes a limit past the user's own: the runs fitted it, and a longer limit
would only make the job harder to backfill. A run predicted past it (a larger input, fewer
CPUs) does lengthen it, and so does a time-out.

A ``TIMEOUT`` proves the stage needs more than the limit it had: the learner keeps a floor,
the limit the retry asks for (:func:`asad.sizing.retry.retry_time_s`: 2 × the failed limit,
at least one minute more), and never proposes less on later runs, so a workflow that
timed out once does not time out again for the same reason. The partition's maximum
still caps the limit.
"""

from __future__ import annotations

import math
import numpy as np

from asad.sizing.base import Caps, GrowingColumns, Sample
from asad.sizing.retry import DEFAULT_GROWTH

MIN_LIMIT_S = 60


def stretched_elapsed_s(elapsed_s: float, cpu_usage: float | None, ran_cpus: int, cpus: int) -> float:
    """Run time of a recorded run if it had ``cpus`` CPUs instead of ``ran_cpus``."""
    if cpu_usage is None or cpu_usage <= 0:
        return elapsed_s
    return elapsed_s * max(1.0, cpu_usage / max(1, cpus)) / max(1.0, cpu_usage / max(1, ran_cpus))


class TimeLimitLearner:
    """Per stage: limit = (margin + spread_k × the runs' coefficient of variation) × the longest
    (stretched) recent run + slack, rounded up to a minute; the margin never takes it past the
    user's limit (only a predicted run or a time-out does)."""

    def __init__(self, margin: float = 2.0, slack_s: float = 600.0, min_samples: int = 10,
                 window: int = 200, spread_k: float = 0.0) -> None:
        self.margin, self.slack_s = float(margin), float(slack_s)
        self.spread_k = float(spread_k)
        self.min_samples = int(min_samples)
        self.window = int(window)  # the most recent runs only: a stage's run time drifts with its inputs
        self._runs = GrowingColumns(4)  # elapsed s, busy cores (0 = unknown), cpus, input bytes (0 = unknown)
        self.timeout_floor_s = 0  # after a TIMEOUT: the retry's limit, the least any later run gets
        self.timed_out_at_s = 0  # the longest limit that ended in TIMEOUT

    @property
    def n_runs(self) -> int:
        return self._runs.n

    def observe(self, sample: Sample) -> None:
        self._runs.append([sample.elapsed_s, sample.cpu_usage or 0.0, sample.cpus, sample.input_bytes or 0.0])

    def observe_timeout(self, limit_s: int) -> None:
        """An attempt with ``limit_s`` timed out: later runs get at least what its retry asks for."""
        self.timed_out_at_s = max(self.timed_out_at_s, int(limit_s))
        floor = int(math.ceil(max(DEFAULT_GROWTH * limit_s, limit_s + 60)))
        self.timeout_floor_s = max(self.timeout_floor_s, floor)

    def _stretched(self, cpus: int) -> np.ndarray:
        cols = self._runs.view()[-self.window:]
        elapsed, usage, ran = cols[:, 0], cols[:, 1], cols[:, 2]
        stretch = np.maximum(1.0, usage / max(1, cpus)) / np.maximum(1.0, usage / np.maximum(1.0, ran))
        return elapsed * np.where(usage > 0, stretch, 1.0)

    def predict_s(self, cpus: int, input_bytes: float | None = None) -> float | None:
        """The longest recent run, stretched to ``cpus`` and to the input size; None if too few."""
        if self._runs.n < self.min_samples:
            return None
        longest = float(np.max(self._stretched(cpus)))
        max_input = float(np.max(self._runs.view()[-self.window:, 3]))
        if input_bytes and max_input > 0 and input_bytes > max_input:
            longest *= input_bytes / max_input
        return longest

    def margin_for(self, cpus: int) -> float:
        """The margin over the longest run: wider where recent run times vary (coefficient of
        variation), so a steady stage gets a tight limit and an erratic one a loose limit."""
        if self.spread_k <= 0 or self._runs.n < 2:
            return self.margin
        runs = self._stretched(cpus)
        mean = float(np.mean(runs))
        return self.margin + self.spread_k * (float(np.std(runs)) / mean if mean > 0 else 0.0)

    def limit(self, default_s: int, cpus: int, input_bytes: float | None,
              caps: Caps | None) -> tuple[int, str]:
        longest = self.predict_s(cpus, input_bytes)
        if longest is None:
            limit_s = default_s
            why = f"time limit {default_s} s from the user ({self._runs.n} run(s) seen)"
        else:
            margin = self.margin_for(cpus)
            limit_s = int(math.ceil((margin * longest + self.slack_s) / 60.0) * 60)
            limit_s = max(MIN_LIMIT_S, limit_s)
            raw_s = margin * longest + self.slack_s
            why = (f"time limit {limit_s} s = {margin:.3g} × longest run {longest:.0f} s "
                   f"+ {self.slack_s:.0f} s over {min(self._runs.n, self.window)} runs"
                   + (f" ({raw_s:.0f} s, rounded up to whole minutes)" if limit_s > raw_s + 0.5 else ""))
            if limit_s > default_s >= longest:
                # The runs fit the user's limit (a time-out would have set the floor below): the
                # margin alone must not lengthen it, which only makes the job harder to backfill.
                # A run predicted past it (a larger input, fewer CPUs) does lengthen it.
                limit_s = default_s
                why += f", kept at the user's {default_s} s"
        if self.timeout_floor_s > limit_s:
            limit_s = self.timeout_floor_s
            why += (f", raised to {limit_s} s because an earlier attempt timed out at "
                    f"{self.timed_out_at_s} s")
        if caps is not None and caps.max_time_s is not None and limit_s > caps.max_time_s:
            limit_s = caps.max_time_s
            why += f", capped at the partition's {caps.max_time_s} s"
        return int(limit_s), why

    def to_dict(self) -> dict:
        return {"margin": self.margin, "slack_s": self.slack_s, "min_samples": self.min_samples,
                "window": self.window, "spread_k": self.spread_k, "runs": self._runs.view()[-self.window:].tolist(),
                "timeout_floor_s": self.timeout_floor_s, "timed_out_at_s": self.timed_out_at_s}

    @classmethod
    def from_dict(cls, d: dict) -> "TimeLimitLearner":
        t = cls(margin=d["margin"], slack_s=d["slack_s"], min_samples=d["min_samples"], window=d["window"],
                spread_k=float(d.get("spread_k", 0.0)))
        for row in d["runs"]:
            t._runs.append(row)
        t.timeout_floor_s = int(d.get("timeout_floor_s", 0))
        t.timed_out_at_s = int(d.get("timed_out_at_s", 0))
        return t
