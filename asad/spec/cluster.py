"""A validated workflow against one cluster's partitions: refused, before anything is submitted,
when a stage (or, under ``big-job``, the one allocation) fits no partition it may use."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

from asad.slurm.gres import gpus_in
from asad.slurm.backend import PartitionInfo
from asad.spec.model import SpecError, WorkflowSpec, shown_path
from asad.common.units import format_duration, format_mem


def check_against_cluster(spec: WorkflowSpec, partitions: list[PartitionInfo],
                          default_partition: str | None = None) -> None:
    """Refuse a workflow that no partition of this cluster can run, before anything is submitted.

    A stage without a partition goes to ``default_partition`` (else the partition marked default,
    else it may use any). A stage naming ``a,b`` must fit at least one of them. Under ``big-job`` the
    one allocation (largest nodes, CPUs per node and memory per node of any stage, for the sum of the
    stages' time limits) must fit too. An empty partition list (the backend could not tell) checks
    nothing.
    """
    if not partitions:
        return
    by_name = {p.name: p for p in partitions}
    default = default_partition if default_partition in by_name else next(
        (p.name for p in partitions if p.default), None)
    known = ", ".join(sorted(by_name))
    for i, stage in enumerate(spec.stages):
        names = stage.partitions or ([default] if default else sorted(by_name))
        for pname in names:
            if pname not in by_name:
                raise SpecError(shown_path(spec.path), stage.line, f"stages[{i}].partition",
                                f"stage '{stage.name}': unknown partition '{pname}'",
                                unknown_partition_fix(pname, partitions))
        candidates = [by_name[n] for n in names]
        gpus, gpus_key = _gpus_per_node(stage)
        shape = _Shape(stage.nodes, stage.cpus_per_node, stage.mem_per_node_mb(), stage.time_s,
                       ntasks=stage.ntasks, cpus_per_task=stage.cpus_per_task,
                       mem_per_cpu_mb=stage.mem_per_cpu_mb if stage.mem_mb is None else None,
                       gpus_per_node=gpus, gpus_key=gpus_key)
        if any(not _misfits(shape, p) for p in candidates):
            continue
        fld, problem = _misfits(shape, candidates[0])[0]
        hint = _written_fix(shape, fld, candidates[0])
        raise SpecError(shown_path(spec.path), stage.line, f"stages[{i}].{fld}",
                        f"stage '{stage.name}' is bigger than every partition it may use: {problem}",
                        (f"{hint}; or " if hint else "") + _largest_fit(candidates))
    if spec.strategy == "big-job":
        _check_big_job(spec, by_name, default, known)


def _gpus_per_node(stage) -> tuple[int, str]:  # noqa: ANN001
    """The GPUs one node must have for ``stage`` and the key that asks: ``gres: gpu:N`` is per node;
    ``gpus: N`` is the job's total, which Slurm may spread over the stage's nodes."""
    from_gres = gpus_in(stage.slurm.gres) or 0
    from_gpus = -(-int(stage.slurm.gpus) // stage.nodes) if stage.slurm.gpus else 0
    return (from_gres, "gres") if from_gres >= from_gpus and from_gres else (from_gpus, "gpus")


def unknown_partition_fix(name: str, partitions: list[PartitionInfo]) -> str:
    """What to do about a partition this cluster does not have: the closest name, and every name."""
    names = [p.name for p in partitions]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"{hint}this cluster's partitions are: {', '.join(sorted(names))}"


def geometry_misfit(partition: PartitionInfo, nodes: int, cpus_per_node: int, time_s: int) -> str | None:
    """Why a job of this geometry (no memory asked) can never run in ``partition``, or None."""
    misfits = _misfits(_Shape(nodes, cpus_per_node, None, time_s), partition)
    return f"{misfits[0][1]}. Fix: {_largest_fit([partition])}" if misfits else None


@dataclass(frozen=True)
class _Shape:
    nodes: int
    cpus_per_node: int
    mem_per_node_mb: int | None
    time_s: int
    # how a stage asked for them, so that a misfit names the keys the user wrote: ntasks (over
    # nodes), or mem_per_cpu (times the CPUs on a node) rather than the cpus and mem they make
    ntasks: int = 1
    cpus_per_task: int = 1
    mem_per_cpu_mb: int | None = None
    gpus_per_node: int = 0  # the most GPUs one node must have (gres: per node; gpus: spread over the nodes)
    gpus_key: str = "gpus"  # the key that asked for them


def _misfits(shape: _Shape, p: PartitionInfo) -> list[tuple[str, str]]:
    out = []
    max_nodes = min(p.nodes, p.max_nodes) if p.max_nodes else p.nodes
    if shape.nodes > max_nodes:
        out.append(("nodes", f"{shape.nodes} nodes, but partition '{p.name}' allows {max_nodes}"))
    if shape.cpus_per_node > p.cpus_per_node:
        has = f"but partition '{p.name}' has {p.cpus_per_node} per node"
        if shape.ntasks > 1 and shape.ntasks <= shape.nodes:  # one task per node: its cpus_per_task
            out.append(("cpus_per_task", f"cpus_per_task: {shape.cpus_per_task} (one task per node) puts "
                                         f"{shape.cpus_per_node} CPUs on one node, {has}"))
        elif shape.ntasks > 1:
            per_task = f" × cpus_per_task: {shape.cpus_per_task}" if shape.cpus_per_task > 1 else ""
            out.append(("ntasks", f"ntasks: {shape.ntasks}{per_task} over nodes: {shape.nodes} puts "
                                  f"{shape.cpus_per_node} CPUs on one node, {has}"))
        else:
            out.append(("cpus", f"{shape.cpus_per_node} CPUs on one node, {has}"))
    if shape.mem_per_node_mb is not None and shape.mem_per_node_mb > p.mem_per_node_mb:
        has = f"but partition '{p.name}' has {format_mem(p.mem_per_node_mb)} per node"
        if shape.mem_per_cpu_mb is not None:
            out.append(("mem_per_cpu", f"mem_per_cpu: {format_mem(shape.mem_per_cpu_mb)} × {shape.cpus_per_node} "
                                       f"CPUs on one node is {format_mem(shape.mem_per_node_mb)} per node, {has}"))
        else:
            out.append(("mem", f"{format_mem(shape.mem_per_node_mb)} per node, {has}"))
    if shape.gpus_per_node and p.gpus_per_node is not None and shape.gpus_per_node > p.gpus_per_node:
        # Slurm refuses such a job at once ("Requested node configuration is not available")
        asked = (f"{shape.gpus_per_node} GPUs on one node" if shape.gpus_key == "gres" or shape.nodes == 1
                 else f"{shape.gpus_per_node} GPUs on one node ({shape.nodes} nodes)")
        out.append((shape.gpus_key, f"{asked}, but partition '{p.name}' has "
                                    f"{p.gpus_per_node or 'no'} GPU{'s' if p.gpus_per_node != 1 else ''} per node"))
    if p.max_time_s is not None and shape.time_s > p.max_time_s:
        out.append(("time", f"time {format_duration(shape.time_s)}, but partition '{p.name}' allows at most "
                            f"{format_duration(p.max_time_s)}"))
    return out


def _written_fix(shape: _Shape, fld: str, p: PartitionInfo) -> str:
    """The fix in the keys the user wrote (ntasks over nodes, mem_per_cpu), for partition ``p``."""
    if fld == "ntasks" and shape.cpus_per_task <= p.cpus_per_node:
        per_node = p.cpus_per_node // shape.cpus_per_task
        return (f"at most {per_node} tasks per node there: ntasks: {per_node * shape.nodes} or fewer, "
                f"or nodes: {math.ceil(shape.ntasks / per_node)} or more")
    if fld == "mem_per_cpu" and shape.mem_per_cpu_mb is not None:
        return (f"mem_per_cpu: {format_mem(p.mem_per_node_mb // shape.cpus_per_node)} or less with "
                f"{shape.cpus_per_node} CPUs on one node")
    return ""


def _largest_fit(candidates: list[PartitionInfo]) -> str:
    fits = []
    for p in candidates:
        max_nodes = min(p.nodes, p.max_nodes) if p.max_nodes else p.nodes
        limit = format_duration(p.max_time_s) if p.max_time_s is not None else "unlimited"
        gpus = f", {p.gpus_per_node} GPUs" if p.gpus_per_node else ""
        fits.append(f"'{p.name}': {max_nodes} node{'s' if max_nodes != 1 else ''} × {p.cpus_per_node} CPUs{gpus}, "
                    f"mem {format_mem(p.mem_per_node_mb)} per node, time {limit}")
    return "the largest that fits " + "; ".join(fits) + " (or name a bigger partition)"


def _check_big_job(spec: WorkflowSpec, by_name: dict[str, PartitionInfo], default: str | None, known: str) -> None:
    all_names = set(by_name)
    common = set(all_names)
    for stage in spec.stages:
        common &= set(stage.partitions or ([default] if default else all_names))
    first = spec.stages[0]
    if not common:
        raise SpecError(shown_path(spec.path), first.line, "strategy",
                        "big-job runs every stage in one allocation, but no partition is open to every stage",
                        f"give the stages a common partition (this cluster has: {known}) or use another strategy")
    mems = [s.mem_per_node_mb() for s in spec.stages]
    shape = _Shape(max(s.nodes for s in spec.stages), max(s.cpus_per_node for s in spec.stages),
                   max((m for m in mems if m is not None), default=None), sum(s.time_s for s in spec.stages))
    candidates = [by_name[n] for n in sorted(common)]
    if any(not _misfits(shape, p) for p in candidates):
        return
    _, problem = _misfits(shape, candidates[0])[0]
    raise SpecError(shown_path(spec.path), first.line, "strategy",
                    f"the big-job allocation (the largest stage's size for the sum of all stages' times) is "
                    f"bigger than every partition: {problem}",
                    f"{_largest_fit(candidates)}; or use strategy per-stage, chain or asa")

