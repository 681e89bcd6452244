"""Issue 38, seventh round's diagnostic: where ``median-backoff``'s quantile coverage misses on the
tuning windows (before 2021-06-10; nothing later is read), by quantile level, cold against warm
jobs, and the residual stratum (answering level) the job was told from.

Replays one cluster to 2021-06-10 with the default learner (and any ``--add`` variants, as
``asad bench predictors`` takes them) and, per tuning window and over every job answered (the
protocol's coverage set), prints the coverage of each quantile level for: all jobs; warm (the
job's own key had seen a wait) and cold; per told stratum (the answering level's slot, ``:p``
when the pending floor raised the answer); and whether ACI's stream reached the job (its
stratum's window held enough residuals when it was told, so its quantiles were read at ACI's
levels) or it fell back to the cluster's pooled residuals (results: docs/results/learn.md,
"Issue 38, seventh round")::

    python scripts/coverage_cold.py cedar [--add 'label=kind:{json}' ...]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from asad.bench import predictors as bench
from asad.bench import rolling

WINDOWS = ("2021-04-29..2021-05-20", "2021-05-20..2021-06-10")


def coverage_row(name: str, wait: np.ndarray, q: np.ndarray, mask: np.ndarray, total: int) -> str:
    n = int(mask.sum())
    if not n:
        return f"    {name:<28} {0:>6}"
    cov = np.mean(wait[mask][:, None] <= q[mask], axis=0)
    gaps = cov - np.asarray(bench.QUANTILES)
    worst = int(np.argmax(np.abs(gaps)))
    return (f"    {name:<28} {n:>6} {100 * n / total:5.1f}%  " + " ".join(f"{100 * c:5.1f}" for c in cov)
            + f"   worst {100 * gaps[worst]:+5.1f} at q{bench.QUANTILES[worst]:g}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cluster")
    parser.add_argument("--add", action="append", default=[])
    args = parser.parse_args(argv)
    jobs = bench.load_jobs(bench.DEFAULT_DATA, args.cluster, None, "2021-06-10", key_config=bench.KEY_CONFIGS["account"])
    predictors = bench.parse_predictors("median-backoff", args.add)
    t0 = time.process_time()
    replayed = bench.replay(jobs, predictors, seed=0, quantiles=bench.QUANTILES)
    print(f"[{args.cluster}] {len(jobs)} jobs replayed to 2021-06-10 in {time.process_time() - t0:.0f} CPU s;"
          f" coverage in % at q = {' '.join(f'{q:g}' for q in bench.QUANTILES)}")
    warm = replayed["warm"]
    for label, _, _ in predictors:
        quant = replayed["quantiles"][label]
        told = replayed["told"].get(label)
        for text in WINDOWS:
            lo, hi = rolling.parse_window(text)
            inside = (jobs.eligible_s >= lo) & (jobs.eligible_s < hi) & ~np.isnan(quant).any(axis=1)
            total = int(inside.sum())
            print(f"\n  {label} {text}: {total} jobs answered")
            print(coverage_row("all", jobs.wait_s, quant, inside, total))
            print(coverage_row("warm", jobs.wait_s, quant, inside & warm, total))
            print(coverage_row("cold", jobs.wait_s, quant, inside & ~warm, total))
            if told is None:
                continue
            stratum = np.array([("-" if t is None or t[1] is None else t[1]) for t in told])
            reached = np.array([t is not None and t[2] is not None for t in told])
            for part, mask in (("cold", ~warm), ("warm", warm)):
                print(coverage_row(f"{part}, ACI reached", jobs.wait_s, quant, inside & mask & reached, total))
                print(coverage_row(f"{part}, pooled fallback", jobs.wait_s, quant, inside & mask & ~reached, total))
            for s, _ in sorted(Counter(stratum[inside]).items(), key=lambda item: -item[1]):
                for part, mask in (("cold", ~warm), ("warm", warm)):
                    sel = inside & mask & (stratum == s)
                    if sel.sum() >= 200:
                        print(coverage_row(f"stratum {s} {part}", jobs.wait_s, quant, sel, total))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
