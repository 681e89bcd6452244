"""Geometry keys, fine to coarse: the fields of a key string and the coarser keys a cold key
borrows from (``DEFAULT_LEVELS`` for ``experts``, ``BACKOFF_LEVELS`` for ``median-backoff``)."""

from __future__ import annotations

from collections.abc import Sequence

# Coarser levels, applied to the parsed fields of a key. "cpus2" = cpus rounded up to a
# power of two. Fields a key does not have are skipped; levels equal to a finer one are
# dropped. The finest level is always the key itself.
DEFAULT_LEVELS: tuple[tuple[str, ...], ...] = (
    ("cluster", "partition", "qos", "nodes", "cpus", "walltime"),  # the geometry, any account
    ("cluster", "partition", "qos", "nodes", "cpus2", "walltime"),
    ("cluster", "partition", "qos", "walltime"),
    ("cluster",),
)
# ``median-backoff``'s levels, chosen on the weeks before 2021-06-10 (docs/results/learn.md):
# the same account's jobs first (waits depend on the account's fair share far more than on
# the exact geometry: a new geometry of a known account is predicted best by that account's
# other jobs of the same walltime bucket), then the geometry for any account. In real use a
# key has no account (one user's asad sees its own jobs only), so the account levels become
# "my jobs of this partition / walltime bucket / cluster".
BACKOFF_LEVELS: tuple[tuple[str, ...], ...] = (
    ("cluster", "account", "partition", "qos", "nodes", "cpus2", "walltime"),
    ("cluster", "account", "partition", "qos", "walltime"),
    ("cluster", "account", "walltime"),
    ("cluster", "account"),
    ("cluster", "partition", "qos", "nodes", "cpus", "walltime"),  # the geometry, any account
    ("cluster", "partition", "qos", "nodes", "cpus2", "walltime"),
    ("cluster", "partition", "qos", "walltime"),
    ("cluster",),
)
# ``median-backoff``'s pending floor (chosen on the weeks before 2021-06-10): the same account's
# jobs of this partition and walltime bucket; in real use, one user's own jobs of that class.
PENDING_FLOOR: tuple[str, ...] = ("cluster", "account", "partition", "qos", "walltime")


def parse_key(key: str) -> dict[str, str]:
    """Fields of a geometry key string (``cluster=a|nodes=1|walltime<=3h``); {} for ""."""
    fields: dict[str, str] = {}
    for part in key.split("|") if key else ():
        if part.startswith("walltime"):
            fields["walltime"] = part[len("walltime"):]
        else:
            name, _, value = part.partition("=")
            fields[name] = value
    return fields


def _power_of_two(value: str) -> str:
    try:
        n = int(value)
    except ValueError:
        return value
    return str(1 if n <= 1 else 1 << (n - 1).bit_length())


def key_levels_by_slot(key: str, levels: Sequence[Sequence[str]] = DEFAULT_LEVELS) -> list[str]:
    """Each configured coarser level of the key, in order (duplicates kept)."""
    fields = parse_key(key)
    out = []
    for level in levels:
        parts = []
        for name in level:
            source = "cpus" if name == "cpus2" else name
            if source not in fields:
                continue
            value = _power_of_two(fields[source]) if name == "cpus2" else fields[source]
            parts.append(f"walltime{value}" if name == "walltime" else f"{source}={value}")
        # A level is named like a key with those fields: the same set of jobs is the same node,
        # whichever key it is reached from (cpus=3 rounded up meets the key with cpus=4).
        out.append("|".join(parts))
    return out


def key_levels(key: str, levels: Sequence[Sequence[str]] = DEFAULT_LEVELS) -> list[str]:
    """The key, then its coarser keys (duplicates dropped), fine to coarse."""
    out = [key]
    for coarse in key_levels_by_slot(key, levels):
        if coarse not in out:
            out.append(coarse)
    return out
