"""Named clusters users can simulate."""

from __future__ import annotations

from asad.slurm.sim.config import PartitionSpec

DAY = 86400

PRESETS: dict[str, tuple[PartitionSpec, ...]] = {
    # For examples and tests: one small partition that a handful of jobs can fill.
    "small": (
        PartitionSpec("main", nodes=4, cores_per_node=28, mem_per_node_mb=128000,
                      max_time_s=7 * DAY, default=True, load=0.7),
    ),
    # HPC2N Kebnekaise's compute nodes as in the ASA paper: 602 x 28 cores, 128 GB.
    "hpc2n": (
        PartitionSpec("batch", nodes=602, cores_per_node=28, mem_per_node_mb=128000,
                      max_time_s=7 * DAY, default=True, load=1.2),
    ),
    # UPPMAX Rackham as in the ASA paper: 486 x 20 cores, 128 GB, 10-day limit.
    "uppmax": (
        PartitionSpec("core", nodes=486, cores_per_node=20, mem_per_node_mb=128000,
                      max_time_s=10 * DAY, default=True, load=1.2),
    ),
    # For placement: fast nodes (true run time halved) that everyone wants, and slower nodes
    # with a shorter queue.
    "two-speed": (
        PartitionSpec("fast", nodes=16, cores_per_node=28, mem_per_node_mb=128000,
                      max_time_s=7 * DAY, default=True, speed=2.0, load=1.2),
        PartitionSpec("slow", nodes=32, cores_per_node=28, mem_per_node_mb=128000,
                      max_time_s=7 * DAY, speed=1.0, load=0.8),
    ),
}


def preset(name: str) -> tuple[PartitionSpec, ...]:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown simulator preset {name!r}; presets: {', '.join(sorted(PRESETS))}") from None
