"""Quantile coverage of the default learner by how many jobs of a job's class were pending when it was told.

    .venv/bin/python scripts/coverage_by_queue_depth.py cedar [--split 2021-06-10] [--until 2021-07-07]

Replays one cluster as `asad bench predictors --key account` does. A job's class is the
learner's pending-floor class (``ExpertsPool.floor_key``); pending means eligible before the job
and not yet started when it became eligible, which is known at that moment. Prints the coverage
of the 10/25/50/75/90 % quantiles per depth bucket, before and after the split. A diagnosis, not
a benchmark: docs/results/learn.md cites what it printed.
"""

from __future__ import annotations

import collections
import heapq

import numpy as np

import diagnosis
from asad.bench import predictors as bench

QS = (0.1, 0.25, 0.5, 0.75, 0.9)
BUCKETS = ((0, 0), (1, 9), (10, 99), (100, 999), (1000, None))


def main() -> None:
    parser = diagnosis.parser(__doc__)
    args = parser.parse_args()
    jobs = diagnosis.load(args)
    replayed = bench.replay(jobs, [("default", "median-backoff", {})], quantiles=QS)
    estimates, quantiles = replayed["estimates"]["default"], replayed["quantiles"]["default"]
    wait, pool = jobs.wait_s, replayed["pools"]["default"]
    depth = np.zeros(len(jobs), dtype=int)
    pending_starts: dict[str, list[float]] = collections.defaultdict(list)  # class -> heap of start times
    for j in range(len(jobs)):
        starts = pending_starts[pool.floor_key(jobs.key[j])]
        while starts and starts[0] <= jobs.eligible_s[j]:
            heapq.heappop(starts)
        depth[j] = len(starts)
        heapq.heappush(starts, jobs.start_s[j])
    split = diagnosis.epoch_s(args.split)
    print("period | pending in the class | jobs (share) | coverage 10 / 25 / 50 / 75 / 90 %")
    for period, mask in ((f"before {args.split}", jobs.eligible_s < split), (f"after {args.split}", jobs.eligible_s >= split)):
        answered = mask & ~np.isnan(estimates)
        for low, high in BUCKETS:
            idx = answered & (depth >= low) & (depth <= (high if high is not None else depth.max()))
            if not idx.any():
                continue
            scored = bench.score(estimates[idx], wait[idx], quantiles[idx], QS)  # the bench's own coverage
            coverage = " / ".join(f"{100 * c:.1f}" for c in scored["quantile_coverage"].values())
            label = f"{low}" if low == high else f"{low}-{high}" if high is not None else f">= {low}"
            print(f"{period} | {label} | {idx.sum()} ({100 * idx.sum() / answered.sum():.0f} %) | {coverage}")


if __name__ == "__main__":
    main()
