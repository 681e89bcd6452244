"""The stage keys that pass straight to ``sbatch`` or into the batch script: ``setup``, ``output``,
``mail``, ``constraint``, ``exclusive``, ``gpus`` and ``gres``. Each may also sit in ``defaults``.

Validation here only catches what Slurm would refuse for certain or what would break the batch
script; whether a feature, a GPU type or a mail address exists is the cluster's to say (Slurm's
refusal is shown verbatim, with a hint: ``asad/slurm/refusals.py``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SLURM_OPTION_KEYS = ("setup", "output", "mail", "constraint", "exclusive", "gpus", "gres")
MAIL_KEYS = ("type", "user")
MAIL_TYPES = ("NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND", "STAGE_OUT", "TIME_LIMIT",
              "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS")
_CONSTRAINT_RE = re.compile(r"[A-Za-z0-9_.&|,*\[\]()!:\-]+\Z")
_GRES_RE = re.compile(r"[A-Za-z0-9_]+(:[A-Za-z0-9_.\-]+)*(,[A-Za-z0-9_]+(:[A-Za-z0-9_.\-]+)*)*\Z")
_MAIL_USER_RE = re.compile(r"[^\s,;'\"]+\Z")


@dataclass(frozen=True)
class SlurmOptions:
    """What a stage asks of Slurm beyond its size, and the lines its batch script runs first."""

    setup: tuple[str, ...] = ()
    output: str | None = None  # --output pattern (relative to the workdir); also the command's log
    mail_type: str | None = None
    mail_user: str | None = None
    constraint: str | None = None
    exclusive: bool = False
    gpus: int | None = None
    gres: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"setup": list(self.setup), "output": self.output, "mail_type": self.mail_type,
                "mail_user": self.mail_user, "constraint": self.constraint, "exclusive": self.exclusive,
                "gpus": self.gpus, "gres": self.gres}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> SlurmOptions:
        data = data or {}
        return cls(setup=tuple(data.get("setup") or ()), output=data.get("output"), mail_type=data.get("mail_type"),
                   mail_user=data.get("mail_user"), constraint=data.get("constraint"),
                   exclusive=bool(data.get("exclusive", False)), gpus=data.get("gpus"), gres=data.get("gres"))


def check_setup(lines: list[str]) -> str | None:
    """A problem with ``setup`` lines, or None."""
    for line in lines:
        if "\x00" in line:
            return "a setup line contains a NUL byte"
    return None


def check_constraint(text: str) -> str | None:
    return None if _CONSTRAINT_RE.match(text) else (
        f"{text!r} is not a Slurm feature expression (features joined by & | , with [ ] ( ) !)")


def check_gres(text: str) -> str | None:
    return None if _GRES_RE.match(text) else f"{text!r} is not a gres list like gpu:2 or gpu:a100:1,mps:50"


def check_mail(types: list[str], user: str | None) -> str | None:
    bad = [t for t in types if t.upper() not in MAIL_TYPES]
    if bad:
        return f"unknown mail type {', '.join(bad)}; Slurm knows {', '.join(MAIL_TYPES)}"
    if user is not None and not _MAIL_USER_RE.match(user):
        return f"{user!r} is not one mail address"
    return None


def output_folder_problem(workdir: str, pattern: str) -> str | None:
    """Why the folder of ``output`` (relative to ``workdir``) cannot be made or written on this host,
    or None. asad makes the folder before the job's ``sbatch`` (Slurm does not); found only then,
    the workflow would fail later. A folder named with Slurm's ``%`` patterns is not checked."""
    folder = Path(os.path.normpath(os.path.join(workdir, os.path.expanduser(pattern)))).parent
    if "%" in str(folder):
        return None
    for existing in (folder, *folder.parents):
        if not existing.exists():
            continue
        if not existing.is_dir():
            return f"its folder {folder} cannot be made: {existing} is a file"
        if not os.access(existing, os.W_OK | os.X_OK):
            verb = "written to" if existing == folder else "made"
            return f"its folder {folder} cannot be {verb}: {existing} is not writable by you"
        return None
    return None


def check_output(pattern: str) -> str | None:
    if "\x00" in pattern or "\n" in pattern:
        return "contains a NUL byte or a line break"
    if pattern.endswith("/"):
        return "names a folder, not a file"
    return None
