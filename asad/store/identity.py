"""Which file a store is, and whether it is still the file at its path.

An SQLite store deleted under a running daemon (``rm asad.db*``) stays open for the daemon, which
went on driving the unlinked file while ``asad submit`` and ``asad status`` created and read a new
one at the same path that the daemon never read (issue 36, item 3). The daemon compares the file it
opened with what the path names now (device and inode, one ``stat``) and stops when they differ.

Run folders are named by workflow id (``runs/<id>/``), and a new store numbers its workflows from 1
again: ``next_free_id`` makes a new workflow's id skip the folders an earlier store left, so that no
workflow writes among another's logs and end markers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from asad.common.config import sqlite_file


@dataclass(frozen=True)
class StoreFile:
    path: Path
    device: int
    inode: int

    @classmethod
    def of(cls, url: str) -> StoreFile | None:
        """The SQLite file ``url`` names, as it is now; None for a server's store (or no file)."""
        path = sqlite_file(url)
        if path is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        return cls(path, st.st_dev, st.st_ino)

    def gone(self) -> str | None:
        """What happened to the file when its path no longer names it (deleted, replaced), else None."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return f"the store {self.path} was deleted"
        except OSError:
            return None  # cannot tell (a flaky network file system): the store's own errors will say
        if (st.st_dev, st.st_ino) != (self.device, self.inode):
            return f"the store {self.path} was replaced by another file"
        return None


def highest_run_folder(run_dir: str | Path | None) -> int:
    """The highest workflow id with a folder in ``run_dir`` (0: none)."""
    if not run_dir:
        return 0
    try:
        names = os.listdir(run_dir)
    except OSError:
        return 0
    return max((int(n) for n in names if n.isdigit()), default=0)


def sqlite_absent(url: str) -> bool:
    """Whether ``url`` is an SQLite file that does not exist yet (opening it creates it)."""
    path = sqlite_file(url)
    return path is not None and not path.exists()
