"""Why the latency-drawn replays of a recording miss the distributional figure (issue 37, branch
q37f): per recording, the replays over N seeds with the latencies drawn as ``asad bench
sim-vs-real --seeds N`` draws them (``latency_draws``), and for each seed the first job, in
Slurm's start order, that the replay starts in another second than Slurm recorded (its label,
Slurm's start after the first submission, the replay's offset). Prints the median / min / max tau
against the recording and the real runs' median (the figure's threshold is that less 0.02), the
first differences tallied over the seeds (most common first), and the fixed replay's.

Usage: python scripts/sim_seed_misses.py [--seeds 20] RECORDING_ID ...
       (RECORDING_ID: a file stem, e.g. aged-deps.run5; none: every run the figure judges)
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter

from asad.bench.sim_vs_real import compare, compare_runs, load_recordings, replay
from asad.bench.sim_vs_real_pairs import by_scenario, seed_draws


def first_difference(rec: dict, sim: dict[str, dict], beyond_s: float = 0.0) -> tuple[str, float, float] | None:
    """(label, Slurm's start s after the first submission, replay - Slurm s) of the first job in
    Slurm's start order (ties by job id) whose replayed start second differs by more than
    ``beyond_s``; None if none does."""
    t0 = min(j["submit"] for j in rec["jobs"])
    for job in sorted((j for j in rec["jobs"] if j["start"] is not None), key=lambda j: (j["start"], j["job_id"])):
        got = sim[job["label"]]["start"]
        if got is None or abs(got - job["start"]) > beyond_s:
            return job["label"], job["start"] - t0, (float("nan") if got is None else got - job["start"])
    return None


FAR_S = 2.0  # a start more than this off: the schedule has parted, not a second's phase


def _show(diff: tuple[str, float, float] | None) -> str:
    return "none" if diff is None else f"{diff[0]} at {diff[1]:.0f} s ({diff[2]:+.0f})"


def describe(rec: dict, runs: list[dict], seeds: int) -> list[str]:
    taus, firsts, far = [], Counter(), Counter()
    for seed in range(seeds):
        sim = replay(rec, **seed_draws(rec, runs, seed))
        taus.append(compare(rec, sim)["kendall_tau"])
        diff = first_difference(rec, sim)
        firsts[_show(diff)] += 1
        far[_show(first_difference(rec, sim, FAR_S))] += 1
    real = statistics.median(compare_runs(rec, other)["kendall_tau"] for other in runs if other is not rec)
    fixed = replay(rec)
    diff = first_difference(rec, fixed)
    lines = [f"{rec['id']}: tau over {seeds} seeds median {statistics.median(taus):.4f} "
             f"(min {min(taus):.3f}, max {max(taus):.3f}); real runs' median {real:.4f} (needs >= {real - 0.02:.4f}); "
             f"fixed replay {compare(rec, fixed)['kendall_tau']:.4f}, first difference "
             + _show(diff) + f"; beyond {FAR_S:.0f} s " + _show(first_difference(rec, fixed, FAR_S))]
    lines += [f"    {n:2d} seeds: {what}" for what, n in firsts.most_common(6)]
    lines += [f"    beyond {FAR_S:.0f} s, {n:2d} seeds: {what}" for what, n in far.most_common(6)]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("ids", nargs="*")
    args = parser.parse_args()
    groups = by_scenario(load_recordings(None))
    for runs in groups.values():
        if len(runs) < 2:
            continue
        for rec in runs:
            if args.ids and rec["id"] not in args.ids:
                continue
            print("\n".join(describe(rec, runs, args.seeds)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
