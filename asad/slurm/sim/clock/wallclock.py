"""The simulator on the wall clock: virtual time = start + elapsed wall time x speed.

Used by ``asad daemon --backend sim``: every Backend call first plays the virtual cluster forward
to the present, so a daemon polling on real time sees a cluster that lives ``speed`` times faster.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from asad.slurm.backend import JobRequest, JobStatus, PartitionInfo, Usage
from asad.slurm.sim.simulator import Simulator


class WallClockSimulator:
    name = "sim"

    def __init__(self, sim: Simulator, speed: float = 1.0,
                 wall_clock: Callable[[], float] = time.monotonic):
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.sim = sim
        self.speed = speed
        self._wall = wall_clock
        self._wall0 = wall_clock()
        self._virtual0 = sim.now()

    def _sync(self) -> float:
        target = self._virtual0 + (self._wall() - self._wall0) * self.speed
        if target > self.sim.now():
            self.sim.run_until(target)
        return self.sim.now()

    def now(self) -> float:
        return self._sync()

    def submit(self, req: JobRequest) -> int:
        self._sync()
        return self.sim.submit(req)

    def cancel(self, job_ids: list[int]) -> None:
        self._sync()
        self.sim.cancel(job_ids)

    def poll(self, job_ids: list[int]) -> dict[int, JobStatus]:
        self._sync()
        return self.sim.poll(job_ids)

    def find(self, tag: str) -> dict[int, JobStatus]:
        self._sync()
        return self.sim.find(tag)

    def usage(self, job_ids: list[int]) -> dict[int, Usage]:
        self._sync()
        return self.sim.usage(job_ids)

    def estimate_start(self, req: JobRequest) -> float | None:
        self._sync()
        return self.sim.estimate_start(req)

    def partitions(self) -> list[PartitionInfo]:
        return self.sim.partitions()

    def pending_load(self):  # noqa: ANN201 -- asad.slurm.pending_load.PendingLoad
        self._sync()
        return self.sim.pending_load()
