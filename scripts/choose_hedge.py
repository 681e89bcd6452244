"""Choose ``hedge``'s settings on the tuning weeks only, then judge the frozen choice on the rolling
windows (issue 38; docs/results/learn.md).

Input: JSON files of ``asad bench predictors --rolling 4w --extra-window 2021-05-20..2021-06-10
--json``, one or more per cluster (variants may be split over files: a replay is deterministic, so
the same label scores the same in every file). Labels of hedge variants start with ``h-``.

The rule, fixed before any run was read: on the tuning window (the ``extra`` block, jobs eligible
2021-05-20 .. 2021-06-10, nothing later read), keep the variants whose worst quantile-coverage gap
is within 5 points on both clusters and whose median |log10 error| (warm jobs) is no worse than
``median-backoff``'s on both; among them, the smallest sum over the clusters of median |log10
error|. None kept: the default stays ``median-backoff`` (the best variant by the same sum is still
judged, to say how far it is). Only then are the rolling windows read, for the chosen variant.

    python scripts/choose_hedge.py graham:/tmp/G1.json,/tmp/G2.json cedar:/tmp/C1.json,/tmp/C2.json
"""

from __future__ import annotations

import json
import sys

import numpy as np

REFERENCE = "median-backoff"
RUNNING = ("median-k", "median-all")


def merged(paths: list[str], block: str) -> list[dict]:
    windows: list[dict] = []
    for path in paths:
        with open(path) as handle:
            data = json.load(handle)
        blocks = next(iter(data[block].values()))  # one cluster per file
        if not windows:
            windows = [dict(b, rows=dict(b["rows"])) for b in blocks]
        else:
            for mine, theirs in zip(windows, blocks, strict=True):
                mine["rows"].update(theirs["rows"])
    return windows


def choose(tuning: dict[str, dict]) -> tuple[str, bool]:
    variants = sorted(lb for lb in next(iter(tuning.values()))["rows"] if lb.startswith("h-"))
    kept, total = [], {}
    for lb in variants:
        total[lb] = sum(t["rows"][lb]["median_abs_log10"] for t in tuning.values())
        if all(t["rows"][lb]["worst_gap"] <= 0.05
               and t["rows"][lb]["median_abs_log10"] <= t["rows"][REFERENCE]["median_abs_log10"]
               for t in tuning.values()):
            kept.append(lb)
    pool = kept or variants
    return min(pool, key=lambda lb: total[lb]), bool(kept)


def main(argv: list[str]) -> int:
    files = {arg.split(":", 1)[0]: arg.split(":", 1)[1].split(",") for arg in argv}
    tuning = {cluster: merged(paths, "extra")[0] for cluster, paths in files.items()}
    print("tuning window 2021-05-20..2021-06-10: median |log10 error| / within x3 (warm) / worst coverage gap")
    for cluster, block in tuning.items():
        for lb, row in sorted(block["rows"].items()):
            gap = "" if row["worst_gap"] is None else f" {100 * row['worst_gap']:.1f}"
            print(f"  {cluster:<7} {lb:<14} {row['median_abs_log10']:.3f} {100 * row['within_x3']:.1f}{gap}")
    chosen, beats = choose(tuning)
    print(f"\nchosen on the tuning window: {chosen} ({'meets' if beats else 'does NOT meet'} the selection rule)\n")
    for cluster, paths in files.items():
        windows = merged(paths, "scored")
        met = {"median": [], "x3": [], "coverage": []}
        print(f"[{cluster}] rolling 4-week windows: {chosen} against {REFERENCE} and the best running median")
        for w in windows:
            rows = w["rows"]
            me, ref = rows[chosen], rows[REFERENCE]
            best = max((rows[lb] for lb in RUNNING if lb in rows), key=lambda r: r["within_x3"])
            met["median"].append(me["median_abs_log10"] <= ref["median_abs_log10"])
            met["x3"].append(me["within_x3"] >= best["within_x3"])
            met["coverage"].append(me["worst_gap"] is not None and me["worst_gap"] <= 0.05)
            print(f"  {w['start']}..{w['end']} jobs {w['jobs']:>6}: median error {me['median_abs_log10']:.3f} vs "
                  f"{ref['median_abs_log10']:.3f}; x3 {100 * me['within_x3']:.1f} vs {100 * best['within_x3']:.1f} % "
                  f"(reference {100 * ref['within_x3']:.1f}); worst coverage gap {100 * me['worst_gap']:.1f} "
                  f"(reference {100 * ref['worst_gap']:.1f}) points")
        for name, flags in met.items():
            share = np.mean(flags)
            print(f"  target {name}: met in {sum(flags)} of {len(flags)} windows ({100 * share:.0f} %): "
                  f"{'HOLDS' if share >= 0.75 else 'DOES NOT HOLD'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
