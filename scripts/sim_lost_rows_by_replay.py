"""Rank the pair rows a replay loses by the replay that loses them (issue 37, f37o): one replay of
run a can fail several rows (a, b). Reads the output of ``asad bench sim-vs-real --seeds N --json``
(or ``scripts/sim_vs_real_variant.py -- --seeds N --json``) and prints, worst first, each replay's
lost rows, its tau / median |dstart| against its run, the tightest row's need, and whether a
slurmctld.log is kept for it (then ``scripts/sim_first_difference.py ID`` can trace it).

Usage: python scripts/sim_lost_rows_by_replay.py OUT
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

from asad.bench.sim_vs_real import load_recordings
from asad.bench.sim_vs_real_logs import log_path


def load(path: str) -> dict:
    text = open(path).read()
    return json.loads(text[text.index("\n{") + 1:])


def main(argv: list[str]) -> int:
    out = load(argv[0])
    lost: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for row in out["pairs"]:
        if not row["met"]:
            lost[(row["scenario"], row["run"])].append(row)
    logged = {(r["scenario"], r["run"]) for r in load_recordings(None) if log_path(r) is not None}
    total = sum(len(v) for v in lost.values())
    print(f"{total} rows lost by {len(lost)} replays")
    print("| replay (scenario run) | rows lost | pairs | replay tau / median | tightest need (tau / median) | log |")
    print("|---|---:|---|---|---|---|")
    for (scen, run), rows in sorted(lost.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        r0 = rows[0]
        need_tau = max(r["tau_min"] for r in rows)
        need_med = min(r["median_max_s"] for r in rows)
        pairs = ", ".join(r["pair"] for r in rows)
        print(f"| {scen} {run} | {len(rows)} | {pairs} | {r0['sim_tau']:.3f} / {r0['sim_median_s']:g} s | "
              f"{need_tau:.3f} / {need_med:g} s | {'yes' if (scen, run) in logged else 'no'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
