"""A simulator whose background users stop submitting when their jobs pile up (the closed loop).

The decision is taken when an arrival comes due, so it needs two calls from the simulator's
arrival handler: ``workload.admit(arrival)`` before the job is created (False: drop it) and
``workload.submitted(arrival, job)`` after. Until ``Simulator._background_arrival`` makes them
itself, this subclass adds them; ``make_load_simulator`` is ``make_simulator`` with it.
"""

from __future__ import annotations

from asad.slurm.sim import simulator_config
from asad.slurm.sim.simulator import Simulator


class ClosedLoopSimulator(Simulator):
    def _background_arrival(self, arrival: tuple) -> None:
        load = self.workload
        if load is not None and not load.admit(arrival):
            self.counters["background_dropped"] = self.counters.get("background_dropped", 0) + 1
            return
        job_id = self._next_id
        super()._background_arrival(arrival)
        if load is not None:
            load.submitted(arrival, self.jobs[job_id])


def make_load_simulator(preset: str = "small", load: float | dict[str, float] | None = None,
                        seed: int = 0, priority: str = "fifo", backfill: str = "easy",
                        start_time: float | None = None, **overrides: object) -> ClosedLoopSimulator:
    """:func:`asad.slurm.sim.make_simulator`, with the background users' closed loop."""
    return ClosedLoopSimulator(simulator_config(preset, load, seed, priority, backfill, start_time,
                                                **overrides))
