"""Summarise and compare outputs of ``asad bench sim-vs-real --seeds N --json`` (issue 37): pair rows
met, scenarios met, 20-seed runs met, per scenario, and which rows and runs differ between two
outputs (before / after, grid / ``--bf-poll``, old data / new data).

Usage: python scripts/sim_pair_summary.py OUT_A [OUT_B]   (each the command's stdout, saved)
"""

from __future__ import annotations

import json
import sys


def load(path: str) -> dict:
    text = open(path).read()
    return json.loads(text[text.index("\n{") + 1:])


def summary(out: dict) -> dict:
    rows, spread = out["pairs"], out["latency_spread"]
    scen: dict[str, list[bool]] = {}
    for r in rows:
        scen.setdefault(r["scenario"], []).append(r["met"])
    return {"rows": (sum(r["met"] for r in rows), len(rows)),
            "scenarios": (sum(all(v) for v in scen.values()), len(scen)),
            "per_scenario": {s: (sum(v), len(v)) for s, v in sorted(scen.items())},
            "seeds": (sum(r["met"] for r in spread), len(spread))}


def keyed(out: dict) -> tuple[dict, dict]:
    rows = {(r["scenario"], r["pair"], r["run"]): r for r in out["pairs"]}
    runs = {(r["scenario"], r["run"]): r for r in out["latency_spread"]}
    return rows, runs


def main(argv: list[str]) -> int:
    outs = [load(p) for p in argv]
    for path, out in zip(argv, outs):
        s = summary(out)
        print(f"{path}: pair rows {s['rows'][0]} of {s['rows'][1]}, scenarios {s['scenarios'][0]} of "
              f"{s['scenarios'][1]}, 20-seed runs {s['seeds'][0]} of {s['seeds'][1]}")
        print("  " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in s["per_scenario"].items()))
    if len(outs) == 2:
        (ra, sa), (rb, sb) = keyed(outs[0]), keyed(outs[1])
        for k in sorted(set(ra) | set(rb)):
            a, b = ra.get(k), rb.get(k)
            if a is None or b is None or a["met"] != b["met"]:
                fa = "-" if a is None else f"{a['sim_tau']:.3f}/{a['sim_median_s']:.1f}s {'met' if a['met'] else 'no'}"
                fb = "-" if b is None else f"{b['sim_tau']:.3f}/{b['sim_median_s']:.1f}s {'met' if b['met'] else 'no'}"
                need = (a or b)
                print(f"  row {k[0]} {k[1]} run {k[2]} (need >= {need['tau_min']:.3f} / <= {need['median_max_s']:.1f} s): {fa} -> {fb}")
        for k in sorted(set(sa) | set(sb)):
            a, b = sa.get(k), sb.get(k)
            if a is None or b is None or a["met"] != b["met"]:
                fa = "-" if a is None else f"{a['sim_tau_median']:.3f} vs {a['real_tau_median']:.3f} {'met' if a['met'] else 'no'}"
                fb = "-" if b is None else f"{b['sim_tau_median']:.3f} vs {b['real_tau_median']:.3f} {'met' if b['met'] else 'no'}"
                print(f"  20-seed {k[0]} run {k[1]}: {fa} -> {fb}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
