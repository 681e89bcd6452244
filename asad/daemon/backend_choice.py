"""Which backend asad drives: a real Slurm whenever one answers, the simulator only when asked.

``backend = "auto"`` (the default) means Slurm when Slurm answers here (``SLURM_CONF`` is set, or
``sinfo`` works); otherwise asad refuses with a message saying how to choose, and never falls back
to the simulator on its own (a user following the README on a real cluster must never watch
simulated jobs "run").
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

from asad.common.config import ConfigError

BACKENDS = ("auto", "slurm", "sim")


class BackendChoiceError(ConfigError):
    """No backend could be chosen; the message says how to choose one."""


@functools.lru_cache(maxsize=1)
def slurm_answers(timeout_s: float = 10.0) -> tuple[bool, str]:
    """Whether a Slurm cluster answers here, and why (or why not)."""
    if os.environ.get("SLURM_CONF"):
        return True, f"SLURM_CONF={os.environ['SLURM_CONF']}"
    exe = shutil.which("sinfo")
    if exe is None:
        return False, "SLURM_CONF is unset and there is no 'sinfo' on PATH"
    try:
        proc = subprocess.run([exe, "--noheader", "--format=%P"], capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"SLURM_CONF is unset and 'sinfo' did not answer ({exc})"
    if proc.returncode == 0:
        return True, "'sinfo' answers"
    detail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return False, f"SLURM_CONF is unset and 'sinfo' failed: {detail}"


def resolve_backend(name: str) -> str:
    """``sim`` or ``slurm`` for a configured ``auto``/``sim``/``slurm``."""
    if name in ("sim", "slurm"):
        return name
    if name != "auto":
        raise BackendChoiceError(f"unknown backend {name!r}: use 'auto' (Slurm when it answers), 'slurm' or 'sim' "
                                 "(the simulator)")
    ok, why = slurm_answers()
    if ok:
        return "slurm"
    raise BackendChoiceError(
        f"no Slurm cluster answers here ({why}), and asad never falls back to the simulator on its own. "
        "Fix: make Slurm reachable (export SLURM_CONF=/path/to/slurm.conf; 'sinfo' should answer), "
        "or pass --backend sim to use the simulator (virtual time: nothing really runs), "
        "or set backend = \"sim\" in the config file or ASAD_BACKEND=sim.")
