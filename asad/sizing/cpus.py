"""CPUs a sizing agent may take away: none, unless the stage opts in.

A program started with ``-t 28`` or ``OMP_NUM_THREADS=28`` (or an MPI program) breaks or
slows when it gets fewer CPUs than it was written for, so the user's ``cpus`` is a floor
by default. A stage may allow fewer with ``sizing_cpus: shrink`` (never with
``ntasks > 1``, which the workflow parser refuses): then the agent's CPU proposal stands.
"""

from __future__ import annotations

from asad.sizing.base import Request

KEEP = "keep"  # the default: never fewer CPUs than the workflow file asks for
SHRINK = "shrink"  # the agent may propose fewer (single-task stages only)
MODES = (KEEP, SHRINK)


def keep_user_cpus(proposed: Request, user_cpus: int, mode: str = KEEP) -> tuple[Request, str]:
    """The request with at least ``user_cpus`` CPUs unless ``mode`` is ``shrink``, and why.

    The second value is a sentence for ``asad explain`` when the CPUs differ from the
    file's (kept, or shrunk with the user's leave), else ``""``.
    """
    if mode not in MODES:
        raise ValueError(f"unknown sizing_cpus mode {mode!r} ({', '.join(MODES)})")
    if proposed.cpus >= user_cpus:
        return proposed, ""
    if mode == SHRINK:
        return proposed, (f"CPUs {user_cpus} -> {proposed.cpus}: the stage allows fewer CPUs "
                          f"(sizing_cpus: shrink) and its recent runs kept fewer busy")
    kept = Request(cpus=user_cpus, mem_mb=proposed.mem_mb, time_s=proposed.time_s)
    return kept, (f"CPUs kept at the file's {user_cpus} (the agent proposed {proposed.cpus} from the "
                  f"busy cores of earlier runs; add sizing_cpus: shrink to the stage to allow fewer)")
