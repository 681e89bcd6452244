"""Big Job: one allocation of the largest stage geometry; the stages run inside it in turn.
One queue wait; the most core-hours (the allocation idles around small stages).

The engine handles this strategy at workflow level (one job, tagged stage ``*``); this
module builds that job's shape (``asad.daemon.wiring.CommandBuilder`` writes its script: every stage
with ``srun`` of its own size).
"""

from __future__ import annotations

from asad.spec.load import WorkflowSpec


def big_job_shape(spec: WorkflowSpec) -> dict:
    """Largest geometry over the stages, and the sum of their time limits."""
    nodes = max(s.nodes for s in spec.stages)
    cpus_per_node = max(s.cpus_per_node for s in spec.stages)  # Slurm places whole tasks
    mem_per_node = max((_mem_per_node(s) or 0) for s in spec.stages) or None
    return {
        "nodes": nodes,
        "ntasks": nodes,
        "cpus_per_task": cpus_per_node,
        "mem_mb": mem_per_node,
        "time_s": sum(s.time_s for s in spec.stages),
    }


def _mem_per_node(stage) -> int | None:  # noqa: ANN001
    total = stage.total_mem_mb()
    return None if total is None else -(-total // stage.nodes)
