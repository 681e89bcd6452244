"""Draw the CPU seconds per simulated day of runs of ``scripts/sim_days_cpu.py`` (its last line,
one JSON object per file), and their running sums, side by side: the old code's days beside the
new code's, as they were measured.

    python scripts/plot_sim_days.py docs/results/data/sim-s16/old10.json \
        docs/results/data/sim-s16/new1.json --out docs/img/sim-30-days-beside-issue-10.png

Why: a table gives the totals; the picture shows that the gap holds on every day once the queue
is full (day 4 on), not only in the sum.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="files holding sim_days_cpu.py's JSON line")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    try:
        import matplotlib
    except ImportError as exc:
        raise SystemExit("plots need matplotlib: pip install 'asad[plots]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (per_day, total) = plt.subplots(1, 2, figsize=(11, 4))
    for path in args.runs:
        run = json.loads(Path(path).read_text().strip().splitlines()[-1])
        days = range(1, len(run["per_day"]) + 1)
        label = f"{run['tag'] or Path(path).stem}: {run['cpu_s']:,.1f} CPU s, {run['jobs']:,} jobs"
        per_day.plot(days, run["per_day"], marker=".", label=label)
        sums, acc = [], 0.0
        for cpu in run["per_day"]:
            acc += cpu
            sums.append(acc)
        total.plot(days, sums, marker=".", label=label)
    per_day.set(yscale="log", xlabel="simulated day", ylabel="CPU s that day",
                title="30 days of hpc2n, Slurm-like backfill (simulated)")
    total.set(xlabel="simulated day", ylabel="CPU s so far")
    total.axhline(200, color="grey", linestyle="--", linewidth=1, label="issue 37's target, 200 CPU s")
    for ax in (per_day, total):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
