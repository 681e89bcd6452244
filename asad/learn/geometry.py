"""The job-geometry key: which jobs share one learned queue wait.

The paper learns one wait per core count. Waits also depend on where the job goes and
how long it asks for (backfill fits short jobs into gaps), so by default the key is

    (cluster, partition, qos, nodes, cpus, walltime bucket)

where the walltime bucket is the index of the first edge in ``walltime_edges_s`` the
time limit does not exceed (edges default to 15 min, 1 h, 3 h, 12 h, 1 d, 3 d; longer
limits share the last bucket). Which fields count is configurable: drop ``qos`` on a
cluster that has one, drop ``cpus`` to pool all sizes, or make ``cpus`` coarser with
``cpus_buckets`` (e.g. powers of two).

Keys are plain strings (``str(key)``) so the store can index them, e.g.
``cluster=cedar|partition=cpubase_bycore_b1|qos=|nodes=1|cpus=4|walltime<=3h``.
"""

from __future__ import annotations

from dataclasses import dataclass

from asad.common.units import format_duration

KEY_FIELDS = ("cluster", "partition", "qos", "nodes", "cpus", "walltime")
# Fields a key may have beyond the default ones: ``account`` (the benches key real jobs by
# account too, since one user's asad only ever sees its own account's jobs).
OPTIONAL_FIELDS = ("account",)
DEFAULT_WALLTIME_EDGES_S: tuple[int, ...] = (900, 3600, 3 * 3600, 12 * 3600, 86400, 3 * 86400)


@dataclass(frozen=True)
class GeometryKeyConfig:
    fields: tuple[str, ...] = KEY_FIELDS
    walltime_edges_s: tuple[int, ...] = DEFAULT_WALLTIME_EDGES_S
    cpus_power_of_two: bool = False  # round cpus up to a power of two (coarser keys, more data each)

    def __post_init__(self) -> None:
        unknown = set(self.fields) - set(KEY_FIELDS) - set(OPTIONAL_FIELDS)
        if unknown:
            raise ValueError(f"unknown geometry fields {sorted(unknown)}; known: {KEY_FIELDS + OPTIONAL_FIELDS}")
        if list(self.walltime_edges_s) != sorted(set(self.walltime_edges_s)):
            raise ValueError("walltime_edges_s must be strictly increasing")


def walltime_bucket(time_limit_s: float, edges_s: tuple[int, ...] = DEFAULT_WALLTIME_EDGES_S) -> str:
    """``"<=1h"``-style label of the first edge >= the limit, or ``">3d"`` beyond the last."""
    for edge in edges_s:
        if time_limit_s <= edge:
            return "<=" + _short(edge)
    return ">" + _short(edges_s[-1]) if edges_s else "any"


def _short(seconds: int) -> str:
    if seconds % 86400 == 0:
        return f"{seconds // 86400}d"
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return format_duration(seconds)


def _power_of_two_at_least(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def geometry_key(*, cluster: str = "", partition: str = "", qos: str | None = None, nodes: int = 1,
                 cpus: int = 1, time_limit_s: float = 3600, account: str | None = None,
                 config: GeometryKeyConfig | None = None) -> str:
    """The key a job's wait is learned under (see the module docstring)."""
    config = config or GeometryKeyConfig()
    cpus_value = _power_of_two_at_least(cpus) if config.cpus_power_of_two else int(cpus)
    values = {
        "cluster": cluster or "",
        "account": account or "",
        "partition": partition or "",
        "qos": qos or "",
        "nodes": str(int(nodes)),
        "cpus": str(cpus_value),
        "walltime": walltime_bucket(time_limit_s, config.walltime_edges_s),
    }
    parts = []
    for name in config.fields:
        parts.append(f"walltime{values[name]}" if name == "walltime" else f"{name}={values[name]}")
    return "|".join(parts)


def request_key(request, cluster: str = "", config: GeometryKeyConfig | None = None) -> str:
    """The key of an :class:`asad.slurm.backend.JobRequest` (a partition list keys as given)."""
    return geometry_key(cluster=cluster, partition=request.partition, qos=request.qos, nodes=request.nodes,
                        cpus=request.cpus, time_limit_s=request.time_limit_s, config=config)
