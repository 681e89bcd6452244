"""What sbatch refuses, in Slurm's own words."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from asad.slurm.backend import JobRequest, SubmitRejected, UnknownJob

if TYPE_CHECKING:
    from asad.slurm.sim.cluster import PartitionState

_PREFIX = "sbatch: error: Batch job submission failed: "
INVALID_PARTITION = _PREFIX + "Invalid partition name specified"
NODE_CONFIG_UNAVAILABLE = _PREFIX + "Requested node configuration is not available"
INVALID_TIME_LIMIT = _PREFIX + "Requested time limit is invalid (missing or exceeds some limit)"
INVALID_NODE_COUNT = _PREFIX + "Node count specification invalid"
DEPENDENCY_PROBLEM = _PREFIX + "Job dependency problem"
MEM_EXCLUSIVE = "sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."


class DependencyRejected(SubmitRejected, UnknownJob):
    """A dependency names a job the controller does not know: both a rejected submission and an
    unknown job, so callers catching either see it."""


def rejected(slurm_message: str) -> SubmitRejected:
    return SubmitRejected(slurm_message, slurm_message)


def admit(req: JobRequest, parts: Sequence[PartitionState | None]) -> tuple[list[PartitionState], int, int, int]:
    """(the partitions that can ever run it, nodes, CPUs, memory per node) of a request to
    ``parts`` (None: a name the cluster does not have), or SubmitRejected with Slurm's message.
    A request to several partitions is refused only when none of them could run it."""
    if any(part is None for part in parts):
        raise rejected(INVALID_PARTITION)
    if req.mem_mb is not None and req.mem_per_cpu_mb is not None:
        raise rejected(MEM_EXCLUSIVE)
    if req.nodes < 1 or req.ntasks < 1 or req.cpus_per_task < 1:
        raise rejected(INVALID_NODE_COUNT)
    nodes = req.nodes
    cpus = max(req.cpus, nodes)  # Slurm gives every allocated node at least one CPU
    cpn = -(-cpus // nodes)
    first_failure = None
    ok: list[PartitionState] = []
    mem_per_node = 0
    for part in parts:
        if req.mem_mb is not None:
            mem = req.mem_mb
        elif req.mem_per_cpu_mb is not None:
            mem = req.mem_per_cpu_mb * cpn
        else:
            mem = part.spec.def_mem_per_cpu_mb * cpn
        failure = None
        if req.time_limit_s <= 0 or (part.spec.max_time_s is not None and req.time_limit_s > part.spec.max_time_s):
            failure = INVALID_TIME_LIMIT
        elif part.spec.max_nodes is not None and nodes > part.spec.max_nodes:
            failure = INVALID_NODE_COUNT
        elif not part.fits_empty(nodes, cpn, mem):
            failure = NODE_CONFIG_UNAVAILABLE
        if failure is None:
            if not ok:
                mem_per_node = mem
            ok.append(part)
        elif first_failure is None:
            first_failure = failure
    if not ok:
        raise rejected(first_failure or NODE_CONFIG_UNAVAILABLE)
    return ok, nodes, cpus, int(mem_per_node)
