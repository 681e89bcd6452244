"""The runtime state the engine reasons about: workflows, their stages, and the Slurm jobs
submitted for them. Plain dataclasses; the store persists them, the engine mutates them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from asad.slurm.backend import JobRequest, JobState, JobStatus
from asad.slurm.pending_load import competing
from asad.spec.load import WorkflowSpec


class WorkflowState(StrEnum):
    ACTIVE = "ACTIVE"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def is_final(self) -> bool:
        return self is not WorkflowState.ACTIVE


class StageState(StrEnum):
    WAITING = "WAITING"  # predecessors not done and nothing planned yet
    PLANNED = "PLANNED"  # a submission time is chosen (ASA) but not reached
    SUBMITTED = "SUBMITTED"  # a job exists; PENDING in Slurm
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def is_final(self) -> bool:
        return self in (StageState.COMPLETED, StageState.FAILED, StageState.CANCELLED)


class JobPhase(StrEnum):
    """Where a submission attempt is in asad's own write-ahead protocol."""

    SUBMITTING = "SUBMITTING"  # intent written, sbatch may or may not have happened
    LIVE = "LIVE"  # Slurm gave a job id; not final yet
    DONE = "DONE"  # final state and accounting recorded
    ABANDONED = "ABANDONED"  # the intent never reached Slurm (found absent after a crash)


@dataclass
class JobRecord:
    """One submission attempt (one Slurm job)."""

    row_id: int | None
    workflow_id: int
    stage: str  # for big-job: "*" (one job for all stages)
    attempt: int
    tag: str
    phase: JobPhase
    request: JobRequest
    geometry_key: str
    job_id: int | None = None
    submitted_at: float | None = None
    state: JobState = JobState.PENDING
    reason: str = ""
    eligible_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    alloc_cpus: int = 0
    alloc_nodes: int = 0
    partition: str = ""
    account: str = ""  # as Slurm says (the user's default account when the stage names none)
    qos: str = ""
    nodelist: str = ""
    exit_code: int | None = None
    peak_rss_mb: float | None = None
    cpu_s: float | None = None
    wait_learned: bool = False  # its wait was fed to the learner already
    est_wait_s: float | None = None  # the wait estimate used when planning this submission
    planned_start: float | None = None  # when we wanted it to start (the predecessor's expected end)
    cancelled_by_asad: bool = False  # e.g. the naive mode's "too early" resubmission
    array_tasks: dict[str, int] | None = None  # an array job: its tasks per squeue state code ("R": 3, ...)
    # what the wait learner told this job at submission (asad.learn.experts.Told, as JSON), handed
    # back with its wait so the quantiles are checked against what was said, not what is said now
    wait_told: list | None = None
    # a shared job (asad.strategies.share): the stages that run after ``stage`` inside this job, in
    # order; each of them points at this job as its current one
    rides: tuple[str, ...] = ()
    # when and where the intent was written (before sbatch): after a crash, whether an earlier
    # daemon's sbatch may still land it is judged from these (asad.daemon.intents)
    intent_at: float | None = None
    submit_host: str = ""
    # the queue's pending load (CPUs queued in competing jobs, asad.learn.pressure) when this job
    # became eligible, as the nearest poll saw it; learned with its wait
    queue_pressure: float | None = None

    @property
    def stages(self) -> tuple[str, ...]:
        """Every stage this job runs, in order."""
        return (self.stage, *self.rides)

    def apply_status(self, st: JobStatus) -> bool:
        """Copy a fresh status in; return whether anything the engine cares about changed."""
        before = (self.state, self.start_time, self.end_time, self.eligible_time, self.reason)
        self.state = st.state
        self.reason = st.reason
        self.eligible_time = st.eligible_time if st.eligible_time is not None else self.eligible_time
        self.start_time = st.start_time if st.start_time is not None else self.start_time
        self.end_time = st.end_time if st.end_time is not None else self.end_time
        self.alloc_cpus = st.alloc_cpus or self.alloc_cpus
        self.alloc_nodes = st.alloc_nodes or self.alloc_nodes
        self.partition = st.partition or self.partition
        self.account = st.account or self.account
        self.qos = st.qos or self.qos
        self.nodelist = st.nodelist or self.nodelist
        if st.exit_code is not None:
            self.exit_code = st.exit_code
        tasks_changed = st.array_tasks is not None and st.array_tasks != self.array_tasks
        if st.array_tasks is not None:
            self.array_tasks = dict(st.array_tasks)
        return tasks_changed or before != (self.state, self.start_time, self.end_time, self.eligible_time,
                                           self.reason)

    @property
    def queued(self) -> bool:
        """Pending in Slurm's scheduling queue now: eligible and not held back by a dependency, a
        future ``--begin`` or a hold (squeue's reason says which). Such a job's wait so far is
        the wait learner's pending floor (``Learned.note_pending``); a held job's is no news of
        the queue."""
        return self.state is JobState.PENDING and self.eligible_time is not None and competing(self.reason)

    @property
    def wait_s(self) -> float | None:
        if self.start_time is None or self.eligible_time is None:
            return None
        return max(0.0, self.start_time - self.eligible_time)


@dataclass
class StageRun:
    workflow_id: int
    name: str
    state: StageState = StageState.WAITING
    attempt: int = 0  # number of attempts submitted so far
    job_row: int | None = None  # the JobRecord.row_id of the current attempt
    planned_submit_at: float | None = None
    est_wait_s: float | None = None
    est_runtime_s: float | None = None
    # per-attempt request overrides (sizing / OOM and TIMEOUT retries)
    cpus: int | None = None
    mem_mb: int | None = None
    time_s: int | None = None
    size_why: str = ""
    plan_why: str = ""  # the strategy's rule and numbers for the current attempt (``asad explain``)
    start_time: float | None = None  # when the stage's work began (after any barrier)
    end_time: float | None = None
    message: str = ""
    retry_from: int = 0  # attempts numbered up to this ran before an ``asad resume``: not counted as retries

    def wait_again(self, message: str | None = None) -> None:
        """Back to WAITING, for a job of its own: no current job, and no start or end of work."""
        self.state, self.job_row, self.start_time, self.end_time = StageState.WAITING, None, None, None
        if message is not None:
            self.message = message


@dataclass
class WorkflowRun:
    id: int
    spec: WorkflowSpec
    strategy: str
    mode: str
    state: WorkflowState = WorkflowState.ACTIVE
    created_at: float = 0.0
    ended_at: float | None = None
    message: str = ""
    cancel_requested: bool = False
    stages: dict[str, StageRun] = field(default_factory=dict)
    jobs: list[JobRecord] = field(default_factory=list)
    _job_index: dict[int, JobRecord] = field(default_factory=dict, repr=False, compare=False)

    def job(self, row_id: int | None) -> JobRecord | None:
        if row_id is None:
            return None
        # An index rebuilt on a miss (a job that just got its row id): a scan of ``jobs`` per
        # lookup made every tick quadratic in the stages of a huge workflow.
        job = self._job_index.get(row_id)
        if job is None or job.row_id != row_id:
            self._job_index = {j.row_id: j for j in self.jobs if j.row_id is not None}
            job = self._job_index.get(row_id)
        return job

    def current_job(self, stage: str) -> JobRecord | None:
        return self.job(self.stages[stage].job_row)

    def current_jobs(self, stage: str) -> list[JobRecord]:
        """The current attempt's jobs: one, or an array stage's chunks (one array job each)."""
        job = self.current_job(stage)
        if job is None:
            return []
        if self.spec.stage(stage).array is None:
            return [job]
        return [j for j in self.jobs if j.stage == stage and j.attempt == job.attempt
                and j.phase is not JobPhase.ABANDONED]
