"""Background load: other users' jobs keeping the cluster at a target offered load.

Job shapes come from a compact table of real jobs (``asad/data/load_table.csv``, Cedar and
Graham 2021): each arrival draws one row, so size, memory, time limit and run time keep their
real joint distribution. Arrivals are Poisson, hour by hour, at the rate that offers the target
load (core-seconds of work per core-second of capacity), shaped by a daily and weekly cycle and by
scheduled steps in load.

Every arrival belongs to a user in an account (``load_users.py``); with the closed loop (the
default), a user with too many jobs pending lets a submission go, so the queue reaches a steady
state even when the offered load is more than the scheduler can pack.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np

from asad.slurm.sim.cluster import PartitionState
from asad.slurm.sim.config import SimConfig
from asad.slurm.sim.load_users import UserModel, UserPopulation


class Arrival(NamedTuple):
    """One background submission. A tuple, so the simulator may index it: ``[0]`` time, ``[1]``
    partition index, ``[2:7]`` nodes, cpus, memory per node, time limit, true run time, ``[7]``
    origin (an SWF job number, else None), ``[8]`` user index into the population (None for a
    replayed trace job), then the user's and account's names."""

    time: float
    part: int
    nodes: int
    cpus: int
    mem_per_node_mb: int
    time_limit_s: int
    runtime_s: float
    origin: int | None = None
    user_index: int | None = None
    user: str | None = None
    account: str | None = None


@dataclass(frozen=True)
class LoadTable:
    cpus: np.ndarray
    nodes: np.ndarray
    mem_per_cpu_mb: np.ndarray
    time_limit_s: np.ndarray
    runtime_s: np.ndarray
    hour_factor: np.ndarray  # 24 values, mean 1
    weekday_factor: np.ndarray  # 7 values, Monday first, mean 1


def _rows(path_or_text: str, is_text: bool) -> list[list[str]]:
    lines = path_or_text.splitlines() if is_text else Path(path_or_text).read_text().splitlines()
    return list(csv.reader(line for line in lines if line and not line.startswith("#")))


def load_table(path: str | None = None) -> LoadTable:
    """The packaged table, or a table file of the same format."""
    if path is None:
        data = resources.files("asad") / "data"
        table_rows = _rows(data.joinpath("load_table.csv").read_text(), True)
        cycle_rows = _rows(data.joinpath("load_cycle.csv").read_text(), True)
    else:
        table_rows = _rows(path, False)
        cycle_path = Path(path).with_name("load_cycle.csv")
        cycle_rows = _rows(str(cycle_path), False) if cycle_path.exists() else []
    header, body = table_rows[0], table_rows[1:]
    want = ["cpus", "nodes", "mem_per_cpu_mb", "time_limit_s", "runtime_s"]
    if header != want:
        raise ValueError(f"load table {path or 'asad/data/load_table.csv'}: header {header}, expected {want}")
    if not body:
        raise ValueError("load table has no rows")
    arr = np.array(body, dtype=np.int64)
    hours = np.ones(24)
    weekdays = np.ones(7)
    for kind, index, factor in cycle_rows[1:] if cycle_rows else []:
        (hours if kind == "hour" else weekdays)[int(index)] = float(factor)
    return LoadTable(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], arr[:, 4],
                     hours / hours.mean(), weekdays / weekdays.mean())


@dataclass
class PartitionLoad:
    """The table mapped onto one partition's nodes, and the arrival rate for its load."""

    part: PartitionState
    base_load: float
    nodes: np.ndarray
    cpus: np.ndarray
    mem_per_node_mb: np.ndarray
    time_limit_s: np.ndarray
    runtime_s: np.ndarray
    rate_per_s: float  # mean arrivals per second at load 1.0 x base_load


def map_to_partition(table: LoadTable, part: PartitionState, base_load: float) -> PartitionLoad:
    """Real jobs re-shaped for this partition's nodes: single-node jobs stay single-node when they
    fit; bigger jobs keep their CPU count, packed onto whole nodes. Jobs wider than the partition's
    per-job node limit are left out; time limits are capped at the partition's maximum."""
    cores = part.cores
    cpus = table.cpus.copy()
    nodes = np.where((table.nodes == 1) & (cpus <= cores), 1, -(-cpus // cores))
    max_nodes = part.spec.max_nodes or part.n
    keep = nodes <= max_nodes
    cpus, nodes = cpus[keep], nodes[keep]
    cpn = -(-cpus // nodes)
    mem = np.minimum(table.mem_per_cpu_mb[keep] * cpn, part.mem)
    limit = table.time_limit_s[keep]
    if part.spec.max_time_s is not None:
        limit = np.minimum(limit, part.spec.max_time_s)
    runtime = np.minimum(table.runtime_s[keep], limit).astype(float)
    if not len(cpus):
        raise ValueError(f"no job of the load table fits partition {part.name}")
    work_per_job = float(np.mean(cpus * runtime / part.speed))  # core-seconds actually run
    rate = part.spec.total_cpus / work_per_job
    return PartitionLoad(part, base_load, nodes, cpus, mem, limit, runtime, rate)


class BackgroundLoad:
    def __init__(self, config: SimConfig, parts: list[PartitionState], rng: np.random.Generator):
        self.config = config
        self.rng = rng
        self.table = load_table(config.load_table)
        self.loads = [map_to_partition(self.table, p, config.base_load(p.spec))
                      for p in parts if config.base_load(p.spec) > 0]
        self.steps = sorted((config.start_time + off, mult) for off, mult in config.load_steps)
        model = config.extra.get("users", UserModel())
        if isinstance(model, dict):
            model = UserModel(**model)
        jobs_per_day = sum(pl.rate_per_s * pl.base_load for pl in self.loads) * 86400.0
        # Users draw from their own generator, so the stream of job shapes and times is the same
        # with or without them (and the same as before users existed) for a seed.
        self.user_rng = np.random.default_rng((config.seed, 0x75736572))
        self.users = UserPopulation(model, sum(p.spec.total_cpus for p in parts), jobs_per_day,
                                    self.user_rng)

    def admit(self, arrival: tuple) -> bool:
        """Asked by the simulator when an arrival comes due: does its user submit it? (Always yes
        for replayed trace jobs, which carry no user.)"""
        user = arrival[8] if len(arrival) > 8 else None
        return user is None or self.users.admit(user)

    def submitted(self, arrival: tuple, job: object) -> None:
        """Told the job record of an admitted arrival, so the user's pending jobs can be counted."""
        user = arrival[8] if len(arrival) > 8 else None
        if user is not None:
            self.users.track(user, job)

    def multiplier(self, t: float) -> float:
        mult = 1.0
        for when, value in self.steps:
            if t >= when:
                mult = value
            else:
                break
        return mult

    def cycle(self, t: float) -> float:
        if not self.config.daily_cycle:
            return 1.0
        day = int(t // 86400)
        hour = int((t % 86400) // 3600)
        weekday = (day + 3) % 7  # 1970-01-01 was a Thursday
        return float(self.table.hour_factor[hour] * self.table.weekday_factor[weekday])

    def arrivals(self, t0: float, t1: float) -> list[Arrival]:
        """Arrivals in [t0, t1), hour by hour, each with its user (offered, not yet admitted)."""
        out: list[Arrival] = []
        rng = self.rng
        users = self.users
        names, accounts = users.user_names, users.user_accounts
        t = t0
        while t < t1:
            slot_end = min(t1, (t // 3600 + 1) * 3600)
            span = slot_end - t
            factor = self.cycle(t) * self.multiplier(t)
            for pl in self.loads:
                mean = pl.rate_per_s * pl.base_load * factor * span
                count = int(rng.poisson(mean)) if mean > 0 else 0
                if not count:
                    continue
                times = np.sort(t + rng.random(count) * span)
                rows = rng.integers(0, len(pl.cpus), size=count)
                who = users.pick(self.user_rng, count)
                idx = pl.part.index
                for when, row, u in zip(times.tolist(), rows.tolist(), who.tolist()):
                    out.append(Arrival(when, idx, int(pl.nodes[row]), int(pl.cpus[row]),
                                       int(pl.mem_per_node_mb[row]), int(pl.time_limit_s[row]),
                                       float(pl.runtime_s[row]), None, u, names[u], accounts[u]))
            t = slot_end
        return out
