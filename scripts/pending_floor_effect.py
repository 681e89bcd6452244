#!/usr/bin/env python3
"""What the engine's pending floor (asad/core/learned.py ``note_pending``) does to a user's
workflows where it can bind: several workflows submitted at once, so asad's own jobs of one class
pend side by side while the engine plans the next stages.

Per priority (each in a process of its own), per seed: the simulated cluster warmed up, then a
batch of workflows submitted at once and driven to the end, once with the floor (the daemon as it
is) and once without (``Learned.note_pending`` made a no-op: the engine before the eighteenth
session). Each arm keeps one store across the seeds, so the first (training) seed warms its
learners and is not reported. Prints per priority and arm the sums over the measured seeds of the
perceived waits (per stage, the start of its work minus its latest predecessor's end, or minus the
workflow's submission for a first stage: the wait a user sees), of the makespans and of the
core-hours.

    python scripts/pending_floor_effect.py --priorities multifactor,multifactor-limits --seeds 3
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ARMS = ("floor", "no-floor")


def run_series(priority: str, seeds: int, first_seed: int, batch: list[str], cores: int, warmup_days: float,
               out_dir: str) -> dict:
    from asad.bench.strategies import CORES_PER_NODE, EXAMPLES, SERIAL_FRACTION, scale_spec
    from asad.common.config import Settings
    from asad.core.learned import Learned
    from asad.daemon.wiring import run_in_process
    from asad.slurm.sim import make_simulator
    from asad.spec.load import load_workflow
    from asad.store.repo import Store

    note_pending = Learned.note_pending
    stores = {arm: Store(f"sqlite:///{Path(out_dir) / f'{priority}-{arm}.db'}") for arm in ARMS}
    # the same workflow twice is what a user submitting a batch does: its stages share their learners
    specs = [scale_spec(load_workflow(EXAMPLES / f"{name}.yaml"), cores, CORES_PER_NODE["hpc2n"], SERIAL_FRACTION[name])
             for name in batch]
    rows = []
    for k in range(1 + seeds):
        t0 = time.time()
        base = make_simulator("hpc2n", seed=first_seed + k, priority=priority, backfill="slurm")
        base.run_until(base.now() + warmup_days * 86400)
        snapshot = pickle.dumps(base)
        for arm in ARMS:
            Learned.note_pending = note_pending if arm == "floor" else (lambda self, now_s, pending: None)
            try:
                summaries = run_in_process(stores[arm], pickle.loads(snapshot), specs, settings=Settings(seed=k),
                                           strategy="auto")
            finally:
                Learned.note_pending = note_pending
            rows.append({"priority": priority, "seed": first_seed + k, "measured": k > 0, "arm": arm,
                         "perceived_wait_s": sum(s["total_wait_s"] for s in summaries),
                         "queue_wait_s": sum(s["queue_wait_s"] for s in summaries),
                         "makespan_s": sum(s["makespan_s"] for s in summaries),
                         "core_hours": sum(s["core_hours"] for s in summaries),
                         "completed": sum(s["state"] == "COMPLETED" for s in summaries), "workflows": len(summaries)})
        print(f"  {priority} seed {first_seed + k}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    for store in stores.values():
        store.close()
    return {"priority": priority, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--priorities", default="multifactor,multifactor-limits")
    ap.add_argument("--seeds", type=int, default=3, help="measured seeds (one training seed runs first)")
    ap.add_argument("--first-seed", type=int, default=8000)
    ap.add_argument("--batch", default="montage,blast,statistics,montage,blast,statistics",
                    help="the workflows submitted at once")
    ap.add_argument("--cores", type=int, default=28)
    ap.add_argument("--warmup-days", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    priorities = args.priorities.split(",")
    with tempfile.TemporaryDirectory(prefix="asad-floor-") as out_dir, \
            ProcessPoolExecutor(max_workers=min(2, len(priorities))) as pool:
        results = list(pool.map(run_series, priorities, [args.seeds] * len(priorities),
                                [args.first_seed] * len(priorities), [args.batch.split(",")] * len(priorities),
                                [args.cores] * len(priorities), [args.warmup_days] * len(priorities),
                                [out_dir] * len(priorities)))
    print(f"{len(args.batch.split(','))} workflows at once ({args.batch}), {args.cores} cores, strategy auto, "
          f"hpc2n with the Slurm-like backfill, {args.warmup_days:g} day of warm-up; seed {args.first_seed} "
          f"trains, {args.first_seed + 1}-{args.first_seed + args.seeds} measured (SIMULATED)\n")
    print("| priority | arm | perceived wait (h) | queue wait (h) | makespan (h, summed) | core-h | completed |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for result in results:
        for arm in ARMS:
            rows = [r for r in result["rows"] if r["measured"] and r["arm"] == arm]
            print(f"| {result['priority']} | {arm} | {sum(r['perceived_wait_s'] for r in rows) / 3600:.2f} | "
                  f"{sum(r['queue_wait_s'] for r in rows) / 3600:.2f} | {sum(r['makespan_s'] for r in rows) / 3600:.2f} | "
                  f"{sum(r['core_hours'] for r in rows):.1f} | {sum(r['completed'] for r in rows)}/"
                  f"{sum(r['workflows'] for r in rows)} |")
    print("\nper seed (perceived wait h, floor / no-floor):")
    for result in results:
        seeds = sorted({r["seed"] for r in result["rows"] if r["measured"]})
        cells = []
        for seed in seeds:
            by_arm = {r["arm"]: r for r in result["rows"] if r["seed"] == seed}
            cells.append(f"{seed}: {by_arm['floor']['perceived_wait_s'] / 3600:.2f} / "
                         f"{by_arm['no-floor']['perceived_wait_s'] / 3600:.2f}")
        print(f"  {result['priority']}: " + ", ".join(cells))
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
