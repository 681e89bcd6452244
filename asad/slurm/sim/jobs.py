"""The simulator's record of one job: request, hidden truth, and what happened to it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from asad.slurm.backend import Dependency, JobState

if TYPE_CHECKING:
    from asad.slurm.sim.cluster import PartitionState

# Why a job is not in the eligible queue (pending reasons that do not depend on the scheduler).
WAIT_DEPENDENCY = "Dependency"
WAIT_BEGIN = "BeginTime"
WAIT_NEVER = "DependencyNeverSatisfied"


class SimJob:
    """Plain slotted record: the simulator creates ~100k of these per simulated month."""

    __slots__ = (
        "job_id", "name", "comment", "partition_names", "parts", "part", "nodes", "cpus",
        "cpus_per_node", "mem_per_node_mb", "time_limit_s", "submit_time", "eligible_time",
        "start_time", "end_time", "state", "wait_reason", "begin", "dependency", "deps_left",
        "dep_time", "runtime_s", "peak_mem_mb", "cpu_efficiency", "wait_for", "barrier_left",
        "work_start", "background", "alloc_nodes", "slots", "token", "sort_key", "queued",
        "exit_code", "signal", "seen_pass", "res_time_min", "dependents", "user", "accrue_time",
        "fail_code", "assoc", "begin_accrue", "phases",
    )

    def __init__(self, job_id: int, name: str, parts: list[PartitionState], nodes: int, cpus: int,
                 mem_per_node_mb: int, time_limit_s: int, submit_time: float, runtime_s: float,
                 background: bool):
        self.job_id = job_id
        self.name = name
        self.comment = ""
        self.parts = parts
        self.partition_names = ",".join(p.name for p in parts)
        self.part: PartitionState | None = None
        self.nodes = nodes
        self.cpus = cpus
        self.cpus_per_node = -(-cpus // nodes)
        self.mem_per_node_mb = mem_per_node_mb
        self.time_limit_s = time_limit_s
        self.submit_time = submit_time
        self.eligible_time: float | None = submit_time
        self.start_time: float | None = None
        self.end_time: float | None = None
        self.state = JobState.PENDING
        self.wait_reason: str | None = None  # set while not eligible
        self.begin: float | None = None
        self.dependency: Dependency | None = None
        self.deps_left = 0
        self.dep_time = submit_time
        self.runtime_s = runtime_s  # true run time on a speed-1.0 node
        self.peak_mem_mb: float | None = None  # true peak over the allocation
        self.cpu_efficiency = 1.0
        self.wait_for: tuple[int, ...] = ()
        self.barrier_left = 0
        self.work_start: float | None = None
        self.background = background
        self.alloc_nodes: list[int] = []
        self.slots: list[int] = []
        self.token = 0  # bumps whenever the planned end changes; stale end events are ignored
        self.sort_key: object = job_id
        self.queued = False
        self.exit_code: int | None = None
        self.signal: int | None = None
        self.seen_pass = -1
        self.res_time_min: float | None = None  # earliest backfill reservation ever given
        self.dependents: list[SimJob] | None = None
        self.user = False
        self.accrue_time = submit_time  # when multifactor's age starts (the eligible time)
        # A --begin in the future given with a dependency: Slurm sets the accrue time to it at
        # submission and, without accounting limits, a dependency does not clear it (priority.py)
        self.begin_accrue: float | None = None
        self.fail_code = 0  # true exit code: non-zero ends the job FAILED
        self.phases: tuple = ()  # a shared job's stages in turn: (run time, peak memory, exit code)
        self.assoc = 0  # fair-share user association (index into the scheduler's FairTree)

    @property
    def mem_total_mb(self) -> int:
        return self.mem_per_node_mb * self.nodes
