"""Derive the packaged background-load table from the Cedar/Graham 2021 job sample.

    python -m asad.slurm.sim.derive /path/to/slurm-queue-cedar-graham-2021/jobs.csv.gz

writes ``asad/data/load_table.csv`` (a seeded random sample of real jobs: size, memory, time
limit, run time) and ``asad/data/load_cycle.csv`` (relative submission rate per hour of day and
day of week). GPU jobs are left out: the presets model CPU clusters.
"""

from __future__ import annotations

import argparse
import csv
import gzip
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
SAMPLE_ROWS = 4000
HEADER = """\
# Background-load table for asad's Slurm simulator: {n} jobs sampled (seed {seed}) from
# {kept} CPU-only jobs of the Cedar and Graham clusters (Digital Research Alliance of Canada),
# submitted 2021-04-24 .. 2021-07-07. Source: mila-iqia/slurm-queue-time-pred (MIT licence),
# Popa & Alain 2023. Derived by asad/slurm/sim/derive.py. See asad/data/README.md.
"""


def _ts(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def derive(source: Path, out_dir: Path, rows: int = SAMPLE_ROWS, seed: int = 2021) -> dict[str, int]:
    table = []
    hours = np.zeros(24)
    weekdays = np.zeros(7)
    per_account: dict[str, int] = {}
    with gzip.open(source, "rt", newline="") as fh:
        for row in csv.DictReader(fh):
            if "gpu" in row["req_tres"]:
                continue
            try:
                start, end = _ts(row["start_time"]), _ts(row["end_time"])
                submit = datetime.strptime(row["submit_time"], "%Y-%m-%d %H:%M:%S")
                cpus, nodes = int(row["req_cpus"]), max(1, int(row["alloc_nodes"]))
                mem_total, limit = float(row["req_mem_total"]), int(row["time_limit_sec"])
            except (ValueError, KeyError):
                continue
            if cpus < 1 or limit < 60 or end < start:
                continue
            hours[submit.hour] += 1
            per_account[row.get("account_id", "")] = per_account.get(row.get("account_id", ""), 0) + 1
            weekdays[submit.weekday()] += 1
            mem_per_cpu = max(1, round(mem_total / cpus))
            runtime = max(1, min(int(end - start), limit))
            table.append((cpus, nodes, mem_per_cpu, limit, runtime))
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(table), size=min(rows, len(table)), replace=False))
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "load_table.csv", "w", newline="") as fh:
        fh.write(HEADER.format(n=len(pick), seed=seed, kept=len(table)))
        writer = csv.writer(fh)
        writer.writerow(["cpus", "nodes", "mem_per_cpu_mb", "time_limit_s", "runtime_s"])
        for i in pick:
            writer.writerow(table[i])
    # The sample holds the jobs *pending at noon*, so its submit hours pile up just before noon
    # (11:00 is 5.5x the mean, 13:00 a quarter): an artefact of the snapshot, not a daily cycle.
    # The hour profile is therefore a smooth day/night cycle (peak 14:00, trough 02:00, +-40%),
    # the usual shape of interactive submission (Lublin & Feitelson 2003); the day-of-week
    # profile, which the snapshot does not distort, comes from the data.
    hour_factor = 1.0 + 0.4 * np.cos(2 * np.pi * (np.arange(24) + 0.5 - 14.0) / 24.0)
    with open(out_dir / "load_cycle.csv", "w", newline="") as fh:
        fh.write("# Relative submission rate (mean 1) by hour of day (UTC; a smooth day/night cycle,\n"
                 "# see derive.py for why the sample's own hours are not used) and by day of week\n"
                 "# (0 = Monday; from the sample's submit times). See asad/data/README.md.\n")
        writer = csv.writer(fh)
        writer.writerow(["kind", "index", "factor"])
        for h, v in enumerate(hour_factor / hour_factor.mean()):
            writer.writerow(["hour", h, f"{v:.4f}"])
        for d, v in enumerate(weekdays / weekdays.mean()):
            writer.writerow(["weekday", d, f"{v:.4f}"])
    # How concentrated submissions are over accounts: what load_users.UserModel.account_zipf
    # approximates (not written to a file; the simulator scales accounts to the cluster).
    counts = np.sort(np.array(list(per_account.values()), dtype=float))[::-1]
    cum = np.cumsum(counts) / max(1.0, counts.sum())
    top = {f"top_{k}": round(float(cum[min(k, len(cum)) - 1]), 3) for k in (1, 10, 100)} if len(cum) else {}
    return {"kept": len(table), "sampled": int(len(pick)), "accounts": len(per_account),
            "account_job_share": top}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("--out", type=Path, default=DATA_DIR)
    parser.add_argument("--rows", type=int, default=SAMPLE_ROWS)
    args = parser.parse_args(argv)
    print(derive(args.source, args.out, args.rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
