"""A simulated Slurm cluster on virtual time, behind the same Backend protocol as real Slurm.

    from asad.slurm.sim import make_simulator
    sim = make_simulator("small", load=0.0, seed=1)
    job_id = sim.submit(JobRequest(name="x", command="true", truth=SimTruth(runtime_s=600)))
    sim.run_until(sim.now() + 3600, stop_on=[job_id])
"""

from __future__ import annotations

import dataclasses

from asad.slurm.sim.clock.wallclock import WallClockSimulator
from asad.slurm.sim.config import DEFAULT_START_TIME, PartitionSpec, SimConfig
from asad.slurm.sim.errors import DependencyRejected
from asad.slurm.sim.load_sim import ClosedLoopSimulator
from asad.slurm.sim.presets import PRESETS
from asad.slurm.sim.presets import preset as preset_partitions
from asad.slurm.sim.simulator import Simulator

__all__ = ["Simulator", "SimConfig", "PartitionSpec", "WallClockSimulator", "DependencyRejected",
           "make_simulator", "simulator_config", "PRESETS", "PRIORITY_PRESETS", "DEFAULT_START_TIME"]


# Priority policies by name (benches pass these): ``fairshare`` is multifactor whose fair-share
# weight dominates, as at most sites: ten times the age weight, so a rank step among ~270
# users (10000 / 270 = 37 points) outweighs 9 hours of age (max age 7 days = 1000 points).
PRIORITY_PRESETS: dict[str, dict[str, object]] = {
    "fifo": {"priority": "fifo"},
    "multifactor": {"priority": "multifactor"},
    "fairshare": {"priority": "multifactor", "weight_fairshare": 10000.0},
    # A site whose AccountingStorageEnforce includes limits: a dependency resets a job's accrue
    # time even when a --begin set it (so auto takes its quantile rule there, not aged-chain).
    "multifactor-limits": {"priority": "multifactor", "accounting_enforce_limits": True},
}


def make_simulator(preset: str = "small", load: float | dict[str, float] | None = None, seed: int = 0,
                   priority: str = "fifo", backfill: str = "slurm", start_time: float | None = None,
                   **overrides: object) -> ClosedLoopSimulator:
    """A simulator of a named preset (see :func:`simulator_config` for the arguments), whose
    background users stop submitting when their jobs pile up (``load_sim.py``)."""
    return ClosedLoopSimulator(simulator_config(preset, load, seed, priority, backfill, start_time, **overrides))


def simulator_config(preset: str = "small", load: float | dict[str, float] | None = None, seed: int = 0,
                     priority: str = "fifo", backfill: str = "slurm", start_time: float | None = None,
                     **overrides: object) -> SimConfig:
    """The configuration of a named preset. ``priority``: a name in ``PRIORITY_PRESETS`` (fifo,
    multifactor, fairshare); ``load``: None = the preset's default per partition,
    0 = an empty cluster, x = every partition at offered load x, or a dict per partition name.
    ``overrides``: any
    :class:`SimConfig` field (e.g. ``bf_reservations=4``, ``load_steps=((86400, 1.3),)``)."""
    parts = preset_partitions(preset)
    fields = {f.name for f in dataclasses.fields(SimConfig)}
    unknown = set(overrides) - fields
    if unknown:
        raise ValueError(f"unknown simulator settings {sorted(unknown)}; known: {sorted(fields - {'partitions'})}")
    if priority not in PRIORITY_PRESETS:
        raise ValueError(f"unknown priority {priority!r}; choose one of {', '.join(PRIORITY_PRESETS)}")
    kwargs: dict[str, object] = dict(partitions=parts, seed=seed, backfill=backfill,
                                     start_time=DEFAULT_START_TIME if start_time is None else start_time)
    kwargs.update(PRIORITY_PRESETS[priority])
    if isinstance(load, dict):
        kwargs["load"] = {str(k): float(v) for k, v in load.items()}
    elif load is not None:
        kwargs["load"] = {p.name: float(load) for p in parts}
    kwargs.update(overrides)
    return SimConfig(**kwargs)  # type: ignore[arg-type]
