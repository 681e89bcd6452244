"""The simulator with the background users' closed loop: users who stop submitting when their
jobs pile up (``load_users.py``).

The decision is taken when an arrival comes due, so it needs two calls from the simulator's
arrival handler: ``workload.admit(arrival)`` before the job is created (False: the user lets the
submission go) and ``workload.submitted(arrival, job)`` after. Until
``Simulator._background_arrival`` makes them itself, this subclass adds them;
``make_simulator`` builds it. A bare ``Simulator`` queues every arrival (the open stream).
"""

from __future__ import annotations

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
