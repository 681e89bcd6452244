"""slurmctld's time-limit check as 22.05 runs it: which instant kills a job past its limit.

``_slurmctld_background`` (src/slurmctld/controller.c) wakes every 10 x 100 ms (a little over a
second: ``loop_tick_s``) and runs ``job_time_limit()`` when ``difftime(now, last_timelimit_time) >=
PERIODIC_TIMEOUT`` (30, slurmctld.h), ``now`` being ``time(NULL)``: whole seconds. It then sets
``last_timelimit_time = now``. ``job_time_limit()`` (job_mgr.c) times a job out when
``job_ptr->end_time <= now - OverTimeLimit * 60``, where ``end_time`` is the whole-second start
plus the limit, and ``_job_timed_out`` records ``end_time = now``.

So the checks fall on the loop ticks whose whole second is 30 past the last check's (31 when the
drifting ticks skip a second), and a job dies at the first check whose whole second reaches its
whole-second start + limit. A continuous grid of period 30 x loop_tick_s drifts ~1.3 s over ten
minutes against that, and comparing fractional instants kills a job that started at 100.7 with a
60-s limit at 190.x instead of 160.x (Slurm: end_time 160 <= now 160): a job that ran 60 s in Slurm
ran 89 s in the simulator (issue 37).
"""

from __future__ import annotations

import bisect
import math
from functools import lru_cache

# Beyond this many checks from the loop's start, walking the checks costs more than it is worth:
# the drift-free closed form is used instead (long simulations with loop_tick_s = 1 take it anyway).
MAX_WALKED_CHECKS = 200_000


class LimitChecks:
    """The instants of slurmctld's time-limit checks for one loop start and tick length."""

    def __init__(self, origin: float, tick: float, period: int) -> None:
        self.origin, self.tick, self.period = origin, tick, period
        self.times: list[float] = []  # check instants (virtual seconds)
        self.seconds: list[int] = []  # time(NULL) at each check
        self._last_second = math.floor(origin)  # last_timelimit_time = now, before the loop
        self._k = 0

    def _extend(self) -> None:
        want = self._last_second + self.period
        k = max(self._k + 1, math.ceil((want - self.origin) / self.tick - 1e-9))
        while math.floor(self.origin + k * self.tick + 1e-9) < want:  # rounding at the boundary
            k += 1
        t = self.origin + k * self.tick
        self._k, self._last_second = k, math.floor(t + 1e-9)
        self.times.append(t)
        self.seconds.append(self._last_second)

    def kill_at(self, due_second: int) -> float:
        """The first check whose whole second is at or after ``due_second``."""
        if self.tick == 1.0 or (due_second - self.origin) / self.period > MAX_WALKED_CHECKS:
            # no drift: every check is exactly ``period`` ticks after the last
            base = math.floor(self.origin)
            m = max(1, math.ceil((due_second - base) / self.period))
            return self.origin + m * self.period * self.tick
        while not self.seconds or self.seconds[-1] < due_second:
            self._extend()
        return self.times[bisect.bisect_left(self.seconds, due_second)]

    def next_after(self, t: float) -> float:
        """The first check strictly after ``t`` (the walk's own start counts as a check)."""
        if t < self.origin:
            return self.origin
        if self.tick == 1.0 or (t - self.origin) / self.period > MAX_WALKED_CHECKS:
            m = math.floor((t - self.origin) / (self.period * self.tick) + 1e-9) + 1
            return self.origin + m * self.period * self.tick
        while not self.times or self.times[-1] <= t:
            self._extend()
        return self.times[bisect.bisect_right(self.times, t)]

    def last_at_or_before(self, t: float) -> float | None:
        """The last check at or before ``t`` (None: before the walk's start)."""
        if t < self.origin:
            return None
        nxt = self.next_after(t)
        if self.tick == 1.0 or (t - self.origin) / self.period > MAX_WALKED_CHECKS:
            return nxt - self.period * self.tick
        i = bisect.bisect_right(self.times, t)
        return self.times[i - 1] if i else self.origin


def first_full_pass(origin: float, tick: float, first_sched_tick: int, sched_interval: int,
                    compiled_interval: int = 60) -> float:
    """The loop tick of slurmctld's first full main pass after its start (controller.c,
    ``_slurmctld_background``): ``last_full_sched_time`` is the loop's start second, and a tick runs
    a full pass once ``difftime(now, last_full_sched_time) >= sched_interval``, tested before the
    tick's batch pass. ``sched_interval`` holds the compiled-in 60 s until the first ``_schedule()``
    (job_scheduler.c) parses SchedulerParameters, at tick ``first_sched_tick``: so with
    sched_interval=5 and that pass at tick 5, the first full pass comes at tick 6, not 5."""
    base = math.floor(origin)
    k = 1
    while True:
        second = math.floor(origin + k * tick + 1e-9)
        if second - base >= (compiled_interval if k <= first_sched_tick else sched_interval):
            return origin + k * tick
        k += 1


@lru_cache(maxsize=32)
def limit_checks(origin: float, tick: float, period: float) -> LimitChecks:
    return LimitChecks(origin, tick, int(round(period)))
