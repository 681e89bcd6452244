"""A full disk under asad's run folder: say so, with the fix.

The stage wrapper writes each stage's log and markers to the run folder (``runs/<id>/``), and Slurm
the job's own ``--output`` there. When that disk is full a running stage loses its output, its
command may fail on a write, and its end marker is never written (the audit of 2026-11-27 saw
stages fail with no word why). ``asad status`` and the daemon's log say it plainly, with the way
out: free space, or give the stages an ``output:`` on another disk.
"""

from __future__ import annotations

import os
from pathlib import Path

from asad.common.units import format_mem

FULL_BELOW_MB = 16.0  # less free than this: a stage's log or marker may not fit (a block or two per file)


def free_mb(path: Path) -> float | None:
    """Free space (for a user, not root's reserve) on the file system holding ``path`` or, while it
    does not exist yet, its nearest existing parent; None if it cannot be told."""
    for folder in (Path(path), *Path(path).parents):
        try:
            st = os.statvfs(folder)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        return st.f_bavail * st.f_frsize / 2**20
    return None


def full_disk_note(run_dir: Path) -> str | None:
    """What to tell the user when the disk holding ``run_dir`` is (nearly) full; None otherwise."""
    free = free_mb(run_dir)
    if free is None or free >= FULL_BELOW_MB:
        return None
    return (f"the disk holding asad's run folder {run_dir} is full ({format_mem(free)} free): running stages "
            "lose their logs and end markers there, and a command that writes its output fails. Fix: free space "
            "on it, or give the stages an output: file on another disk (their log goes there; see "
            "docs/workflow.md), or move asad's state (ASAD_STATE_DIR) and its store to a disk with room")
