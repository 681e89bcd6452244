"""The replay's backfill passes beside slurmctld.log's starts and ends (issue 37, f37m): which
second's parity the backfill thread's passes take, under the fixed grid (``bf_origin_s`` +
k x ``bf_tick_s``) and under ``bf_poll`` (the idle thread's one-second looks, off by default).

Per recording with a kept slurmctld.log: the replay's backfill passes in the first ``--until``
seconds after the loop's start (instant, jobs it started), for each mode, then the log's
backfill starts ("sched/backfill: _start_job"), main-pass starts ("sched: Allocate") and ends.

Usage: python scripts/sim_bf_pass_phase.py [--until S] ID ...
"""

from __future__ import annotations

import argparse
import gzip
import re
from datetime import datetime, timezone

from asad.bench.sim_vs_real import load_recordings, replay
from asad.bench.sim_vs_real_logs import log_path
from asad.slurm.sim import scheduler as scheduler_module

MODES = {"grid": {}, "bf_poll": {"bf_poll": True, "bf_plan_all": True}}


def replay_passes(rec: dict, until: float, **overrides) -> list[tuple[float, int]]:
    passes: list[tuple[float, int]] = []
    original = scheduler_module.Scheduler.backfill_pass

    def spy(self, now):  # noqa: ANN001, ANN202
        started = original(self, now)
        passes.append((now, started))
        return started

    scheduler_module.Scheduler.backfill_pass = spy
    try:
        replay(rec, **overrides)
    finally:
        scheduler_module.Scheduler.backfill_pass = original
    t0 = rec["timers"]["loop_start"]
    return [(round(t - t0, 2), n) for t, n in passes if t - t0 < until]


def log_events(rec: dict, until: float) -> list[tuple[float, str, str]]:
    t0 = rec["timers"]["loop_start"]
    out = []
    with gzip.open(log_path(rec), "rt", errors="replace") as fh:
        for line in fh:
            if "sched/backfill: _start_job" in line:
                kind = "bf"
            elif "sched: Allocate" in line:
                kind = "main"
            elif "_job_complete: JobId" in line and line.rstrip().endswith(" done"):
                kind = "end"
            else:
                continue
            t = datetime.fromisoformat(line[1:24]).replace(tzinfo=timezone.utc).timestamp() - t0
            if t < until:
                out.append((round(t, 2), kind, re.search(r"JobId=(\d+)", line).group(1)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--until", type=float, default=40.0)
    ap.add_argument("ids", nargs="+")
    args = ap.parse_args()
    recs = {r["id"]: r for r in load_recordings(None)}
    for rid in args.ids:
        rec = recs[rid]
        for mode, over in MODES.items():
            print(f"{rid} {mode}: replay's backfill passes (s after the loop's start, jobs started): "
                  f"{replay_passes(rec, args.until, **over)}")
        print(f"{rid} log: {log_events(rec, args.until)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
