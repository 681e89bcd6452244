#!/usr/bin/env python3
"""Issue 35's hindsight frontier: what a fixed lead could hide under ``multifactor-limits``.

The rule family is the one asad's quantile rule lives in: a successor is submitted without a
dependency, held at a barrier, and made eligible a lead ``L`` before its predecessors' expected end
(asad's own expected end: a running predecessor's start plus its learned run time; a pending one's
eligible instant plus its learned wait, so a lead longer than the run makes the successor eligible
before its predecessor starts). ``L`` replaces the learned quantile; everything else is auto's
(``MIN_LEAD_S``: a lead under 60 s is ``afterok``). The early release is switched off, since it
would move the lead the family fixes.

Every (seed, lead rule) is re-simulated from the seed's warmed-up snapshot (the schedule reacts to
the submission; no counterfactual is read off one run). A lead rule is ``L`` for every wide
successor (>= 28 CPUs; narrow successors ``afterok``), or a table of one lead per boundary (the
oracle's choice, re-simulated to check it).

    scripts/lead_frontier.py --out DIR [--first-seed 5000] [--seeds 3] [--leads 0,60,...] [--jobs 2]
    scripts/lead_frontier.py --out DIR --boundary-leads FILE.json   # re-simulate an oracle's choice

Writes DIR/rows.jsonl: one row per (seed, variant, cell, stage) with the stage's perceived wait,
idle core-seconds at its barrier and its job's core-seconds; the cell's core-hours and makespan on
the stage rows too. The training seed (``--first-seed``) runs once with ``afterok`` everywhere (auto
with lead 0) and its store is copied for every measured (seed, variant): each measured run learns
only from the training seed, so runs are independent and can go in parallel.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import asad.core.context as context_mod
import asad.slurm.priority_rules as rules_mod
import asad.core.engine as engine_mod
import asad.strategies.auto as auto_mod
from asad.bench.strategies import CORES_PER_NODE, EXAMPLES, SERIAL_FRACTION, scale_spec
from asad.common.config import Settings
from asad.daemon.wiring import run_in_process
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow
from asad.store.repo import Store

PRESET = "hpc2n"
# the 7 cells of the third and fourth stops (BLAST at 56 and 112 cores wait under one backfill
# interval per stage under per-stage, and are left out)
CELLS = (("montage", 28), ("montage", 56), ("montage", 112), ("blast", 28),
         ("statistics", 28), ("statistics", 56), ("statistics", 112))
WIDE = 28

# the lead rule of the run in progress: (cell name, stage) -> lead, or a lead for every wide stage
_LEAD: dict = {"uniform": 0.0, "table": None}
_orig_quantile_begin = context_mod.Context.quantile_begin


def _lead_for(wf, stage: str) -> float:  # noqa: ANN001
    table = _LEAD["table"]
    if table is not None:
        return float(table.get(f"{wf.spec.name}/{stage}", 0.0))
    return _LEAD["uniform"] if wf.spec.stage(stage).cpus >= WIDE else 0.0


def _fixed_lead_begin(self, wf, stage, preds, now=0.0):  # noqa: ANN001
    """auto's eligible instant with the lead fixed: ``L`` before the predecessors' expected end,
    as auto computes that end (:meth:`Context.predicted_end`)."""
    _at, tau, seen = _orig_quantile_begin(self, wf, stage, preds, now)
    expected_end = max(self.predicted_end(wf, p, now) for p in preds)
    return expected_end - _lead_for(wf, stage), tau, max(seen, 1)


_ORIGINALS = (context_mod.Context.quantile_begin, engine_mod.release_early, auto_mod.lead_cap, rules_mod.rules_of)


def _quantile_rules(backend):  # noqa: ANN001
    """The backend's priority rules, read as if limits were enforced: auto takes its quantile rule
    (the family) on ``multifactor`` too, where it would take aged-chain."""
    return dataclasses.replace(_ORIGINALS[3](backend), enforce_limits=True)


def fixed_leads(on: bool) -> None:
    """Switch auto to the fixed-lead family (on) or back to asad's own rule (off)."""
    if on:
        context_mod.Context.quantile_begin = _fixed_lead_begin
        engine_mod.release_early = lambda *a, **k: (False, "")  # the family fixes the lead: no release
        auto_mod.lead_cap = lambda *a, **k: None
        rules_mod.rules_of = _quantile_rules
    else:
        (context_mod.Context.quantile_begin, engine_mod.release_early, auto_mod.lead_cap,
         rules_mod.rules_of) = _ORIGINALS


def snapshot_path(out: Path, seed: int) -> Path:
    return out / f"snapshot-{seed}.pkl"


def warm(out: Path, seed: int, warmup_days: float, priority: str) -> None:
    path = snapshot_path(out, seed)
    if path.exists():
        return
    sim = make_simulator(PRESET, seed=seed, priority=priority, backfill="easy")
    sim.run_until(sim.now() + warmup_days * 86400)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(sim))
    tmp.rename(path)


def specs():
    cpn = CORES_PER_NODE[PRESET]
    return [scale_spec(load_workflow(EXAMPLES / f"{wf}.yaml"), cores, cpn, SERIAL_FRACTION[wf]) for wf, cores in CELLS]


def run_seed(task: dict) -> list[dict]:
    """One (seed, variant): the 7 cells in the bench's order from copies of the seed's snapshot,
    with a copy of the training store. ``strategy`` auto with no ``lead`` given is asad's default
    itself (its learned quantile, or whatever rule the priority preset gives it)."""
    out, seed, variant = Path(task["out"]), task["seed"], task["variant"]
    t0, c0 = time.time(), time.process_time()
    db = Path(task["db"]) if task.get("db") else out / f"store-{seed}-{variant}.db"
    if task.get("train_db"):
        shutil.copy(task["train_db"], db)
    store = Store(f"sqlite:///{db}")
    snapshot = snapshot_path(out, seed).read_bytes()
    strategy = task["strategy"]
    fixed_leads("lead" in task or "table" in task)
    _LEAD["uniform"] = float(task.get("lead", 0.0))
    _LEAD["table"] = task.get("table")
    rows = []
    for spec in specs():
        if _LEAD["table"] is not None:
            _LEAD["table"] = {k.partition("@")[2]: v for k, v in task["table"].items()
                              if k.startswith(f"{seed}@{spec.name}/")}
        sim = pickle.loads(snapshot)
        settings = Settings(asa_timing="daemon", seed=task["seed_index"], share_jobs="off")
        (s,) = run_in_process(store, sim, [spec], settings=settings, strategy=strategy, mode="dependency")
        for st in s["stages"]:
            job_core_s = ((st["end"] - st["job_start"]) * st["cpus"]
                          if st["end"] is not None and st["job_start"] is not None else 0.0)
            rows.append({"seed": seed, "variant": variant, "cell": spec.name, "stage": st["name"],
                         "cpus": st["cpus"], "after": st["after"], "perceived_wait_s": st["perceived_wait_s"],
                         "wait_s": st["wait_s"], "idle_core_s": st["idle_s"] * st["cpus"], "job_core_s": job_core_s,
                         "submit": st["submit"], "eligible": st["eligible"], "start": st["start"],
                         "job_start": st["job_start"], "end": st["end"],
                         "cell_core_hours": s["core_hours"], "makespan_s": s["makespan_s"], "state": s["state"]})
    store.close()
    if not task.get("db"):
        db.unlink(missing_ok=True)
    print(f"  seed {seed} {variant}: {time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU",
          file=sys.stderr, flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--first-seed", type=int, default=5000, help="the training seed; measured seeds follow it")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--warmup-days", type=float, default=1.0)
    p.add_argument("--leads", default="0,60,120,300,600,900,1200,1800,2700,3600,5400,7200,10800")
    p.add_argument("--baselines", default="per-stage,chain",
                   help="strategies run beside the leads (auto: asad's default, its own rule)")
    p.add_argument("--boundary-leads", type=Path, default=None,
                   help="JSON {'SEED@CELL/STAGE': lead}: re-simulate that table (variant 'table')")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--priority", default="multifactor-limits", choices=("multifactor-limits", "multifactor"),
                   help="the simulator's priority preset (one output folder per preset: its snapshots)")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = [args.first_seed + 1 + i for i in range(args.seeds)]
    t0, c0 = time.time(), time.process_time()
    with ProcessPoolExecutor(args.jobs) as pool:
        list(pool.map(warm, [args.out] * (len(seeds) + 1), [args.first_seed, *seeds],
                      [args.warmup_days] * (len(seeds) + 1), [args.priority] * (len(seeds) + 1)))
        train_db = args.out / f"train-{args.first_seed}.db"
        if not train_db.exists():
            # the training seed: auto with lead 0 (afterok everywhere) teaches the run times and waits
            tmp_db = args.out / f"train-{args.first_seed}.tmp.db"
            tmp_db.unlink(missing_ok=True)
            pool.submit(run_seed, {"out": str(args.out), "seed": args.first_seed, "seed_index": 0,
                                   "priority": args.priority,
                                   "variant": "train", "strategy": "auto", "lead": 0.0, "db": str(tmp_db)}).result()
            tmp_db.rename(train_db)
        tasks = []
        for i, seed in enumerate(seeds, start=1):
            base = {"out": str(args.out), "seed": seed, "seed_index": i, "train_db": str(train_db),
                    "priority": args.priority}
            if args.boundary_leads:
                tasks.append({**base, "variant": args.boundary_leads.stem, "strategy": "auto",
                              "table": json.loads(args.boundary_leads.read_text())})
                continue
            for b in [b for b in args.baselines.split(",") if b]:
                tasks.append({**base, "variant": b, "strategy": b})
            for lead in [float(x) for x in args.leads.split(",") if x]:
                tasks.append({**base, "variant": f"lead-{lead:g}", "strategy": "auto", "lead": lead})
        name = "rows-table.jsonl" if args.boundary_leads else "rows.jsonl"
        with (args.out / name).open("a") as f:
            for rows in pool.map(run_seed, tasks):
                for r in rows:
                    f.write(json.dumps(r) + "\n")
                f.flush()
    print(f"done: {time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU (parent only)", file=sys.stderr)


if __name__ == "__main__":
    main()
