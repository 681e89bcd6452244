"""When a job's ``--dependency`` on another job is satisfied, as slurmctld decides it."""

from __future__ import annotations

from asad.slurm.backend import DependencyType, JobState
from asad.slurm.sim.jobs import SimJob

NEVER = -1.0  # a dependency that can no longer be satisfied
# what an entry of a job's ``dependents`` waits for: a Slurm dependency, or (SimTruth.wait_for)
# a barrier the job's own work waits at once it runs
DEP_KIND, BARRIER_KIND = 0, 1


def offset_s(dep) -> float:  # noqa: ANN001 -- asad.slurm.backend.Dependency
    """``after:<id>+<min>``: the minutes after the target's start."""
    return dep.offset_min * 60.0 if dep.type is DependencyType.AFTER else 0.0


def dep_status(dtype: DependencyType, target: SimJob, offset: float) -> float | None:
    """When ``target`` satisfied the dependency, NEVER if it cannot, None if not yet known."""
    if dtype is DependencyType.AFTER:
        if target.start_time is not None:
            return target.start_time + offset
        if target.state.is_final:
            return target.end_time
        return None
    if not target.state.is_final:
        return None
    ok = target.state is JobState.COMPLETED
    if dtype is DependencyType.AFTEROK:
        return target.end_time if ok else NEVER
    if dtype is DependencyType.AFTERNOTOK:
        return NEVER if ok else target.end_time
    return target.end_time
