"""Week-by-week quantile coverage of the default learner on the tuning weeks, for several ACI gammas.

    .venv/bin/python scripts/weekly_coverage.py cedar 0.0004,0.001,0.002,0.004 [--until 2021-06-10]

Replays one cluster's jobs eligible before ``--until`` (the tuning weeks; the test weeks are
not read) as `asad bench predictors --key account` does, once per gamma, and prints the
coverage of the 10/25/50/75/90 % quantiles over all those jobs, the pinball loss (log10), and
each week's worst gap from nominal (weeks with fewer than 500 answered jobs are left out).
A diagnosis, not a benchmark: docs/results/learn.md cites what it printed.
"""

from __future__ import annotations


import numpy as np

import diagnosis
from asad.bench import predictors as bench

QS = (0.1, 0.25, 0.5, 0.75, 0.9)
MIN_WEEK_JOBS = 500


def main() -> None:
    parser = diagnosis.parser(__doc__, split=None, until="2021-06-10")
    parser.add_argument("gammas", help="comma-separated aci_gamma values")
    parser.add_argument("--weeks", type=int, default=1, help="windows of this many weeks, sliding by one")
    args = parser.parse_args()
    gammas = [float(g) for g in args.gammas.split(",")]
    jobs = diagnosis.load(args)
    predictors = [(f"gamma {g}", "median-backoff", {"aci_gamma": g}) for g in gammas]
    replayed = bench.replay(jobs, predictors, quantiles=QS)
    wait = jobs.wait_s
    week = ((jobs.eligible_s - jobs.eligible_s.min()) // (7 * 86400)).astype(int)
    print(f"{args.cluster}: {len(jobs)} jobs eligible from {np.datetime64(int(jobs.eligible_s.min()), 's')} "
          f"to {args.until} ({week.max() + 1} weeks)")
    print("variant | coverage 10/25/50/75/90 % | pinball | worst gap per window: max / mean | per window (first week)")
    for label, _, _ in predictors:
        estimates, q = replayed["estimates"][label], replayed["quantiles"][label]
        scored = bench.score(estimates, wait, q, QS)  # the bench's own coverage and pinball loss
        coverage = [100 * c for c in scored["quantile_coverage"].values()]
        answered = ~np.isnan(estimates)
        gaps = {}
        for w in range(week.max() + 2 - args.weeks):
            idx = (week >= w) & (week < w + args.weeks)
            if (answered & idx).sum() >= MIN_WEEK_JOBS:
                window = bench.score(estimates[idx], wait[idx], q[idx], QS)["quantile_coverage"]
                gaps[w] = max(abs(100 * c - 100 * a) for c, a in zip(window.values(), QS))
        print(f"{label} | " + " / ".join(f"{c:.1f}" for c in coverage) + f" | {scored['pinball_log10']:.3f} | "
              f"{max(gaps.values()):.1f} / {np.mean(list(gaps.values())):.1f} | "
              + " ".join(f"w{w} {g:.1f}" for w, g in gaps.items()))

if __name__ == "__main__":
    main()
