"""GPUs in Slurm's GRES text: a stage's ``gres:`` (``gpu:2``, ``gpu:a100:1,mps:50``) and a node's
as ``sinfo -o %G`` prints it (``gpu:2``, ``gpu:a100:2(S:0-1),gpu:v100:1``, ``(null)``)."""

from __future__ import annotations

import re

_SOCKETS_RE = re.compile(r"\([^)]*\)")  # sinfo's "(S:0-1)": which sockets, not a count


def gpus_in(gres: str | None) -> int | None:
    """How many GPUs the GRES text names (per node); 0 for none; None when it cannot be read."""
    if gres is None:
        return None
    text = _SOCKETS_RE.sub("", gres.strip())
    if text in ("", "null"):
        return 0
    total = 0
    for item in text.split(","):
        parts = item.strip().split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) == 1 or (len(parts) == 2 and not parts[1].isdigit()):
            total += 1  # "gpu" or "gpu:a100": one
        elif parts[-1].isdigit():
            total += int(parts[-1])
        else:
            return None
    return total
