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


@lru_cache(maxsize=32)
def limit_checks(origin: float, tick: float, period: float) -> LimitChecks:
    return LimitChecks(origin, tick, int(round(period)))
