"""Is an ``sbatch`` of an earlier asad still running on this host?

A daemon killed while ``sbatch`` runs leaves that ``sbatch`` running (a SIGKILL does not take the
children along), and a slow or busy slurmctld may accept its job seconds or minutes later. A new
daemon must not declare the submission intent abandoned (and submit the stage again) while such an
``sbatch`` can still land. Every ``sbatch`` asad runs carries the intent's tag as
``--comment=<tag>`` on its command line, so the processes still submitting a tag are found by their
command line alone: no pid to record after the spawn (a kill between the spawn and that record
would lose it), and no pid reuse to fear (a reused pid does not carry the tag). A wrapper placed
before ``sbatch`` in ``PATH`` (a site's, or a slow stand-in) carries the same arguments and counts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

PROC = "/proc"


def submitting(tags: Iterable[str], proc: str = PROC) -> set[str] | None:
    """The tags among ``tags`` that a process on this host is still submitting (a command line
    holding ``--comment=<tag>``); None when this host cannot tell (no ``/proc``)."""
    wanted = {f"--comment={t}".encode(): t for t in tags}
    if not wanted:
        return set()
    if not os.path.isdir(proc):
        return None
    own = str(os.getpid())
    found: set[str] = set()
    try:
        entries = os.listdir(proc)
    except OSError:
        return None
    for name in entries:
        if not name.isdigit() or name == own:
            continue
        try:
            with open(os.path.join(proc, name, "cmdline"), "rb") as fh:
                args = fh.read().split(b"\0")
        except OSError:  # ended meanwhile, or another user's
            continue
        for arg in args:
            tag = wanted.get(arg)
            if tag is not None:
                found.add(tag)
    return found
