"""``asad bench sim-fairshare``: what fair-share does to the simulated background load.

Runs a preset (its default load, 1-day warm-up) under multifactor without and with fair-share
(``priority="fairshare"``, Fair Tree) and reports, for the background jobs that became eligible
after the first simulated day, how many jobs the busiest accounts and the others got started and
their mean wait. Fair-share should let light accounts through and hold heavy ones back.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from asad.common.arg_types import positive_float, positive_int
from asad.slurm.sim import make_simulator
from asad.slurm.sim.presets import PRESETS


def run_policy(preset: str, days: float, seed: int, priority: str, backfill: str, top: int) -> dict:
    cpu0 = time.process_time()
    sim = make_simulator(preset, seed=seed, priority=priority, backfill=backfill)
    t0 = sim.now()
    account_of: dict[int, str] = {}
    arrive = sim._background_arrival

    def note_account(arrival: tuple) -> None:
        job_id = sim._next_id
        arrive(arrival)
        if job_id in sim.jobs and len(arrival) > 10:
            account_of[job_id] = arrival[10]

    sim._background_arrival = note_account  # type: ignore[method-assign]
    sim.run_until(t0 + days * 86400)
    pop = sim.workload.users
    share: dict[str, float] = {}
    for account, s in zip(pop.user_accounts, pop.share):
        share[account] = share.get(account, 0.0) + float(s)
    busiest = set(sorted(share, key=share.__getitem__, reverse=True)[:top])
    waits: dict[bool, list[float]] = {True: [], False: []}
    for job_id, account in account_of.items():
        job = sim.jobs[job_id]
        if job.start_time is not None and job.eligible_time >= t0 + 86400:
            waits[account in busiest].append(job.start_time - job.eligible_time)
    return {"priority": priority, "accounts": len(share), "top": top,
            "top_jobs": len(waits[True]), "top_wait_mean_h": round(float(np.mean(waits[True])) / 3600, 2),
            "other_jobs": len(waits[False]), "other_wait_mean_h": round(float(np.mean(waits[False])) / 3600, 2),
            "cpu_s": round(time.process_time() - cpu0, 1)}


def main(args: argparse.Namespace) -> int:
    rows = [run_policy(args.preset, args.days, args.seed, p, args.backfill, args.top)
            for p in ("multifactor", "fairshare")]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{args.preset}, {args.days:g} days after a 1-day warm-up, seed {args.seed}, backfill {args.backfill}")
    print(f"| priority | jobs of the {args.top} busiest accounts (of {rows[0]['accounts']}) | their mean wait h "
          "| jobs of the others | their mean wait h | CPU s |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['priority']} | {r['top_jobs']:,} | {r['top_wait_mean_h']} | {r['other_jobs']:,} "
              f"| {r['other_wait_mean_h']} | {r['cpu_s']} |")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("sim-fairshare", help="simulator: waits of heavy and light accounts "
                                   "with and without fair-share", description=__doc__)
    parser.add_argument("--preset", default="hpc2n", choices=sorted(PRESETS))
    parser.add_argument("--days", type=positive_float, default=8.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backfill", choices=["slurm", "easy", "none"], default="easy",
                        help="easy keeps it cheap; the priority rule is the same under either")
    parser.add_argument("--top", type=positive_int, default=10, help="how many of the busiest accounts form the heavy group")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=main)
