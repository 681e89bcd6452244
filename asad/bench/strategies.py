"""``asad bench strategies``: the ASA paper's Tables 1 and 2 on the simulator.

Montage, BLAST and Statistics at 28/56/112 cores on the ``hpc2n`` preset and 160/320/640 on
``uppmax``, under big-job, per-stage, chain and asa (dependency and naive, with the daemon or
Slurm's ``--begin`` holding the timing), under fifo, multifactor and fairshare (multifactor with
a dominant Fair Tree fair-share weight: the workflow's user competes with ~270 background users
in ~95 accounts) priority, several seeds.

Fairness: for one (cluster, priority, seed) the background load is warmed up once and
snapshotted; every strategy starts from an identical copy of that queue. Each variant keeps its
own store, so its learners learn only from its own earlier runs (carried across cells and seeds,
as in the paper); the first ``--train`` seeds warm the learners up and are not reported.

Workflow scaling with cores (fitted to the paper's Table 1 makespans): a stage that uses the
whole base allocation (28 cores) is a parallel stage and grows to the geometry's core count; its
run time follows Amdahl's law with the workflow's serial fraction (Montage ~1: weak scaling, the
mosaic grows with the cores; BLAST 0.07; Statistics 0.57). Serial stages stay at one core.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing
import pickle
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from asad.common.arg_types import non_negative_float, non_negative_int, positive_int, word_list
from asad.slurm.sim import PRIORITY_PRESETS
from asad.spec.load import WorkflowSpec, load_workflow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCALES = {"hpc2n": (28, 56, 112), "uppmax": (160, 320, 640)}
SERIAL_FRACTION = {"montage": 1.0, "blast": 0.07, "statistics": 0.57}
CORES_PER_NODE = {"hpc2n": 28, "uppmax": 20}
BASE_CORES = 28
VARIANTS = {
    "auto": ("auto", "dependency", "daemon"),  # the default: chain or quantile, by the priority rules
    "big-job": ("big-job", "dependency", "daemon"),
    "per-stage": ("per-stage", "dependency", "daemon"),
    "chain": ("chain", "dependency", "daemon"),
    "asa-dep": ("asa", "dependency", "daemon"),
    "asa-naive": ("asa", "naive", "daemon"),
    "asa-dep-begin": ("asa", "dependency", "begin"),
    "asa-naive-begin": ("asa", "naive", "begin"),
    # per-stage with the workflow file's own time limits even under --time-limits learned: what a
    # user submits by hand, one job per stage
    "per-stage-user": ("per-stage", "dependency", "daemon"),
    # auto with share_jobs on: adjacent stages of one shape in one job (asad/strategies/share.py)
    "auto-shared": ("auto", "dependency", "daemon"),
    # auto with share_jobs learned: one job or a job each, whichever waited less (asad/core/share_choice.py)
    "auto-shared-learned": ("auto", "dependency", "daemon"),
    # auto with share_jobs cost: adjacent stages, of different sizes too, in one job where the cost
    # rule says it pays (asad/strategies/merge_cost.py)
    "auto-merged": ("auto", "dependency", "daemon"),
}

SHARE_JOBS_OF = {"auto-shared": "on", "auto-shared-learned": "learned", "auto-merged": "cost"}


def pressure_of(name: str) -> tuple[int, float]:
    """``auto-qpK`` (and ``auto-qpK@PRICE``): ``auto`` with its wait conditioned on the queue's
    pending load, the K waits met nearest the current pressure (asad/learn/pressure.py), in levels
    of half a log2 step; ``auto-qpK-S``: levels of S tenths. (0, 0.5) for any other name."""
    base = name.partition("@")[0]
    k, _, tenths = base[len("auto-qp"):].partition("-")
    if not (base.startswith("auto-qp") and k.isdigit() and int(k) > 0 and (not tenths or tenths.isdigit())):
        return 0, 0.5
    return int(k), int(tenths) / 10 if tenths and int(tenths) > 0 else 0.5


def variant_setup(name: str) -> tuple[str, str, str, float | None]:
    """(strategy, mode, timing, idle price) of a variant name; ``auto@0.1`` is ``auto`` with an idle
    price of 0.1 (several prices share one warm-up, for tuning the price on training seeds);
    ``auto-qpK[@PRICE]`` is ``auto`` with the pressure-conditioned wait (:func:`pressure_of`)."""
    base, _, price = name.partition("@")
    if pressure_of(name)[0]:
        base = "auto"
    if base not in VARIANTS or (price and base != "auto"):
        raise SystemExit(f"asad bench strategies: unknown variant {name!r}; known: {', '.join(VARIANTS)}, "
                         "auto@PRICE, auto-qpK[@PRICE]")
    try:
        return (*VARIANTS[base], float(price) if price else None)
    except ValueError:
        raise SystemExit(f"asad bench strategies: {name!r}: the idle price after @ must be a number") from None


def _in_order(names: object) -> list[str]:
    names = set(names)  # type: ignore[arg-type]
    return [v for v in VARIANTS if v in names] + sorted(n for n in names if n not in VARIANTS)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("strategies", help="the ASA paper's Tables 1-2 on the simulator, all strategies")
    p.add_argument("--json", action="store_true", help="print the aggregate JSON")
    p.add_argument("--out", type=Path, default=Path("out/strategies"), help="folder for JSON, Markdown, plots")
    p.add_argument("--seeds", type=positive_int, default=3, help="measured seeds per cell")
    p.add_argument("--train", type=non_negative_int, default=1, help="seeds run first to warm the learners (not reported)")
    p.add_argument("--presets", default="hpc2n,uppmax", type=word_list(SCALES, "preset"))
    p.add_argument("--priorities", default="fifo,multifactor,fairshare", type=word_list(PRIORITY_PRESETS, "priority"),
                   help="simulated priority policies (asad.slurm.sim.PRIORITY_PRESETS)")
    p.add_argument("--workflows", default=",".join(SERIAL_FRACTION), type=word_list(SERIAL_FRACTION, "workflow"))
    p.add_argument("--variants", default=",".join(v for v in VARIANTS if v not in ("per-stage-user", "auto-shared", "auto-merged")),
                   help="comma-separated; auto@PRICE is auto with that idle price (e.g. auto@0.02,auto@0.1); "
                        "auto-qpK[-S][@PRICE] is auto with its wait conditioned on the queue's pending load (K waits; "
                        "levels of S tenths of log2, default 5)")
    p.add_argument("--load", type=non_negative_float, default=None, help="background load (default: the preset's)")
    p.add_argument("--warmup-days", type=non_negative_float, default=4.0, help="background warm-up before each seed")
    p.add_argument("--predictor", default="", help="wait learner (default: the recommended one)")
    p.add_argument("--jobs", type=positive_int, default=2, help="processes (one per cluster x priority series)")
    p.add_argument("--idle-price", type=non_negative_float, default=None,
                   help="auto's makespan seconds per idle core-second (default: asad's)")
    p.add_argument("--first-seed", type=int, default=1000,
                   help="the simulator seed of the first (training) seed; tune on other seeds than you report")
    p.add_argument("--backfill", choices=("slurm", "easy"), default="slurm",
                   help="the simulator's backfill: Slurm 22.05's (default) or EASY (faster, less faithful)")
    p.add_argument("--cores", default="", help="geometries to run, e.g. 28,56 (default: the preset's three)")
    p.add_argument("--time-limits", choices=("user", "learned"), default="user",
                   help="user: every stage asks for the workflow file's time limit; learned: for the limit "
                        "asad's time-limit learner proposes once it has seen the stage run (every variant "
                        "but per-stage-user)")
    p.add_argument("--time-margin", default="", metavar="MARGIN:SLACK_S",
                   help="with --time-limits learned: the learner's margin and slack instead of asad's "
                        "defaults (2:600), a what-if")
    p.add_argument("--quick", action="store_true", help="1 seed, no training, hpc2n only, 28/56 cores")
    p.set_defaults(func=main)


def scale_spec(spec: WorkflowSpec, cores: int, cores_per_node: int, serial_fraction: float) -> WorkflowSpec:
    factor = serial_fraction + (1.0 - serial_fraction) * BASE_CORES / cores
    stages = []
    for st in spec.stages:
        if st.cpus < BASE_CORES:
            stages.append(st)
            continue
        nodes = max(1, math.ceil(cores / cores_per_node))
        mem_per_node = st.total_mem_mb() // st.nodes if st.total_mem_mb() else None
        sim = dataclasses.replace(st.simulate, runtime_s=st.simulate.runtime_s * factor) if st.simulate else None
        stages.append(dataclasses.replace(
            st, nodes=nodes, ntasks=nodes, cpus_per_task=cores // nodes, mem_mb=mem_per_node, mem_per_cpu_mb=None,
            time_s=max(300, int(math.ceil(st.time_s * factor))), simulate=sim))
    # The paper's fixed geometries: sizing off, so every strategy asks for the same shapes.
    return dataclasses.replace(spec, name=f"{spec.name}-{cores}", stages=tuple(stages), sizing="off")


def learned_limits(spec: WorkflowSpec, **params: float) -> WorkflowSpec:
    """The spec with each stage's time limit as asad's :class:`TimeLimitLearner` (its defaults, or
    ``params``) proposes it after as many runs as it waits for. The simulator's run times are
    deterministic, so those runs are all alike: with the defaults, this is what asad does from the
    tenth run of a workflow on."""
    from asad.sizing.base import Sample
    from asad.sizing.timelimit import TimeLimitLearner

    stages = []
    for st in spec.stages:
        learner = TimeLimitLearner(**params)
        for _ in range(learner.min_samples):
            learner.observe(Sample(peak_mb=0.0, elapsed_s=st.simulate.runtime_s, cpu_s=None, input_bytes=None,
                                   cpus=st.cpus, mem_mb=0))
        stages.append(dataclasses.replace(st, time_s=learner.limit(st.time_s, st.cpus, None, None)[0]))
    return dataclasses.replace(spec, stages=tuple(stages))


def _series(task: dict) -> list[dict]:
    """One (preset, priority): warm up per seed, snapshot, run every cell from a copy."""
    from asad.daemon.wiring import run_in_process
    from asad.common.config import Settings
    from asad.slurm.sim import make_simulator
    from asad.store.repo import Store

    preset, priority, out_dir = task["preset"], task["priority"], Path(task["out"])
    cpn = CORES_PER_NODE[preset]
    stores = {v: Store(f"sqlite:///{out_dir / f'{preset}-{priority}-{v}.db'}") for v in task["variants"]}
    rows = []
    for seed in range(task["train"] + task["seeds"]):
        t0 = time.time()
        base = make_simulator(preset, load=task["load"], seed=task["first_seed"] + seed, priority=priority,
                              backfill=task["backfill"])
        base.run_until(base.now() + task["warmup_days"] * 86400)
        snapshot = pickle.dumps(base)
        for wf_name in task["workflows"]:
            spec0 = load_workflow(EXAMPLES / f"{wf_name}.yaml")
            for cores in task["cores"]:
                user_spec = scale_spec(spec0, cores, cpn, SERIAL_FRACTION[wf_name])
                learned_spec = (learned_limits(user_spec, **task["time_params"]) if task["time_limits"] == "learned"
                                else user_spec)
                for variant in task["variants"]:
                    strategy, mode, timing, price = variant_setup(variant)
                    spec = user_spec if variant == "per-stage-user" else learned_spec
                    sim = pickle.loads(snapshot)
                    settings = Settings(predictor=task["predictor"], asa_timing=timing, seed=seed,
                                        share_jobs=SHARE_JOBS_OF.get(variant, "off"),
                                        wait_pressure=pressure_of(variant)[0],
                                        wait_pressure_step=pressure_of(variant)[1])
                    if price is not None or task.get("idle_price") is not None:
                        settings.idle_price = price if price is not None else task["idle_price"]
                    (s,) = run_in_process(stores[variant], sim, [spec], settings=settings, strategy=strategy,
                                          mode=mode)
                    rows.append(result_row(s, spec, preset=preset, priority=priority,
                                           seed=task["first_seed"] + seed, measured=seed >= task["train"],
                                           workflow=wf_name, cores=cores, variant=variant))
        print(f"  {preset}/{priority} seed {seed}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    for st in stores.values():
        st.close()
    return rows


def result_row(s: dict, spec: WorkflowSpec, **cell: object) -> dict:
    """One run's row: ``cell`` (preset, priority, seed, measured, workflow, cores, variant) and
    what the workflow's summary ``s`` says."""
    waits = [st["wait_s"] for st in s["stages"] if st["wait_s"] is not None]
    return {
        **cell, "state": s["state"], "makespan_s": s["makespan_s"], "total_wait_s": s["total_wait_s"],
        # perceived waits of stages that follow another: what overlapping can hide
        "interstage_wait_s": sum(st["perceived_wait_s"] or 0.0 for st in s["stages"]
                                 if spec.predecessors(st["name"])),
        "queue_wait_s": s["queue_wait_s"], "real_wait_s": float(np.mean(waits)) if waits else 0.0,
        "core_hours": s["core_hours"], "overhead_core_hours": s["overhead_core_hours"],
        "hit_ratio": s["hit_ratio"], "jobs": s["jobs"],
        "resubmissions": sum(max(0, st["attempts"] - 1) for st in s["stages"]),
    }


def aggregate(rows: list[dict]) -> dict:
    """Per cell means, and the paper's normalised averages (value / best in the cell - 1)."""
    measured = [r for r in rows if r["measured"] and r["state"] == "COMPLETED"]
    table = cell_means(measured)
    per_seed = {seed: targets(cell_means([r for r in measured if r["seed"] == seed]))
                for seed in sorted({r["seed"] for r in measured})}
    return {"cells": table, **normalised(table), "targets": targets(table), "targets_per_seed": per_seed}


def cell_means(measured: list[dict]) -> list[dict]:
    """One row per (priority, workflow, preset, cores, variant): means over the seeds given."""
    cells: dict[tuple, dict[str, list[dict]]] = {}
    for r in measured:
        cells.setdefault((r["priority"], r["workflow"], r["preset"], r["cores"]), {}).setdefault(
            r["variant"], []).append(r)
    table = []
    for (priority, wf, preset, cores), by_variant in sorted(cells.items()):
        for variant, rs in by_variant.items():
            hits = [r["hit_ratio"] for r in rs if r["hit_ratio"] is not None]
            table.append({
                "priority": priority, "workflow": wf, "preset": preset, "cores": cores, "variant": variant,
                "runs": len(rs),
                **{k: float(np.mean([r.get(k, 0.0) for r in rs])) for k in
                   ("makespan_s", "total_wait_s", "real_wait_s", "core_hours", "overhead_core_hours",
                    "interstage_wait_s")},
                "makespan_sd": float(np.std([r["makespan_s"] for r in rs])),
                "hit_ratio": float(np.mean(hits)) if hits else None,
                "resubmissions": float(np.mean([r["resubmissions"] for r in rs])),
            })
    return table


def normalised(table: list[dict]) -> dict:
    """The paper's averages: per variant, value / best in the cell - 1, and versus big-job / per-stage."""
    norm: dict[str, dict[str, dict[str, float]]] = {}
    versus: dict[str, dict[str, dict[str, float]]] = {}
    for priority in sorted({t["priority"] for t in table}):
        norm[priority], versus[priority] = {}, {}
        groups: dict[tuple, dict[str, dict]] = {}
        for t in table:
            if t["priority"] == priority:
                groups.setdefault((t["workflow"], t["preset"], t["cores"]), {})[t["variant"]] = t
        for metric in ("makespan_s", "total_wait_s", "core_hours"):
            per_variant: dict[str, list[float]] = {}
            for cell in groups.values():
                best = min(c[metric] for c in cell.values())
                for v, c in cell.items():
                    per_variant.setdefault(v, []).append(c[metric] / best - 1.0 if best > 0 else 0.0)
            norm[priority][metric] = {v: float(np.mean(x)) for v, x in per_variant.items()}
        for v in {t["variant"] for t in table}:
            ms = [g[v]["makespan_s"] / g["big-job"]["makespan_s"] - 1 for g in groups.values()
                  if v in g and "big-job" in g]
            ch = [g[v]["core_hours"] / g["per-stage"]["core_hours"] - 1 for g in groups.values()
                  if v in g and "per-stage" in g]
            versus[priority][v] = {"makespan_vs_big_job": float(np.mean(ms)) if ms else None,
                                   "core_hours_vs_per_stage": float(np.mean(ch)) if ch else None}
    return {"normalised": norm, "versus": versus}


def targets(table: list[dict], default: str = "auto", budget: float = 0.01) -> dict:
    """Issue 11's targets per priority, over every cell (workflow x geometry, seed means): the
    default's makespan against the best variant whose core-hours stay within ``budget`` of
    per-stage's, its own core-hours against per-stage's, and the share of per-stage's inter-stage
    wait it hides."""
    out: dict[str, dict] = {}
    for priority in sorted({t["priority"] for t in table}):
        groups: dict[tuple, dict[str, dict]] = {}
        for t in table:
            if t["priority"] == priority:
                groups.setdefault((t["workflow"], t["preset"], t["cores"]), {})[t["variant"]] = t
        ratios, over, hidden, worse, hidden_by_hand = [], [], [], [], []
        for key, cell in groups.items():
            if default not in cell or "per-stage" not in cell:
                continue
            base_ch = cell["per-stage"]["core_hours"]
            cheap = [c for v, c in cell.items() if c["core_hours"] <= base_ch * (1 + budget)]
            best = min(c["makespan_s"] for c in cheap)
            ratio = cell[default]["makespan_s"] / best
            ratios.append(ratio)
            if ratio > 1.0 + 1e-9:
                worse.append("/".join(map(str, key)))
            over.append(cell[default]["core_hours"] / base_ch - 1.0)
            ps_wait = cell["per-stage"]["interstage_wait_s"]
            if ps_wait > 0:
                hidden.append(1.0 - cell[default]["interstage_wait_s"] / ps_wait)
            by_hand = cell.get("per-stage-user", {}).get("interstage_wait_s", 0.0)
            if by_hand > 0:
                hidden_by_hand.append(1.0 - cell[default]["interstage_wait_s"] / by_hand)
        if ratios:
            out[priority] = {"makespan_vs_best_cheap": float(np.mean(ratios)), "max_ratio": float(max(ratios)),
                             "cells_worse": worse, "core_hours_vs_per_stage": float(np.mean(over)),
                             "hidden_interstage_wait": float(np.mean(hidden)) if hidden else None,
                             # against per-stage submitted by hand, with the file's time limits
                             "hidden_vs_by_hand": float(np.mean(hidden_by_hand)) if hidden_by_hand else None,
                             "cells": len(ratios)}
    return out


def markdown(agg: dict) -> str:
    lines = ["### The default (`auto`) against the targets", "",
             "| priority | makespan / best variant within +1% core-h (mean, max) | cells worse | "
             "core-h vs per-stage | inter-stage wait hidden | hidden vs per-stage by hand |",
             "|---|---:|---|---:|---:|---:|"]
    for priority, t in agg.get("targets", {}).items():
        hidden = "-" if t["hidden_interstage_wait"] is None else f"{t['hidden_interstage_wait']:.0%}"
        by_hand = "-" if t.get("hidden_vs_by_hand") is None else f"{t['hidden_vs_by_hand']:.0%}"
        lines.append(f"| {priority} | {t['makespan_vs_best_cheap']:.3f}, {t['max_ratio']:.3f} | "
                     f"{len(t['cells_worse'])} of {t['cells']} | {t['core_hours_vs_per_stage']:+.1%} | {hidden} "
                     f"| {by_hand} |")
    lines += ["", "Per measured seed (the spread): makespan / best cheap variant, core-h vs per-stage, wait hidden", ""]
    for seed, per in agg.get("targets_per_seed", {}).items():
        lines.append(f"- seed {seed}: " + "; ".join(
            f"{prio} {t['makespan_vs_best_cheap']:.3f}, {t['core_hours_vs_per_stage']:+.1%}, "
            + ("-" if t["hidden_interstage_wait"] is None else f"{t['hidden_interstage_wait']:.0%}")
            for prio, t in per.items()))
    lines.append("")
    for priority, vs in agg["versus"].items():
        lines += [f"### Priority `{priority}`: averages over every workflow × geometry", "",
                  "| variant | makespan vs big-job | core-hours vs per-stage | norm. makespan | norm. wait | "
                  "norm. core-h |", "|---|---:|---:|---:|---:|---:|"]
        n = agg["normalised"][priority]
        for v in _in_order(vs):
            m, c = (_pct(vs[v]["makespan_vs_big_job"]), _pct(vs[v]["core_hours_vs_per_stage"]))
            lines.append(f"| {v} | {m} | {c} | {n['makespan_s'][v]:+.1%} | {n['total_wait_s'][v]:+.1%} | "
                         f"{n['core_hours'][v]:+.1%} |")
        lines += ["", f"Per cell (priority `{priority}`; TWT = total perceived wait, CH = core-hours, "
                      "OH = idle overhead):", "",
                  "| workflow | cores | variant | TWT (s) | makespan (s) | ± | CH (h) | OH (h) | hit | resub. |",
                  "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
        for t in agg["cells"]:
            if t["priority"] != priority:
                continue
            hit = f"{t['hit_ratio']:.0%}" if t["hit_ratio"] is not None else "-"
            lines.append(f"| {t['workflow']} | {t['cores']} | {t['variant']} | {t['total_wait_s']:.0f} | "
                         f"{t['makespan_s']:.0f} | {t['makespan_sd']:.0f} | {t['core_hours']:.1f} | "
                         f"{t['overhead_core_hours']:.2f} | {hit} | {t['resubmissions']:.1f} |")
        lines.append("")
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def plot(agg: dict, path: Path) -> None:
    from asad.view.plots import _pyplot

    plt = _pyplot()
    priorities = list(agg["versus"])
    fig, axes = plt.subplots(1, len(priorities), figsize=(6 * len(priorities), 4), squeeze=False)
    for ax, priority in zip(axes[0], priorities, strict=True):
        n = agg["normalised"][priority]
        variants = _in_order(n["makespan_s"])
        x = np.arange(len(variants))
        ax.bar(x - 0.2, [100 * n["makespan_s"][v] for v in variants], 0.4, label="makespan")
        ax.bar(x + 0.2, [100 * n["core_hours"][v] for v in variants], 0.4, label="core-hours")
        ax.set_xticks(x)
        ax.set_xticklabels(variants, rotation=30, ha="right")
        ax.set_ylabel("% above the best strategy (lower is better)")
        ax.set_title(f"priority {priority}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(args: argparse.Namespace) -> int:

    presets = args.presets.split(",")
    unknown = [p for p in args.priorities.split(",") if p not in PRIORITY_PRESETS]
    if unknown:
        print(f"asad bench strategies: unknown --priorities {','.join(unknown)}; choose from "
              f"{','.join(PRIORITY_PRESETS)}", file=sys.stderr)
        return 2
    seeds, train = args.seeds, args.train
    if args.quick:
        presets, seeds, train = ["hpc2n"], 1, 0
    for variant in args.variants.split(","):
        variant_setup(variant)  # an unknown name stops here, before any warm-up
    time_params = {}
    if args.time_margin:
        try:
            margin, slack = (float(v) for v in args.time_margin.split(":"))
        except ValueError:
            print(f"asad bench strategies: --time-margin wants MARGIN:SLACK_S, e.g. 1.5:60; got "
                  f"{args.time_margin!r}", file=sys.stderr)
            return 2
        time_params = {"margin": margin, "slack_s": slack}
    args.out.mkdir(parents=True, exist_ok=True)
    db_dir = Path(tempfile.mkdtemp(prefix="asad-bench-", dir=args.out))
    tasks = [{"preset": p, "priority": prio, "out": str(db_dir), "seeds": seeds, "train": train,
              "cores": ([int(c) for c in args.cores.split(",")] if args.cores else
                        SCALES[p][:2] if args.quick else SCALES[p]), "workflows": args.workflows.split(","),
              "variants": args.variants.split(","), "load": args.load, "warmup_days": args.warmup_days,
              "predictor": args.predictor, "idle_price": args.idle_price,
              "first_seed": args.first_seed, "backfill": args.backfill, "time_limits": args.time_limits,
              "time_params": time_params}
             for p in presets for prio in args.priorities.split(",")]
    t0 = time.time()
    rows: list[dict] = []
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for part in pool.map(_series, tasks):
                rows.extend(part)
    else:
        for task in tasks:
            rows.extend(_series(task))
    agg = aggregate(rows)
    agg["wall_s"] = time.time() - t0
    agg["command"] = "asad bench strategies " + " ".join(sys.argv[3:])
    (args.out / "strategies.json").write_text(json.dumps({"rows": rows, **agg}, indent=1))
    (args.out / "strategies.md").write_text(markdown(agg))
    try:
        plot(agg, args.out / "strategies.png")
    except SystemExit:
        pass
    if args.json:
        print(json.dumps({k: agg[k] for k in ("normalised", "versus", "wall_s")}, indent=2))
    else:
        print(markdown(agg))
        print(f"wall {agg['wall_s']:.0f} s; files in {args.out}")
    return 0
