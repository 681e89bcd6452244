"""Issue 38, seventh round, stage 1: choose a calibration for cold answers on the tuning windows
(before 2021-06-10; nothing later is read), by a rule written down and committed before the run.

The diagnostic (scripts/coverage_cold.py, docs/results/learn.md "Issue 38, seventh round") put
all of Cedar's coverage miss on the cold jobs: warm within 3.5 points in both tuning windows,
cold 12.3 and 11.3 points off, in strata (answering levels coarser than the key) that ACI's
slow rate (0.0004 a job) cannot follow, and in the first window 14 % of the jobs fell back to
the cluster's pooled residuals (mostly warm answers', narrower) before their stratum held 100.
The candidates, all ``median-backoff`` with one or both of (asad/learn/experts.py):
``aci_gamma_cold`` (ACI's own rate for cold strata) and ``cold_pool`` (a stratum short of
residuals reads the pooled residuals of cold answers)::

    b-cold-g2       {"aci_gamma_cold": 0.002}
    b-cold-g8       {"aci_gamma_cold": 0.008}
    b-cold-pool     {"cold_pool": true}
    b-cold-g2-pool  {"aci_gamma_cold": 0.002, "cold_pool": true}
    b-cold-g8-pool  {"aci_gamma_cold": 0.008, "cold_pool": true}

(The point estimate is the back-off's in every variant, so median error and x3 are the
default's; only the quantiles move.) One replay per cluster to 2021-06-10, every learner in it.

The rule. A *cell* is one cluster x one tuning window (04-29 .. 05-20, 05-20 .. 06-10; 4 cells);
its figure is the worst quantile-coverage gap over every job answered (q 0.1 .. 0.9, the
protocol's). Kept: the variants no worse than ``median-backoff``'s own gap in any cell. Chosen:
among the kept, the smallest worst-cell gap (ties: the smaller mean over the cells). None kept:
no calibration change. The chosen one's settings are then given to the seventh round's hedge
variants (scripts/tune_hedge.py) and the variant itself rides in the judged replay, to be read
once on the rolling windows, and proposed as the default's calibration only if there it meets
+-5 points in at least as many windows as ``median-backoff`` on both clusters and more on one::

    python scripts/tune_cold_calibration.py cedar graham
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from asad.bench import predictors as bench
from asad.bench import rolling

WINDOWS = ("2021-04-29..2021-05-20", "2021-05-20..2021-06-10")
REFERENCE = "median-backoff"
VARIANTS = {
    "b-cold-g2": {"aci_gamma_cold": 0.002},
    "b-cold-g8": {"aci_gamma_cold": 0.008},
    "b-cold-pool": {"cold_pool": True},
    "b-cold-g2-pool": {"aci_gamma_cold": 0.002, "cold_pool": True},
    "b-cold-g8-pool": {"aci_gamma_cold": 0.008, "cold_pool": True},
}


def cell_gaps(cluster: str, variants: dict[str, dict] | None = None,
              median_errors: dict[str, dict[str, float]] | None = None,
              ) -> dict[str, dict[str, tuple[float, float, list[float]]]]:
    """label -> window -> (worst gap over every job answered, worst gap on the cold jobs, coverage per level).
    ``variants``: the candidates (default: this round's); ``median_errors``, when given, gets
    label -> window -> the median |log10 error| of the point estimate over the jobs answered."""
    jobs = bench.load_jobs(bench.DEFAULT_DATA, cluster, None, "2021-06-10", key_config=bench.KEY_CONFIGS["account"])
    variants = VARIANTS if variants is None else variants
    predictors = [(REFERENCE, REFERENCE, {})] + [(lb, REFERENCE, params) for lb, params in variants.items()]
    t0 = time.process_time()
    replayed = bench.replay(jobs, predictors, seed=0, quantiles=bench.QUANTILES)
    print(f"[{cluster}] {len(jobs)} jobs to 2021-06-10, {len(predictors)} learners, {time.process_time() - t0:.0f} CPU s",
          flush=True)
    qs = np.asarray(bench.QUANTILES)
    out: dict[str, dict[str, tuple[float, float, list[float]]]] = {}
    for label, _, _ in predictors:
        quant = replayed["quantiles"][label]
        for text in WINDOWS:
            lo, hi = rolling.parse_window(text)
            inside = (jobs.eligible_s >= lo) & (jobs.eligible_s < hi) & ~np.isnan(quant).any(axis=1)
            cov = np.mean(jobs.wait_s[inside][:, None] <= quant[inside], axis=0)
            cold = inside & ~replayed["warm"]
            cov_cold = np.mean(jobs.wait_s[cold][:, None] <= quant[cold], axis=0)
            if median_errors is not None:
                est = replayed["estimates"][label][inside]
                error = np.abs(np.log10(1.0 + est) - np.log10(1.0 + jobs.wait_s[inside]))
                median_errors.setdefault(label, {})[text] = float(np.median(error))
            out.setdefault(label, {})[text] = (float(np.max(np.abs(cov - qs))), float(np.max(np.abs(cov_cold - qs))),
                                               [round(float(c), 4) for c in cov])
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--from-json"]:  # the rule again over saved runs' JSON lines (one per cluster)
        gaps = {}
        for path in argv[1:]:
            with open(path) as handle:
                gaps.update(json.load(handle))
        clusters = list(gaps)
    else:
        clusters = argv or ["cedar", "graham"]
        gaps = {cluster: cell_gaps(cluster) for cluster in clusters}
    print("\ncell: worst coverage gap, every job answered (cold jobs alone) in points")
    cells = [(c, w) for c in clusters for w in WINDOWS]
    for label in [REFERENCE, *VARIANTS]:
        print(f"  {label:<15} " + "  ".join(f"{c[:5]} {w[5:10]} {100 * gaps[c][label][w][0]:4.1f} "
                                           f"({100 * gaps[c][label][w][1]:4.1f})" for c, w in cells))
    kept = [lb for lb in VARIANTS
            if all(gaps[c][lb][w][0] <= gaps[c][REFERENCE][w][0] for c, w in cells)]
    summary = {lb: (max(gaps[c][lb][w][0] for c, w in cells), float(np.mean([gaps[c][lb][w][0] for c, w in cells])))
               for lb in [REFERENCE, *VARIANTS]}
    print("\nlabel: worst-cell gap / mean over the cells / kept")
    for lb, (worst, mean) in summary.items():
        print(f"  {lb:<15} {100 * worst:4.1f} {100 * mean:4.1f} {'kept' if lb in kept else ''}")
    chosen = min(kept, key=lambda lb: summary[lb]) if kept else None
    print(f"\nchosen: {chosen or 'none kept: no calibration change'}"
          + (f" {json.dumps(VARIANTS[chosen])}" if chosen else ""))
    print(json.dumps({c: gaps[c] for c in clusters}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
