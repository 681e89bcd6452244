"""Warm jobs: the default learner against `median-all`, with the spread over days.

    .venv/bin/python scripts/warm_vs_median_all.py [CLUSTER] [--split 2021-06-10] [--until 2021-07-07]

Replays one cluster as `asad bench predictors --key account` does. It prints, for the warm jobs
before and after the split, each predictor's share within x3 and the difference in median
|log10 error|. Each difference comes with a 90 % interval from a paired bootstrap that resamples
whole days, since one day's jobs share a queue. A check of how far apart the two are, not a
benchmark: docs/results/learn.md cites what it printed.
"""

from __future__ import annotations

import math

import numpy as np

import diagnosis
from asad.bench import predictors as bench


def main() -> None:
    parser = diagnosis.parser(__doc__, cluster_default="graham")
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()
    jobs = diagnosis.load(args)
    replayed = bench.replay(jobs, [("default", "median-backoff", {}), ("median-all", "median-all", {})])
    est = replayed["estimates"]
    split = diagnosis.epoch_s(args.split)
    print("period | warm jobs | within x3: default / median-all / difference [90 % over days] "
          "| median |log10 error| difference [90 % over days]")
    for period, in_period in ((f"before {args.split}", jobs.eligible_s < split),
                              (f"after {args.split}", jobs.eligible_s >= split)):
        scored = replayed["warm"] & in_period & ~np.isnan(est["default"]) & ~np.isnan(est["median-all"])
        truth = np.log10(1.0 + jobs.wait_s[scored])
        error = {label: np.abs(np.log10(1.0 + est[label][scored]) - truth) for label in est}
        within = {label: e <= math.log10(3) for label, e in error.items()}
        day = (jobs.eligible_s[scored] // 86400).astype(int)
        days = np.unique(day)
        by_day = {d: np.flatnonzero(day == d) for d in days}
        rng = np.random.default_rng(0)
        x3, med = [], []
        for _ in range(args.resamples):
            pick = np.concatenate([by_day[d] for d in rng.choice(days, len(days))])
            x3.append(within["default"][pick].mean() - within["median-all"][pick].mean())
            med.append(np.median(error["default"][pick]) - np.median(error["median-all"][pick]))
        x3_lo, x3_hi = np.percentile(x3, [5, 95])
        med_lo, med_hi = np.percentile(med, [5, 95])
        print(f"{period} | {int(scored.sum())} | {100 * within['default'].mean():.1f} / "
              f"{100 * within['median-all'].mean():.1f} / "
              f"{100 * (within['default'].mean() - within['median-all'].mean()):+.1f} pt "
              f"[{100 * x3_lo:+.1f}, {100 * x3_hi:+.1f}] | "
              f"{np.median(error['default']) - np.median(error['median-all']):+.3f} [{med_lo:+.3f}, {med_hi:+.3f}]")


if __name__ == "__main__":
    main()
