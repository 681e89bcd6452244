"""Pick the real-Slurm backend: pyslurm when it imports and was built for the installed Slurm,
else the command-line backend (which works with any Slurm that has sbatch/squeue/sacct).

``ASAD_SLURM_API=cli|pyslurm|auto`` (default auto) forces a choice.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import shutil
import subprocess
from types import ModuleType
from typing import Any

from asad.slurm.backend import Backend, SlurmError
from asad.slurm.cli import SlurmCLI

log = logging.getLogger(__name__)

_CLI_ONLY = {"timeout_s", "retries", "backoff_s", "backoff_max_s", "runner", "sleep", "bin_dir", "slurm_conf"}


def _major_minor(text: str) -> tuple[int, int] | None:
    m = re.search(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def installed_slurm_version(sinfo: str = "sinfo") -> tuple[int, int] | None:
    """``sinfo --version`` -> (22, 5) for ``slurm 22.05.8``; None when Slurm is not installed."""
    exe = shutil.which(sinfo)
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return _major_minor(out)


def pyslurm_unusable_reason(module: ModuleType | None, slurm_version: tuple[int, int] | None) -> str | None:
    """Why pyslurm cannot be used here, or None when it can. pyslurm's version is the Slurm
    release it was built for (``23.2.x`` for Slurm 23.02), so the major and minor must match."""
    if module is None:
        return "pyslurm is not installed (pip install 'asad[pyslurm]' on a cluster with a matching Slurm)"
    version = getattr(module, "__version__", None)
    if version is None and callable(getattr(module, "version", None)):
        version = module.version()
    built_for = _major_minor(str(version or ""))
    if built_for is None:
        return f"pyslurm reports no usable version ({version!r})"
    if slurm_version is None:
        return "cannot tell the installed Slurm's version (sinfo --version)"
    if built_for != slurm_version:
        return (f"pyslurm {version} is built for Slurm {built_for[0]}.{built_for[1]:02d}, "
                f"but Slurm {slurm_version[0]}.{slurm_version[1]:02d} is installed")
    for needed in ("JobSubmitDescription", "Jobs", "Job", "db"):
        if not hasattr(module, needed):
            return f"pyslurm {version} has no {needed} (asad needs pyslurm 23.2 or later)"
    return None


def _import_pyslurm() -> ModuleType | None:
    try:
        return importlib.import_module("pyslurm")
    except Exception:  # ImportError, or a binding that fails to load against this libslurm
        return None


def make_slurm_backend(**opts: Any) -> Backend:
    """The backend for a real cluster. ``opts`` go to :class:`SlurmCLI` (``timeout_s``,
    ``retries``, ``slurm_conf``, ``accounting``...); ``prefer`` is ``auto``, ``cli`` or ``pyslurm``."""
    prefer = opts.pop("prefer", None) or os.environ.get("ASAD_SLURM_API", "auto")
    if prefer not in ("auto", "cli", "pyslurm"):
        raise SlurmError(f"ASAD_SLURM_API must be auto, cli or pyslurm, not {prefer!r}")
    if prefer != "cli":
        module = opts.pop("pyslurm_module", None) or _import_pyslurm()
        version = opts.pop("slurm_version", None) or installed_slurm_version()
        reason = pyslurm_unusable_reason(module, version)
        if reason is None:
            from asad.slurm.pyslurm_backend import PySlurmBackend

            cli = SlurmCLI(**opts)
            accounting = opts.get("accounting")
            return PySlurmBackend(module, cli=cli, accounting=cli.accounting if accounting is None else accounting)
        if prefer == "pyslurm":
            raise SlurmError(f"the pyslurm backend was asked for but cannot be used: {reason}")
        log.debug("using the Slurm CLI backend: %s", reason)
    else:
        opts.pop("pyslurm_module", None)
        opts.pop("slurm_version", None)
    return SlurmCLI(**opts)
