"""The retry rule after an out-of-memory kill or a time-out (pure functions).

Memory (``OUT_OF_MEMORY``, or ``FAILED`` with the peak at the limit):

* the failed attempt's peak is a lower bound on the task's need, not a sample;
* the retry asks for the largest peak ever seen for the stage when that is above the
  failed request (at least ``min_growth`` × the failed request), otherwise ``growth`` ×
  the failed request (double by default), or the geometric mean of the failed request
  and the user's memory if that is more; so it
  is always ≥ 2 × the failed request or ≥ the largest peak seen, and never less than
  before;
* capped at the partition's memory per node; when the failed attempt already had that
  much, :class:`SizingError` says the stage cannot fit and what the limit is.

Time (``TIMEOUT``): ``growth`` × the failed limit or the learned limit if longer, capped
at the partition's maximum time, then :class:`SizingError`.
"""

from __future__ import annotations

import math
from typing import Any

from asad.sizing.base import Caps, Outcome, Request, SizingError

DEFAULT_GROWTH = 2.0
DEFAULT_MIN_GROWTH = 1.25
# asad's rule after an OOM kill: the cheaper of double the killed request and the largest peak
# seen (issue 39's second round, chosen on the three tuning traces: sizey-like 92.46 → 92.58 % MAQ
# there at 2.12 → 2.49 % failed attempts; docs/results/sizing.md). "max-peak" was the rule before.
ASAD_RETRY_MODE = "smallest"


def as_caps(limit: Any) -> Caps:
    """Accept :class:`Caps` or a PartitionInfo-like object (``cpus_per_node``, ``mem_per_node_mb``)."""
    if isinstance(limit, Caps):
        return limit
    return Caps.from_partition(limit)


def is_retryable(outcome: Outcome) -> bool:
    """True when a bigger request can help: an out-of-memory kill or a time-out."""
    return outcome.out_of_memory or outcome.timed_out


def retry_memory_mb(failed_mem_mb: int, failed_peak_mb: float | None, history_max_peak_mb: float | None,
                    max_mem_mb: int, *, default_mem_mb: int | None = None, growth: float = DEFAULT_GROWTH,
                    min_growth: float = DEFAULT_MIN_GROWTH, mode: str = ASAD_RETRY_MODE) -> int:
    """Memory for the retry of an attempt killed at ``failed_mem_mb``.

    ``mode="smallest"``: the smaller of double the failed request and the largest peak seen
    (when that is above the lower bound), the cheapest retry the rule allows, at the price
    of more second kills (asad's default, :data:`ASAD_RETRY_MODE`). ``mode="max-peak"``: the largest peak seen if it is above the lower bound,
    else ``growth`` × the failed request; when the user's ``default_mem_mb`` is above that,
    the geometric mean of the failed request and the default if that is more (a task far
    above anything seen climbs toward the user's value in fewer kills than by doublings,
    without jumping to a possibly huge default). ``mode="double"``: max(growth × failed,
    largest peak seen), the plainer reading (always at least double).
    """
    if failed_mem_mb >= max_mem_mb:
        raise SizingError(
            f"the stage ran out of memory with {failed_mem_mb} MB, which is already the partition's "
            f"limit of {max_mem_mb} MB per node: it cannot fit in this partition")
    lower_mb = max(float(failed_mem_mb), float(failed_peak_mb or 0.0))
    doubled = growth * failed_mem_mb
    seen = float(history_max_peak_mb or 0.0)
    if mode == "double":
        new = max(doubled, seen)
    elif mode == "smallest":  # the smaller of the two ways the rule allows
        new = min(doubled, max(seen, min_growth * lower_mb)) if seen > lower_mb else doubled
    elif mode == "max-peak":
        new = max(seen, min_growth * lower_mb) if seen > lower_mb else doubled
        if default_mem_mb and seen <= lower_mb and default_mem_mb > doubled:
            # far below the user's value: climb geometrically toward it rather than by doublings
            new = max(doubled, math.sqrt(lower_mb * default_mem_mb))
    else:
        raise ValueError(f"unknown retry mode {mode!r} (max-peak, double or smallest)")
    # The killed attempt's own peak is a floor in every mode: a retry below what it was already
    # seen using dies again (seen on the real cluster: killed at 200M with a 616M peak, the
    # doubling asked for 400M).
    new = max(new, min_growth * lower_mb) if lower_mb > failed_mem_mb else new
    new_mb = int(math.ceil(max(new, failed_mem_mb + 1)))
    return min(new_mb, max_mem_mb)


def retry_time_s(failed_time_s: int, learned_time_s: int | None, max_time_s: int | None, *,
                 growth: float = DEFAULT_GROWTH) -> int:
    if max_time_s is not None and failed_time_s >= max_time_s:
        raise SizingError(
            f"the stage timed out at {failed_time_s} s, which is already the partition's maximum "
            f"time of {max_time_s} s: it cannot finish in this partition")
    new_s = int(math.ceil(max(growth * failed_time_s, float(learned_time_s or 0), failed_time_s + 60)))
    return new_s if max_time_s is None else min(new_s, max_time_s)


def retry_request(failed: Outcome, history_max_peak_mb: float | None, limit: Any, *,
                  default: Request | None = None, learned_time_s: int | None = None,
                  growth: float = DEFAULT_GROWTH,
                  min_growth: float = DEFAULT_MIN_GROWTH, mode: str = ASAD_RETRY_MODE) -> Request:
    """The request for the next attempt of a task whose attempt ``failed``.

    ``default`` is the user's request for the stage (its memory is a floor for a doubling
    retry). Raises :class:`SizingError` when the stage cannot fit the partition
    (``limit``: a :class:`Caps` or a PartitionInfo), ``ValueError`` when the failure is not
    about size.
    """
    caps = as_caps(limit)
    req = failed.request
    if failed.out_of_memory:
        mem = retry_memory_mb(req.mem_mb, failed.peak_mem_mb, history_max_peak_mb, caps.max_mem_mb,
                              default_mem_mb=None if default is None else default.mem_mb, growth=growth, min_growth=min_growth, mode=mode)
        return Request(cpus=req.cpus, mem_mb=mem, time_s=req.time_s)
    if failed.timed_out:
        time_s = retry_time_s(req.time_s, learned_time_s, caps.max_time_s, growth=growth)
        return Request(cpus=req.cpus, mem_mb=req.mem_mb, time_s=time_s)
    raise ValueError(f"state {failed.state} is not an out-of-memory kill or a time-out: "
                     "a bigger request would not help")
