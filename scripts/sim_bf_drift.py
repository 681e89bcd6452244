"""The backfill thread's drift per pass against the pending queue, from the kept slurmctld.logs
(issue 37): the fit behind ``asad.bench.sim_vs_real.BF_PASS_COST_S`` (see
``asad.bench.sim_vs_real_logs.bf_drift_spans`` for what is measured and how).

Usage: python scripts/sim_bf_drift.py [--rows]
"""

from __future__ import annotations

import sys

from asad.bench.sim_vs_real import load_recordings
from asad.bench.sim_vs_real_logs import bf_drift_spans, fit_bf_pass_cost


def main() -> int:
    recs = load_recordings(None)
    if "--rows" in sys.argv:
        print("recording | first pass s | passes | drift ms/pass | mean pending")
        for rec in recs:
            for off, n, drift, pend in bf_drift_spans(rec):
                print(f"{rec['id']} | {off:.2f} | {n} | {drift:.2f} | {pend:.1f}")
    try:
        base, per_job, spans, passes = fit_bf_pass_cost(recs)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    logs = sum(1 for rec in recs if bf_drift_spans(rec))
    print(f"{logs} logs, {spans} spans, {passes} passes: drift per pass = {1000 * base:.3f} ms + "
          f"{1000 * per_job:.4f} ms x eligible pending jobs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
