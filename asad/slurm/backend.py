"""The backend protocol: what asad needs from a Slurm, and nothing more.

Every backend (the simulator, the ``sbatch``/``squeue``/``sacct`` CLI, pyslurm)
implements :class:`Backend`. The engine only ever talks to this protocol, so the
same decisions run on virtual time in the simulator and on the wall clock
against a real slurmctld.

Times are POSIX seconds (floats). The simulator's clock starts at a fixed epoch
so that daily load cycles line up with real dates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable


class JobState(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    NODE_FAIL = "NODE_FAIL"

    @property
    def is_final(self) -> bool:
        return self not in (JobState.PENDING, JobState.RUNNING)

    @property
    def short(self) -> str:
        """squeue's two-letter code (``ST`` column)."""
        return _SHORT[self]


_SHORT = {
    JobState.PENDING: "PD",
    JobState.RUNNING: "R",
    JobState.COMPLETED: "CD",
    JobState.FAILED: "F",
    JobState.CANCELLED: "CA",
    JobState.TIMEOUT: "TO",
    JobState.OUT_OF_MEMORY: "OOM",
    JobState.NODE_FAIL: "NF",
}


class DependencyType(StrEnum):
    AFTEROK = "afterok"
    AFTERANY = "afterany"
    AFTERNOTOK = "afternotok"
    AFTER = "after"  # start (not end) of the given jobs, plus an optional offset


@dataclass(frozen=True)
class Dependency:
    type: DependencyType
    job_ids: tuple[int, ...]
    offset_min: int = 0  # only for ``after``: eligible this many minutes after the jobs start

    def to_slurm(self) -> str:
        """The ``--dependency`` value, e.g. ``afterok:12:13`` or ``after:12+5``."""
        if self.type is DependencyType.AFTER and self.offset_min:
            return "after:" + ":".join(f"{j}+{self.offset_min}" for j in self.job_ids)
        return f"{self.type.value}:" + ":".join(str(j) for j in self.job_ids)


@dataclass(frozen=True)
class SimTruth:
    """What the simulator plays out for a job; real backends ignore it.

    ``wait_for`` is the barrier of a proactively submitted stage that has no Slurm
    dependency: its allocation sits idle until those jobs have ended (and ends
    ``FAILED`` at once if one of them did not complete).
    """

    runtime_s: float
    peak_mem_mb: float | None = None
    cpu_efficiency: float = 1.0
    wait_for: tuple[int, ...] = ()
    exit_code: int = 0  # non-zero: the job ends FAILED with this code after runtime_s
    fail_tasks: tuple[int, ...] = ()  # an array job: these task indices end FAILED (exit 1)
    # a shared job (asad.strategies.share): its stages one after another, each (run time, peak
    # memory, exit code); the job ends where the first of them runs out of memory or fails
    phases: tuple[tuple[float, float | None, int], ...] = ()


@dataclass(frozen=True)
class JobRequest:
    name: str
    command: str  # a command line or a whole batch script (starting with ``#!``)
    partition: str = ""  # one name or a comma list (``sbatch -p a,b``); "" = default
    account: str | None = None
    qos: str | None = None
    nodes: int = 1
    ntasks: int = 1
    cpus_per_task: int = 1
    mem_mb: int | None = None  # per node (``--mem``)
    mem_per_cpu_mb: int | None = None  # ``--mem-per-cpu``; at most one of the two
    time_limit_s: int = 3600
    dependency: Dependency | None = None
    begin: float | None = None  # ``--begin``, POSIX seconds
    comment: str = ""
    workdir: str | None = None
    output: str | None = None
    error: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    truth: SimTruth | None = None
    constraint: str | None = None  # --constraint (node features)
    exclusive: bool = False  # --exclusive (whole nodes)
    gpus: int | None = None  # --gpus
    gres: str | None = None  # --gres
    mail_type: str | None = None  # --mail-type
    mail_user: str | None = None  # --mail-user
    array: str | None = None  # --array (``0-99%10``): one array job; see asad.common.arrays
    array_offset: int = 0  # added to SLURM_ARRAY_TASK_ID in the job (a chunk of a larger array)

    @property
    def cpus(self) -> int:
        return self.ntasks * self.cpus_per_task

    @property
    def partitions(self) -> list[str]:
        return [p for p in self.partition.split(",") if p]

    def total_mem_mb(self) -> int | None:
        """Memory over the whole allocation, whichever way it was asked for."""
        if self.mem_mb is not None:
            return self.mem_mb * self.nodes
        if self.mem_per_cpu_mb is not None:
            return self.mem_per_cpu_mb * self.cpus
        return None


@dataclass(frozen=True)
class JobStatus:
    job_id: int
    state: JobState
    reason: str = "None"  # Priority, Resources, Dependency, BeginTime, DependencyNeverSatisfied, ...
    name: str = ""
    comment: str = ""
    partition: str = ""
    submit_time: float | None = None
    eligible_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    alloc_cpus: int = 0
    alloc_nodes: int = 0
    nodelist: str = ""
    time_limit_s: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    array_tasks: dict[str, int] | None = None  # an array job: its tasks per squeue state code
    account: str = ""  # the account and QOS Slurm charged (a job that names none gets the user's defaults)
    qos: str = ""

    @property
    def wait_s(self) -> float | None:
        """Queue wait as ASA learns it: start - eligible (None until started)."""
        if self.start_time is None or self.eligible_time is None:
            return None
        return max(0.0, self.start_time - self.eligible_time)


@dataclass(frozen=True)
class Usage:
    """Accounting of a finished job (``sacct``: MaxRSS of the batch step, TotalCPU, Elapsed)."""

    job_id: int
    peak_rss_mb: float | None
    total_cpu_s: float | None
    elapsed_s: float | None
    req_mem_mb: float | None = None  # total over the allocation
    alloc_cpus: int | None = None


@dataclass(frozen=True)
class PartitionInfo:
    name: str
    nodes: int
    cpus_per_node: int
    mem_per_node_mb: int
    max_time_s: int | None = None  # None = UNLIMITED
    max_nodes: int | None = None  # per job; None = UNLIMITED
    default: bool = False
    gpus_per_node: int | None = None  # the most any node has (sinfo %G); None = not known

    @property
    def total_cpus(self) -> int:
        return self.nodes * self.cpus_per_node


class SlurmError(Exception):
    """Base of every backend failure."""


class SubmitRejected(SlurmError):
    """Slurm refused the job (bad partition, too big, unknown account ...); permanent.

    ``slurm_message`` is Slurm's own text, shown verbatim to the user.
    """

    def __init__(self, message: str, slurm_message: str = ""):
        super().__init__(message)
        self.slurm_message = slurm_message or message


class SubmitDeferred(SlurmError):
    """Slurm refused the job for now (a site's limit on queued jobs per user or association):
    submit it again later, when some of the user's jobs have left the queue."""

    def __init__(self, message: str, slurm_message: str = ""):
        super().__init__(message)
        self.slurm_message = slurm_message or message


class SlurmUnavailable(SlurmError):
    """slurmctld did not answer, timed out, or answered garbage; transient: back off and retry."""


class UnknownJob(SlurmError):
    """A dependency names a job the controller does not know."""


@runtime_checkable
class Backend(Protocol):
    """One Slurm, seen through the few calls asad makes. Batched by design."""

    name: str

    def submit(self, req: JobRequest) -> int: ...

    def cancel(self, job_ids: list[int]) -> None: ...

    def poll(self, job_ids: list[int]) -> dict[int, JobStatus]: ...

    def find(self, tag: str) -> dict[int, JobStatus]: ...

    def usage(self, job_ids: list[int]) -> dict[int, Usage]: ...

    def estimate_start(self, req: JobRequest) -> float | None: ...

    def partitions(self) -> list[PartitionInfo]: ...

    def now(self) -> float: ...
