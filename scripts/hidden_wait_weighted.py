#!/usr/bin/env python3
"""Issue 35's simulator figure: the share of per-stage's inter-stage wait a variant hides, summed
over cells (wait-weighted, not a mean of per-cell ratios), with its core-hours against per-stage's
and its makespan against the best variant within +1 % core-hours.

    scripts/hidden_wait_weighted.py [--priority multifactor-limits] [--variant auto] [--bf-interval 30] DIR [DIR ...]

Reads `asad bench strategies --out DIR`'s strategies.json. Cells (workflow, cores; seed means)
whose per-stage inter-stage wait is under one backfill interval per later stage are left out (a
wait the scheduler's own pace sets, which no submission time can hide).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from asad.bench.strategies import EXAMPLES, cell_means
from asad.spec.load import load_workflow


def later_stages(workflow: str) -> int:
    spec = load_workflow(EXAMPLES / f"{workflow}.yaml")
    return sum(1 for s in spec.stages if spec.predecessors(s.name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--priority", default="multifactor-limits")
    parser.add_argument("--variant", default="auto")
    parser.add_argument("--bf-interval", type=float, default=30.0)
    args = parser.parse_args()
    rows = [r for d in args.dirs for r in json.loads((d / "strategies.json").read_text())["rows"]
            if r["priority"] == args.priority and r["measured"] and r["state"] == "COMPLETED"]
    seeds = sorted({r["seed"] for r in rows})
    cells: dict[tuple, dict[str, dict]] = {}
    for c in cell_means(rows):
        cells.setdefault((c["workflow"], c["preset"], c["cores"]), {})[c["variant"]] = c
    ps_sum = v_sum = ps_core = v_core = 0.0
    kept, left_out, ratios = [], [], []
    for key, by in sorted(cells.items()):
        if "per-stage" not in by or args.variant not in by:
            continue
        ps, v = by["per-stage"], by[args.variant]
        floor = args.bf_interval * later_stages(key[0])
        ps_core += ps["core_hours"]
        v_core += v["core_hours"]
        cheap = [c for c in by.values() if c["core_hours"] <= ps["core_hours"] * 1.01]
        best = min(c["makespan_s"] for c in cheap) if cheap else v["makespan_s"]
        ratios.append(v["makespan_s"] / best)
        if ps["interstage_wait_s"] < floor:
            left_out.append(key)
            continue
        kept.append(key)
        ps_sum += ps["interstage_wait_s"]
        v_sum += v["interstage_wait_s"]
        print(f"{key[0]:>10} {key[2]:>4}: per-stage {ps['interstage_wait_s']:8.0f} s, {args.variant} "
              f"{v['interstage_wait_s']:8.0f} s, makespan / best cheap {v['makespan_s'] / best:.3f}, "
              f"core-h {v['core_hours'] / ps['core_hours'] - 1:+.1%}")
    hidden = 1 - v_sum / ps_sum if ps_sum else float("nan")
    print(f"{args.priority}, {args.variant}, seeds {seeds}: hides {hidden:.1%} of per-stage's inter-stage wait "
          f"({v_sum:.0f} of {ps_sum:.0f} s left, {len(kept)} cells; left out {len(left_out)}: {left_out}); "
          f"core-h vs per-stage {v_core / ps_core - 1:+.2%}; makespan / best variant within +1 % core-h: "
          f"mean {sum(ratios) / len(ratios):.3f}, max {max(ratios):.3f}")


if __name__ == "__main__":
    main()
