"""The simulator's most typical schedule as its replay (issue 37, fidelity): the medoid of its draws.

f37q found that one schedule *between* two real runs can meet both runs' rows, while another draw of
the same races (a third real run) usually does not (Slurm in the simulator's place meets 0.564 of
the rows). The fixed replay is one draw of the races (every racing end by the reply, the median
latencies). This script asks whether the simulator's *central* schedule does better: for each
recording, the fixed replay and ``--seeds`` replays with the latencies, end paths, OOM lag, loop
tick and backfill pass length drawn (the distributional figure's draws, ``seed_draws``) are compared
with each other by tau-b (the scorer's own ``compare_runs`` on two replays); the medoid, the one with
the largest summed tau to the others, is scored on the pair rows in the fixed replay's place. It
reads only what the fixed replay reads (the recording's inputs and settings), never the run's starts.

Rule, written before the first run (committed with this script): the medoid replaces the fixed
replay only if it meets more pair rows than the fixed replay (118 of 170 on main) and keeps every
scenario the fixed replay meets; otherwise it is reported as a diagnosis and nothing changes.

Usage: python scripts/sim_medoid_replay.py [--seeds 20] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys

from asad.bench.sim_vs_real import compare, compare_runs, load_recordings, replay
from asad.bench.sim_vs_real_pairs import _as_rec, by_scenario, pair_rows, scenario_verdicts, seed_draws


def medoid(run: dict, runs: list[dict], seeds: int) -> tuple[dict, int, list[float]]:
    """(the medoid replay, its index: 0 the fixed replay, k the seed k - 1, each candidate's mean tau
    to the others) of one recording."""
    cands = [replay(run)] + [replay(run, **seed_draws(run, runs, seed)) for seed in range(seeds)]
    recs = [_as_rec(run, c) for c in cands]
    n = len(cands)
    tau = [[1.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            tau[i][j] = tau[j][i] = compare_runs(recs[i], recs[j])["kendall_tau"]
    means = [(sum(row) - 1.0) / (n - 1) for row in tau]
    best = max(range(n), key=lambda i: (means[i], -i))  # ties: the fixed replay, then the lower seed
    return cands[best], best, means


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--json", help="write the rows and the per-recording choice here")
    args = p.parse_args(argv)
    recs = load_recordings(None)
    scenarios = by_scenario(recs)
    fixed, central, chosen = {}, {}, {}
    for scenario, runs in scenarios.items():
        for run in runs:
            sim, idx, means = medoid(run, runs, args.seeds)
            fixed[run["id"]] = compare(run, replay(run))
            central[run["id"]] = compare(run, sim)
            chosen[run["id"]] = {"index": idx, "mean_tau": round(means[idx], 4), "fixed_mean_tau": round(means[0], 4),
                                 "tau_fixed": fixed[run["id"]]["kendall_tau"],
                                 "tau_medoid": central[run["id"]]["kendall_tau"]}
            c = chosen[run["id"]]
            print(f"{run['id']:<28} medoid {'fixed' if idx == 0 else f'seed {idx - 1}':>8}  mean tau to draws "
                  f"{c['mean_tau']:.4f} (fixed {c['fixed_mean_tau']:.4f})  vs run: fixed {c['tau_fixed']:.4f} "
                  f"-> medoid {c['tau_medoid']:.4f}", flush=True)
    rows_fixed, rows_med = pair_rows(recs, fixed), pair_rows(recs, central)
    v_fixed, v_med = scenario_verdicts(rows_fixed), scenario_verdicts(rows_med)
    n_fixed, n_med = sum(r["met"] for r in rows_fixed), sum(r["met"] for r in rows_med)
    print(f"\npair rows met: fixed replay {n_fixed} of {len(rows_fixed)}, medoid {n_med} of {len(rows_med)}")
    print(f"scenarios met: fixed {sum(v_fixed.values())} of {len(v_fixed)}, medoid {sum(v_med.values())} of {len(v_med)}")
    for s in sorted(v_fixed):
        a = sum(r["met"] for r in rows_fixed if r["scenario"] == s)
        b = sum(r["met"] for r in rows_med if r["scenario"] == s)
        n = sum(1 for r in rows_fixed if r["scenario"] == s)
        print(f"  {s:<18} {a:>3} -> {b:>3} of {n}")
    lost = [s for s, ok in v_fixed.items() if ok and not v_med[s]]
    keep = n_med > n_fixed and not lost
    print(f"\nrule: {'the medoid meets more rows and loses no met scenario' if keep else 'not met'}"
          + (f" (scenarios lost: {', '.join(lost)})" if lost else ""))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"chosen": chosen, "rows_fixed": rows_fixed, "rows_medoid": rows_med}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
