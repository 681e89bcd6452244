"""Folders only their owner can enter: asad's run folders hold every stage's log and the markers
the stage wrapper waits for (docs/operations.md: 0700).

``Path.mkdir(parents=True, mode=0o700)`` applies the mode to the last folder only: the parents
it makes get the umask's (0755), so ``runs/`` was readable by every user of the cluster while
``runs/<id>/`` was not.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE = 0o700


def make_private_dir(path: Path, *, tighten: Path | None = None) -> None:
    """Make ``path`` and every missing folder above it 0700 (whatever the umask). ``tighten``: a
    folder among them, existing already, that is made 0700 too when it is this user's own and others
    can enter it (asad's run root, made 0755 by an earlier version)."""
    path = Path(path)
    missing = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE)
        except FileExistsError:  # another process made it first: its mode is checked below if asked
            continue
        os.chmod(folder, PRIVATE)  # the umask may have taken bits off (or a umask of 0 kept more)
    if tighten is not None:
        _tighten(Path(tighten))


def _tighten(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        info = os.fstat(fd)
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, PRIVATE)
    except OSError:
        pass
    finally:
        os.close(fd)
