"""Settings: defaults < ``~/.config/asad/config.toml`` < ``ASAD_*`` environment < command-line flags."""

from __future__ import annotations

import hashlib
import os
import tomllib
import urllib.parse
from dataclasses import dataclass, field, fields
from pathlib import Path

# auto strategy: makespan seconds one idle core-second costs; tuned on training seeds (docs/asa.md §10)
DEFAULT_IDLE_PRICE = 0.3
PLACEMENTS = ("slurm", "turnaround", "reassign")  # the first is the default
DEFAULT_PLACEMENT = PLACEMENTS[0]
# settings that take one of a few words: a typo is refused where it is read, not ignored
SHARE_JOBS = ("off", "on", "learned", "cost")
CHOICES = {"placement": PLACEMENTS, "asa_timing": ("daemon", "begin"), "share_jobs": SHARE_JOBS}


class ConfigError(Exception):
    pass


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / default


@dataclass
class Settings:
    state_dir: Path = field(default_factory=lambda: _xdg("XDG_STATE_HOME", ".local/state") / "asad")
    config_file: Path = field(default_factory=lambda: _xdg("XDG_CONFIG_HOME", ".config") / "asad" / "config.toml")
    db_url: str = ""  # default: sqlite:///<state_dir>/asad.db
    backend: str = "auto"  # auto (Slurm when it answers, else refuse) | slurm | sim (asad.daemon.backend_choice)
    poll_interval_s: float = 30.0  # the shortest pause between two polls of Slurm
    max_poll_interval_s: float = 300.0  # backed off to this when nothing changes
    predictor: str = ""  # wait learner kind; "" = the measured recommendation
    asa_timing: str = "daemon"  # daemon | begin
    # auto strategy, where age counts: makespan seconds one idle core-second costs (docs/asa.md)
    idle_price: float = DEFAULT_IDLE_PRICE
    # a stage that names several partitions: "slurm" submits it to all of them (-p a,b) and lets
    # Slurm start it in the first that can; "turnaround" / "reassign" pick one by Q-learning
    # (asad/sizing/placement.py). "slurm" won on the Slurm-like simulator (docs/results/sizing.md).
    placement: str = DEFAULT_PLACEMENT
    # auto strategy: run adjacent stages of one shape in one job, so the later ones wait in no queue
    # (asad/strategies/share.py): "on" always, "learned" where it waited less before
    # (asad/core/share_choice.py), "off" never; "cost": stages of different CPUs too, under every
    # rule (limits enforced included), where asad/strategies/merge_cost.py prices the merged job's
    # idle cores below a job of its own. true / false mean on / off.
    share_jobs: str = "off"
    # the learned wait conditioned on the queue's pending load (asad/learn/pressure.py): the quantiles
    # of the waits met at the pressure nearest the current one, this many of them; 0 = off. With it
    # on, each poll adds one all-users squeue of pending jobs. Off by default: on the simulator's
    # multifactor-limits it did not meet issue 35's target on held-out seeds (docs/results/strategies.md).
    wait_pressure: int = 0
    wait_pressure_step: float = 0.5  # ... its pressure levels' width in log2(1 + CPUs queued)
    # Slurm's own start estimate as one more expert of the ``hedge`` learner (issue 38): each poll,
    # one ``sbatch --test-only`` per geometry the engine is predicting a wait for (at most one per
    # geometry per poll_interval_s; nothing is submitted). Off by default: it did not beat the
    # panel without it on the simulator (docs/results/learn.md)
    slurm_expert: bool = False
    seed: int = 0
    sim_preset: str = "small"
    sim_load: float | None = None
    sim_priority: str = "fifo"
    sim_speed: float = 60.0  # daemon with --backend sim: virtual seconds per wall second
    slurm_timeout_s: float = 30.0

    @property
    def database_url(self) -> str:
        return self.db_url or f"sqlite:///{self.state_dir / 'asad.db'}"

    @property
    def run_dir(self) -> Path:
        """Where the stage wrappers write logs and markers, a folder per workflow id. It belongs to
        the store, whose ids they are: two stores numbering from 1 must not share it. An SQLite
        store's lies beside its file (``runs`` for ``asad.db``, so the default store's is
        ``state_dir/runs``; ``<stem>-runs`` for another name); a server's store has one of its own
        under ``state_dir/runs``, named from its URL."""
        sqlite = sqlite_file(self.database_url)
        if sqlite is not None:
            return sqlite.parent / ("runs" if sqlite.name == "asad.db" else f"{sqlite.stem}-runs")
        return self.state_dir / "runs" / f"store-{self._store_key()}"

    @property
    def lock_file(self) -> Path:
        """The lock one driver of the store (a daemon or an ``asad run``) holds. It belongs to the
        store, not to the state dir: beside an SQLite file, so that two state dirs (or ``--db``
        flags) naming one database share it; for a server's store, in the state dir under a name
        made from the store's URL (one driver per host: a lock file cannot span hosts)."""
        sqlite = sqlite_file(self.database_url)
        if sqlite is not None:
            return sqlite.with_name(sqlite.name + ".lock")
        return self.state_dir / f"daemon-{self._store_key()}.lock"

    def _store_key(self) -> str:
        """A short name for a store that is not an SQLite file, made from its URL without the
        password (the password is not part of which store it is)."""
        parts = urllib.parse.urlsplit(self.database_url)
        netloc = parts.netloc.rsplit("@", 1)
        if len(netloc) == 2:  # user:password@host
            netloc[0] = netloc[0].split(":", 1)[0]
        which = urllib.parse.urlunsplit(parts._replace(netloc="@".join(netloc)))
        return hashlib.sha256(which.encode()).hexdigest()[:16]


def sqlite_file(url: str) -> Path | None:
    """The database file of an ``sqlite:///`` URL, absolute; None for other stores and memory."""
    if not url.startswith("sqlite:///"):
        return None
    raw = url[len("sqlite:///"):].split("?", 1)[0]
    if not raw or raw == ":memory:":
        return None
    return Path(os.path.abspath(os.path.expanduser(raw)))


_ENV = {
    "ASAD_STATE_DIR": "state_dir", "ASAD_DB_URL": "db_url", "ASAD_BACKEND": "backend",
    "ASAD_POLL_INTERVAL": "poll_interval_s", "ASAD_PREDICTOR": "predictor", "ASAD_SEED": "seed",
    "ASAD_SIM_PRESET": "sim_preset", "ASAD_SIM_SPEED": "sim_speed", "ASAD_ASA_TIMING": "asa_timing",
    "ASAD_IDLE_PRICE": "idle_price", "ASAD_PLACEMENT": "placement", "ASAD_SHARE_JOBS": "share_jobs",
    "ASAD_WAIT_PRESSURE": "wait_pressure",
    "ASAD_WAIT_PRESSURE_STEP": "wait_pressure_step",
    "ASAD_SLURM_EXPERT": "slurm_expert",
}


# settings that are a pause or a timeout: 0 or less would spin or never wait
POSITIVE = ("poll_interval_s", "max_poll_interval_s", "slurm_timeout_s", "wait_pressure_step")


def load_settings(overrides: dict | None = None, config_file: Path | None = None) -> Settings:
    settings = Settings()
    named = config_file or os.environ.get("ASAD_CONFIG")  # a file the user named must exist
    path = Path(named or settings.config_file)
    settings.config_file = path
    if named and not path.exists():
        raise ConfigError(f"the configuration file {path} (named by {'--config' if config_file else 'ASAD_CONFIG'}) "
                          "does not exist. Fix the path, or leave it out to use "
                          f"{Settings().config_file} (optional)")
    if path.exists():
        try:
            data = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc}). Fix the file or remove it.") from exc
        except OSError as exc:  # a folder, no read permission, ...: it is read, never written
            raise ConfigError(f"the configuration file {path} cannot be read ({exc.strerror}). Fix: make it a "
                              "readable file (chmod u+r), or remove it (it is optional)") from exc
        _apply(settings, data, str(path))
    _apply(settings, {attr: os.environ[var] for var, attr in _ENV.items() if var in os.environ}, "environment")
    _apply(settings, {k: v for k, v in (overrides or {}).items() if v is not None}, "command line")
    return settings


def _apply(settings: Settings, data: dict, origin: str) -> None:
    known = {f.name: f for f in fields(Settings)}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(f"{origin}: unknown setting {key!r}; known: {', '.join(sorted(known))}")
        current = getattr(settings, key)
        try:
            if isinstance(current, Path) or key == "state_dir":
                value = Path(value).expanduser()
            elif key == "db_url" and value and "://" not in str(value):  # a plain path: an SQLite file
                value = f"sqlite:///{os.path.abspath(os.path.expanduser(str(value)))}"
            elif key == "share_jobs":
                value = {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off", "no": "off"}.get(
                    str(value).lower(), str(value).lower())
            elif isinstance(current, bool):
                value = str(value).lower() in ("1", "true", "yes")
            elif isinstance(current, float) or key == "sim_load":
                value = float(value)
            elif isinstance(current, int):
                value = int(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{origin}: setting {key!r} = {value!r} has the wrong type ({exc})") from exc
        if key in CHOICES and value not in CHOICES[key]:
            raise ConfigError(f"{origin}: setting {key!r} = {value!r} is unknown; use one of "
                              f"{', '.join(CHOICES[key])}")
        if key == "wait_pressure" and value < 0:
            raise ConfigError(f"{origin}: setting 'wait_pressure' = {value!r} must be 0 (off) or a number of "
                              "waits (e.g. 8)")
        if key in POSITIVE and not value > 0:
            raise ConfigError(f"{origin}: setting {key!r} = {value!r} must be more than 0 (seconds)")
        setattr(settings, key, value)
