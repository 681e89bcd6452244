"""Where each replay of a recording with a kept slurmctld.log first starts a job in another
second than Slurm did (issue 37): the log check behind the fidelity rules of docs/results/sim.md.
Per recording and mode (the fixed backfill grid, ``bf_poll``): the first job, in Slurm's start
order, whose replayed start second differs (its label, Slurm's start after the loop's start, the
replay's offset in seconds), how many jobs start in their logged second, and the replay's tau.

Usage: python scripts/sim_first_difference.py [--set NAME=PYVALUE ...] [--mode grid|bf_poll] [ID ...]
  --set: a module constant of asad.bench.sim_vs_real replaced first (as sim_vs_real_variant.py
  does), e.g. the slurmd.logs' direct values FIXED_REPLY_SHARE=0.946 "EPILOG_MESSAGE_DIST_S=(0.004,0.007,0.024)" (main before f37m: FIXED_REPLY_SHARE=0.6666666666666666 "EPILOG_MESSAGE_DIST_S=(0.08,0.4,0.54)")
"""

from __future__ import annotations

import argparse
import ast

import asad.bench.sim_vs_real as svr
from asad.bench.sim_vs_real import compare, load_recordings, replay
from asad.bench.sim_vs_real_logs import log_path

MODES = {"grid": {}, "bf_poll": {"bf_poll": True, "bf_plan_all": True}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--mode", choices=sorted(MODES), action="append")
    ap.add_argument("ids", nargs="*")
    args = ap.parse_args()
    for item in args.set:
        name, _, value = item.partition("=")
        if not hasattr(svr, name):
            raise SystemExit(f"asad.bench.sim_vs_real has no {name}")
        setattr(svr, name, ast.literal_eval(value))  # replay() reads the module's constants
    modes = {m: MODES[m] for m in (args.mode or MODES)}
    print("recording | mode | first start-second difference (job, Slurm's start s, replay - Slurm s) "
          "| jobs in their logged second | tau")
    print("|".join(["---"] * 5))
    for rec in load_recordings(None):
        if log_path(rec) is None or (args.ids and rec["id"] not in args.ids):
            continue
        origin = rec["timers"]["loop_start"]
        jobs = sorted((j for j in rec["jobs"] if j["start"] is not None), key=lambda j: j["start"])
        for mode, overrides in modes.items():
            sim = replay(rec, **overrides)
            first = next((j for j in jobs if sim[j["label"]]["start"] != j["start"]), None)
            where = "none" if first is None else (
                f"{first['label']}, {first['start'] - origin:.1f}, "
                f"{(sim[first['label']]['start'] or float('nan')) - first['start']:+.0f}")
            same = sum(sim[j["label"]]["start"] == j["start"] for j in jobs)
            print(f"{rec['id']} | {mode} | {where} | {same} of {len(jobs)} | "
                  f"{compare(rec, sim)['kendall_tau']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
