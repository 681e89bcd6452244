#!/usr/bin/env python3
"""Pool several `asad bench strategies --out DIR` runs over disjoint seeds and print issue 11's
targets over all their measured seeds, with how far the seeds alone move them.

    scripts/strategies_pool.py [--priority multifactor] [--default auto] [--variants A,B] [--seeds S,T] DIR [DIR ...]

Only the variants every run has (and, with --variants, only those) are compared: the best cheap
variant is chosen among them, so runs with different variant lists compare like with like. Beside
each target: a 90% bootstrap interval over the measured seeds (seeds resampled with replacement,
the bench's own per-seed targets recomputed), which says what a run of this many seeds can resolve.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from asad.bench.strategies import cell_means, targets

KEYS = ("makespan_vs_best_cheap", "core_hours_vs_per_stage", "hidden_interstage_wait")


def load(dirs: list[Path], priority: str, only: set[str] | None = None,
         seeds: set[int] | None = None) -> list[dict]:
    runs = [[r for r in json.loads((d / "strategies.json").read_text())["rows"]
             if r["priority"] == priority and r["measured"] and r["state"] == "COMPLETED"
             and (seeds is None or r["seed"] in seeds)] for d in dirs]
    common = set.intersection(*({r["variant"] for r in rows} for rows in runs))
    if only is not None:
        common &= only
    return [r for rows in runs for r in rows if r["variant"] in common]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--priority", default="multifactor")
    parser.add_argument("--default", default="auto", help="the variant judged")
    parser.add_argument("--variants", default="", help="compare only these (comma-separated)")
    parser.add_argument("--seeds", default="", help="only these measured seeds (comma-separated)")
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()
    rows = load(args.dirs, args.priority, set(args.variants.split(",")) if args.variants else None,
                {int(x) for x in args.seeds.split(",")} if args.seeds else None)
    if not rows:
        raise SystemExit(f"no measured rows for priority {args.priority!r} and those variants")
    seeds = sorted({r["seed"] for r in rows})

    def judged(sample: list[int]) -> dict:
        picked = [dict(r, seed=(r["seed"], i)) for i, s in enumerate(sample) for r in rows if r["seed"] == s]
        return targets(cell_means(picked), default=args.default)[args.priority]

    whole = judged(seeds)
    rng = np.random.default_rng(0)
    boot = [judged(list(rng.choice(seeds, size=len(seeds)))) for _ in range(args.resamples)]
    variants = sorted({r["variant"] for r in rows})
    print(f"{args.priority}: {args.default} over {len(seeds)} measured seeds ({seeds[0]}..{seeds[-1]}); "
          f"variants compared: {', '.join(variants)}")
    for key in KEYS:
        values = [b[key] for b in boot if b[key] is not None]
        lo, hi = np.quantile(values, [0.05, 0.95])
        print(f"  {key:26s} {whole[key]:.3f}   90% over seeds [{lo:.3f}, {hi:.3f}]")
    print(f"  cells worse than the best cheap variant: {len(whole['cells_worse'])} of {whole['cells']}"
          f" (max ratio {whole['max_ratio']:.3f})")


if __name__ == "__main__":
    main()
