"""The validated workflow: :class:`WorkflowSpec` and its :class:`StageSpec` objects (frozen,
serialisable with ``to_dict``/``from_dict`` for the store), and :class:`SpecError`, the one error a
refused workflow raises. ``asad.spec.load`` builds these from workflow.yaml; ``asad.spec.cluster``
checks them against a cluster's partitions.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from asad.common.arrays import ArraySpec, parse_array
from asad.spec.slurm_keys import SlurmOptions

STRATEGIES = ("auto", "per-stage", "big-job", "chain", "asa")
MODES = ("dependency", "naive")
DEFAULT_STRATEGY = "auto"
DEFAULT_MODE = "dependency"
DEFAULT_TIME_S = 3600
DEFAULT_MAX_OOM_RETRIES = 3


# --------------------------------------------------------------------------------------------
# Errors


class SpecError(Exception):
    """A workflow file (or a workflow against a cluster) that asad refuses.

    ``str()`` reads ``montage.yaml:14: stages[3].mem: '4 gigs' is not a memory size — write e.g.
    500M, 4G``: file, line (omitted when 0), field (omitted when empty), problem, fix.
    """

    def __init__(self, path: str, line: int, field: str, problem: str, fix: str = ""):
        self.path = str(path)
        self.line = int(line or 0)
        self.field = field
        self.problem = problem
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        text = f"{where}: {self.field}: {self.problem}" if self.field else f"{where}: {self.problem}"
        return f"{text} — {self.fix}" if self.fix else text

    def __str__(self) -> str:
        return self.render()

    def __reduce__(self):  # keep it picklable (multiprocessing, logging handlers)
        return (SpecError, (self.path, self.line, self.field, self.problem, self.fix))


class SpecErrors(SpecError):
    """Every problem found in one workflow file, each with its file, line, field and fix (a user
    fixes them in one round, not one per run). Reads as the first one's attributes; ``errors``
    holds them all, in the file's order."""

    def __init__(self, errors: list[SpecError]):
        self.errors = sorted(errors, key=lambda e: e.line)
        first = self.errors[0]
        super().__init__(first.path, first.line, first.field, first.problem, first.fix)

    def render(self) -> str:
        return "\n".join(e.render() for e in self.errors)  # a line each, each naming its file and line

    def __reduce__(self):
        return (SpecErrors, (self.errors,))


# --------------------------------------------------------------------------------------------
# The validated objects


class FrozenMap(Mapping[str, str]):
    """An immutable, hashable str → str mapping (a stage's ``env``), in insertion order."""

    __slots__ = ("_data",)

    def __init__(self, items: Mapping[str, str] | Iterable[tuple[str, str]] = ()):
        pairs = items.items() if isinstance(items, Mapping) else items
        self._data: dict[str, str] = {str(k): str(v) for k, v in pairs}

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def to_dict(self) -> dict[str, str]:
        return dict(self._data)


@dataclass(frozen=True)
class SimulateSpec:
    """A stage's truth for the simulator only: true run time, peak memory per node, CPU efficiency."""

    runtime_s: float
    peak_mem_mb: float | None = None
    cpu_efficiency: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"runtime_s": self.runtime_s, "peak_mem_mb": self.peak_mem_mb,
                "cpu_efficiency": self.cpu_efficiency}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SimulateSpec:
        peak = data.get("peak_mem_mb")
        return cls(runtime_s=float(data["runtime_s"]), peak_mem_mb=None if peak is None else float(peak),
                   cpu_efficiency=float(data.get("cpu_efficiency", 1.0)))


@dataclass(frozen=True)
class StageSpec:
    name: str
    run: str  # a command line, or (run_is_script) the absolute path of a script
    run_is_script: bool = False
    nodes: int = 1
    ntasks: int = 1
    cpus_per_task: int = 1
    mem_mb: int | None = None  # per node (--mem)
    mem_per_cpu_mb: int | None = None  # --mem-per-cpu; at most one of the two
    time_s: int = DEFAULT_TIME_S
    partition: str = ""  # one name or a comma list "a,b"; "" = the cluster's default
    account: str | None = None
    qos: str | None = None
    after: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=FrozenMap)
    simulate: SimulateSpec | None = None
    retries: int = 0  # extra attempts after a failure other than OOM/TIMEOUT
    max_oom_retries: int = DEFAULT_MAX_OOM_RETRIES  # OOM/TIMEOUT retries, grown by sizing
    inputs: tuple[str, ...] = ()
    sizing: str | None = None
    slurm: SlurmOptions = field(default_factory=SlurmOptions)  # setup, output, mail, constraint, gpus, ...
    sizing_cpus: str = "keep"  # "shrink": a sizing agent may give fewer CPUs than asked (ntasks == 1 only)
    line: int = 0
    array: str | None = None  # sbatch's --array text, e.g. "0-99%10" (asad.common.arrays): a fan-out stage

    @property
    def array_spec(self) -> ArraySpec | None:
        return None if self.array is None else parse_array(self.array)

    def __post_init__(self) -> None:
        # Accept a plain dict / list from code that builds stages by hand; store frozen forms.
        if not isinstance(self.env, FrozenMap):
            object.__setattr__(self, "env", FrozenMap(self.env))
        if not isinstance(self.after, tuple):
            object.__setattr__(self, "after", tuple(self.after))
        if not isinstance(self.inputs, tuple):
            object.__setattr__(self, "inputs", tuple(self.inputs))

    @property
    def cpus(self) -> int:
        return self.ntasks * self.cpus_per_task

    @property
    def cpus_per_node(self) -> int:
        """CPUs the busiest node needs (tasks spread as evenly as Slurm's default block layout)."""
        return math.ceil(self.ntasks / self.nodes) * self.cpus_per_task

    @property
    def partitions(self) -> list[str]:
        return [p for p in self.partition.split(",") if p]

    def mem_per_node_mb(self) -> int | None:
        if self.mem_mb is not None:
            return self.mem_mb
        if self.mem_per_cpu_mb is not None:
            return self.mem_per_cpu_mb * self.cpus_per_node
        return None

    def total_mem_mb(self) -> int | None:
        """Memory over the whole allocation, whichever way it was asked for."""
        if self.mem_mb is not None:
            return self.mem_mb * self.nodes
        if self.mem_per_cpu_mb is not None:
            return self.mem_per_cpu_mb * self.cpus
        return None

    def env_dict(self) -> dict[str, str]:
        return dict(self.env.items())

    def sim_peak_total_mb(self) -> float | None:
        """``simulate.peak_mem`` is per node (like ``mem``); this is the peak over the whole
        allocation, which is what the simulator's ``SimTruth.peak_mem_mb`` compares with."""
        if self.simulate is None or self.simulate.peak_mem_mb is None:
            return None
        return self.simulate.peak_mem_mb * self.nodes

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "run": self.run, "run_is_script": self.run_is_script,
            "nodes": self.nodes, "ntasks": self.ntasks, "cpus_per_task": self.cpus_per_task,
            "mem_mb": self.mem_mb, "mem_per_cpu_mb": self.mem_per_cpu_mb, "time_s": self.time_s,
            "partition": self.partition, "account": self.account, "qos": self.qos,
            "after": list(self.after), "env": self.env_dict(),
            "simulate": None if self.simulate is None else self.simulate.to_dict(),
            "retries": self.retries, "max_oom_retries": self.max_oom_retries,
            "inputs": list(self.inputs), "sizing": self.sizing, "sizing_cpus": self.sizing_cpus,
            "line": self.line, "slurm": self.slurm.to_dict(), "array": self.array,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageSpec:
        sim = data.get("simulate")
        return cls(
            name=str(data["name"]), run=str(data["run"]), run_is_script=bool(data.get("run_is_script", False)),
            nodes=int(data.get("nodes", 1)), ntasks=int(data.get("ntasks", 1)),
            cpus_per_task=int(data.get("cpus_per_task", 1)),
            mem_mb=_opt_int(data.get("mem_mb")), mem_per_cpu_mb=_opt_int(data.get("mem_per_cpu_mb")),
            time_s=int(data.get("time_s", DEFAULT_TIME_S)), partition=str(data.get("partition") or ""),
            account=data.get("account"), qos=data.get("qos"), after=tuple(data.get("after") or ()),
            env=FrozenMap(data.get("env") or {}),
            simulate=None if sim is None else SimulateSpec.from_dict(sim),
            retries=int(data.get("retries", 0)),
            max_oom_retries=int(data.get("max_oom_retries", DEFAULT_MAX_OOM_RETRIES)),
            inputs=tuple(data.get("inputs") or ()), sizing=data.get("sizing"),
            sizing_cpus=str(data.get("sizing_cpus") or "keep"), line=int(data.get("line", 0)),
            slurm=SlurmOptions.from_dict(data.get("slurm")), array=data.get("array"),
        )


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class WorkflowSpec:
    name: str
    strategy: str  # auto | per-stage | big-job | chain | asa
    stages: tuple[StageSpec, ...]
    workdir: str  # absolute
    path: str  # the workflow file, absolute ("<string>" when parsed from text)
    mode: str = DEFAULT_MODE  # asa only: dependency | naive
    sizing: str | None = None
    idle_price: float | None = None  # auto strategy: this workflow's price of an idle core-second
    _index: dict[str, int] = field(init=False, repr=False, compare=False, hash=False)
    _successors: dict[str, tuple[str, ...]] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.stages, tuple):
            object.__setattr__(self, "stages", tuple(self.stages))
        index: dict[str, int] = {}
        for i, stage in enumerate(self.stages):
            if stage.name in index:
                raise ValueError(f"duplicate stage name {stage.name!r}")
            index[stage.name] = i
        successors: dict[str, list[str]] = {s.name: [] for s in self.stages}
        for stage in self.stages:
            for pred in stage.after:
                if pred not in successors:
                    raise ValueError(f"stage {stage.name!r} is after unknown stage {pred!r}")
                successors[pred].append(stage.name)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_successors", {k: tuple(v) for k, v in successors.items()})

    def stage(self, name: str) -> StageSpec:
        try:
            return self.stages[self._index[name]]
        except KeyError:
            raise KeyError(f"workflow {self.name!r} has no stage {name!r}") from None

    def index_of(self, name: str) -> int:
        return self._index[name]

    def predecessors(self, name: str) -> tuple[str, ...]:
        return self.stage(name).after

    def successors(self, name: str) -> tuple[str, ...]:
        self.stage(name)  # KeyError with a clear message for an unknown name
        return self._successors[name]

    def roots(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages if not s.after)

    def leaves(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages if not self._successors[s.name])

    def topo_order(self) -> list[str]:
        """Stages so that each comes after all it depends on; ties go to file order."""
        order = topo_indices(self.stages, self._index)
        if len(order) != len(self.stages):
            raise ValueError(f"workflow {self.name!r} has a cycle in after")
        return [self.stages[i].name for i in order]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "strategy": self.strategy, "mode": self.mode, "workdir": self.workdir,
                "path": self.path, "sizing": self.sizing, "idle_price": self.idle_price,
                "stages": [s.to_dict() for s in self.stages]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkflowSpec:
        return cls(name=str(data["name"]), strategy=str(data["strategy"]),
                   stages=tuple(StageSpec.from_dict(s) for s in data["stages"]),
                   workdir=str(data["workdir"]), path=str(data["path"]),
                   mode=str(data.get("mode") or DEFAULT_MODE), sizing=data.get("sizing"),
                   idle_price=data.get("idle_price"))


def topo_indices(stages: tuple[StageSpec, ...], index: Mapping[str, int]) -> list[int]:
    """Kahn's algorithm with a heap on file position: O((V + E) log V). Cyclic stages are left out."""
    indegree = [len(s.after) for s in stages]
    successors: list[list[int]] = [[] for _ in stages]
    for i, stage in enumerate(stages):
        for pred in stage.after:
            successors[index[pred]].append(i)
    ready = [i for i, d in enumerate(indegree) if d == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in successors[i]:
            indegree[j] -= 1
            if indegree[j] == 0:
                heapq.heappush(ready, j)
    return order


def find_cycle(stages: list[StageSpec], index: Mapping[str, int], remaining: set[int]) -> list[int]:
    """One cycle among the stages Kahn's algorithm could not order, as a list where each stage is
    after the next, rotated to start at its first stage in the file."""
    # Every remaining stage has a remaining predecessor, so walking predecessors must repeat.
    start = min(remaining)
    seen_at: dict[int, int] = {}
    walk: list[int] = []
    node = start
    while node not in seen_at:
        seen_at[node] = len(walk)
        walk.append(node)
        node = next(index[p] for p in stages[node].after if index[p] in remaining)
    cycle = walk[seen_at[node]:]  # each stage is after the next one (and the last after the first)
    pivot = cycle.index(min(cycle))
    return cycle[pivot:] + cycle[:pivot]


def shown_path(path: str) -> str:
    """A spec's absolute path as a user would type it: relative when under the current folder."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") or path == "<string>" else rel

