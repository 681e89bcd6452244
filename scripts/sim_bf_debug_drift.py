"""How much slurmctld at debug lengthens a backfill pass (issue 37, b37p): from a debug-level
slurmctld.log, every pair of consecutive backfill passes ("_attempt_backfill: beginning") 2-2.3 s
apart gives the first pass's length plus the thread's wake-up lag (backfill_agent sleeps
bf_interval after a pass ends); its queue is the logged "N jobs to backfill". Least squares of
that drift on N, beside the fit over the info-level logs (asad.bench.sim_vs_real.BF_PASS_COST_S,
the same quantity measured between passes that start jobs).

Usage: python scripts/sim_bf_debug_drift.py ID ...   (recordings with a debug-level log)
"""

from __future__ import annotations

import gzip
import re
import statistics
import sys
from datetime import datetime, timezone

import asad.bench.sim_vs_real as svr
from asad.bench.sim_vs_real_logs import log_path

_QUEUE = re.compile(r"_attempt_backfill: (\d+|no) jobs to backfill")


def passes(rec: dict) -> list[tuple[float, int]]:
    out: list[tuple[float, int]] = []
    with gzip.open(log_path(rec), "rt", errors="replace") as fh:
        for line in fh:
            if "_attempt_backfill: beginning" in line:
                t = datetime.fromisoformat(line[1:24]).replace(tzinfo=timezone.utc).timestamp()
                out.append((t, -1))
            elif out and out[-1][1] < 0 and (m := _QUEUE.search(line)):
                out[-1] = (out[-1][0], 0 if m.group(1) == "no" else int(m.group(1)))
    return [p for p in out if p[0] >= rec["t0"]]


def main() -> int:
    recs = {r["id"]: r for r in svr.load_recordings(None)}
    base, per = svr.BF_PASS_COST_S
    print(f"info-level fit (BF_PASS_COST_S): {1000 * base:.3f} ms + {1000 * per:.3f} ms a pending job")
    for rid in sys.argv[1:]:
        ps = passes(recs[rid])
        xs, ys = [], []
        for (a, n), (b, _) in zip(ps, ps[1:]):
            if 2.0 <= b - a < 2.3 and n >= 0:
                xs.append(n)
                ys.append(b - a - 2.0)
        mx, my = statistics.mean(xs), statistics.mean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        pred = statistics.mean(base + per * x for x in xs)
        print(f"{rid}: {len(ps)} passes, {len(xs)} 2-s spans; drift {1000 * (my - slope * mx):.3f} ms + "
              f"{1000 * slope:.3f} ms a queued job; mean {1000 * my:.3f} ms over a mean queue of {mx:.1f} "
              f"(info fit predicts {1000 * pred:.3f} ms); gaps of 3 s or more: "
              f"{sum(1 for (a, _), (b, _) in zip(ps, ps[1:]) if b - a >= 2.5)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
