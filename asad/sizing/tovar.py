"""Tovar et al. 2018 (CCTools / Work Queue): first allocation from the history of peaks.

Peaks go to a histogram with fixed buckets (CCTools: 250 MB for memory, 1 core for
cores); each bucket's key is its top, the candidate allocation. With ``a_m`` the largest
value seen (where a task that overflows its first allocation is retried), over the
empirical distribution of (peak, run time):

* ``min-waste``: ``argmin_a  a·τ̄ + a_m·Σ_{r>a} t_r / N`` (expected allocated amount·time);
* ``max-throughput``: ``argmax_a  [(a_m/a)·P(r≤a) + P(r>a)] / [τ̄ + Σ_{r>a} t_r / N]``.

Both resources are sized this way (memory and cores, cores on the busy cores measured).
CCTools runs tasks at the user's (maximum) size until its category is in steady state
(25 completions by default) and refreshes the first allocation every 25 completions;
here ``warmup`` completions (default 10, so that processes with tens of tasks are sized
at all) and a refresh at every completion.
"""

from __future__ import annotations

import math

import numpy as np

from asad.sizing.agent import AgentBase
from asad.sizing.base import Request

MODES = ("min-waste", "max-throughput")


def first_allocation(values: np.ndarray, times: np.ndarray, bucket: float, mode: str) -> float:
    """Tovar's first allocation over samples ``values`` with run times ``times``."""
    keys = np.ceil(np.maximum(values, 1e-9) / bucket) * bucket
    uniq = np.unique(keys)
    n = len(values)
    a_m = float(uniq[-1])
    tau_mean = float(np.sum(times)) / n
    best_a, best_score = a_m, None
    for a in uniq:
        over = keys > a
        t_over = float(np.sum(times[over])) / n
        if mode == "min-waste":
            score = -(a * tau_mean + a_m * t_over)
        elif mode == "max-throughput":
            p_le = float(np.count_nonzero(~over)) / n
            denom = tau_mean + t_over
            score = ((a_m / a) * p_le + (1.0 - p_le)) / denom if denom > 0 else -math.inf
        else:
            raise ValueError(f"unknown Tovar mode {mode!r} (one of {', '.join(MODES)})")
        if best_score is None or score > best_score:
            best_a, best_score = float(a), score
    return best_a


class TovarAgent(AgentBase):
    kind = "tovar"

    def __init__(self, mode: str = "min-waste", warmup: int = 10, bucket_mb: float = 250.0, **kw) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown Tovar mode {mode!r} (one of {', '.join(MODES)})")
        super().__init__(mode=mode, warmup=warmup, bucket_mb=bucket_mb, **kw)
        self.mode, self.warmup, self.bucket_mb = mode, int(warmup), float(bucket_mb)
        self.name = f"tovar-{mode}"

    def _size(self, default: Request, input_bytes: float | None):
        samples = self.history.samples
        if len(samples) < max(1, self.warmup):
            return None
        cols = self.history.columns()
        times = np.maximum(cols[:, 2], 1e-3)
        mem = first_allocation(cols[:, 0], times, self.bucket_mb, self.mode)
        usage = np.where(np.isnan(cols[:, 3]), float(default.cpus), cols[:, 3])
        cpus = int(first_allocation(np.maximum(usage, 0.01), times, 1.0, self.mode))
        return max(1, cpus), self._cap_mem(mem), (
            f"over {len(samples)} runs the first allocation is {mem:.0f} MB "
            f"({self.bucket_mb:g} MB buckets) and {cpus} CPU(s)")
