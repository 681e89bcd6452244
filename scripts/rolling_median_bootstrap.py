"""Issue 38: how far a judged learner's median error is from ``median-backoff``'s in each rolling
window, with a 90 % interval from a paired bootstrap over days.

    .venv/bin/python scripts/rolling_median_bootstrap.py graham [--learner h-wmed-m5-a20h200]

Replays one cluster as ``asad bench predictors --rolling 4w`` does (the whole file, keyed by
account and geometry, seed 0; the same windows from 2021-05-20 every week), with only the
reference and the learner. Per window, on the warm jobs both answered: each one's median
|log10 error| (the bench's figures, printed so a reader can check the two replays agree), the
difference (learner minus reference; positive: the learner is worse) and its 5-95 % interval
over 2,000 resamples of whole days (one day's jobs share a queue, so days, not jobs, are the
units). It reads only the learner's and the reference's rows: information on whether a miss is
inside the day-to-day noise, not a verdict (the target asks for "no worse", by the letter).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from asad.bench import predictors as bench
from asad.bench import rolling

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from tune_hedge_cold import SECOND  # noqa: E402

REFERENCE = "median-backoff"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cluster", choices=("cedar", "graham"))
    parser.add_argument("--learner", default="h-wmed-m5-a20h200", choices=sorted(SECOND))
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()
    jobs = bench.load_jobs(bench.DEFAULT_DATA, cluster=args.cluster, key_config=bench.KEY_CONFIGS["account"])
    predictors = [(REFERENCE, REFERENCE, {}), (args.learner, "hedge", SECOND[args.learner])]
    t0 = time.process_time()
    replayed = bench.replay(jobs, predictors, 0, quantiles=bench.QUANTILES)
    print(f"{args.cluster}: {len(jobs)} jobs replayed in {time.process_time() - t0:.0f} CPU s; "
          f"{args.learner} = hedge:{json.dumps(SECOND[args.learner])}")
    start = float(np.datetime64("2021-05-20", "s").astype(np.int64))
    spans = rolling.windows(start, rolling.parse_span("4w"), rolling.parse_span("1w"),
                            rolling.data_end_s(jobs.eligible_s))
    est = replayed["estimates"]
    truth = np.log10(1.0 + jobs.wait_s)
    error = {lb: np.abs(np.log10(1.0 + est[lb]) - truth) for lb in (REFERENCE, args.learner)}
    print(f"window | warm jobs (days) | median |log10 e|: {args.learner} / {REFERENCE} | "
          "difference [90 % over days]")
    for lo, hi in spans:
        scored = (replayed["warm"] & (jobs.eligible_s >= lo) & (jobs.eligible_s < hi)
                  & ~np.isnan(est[REFERENCE]) & ~np.isnan(est[args.learner]))
        mine, ref = error[args.learner][scored], error[REFERENCE][scored]
        day = (jobs.eligible_s[scored] // 86400).astype(int)
        days = np.unique(day)
        by_day = [np.flatnonzero(day == d) for d in days]
        rng = np.random.default_rng(0)
        diffs = []
        for _ in range(args.resamples):
            pick = np.concatenate([by_day[i] for i in rng.integers(0, len(days), len(days))])
            diffs.append(np.median(mine[pick]) - np.median(ref[pick]))
        low, high = np.percentile(diffs, [5, 95])
        point = float(np.median(mine) - np.median(ref))
        print(f"{rolling._day(lo)} .. {rolling._day(hi)} | {int(scored.sum())} ({len(days)}) | "
              f"{np.median(mine):.3f} / {np.median(ref):.3f} | {point:+.3f} [{low:+.3f}, {high:+.3f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
