"""``asad service``: a systemd user unit that starts *this* asad with *this* shell's Slurm.

The unit shipped in ``systemd/asad.daemon.service`` guesses ``~/.local/bin/asad``, and a user manager
starts services with a bare environment: no ``SLURM_CONF``, a PATH without the site's Slurm. So
the unit written here names the running asad's own executable and carries the current shell's
``PATH``, ``SLURM_CONF`` and asad's settings (state dir, store) in ``Environment=`` lines.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The exit status of a daemon refused because another one drives the store from this host: the
# unit does not restart it (RestartPreventExitStatus): it would only be refused again.
EXIT_ALREADY_RUNNING = 6

# Environment the daemon needs to find Slurm and the same store as the shell that wrote the unit.
CARRIED_ENV = ("PATH", "SLURM_CONF", "ASAD_STATE_DIR", "ASAD_DB_URL", "ASAD_CONFIG", "ASAD_SLURM_API",
               "XDG_STATE_HOME", "XDG_CONFIG_HOME")


def asad_command() -> list[str]:
    """How to start the asad that is running now: its console script, else ``python -m asad``."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "asad" and argv0.exists():
        return [str(argv0.resolve().parent / argv0.name) if not argv0.is_absolute() else str(argv0)]
    return [sys.executable, "-m", "asad"]


def _quote(word: str) -> str:
    """One word of an ExecStart= or Environment= line (systemd.syntax(7): quotes, \\, % and $)."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{escaped}"'


# Settings that name a path: made absolute, because a user manager starts services in $HOME.
PATH_ENV = ("ASAD_STATE_DIR", "ASAD_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME")


def unit_text(daemon_args: list[str], env: dict[str, str] | None = None) -> str:
    env = dict(os.environ if env is None else env)
    for var in PATH_ENV:
        if env.get(var):
            env[var] = os.path.abspath(os.path.expanduser(env[var]))
    exec_words = [*asad_command(), "daemon", *daemon_args]
    exec_start = " ".join(_quote(w).replace("$", "$$") for w in exec_words)
    env_lines = [f"Environment={_quote(f'{k}={env[k]}')}" for k in CARRIED_ENV if env.get(k)]
    return "\n".join([
        "# Written by 'asad service': this asad, with the Slurm and store of the shell that ran it.",
        "# Install: systemctl --user daemon-reload && systemctl --user enable --now asad",
        "[Unit]",
        "Description=asad - adaptive scheduling daemon for Slurm workflows",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=notify",
        "NotifyAccess=main",
        f"ExecStart={exec_start}",
        *env_lines,
        "Restart=on-failure",
        "RestartSec=10",
        f"# {EXIT_ALREADY_RUNNING}: another asad daemon drives this store from this host (restarting would not help).",
        f"RestartPreventExitStatus={EXIT_ALREADY_RUNNING}",
        "# SIGTERM stops it cleanly; a SIGKILL at any instant is reconciled with Slurm on the next start.",
        "KillSignal=SIGTERM",
        "TimeoutStopSec=30",
        "UMask=0077",
        "NoNewPrivileges=yes",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ])


def default_unit_path() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user" / "asad.daemon.service"
