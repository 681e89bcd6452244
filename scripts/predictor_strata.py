"""Quantile coverage of the default learner by who answered each job (the backoff slot).

    .venv/bin/python scripts/predictor_strata.py cedar [--split 2021-06-10] [--until 2021-07-07]

Replays one cluster as `asad bench predictors --key account` does, groups the jobs by the slot
of `BACKOFF_LEVELS` that answered them (0: the job's own key; floored answers with their slot),
prints the coverage of the 10/50/90 % quantiles before and after the split, and each residual
stratum's ACI levels at the end (a level read at or past 0 or 1 sits on, or reads past, the window's extremes).
A diagnosis, not a benchmark: docs/results/learn.md cites what it printed.
"""

from __future__ import annotations

import collections

import numpy as np

import diagnosis
from asad.bench import predictors as bench

GROUPS = {"0": "own key (slot 0)", "2": "account + walltime/partition (slots 2, 3)",
          "3": "account + walltime/partition (slots 2, 3)", "4": "account, any shape (slot 4)",
          "5": "geometry, any account (slot 5)"}


def main() -> None:
    parser = diagnosis.parser(__doc__)
    args = parser.parse_args()
    jobs = diagnosis.load(args)
    replayed = bench.replay(jobs, [("default", "median-backoff", {})], quantiles=(0.1, 0.5, 0.9))
    quantiles, wait = replayed["quantiles"]["default"], jobs.wait_s
    after = jobs.eligible_s >= diagnosis.epoch_s(args.split)
    groups = collections.defaultdict(list)
    for j, answer in enumerate(replayed["told"]["default"]):
        if answer is None or np.isnan(quantiles[j, 0]):
            continue
        slot = str(answer[1]).split(":")[0]
        groups[(f"after {args.split}" if after[j] else f"before {args.split}", GROUPS.get(slot, "other"))].append(j)
    print("period | answered by | jobs | coverage 10 / 50 / 90 %")
    for (period, group), idx in sorted(groups.items()):
        cover = [100 * float(np.mean(wait[idx] <= quantiles[idx, i])) for i in range(3)]
        print(f"{period} | {group} | {len(idx)} | " + " / ".join(f"{c:.1f}" for c in cover))
    print("\nstratum | residuals | ACI levels read at 5/10/25/50/75/90/95 %")
    for stats in replayed["pools"]["default"].stats.values():
        for name, window in sorted(stats.strata.items()):
            print(f"{name} | {len(window)} | " + " ".join(f"{level:.3f}" for level in window.tracked_levels()))


if __name__ == "__main__":
    main()
