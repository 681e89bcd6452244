"""The queue's pending load as ``squeue`` shows it to any user: which jobs, of every user, wait
for resources in each partition and how many CPUs each asks for.

A fresh job's wait on a queue where age counts for little is the time until a hole opens that fits
it, and how many CPUs already queue for such holes tells a calm spell from a congested one (issue
35: on the simulator's ``multifactor-limits`` the CPUs queued in jobs of at least a node's width
correlate +0.68 with a fresh job's log wait; Slurm's own ``--test-only`` forecast −0.22 to −0.29).
The wait learner conditions on that (``asad.learn.pressure``).

Only jobs that compete *now* count: a job held by a dependency, a future ``--begin`` or a hold is
not in Slurm's scheduling queue (the simulator's queue holds only eligible jobs, and squeue's
``Reason`` tells them apart on a real cluster). Array tasks count one by one (``squeue -r``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asad.slurm.slurm_text import SlurmParseError

# squeue's reasons of a pending job that is not competing for resources yet
_NOT_COMPETING = ("Dependency", "BeginTime", "JobHeld", "DependencyNeverSatisfied")
SEP = "|"
# ``squeue`` arguments: every user's pending jobs (hidden partitions too), array tasks one per row;
# partition list, CPUs, reason
SQUEUE_ARGS = ["--noheader", "--all", "--array", "--states=PENDING", f"--format=%P{SEP}%C{SEP}%r"]


@dataclass(frozen=True)
class PendingLoad:
    """Every user's pending jobs that compete for resources: the CPUs of each, per partition (a job
    queued in several partitions counts in each). ``taken_at``: when it was seen (POSIX s)."""

    cpus_by_partition: dict[str, tuple[int, ...]] = field(default_factory=dict)
    taken_at: float = 0.0

    def pressure(self, partition: str, min_cpus: int) -> int:
        """CPUs queued in ``partition`` (every partition for "") in jobs of at least ``min_cpus``."""
        parts = self.cpus_by_partition if not partition else {
            p: self.cpus_by_partition.get(p, ()) for p in partition.split(",") if p}
        return int(sum(c for cpus in parts.values() for c in cpus if c >= min_cpus))


def competing(reason: str) -> bool:
    """Whether a pending job with this squeue reason is in the scheduling queue."""
    reason = reason.strip()
    return not any(reason.startswith(r) for r in _NOT_COMPETING)


def parse_pending_load(text: str, taken_at: float = 0.0, command: str = "squeue") -> PendingLoad:
    """``squeue`` output with :data:`SQUEUE_ARGS`' format (``partition|cpus|reason`` per row)."""
    out: dict[str, list[int]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split(SEP)
        if len(parts) != 3 or not parts[1].strip().isdigit():
            raise SlurmParseError(command, text, f"expected partition{SEP}cpus{SEP}reason, got {line!r}")
        if not competing(parts[2]):
            continue
        for part in parts[0].strip().split(","):
            if part:
                out.setdefault(part, []).append(int(parts[1]))
    return PendingLoad({p: tuple(c) for p, c in out.items()}, taken_at)
