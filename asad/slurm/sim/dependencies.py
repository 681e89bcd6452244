"""When a job's ``--dependency`` on another job is satisfied, as slurmctld decides it."""

from __future__ import annotations

from asad.slurm.backend import DependencyType, JobState
from asad.slurm.sim.controller_loop import EV_ELIGIBLE
from asad.slurm.sim.jobs import WAIT_BEGIN, WAIT_DEPENDENCY, WAIT_NEVER, SimJob

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


class DependencyEvents:
    """The simulator's side of dependencies and barriers: a job that arrives waiting on others,
    becomes eligible, or is released when a target starts or ends (a mixin of
    :class:`asad.slurm.sim.simulator.Simulator`, whose clock, queue and events it uses)."""

    def _arrive(self, job: SimJob, dep_targets: list[SimJob]) -> None:
        """A new job: resolve what it waits for, then queue it or park it until eligible."""
        now = self._now
        job.dep_time = now
        if dep_targets:
            dep = job.dependency
            offset = offset_s(dep)
            never = False
            for target in dep_targets:
                status = dep_status(dep.type, target, offset)
                if status is None:
                    job.deps_left += 1
                    if target.dependents is None:
                        target.dependents = []
                    target.dependents.append([DEP_KIND, job, False])
                elif status == NEVER:
                    never = True
                else:
                    job.dep_time = max(job.dep_time, status)
            if never:
                job.wait_reason = WAIT_NEVER
                job.eligible_time = None
                return
            if job.deps_left:
                job.wait_reason = WAIT_DEPENDENCY
                job.eligible_time = None
                return
        self._eligible_at(job, defer=False)

    def _eligible_at(self, job: SimJob, defer: bool) -> None:
        t = max(job.submit_time, job.dep_time, job.begin or 0.0)
        job.eligible_time = t
        if t > self._now or defer:
            job.wait_reason = WAIT_BEGIN if job.begin is not None and t == job.begin else WAIT_DEPENDENCY
            self._push(t, EV_ELIGIBLE, job, 0)
            return
        job.wait_reason = None
        self.sched.enqueue(job, self._now)
        self._changed()
        self._pass_wanted = True

    def _on_target_event(self, target: SimJob) -> None:
        """A job started or ended: settle the dependencies and barriers waiting on it."""
        entries = target.dependents
        if not entries:
            return
        for entry in entries:
            if entry[2]:
                continue
            kind, job = entry[0], entry[1]
            if kind == BARRIER_KIND:
                if target.state.is_final:
                    entry[2] = True
                    self._barrier_update(job, target)
                continue
            if job.state is not JobState.PENDING or job.wait_reason != WAIT_DEPENDENCY:
                entry[2] = True
                continue
            dep = job.dependency
            status = dep_status(dep.type, target, offset_s(dep))
            if status is None:
                continue
            entry[2] = True
            if status == NEVER:
                job.wait_reason = WAIT_NEVER
                continue
            job.deps_left -= 1
            job.dep_time = max(job.dep_time, status)
            if job.deps_left == 0:
                # Deferred: this may run inside a scheduling pass (a start satisfying ``after``).
                self._eligible_at(job, defer=True)

    def _barrier_update(self, job: SimJob, target: SimJob) -> None:
        if job.state is not JobState.RUNNING or job.work_start is not None:
            return
        if target.state is not JobState.COMPLETED:
            self._plan_end(job, self._now, JobState.FAILED)
            return
        job.barrier_left -= 1
        if job.barrier_left == 0:
            self._plan_work(job, self._now)
