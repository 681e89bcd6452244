"""Job arrays in the simulator: an array job is its tasks, each an ordinary simulated job.

The array's id is its first task's (as in Slurm, ``<id>_<index>``); ``poll``, ``usage``, ``find``
and ``cancel`` of that id speak for every task (folded as the Slurm backend folds squeue's and
sacct's lines: ``asad.slurm.array_status``), and a dependency on it waits for every task. A
throttle ``%N`` lets task k start only after task k-N ended (``afterany``), so at most N run at
once; Slurm's own throttle may start a later task sooner, never more at once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from asad.common.arrays import parse_array
from asad.slurm.array_status import fold, fold_usage
from asad.slurm.backend import Dependency, DependencyType, JobRequest, JobStatus, Usage
from asad.slurm.sim import job_end
from asad.slurm.sim.jobs import SimJob


class Simulator(Protocol):
    """What the arrays need of the simulator that owns them (asad/slurm/sim/simulator.py), named
    here so that this module does not import the simulator that imports it."""

    jobs: dict[int, SimJob]
    sched: Any  # its blockers (job id -> reason) decide a pending task's reason

    def submit(self, req: JobRequest) -> int: ...


class SimArrays:
    def __init__(self) -> None:
        self.tasks: dict[int, list[int]] = {}  # array id -> its tasks' job ids, in index order
        self.array_of: dict[int, int] = {}  # a task's job id -> its array id

    def expand(self, job_ids: tuple[int, ...]) -> tuple[int, ...]:
        """Job ids with every array id replaced by its tasks' ids."""
        out: list[int] = []
        for jid in job_ids:
            out.extend(self.tasks.get(int(jid), [int(jid)]))
        return tuple(out)

    def submit(self, sim: Simulator, req: JobRequest) -> int:
        spec = parse_array(req.array)
        fail = set(req.truth.fail_tasks) if req.truth is not None else set()
        ids: list[int] = []
        for k, local in enumerate(spec.indices):
            task = replace(req, array=None, array_offset=0,
                           env={**req.env, "SLURM_ARRAY_TASK_ID": str(local + req.array_offset)})
            if req.truth is not None and local + req.array_offset in fail:
                task = replace(task, truth=replace(req.truth, exit_code=1, fail_tasks=()))
            if spec.throttle and k >= spec.throttle:
                task = replace(task, dependency=Dependency(DependencyType.AFTERANY, (ids[k - spec.throttle],)))
            ids.append(sim.submit(task))
        self.tasks[ids[0]] = ids
        for jid in ids:
            self.array_of[jid] = ids[0]
        return ids[0]

    def status(self, sim: Simulator, array_id: int) -> JobStatus:
        blockers = sim.sched.blockers.values()
        return fold(array_id, [(job_end.status(sim.jobs[j], blockers), 1) for j in self.tasks[array_id]])

    def usage(self, sim: Simulator, array_id: int) -> Usage | None:
        jobs = [sim.jobs[j] for j in self.tasks[array_id]]
        if not all(j.state.is_final for j in jobs):
            return None
        return fold_usage(array_id, [job_end.usage(j) for j in jobs])
