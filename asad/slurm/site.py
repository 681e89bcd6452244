"""The site a workflow is checked against before it is stored: its partitions, asked without
building a backend (``asad submit`` stores and wakes; the daemon builds the backend that acts).

Slurm is asked with ``sinfo`` and ``scontrol`` (the same query and parsing as the CLI backend's,
with its timeout and retries); the simulator's partitions are read from its preset's
configuration, so checking a workflow never starts a simulation.
"""

from __future__ import annotations

from asad.slurm.backend import PartitionInfo, SlurmError
from asad.slurm.cli import query_partitions
from asad.slurm.runner import RetryPolicy, SlurmCommands


def site_partitions(backend: str, *, sim_preset: str, timeout_s: float) -> list[PartitionInfo]:
    """Partitions of the cluster that ``backend`` ("slurm" or "sim") names."""
    if backend == "sim":
        return preset_partitions(sim_preset)
    if backend == "slurm":
        return query_partitions(SlurmCommands(policy=RetryPolicy(timeout_s=timeout_s)))
    raise SlurmError(f"unknown backend {backend!r}: use 'sim' (the simulator) or 'slurm' (a real cluster)")


def preset_partitions(preset: str) -> list[PartitionInfo]:
    """A simulator preset's partitions, as its simulator's ``partitions()`` would list them."""
    from asad.slurm.sim.presets import preset as preset_specs

    specs = preset_specs(preset)
    default = next((spec for spec in specs if spec.default), specs[0])
    return [PartitionInfo(name=spec.name, nodes=spec.nodes, cpus_per_node=spec.cores_per_node,
                          mem_per_node_mb=spec.mem_per_node_mb, max_time_s=spec.max_time_s,
                          max_nodes=spec.max_nodes, default=spec is default)
            for spec in specs]
