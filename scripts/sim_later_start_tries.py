"""How often f37o's later_start rule (planner.later_start: any plan span ending by the cap) gives another
value than the rule before it (only spans that overlapped the try window), over every recording's
fixed replay, on the numpy search (the compiled one is switched off). Prints per recording the tries
that differ and a few (job, old, new), then the totals (issue 37, f37o).

Usage: python scripts/sim_later_start_tries.py
"""
import numpy as np
import asad.bench.sim_vs_real as svr
from asad.slurm.sim import plan_kernel, planner, backfill
plan_kernel._ENABLED = False
backfill._COMPILED = False
INF = float("inf")
stats = {"tries": 0, "differ": 0, "where": []}
orig_try = planner.try_later
cur = {}
def try_later(plan, times, job, now, horizon, guess_s, res=1.0):
    cur["spans"] = plan.free_instants()
    cur["job"] = job.name
    return orig_try(plan, times, job, now, horizon, guess_s, res)
planner.try_later = try_later
orig_ls = planner.later_start
def later_start(span_e, bounds, start_res, end_time):
    new = orig_ls(span_e, bounds, start_res, end_time)
    _, span_b, span_e2, _ = cur["spans"]
    i_res, i_end = np.searchsorted(bounds, (start_res, end_time), side="right")
    cap = bounds[min(i_end + 1, len(bounds) - 1)] if i_res < len(bounds) else INF
    fr = span_e2[(span_e2 > start_res) & (span_b <= end_time) & (span_e2 <= cap)]
    old = float(fr.min()) if len(fr) else INF
    stats["tries"] += 1
    if old != new:
        stats["differ"] += 1
        stats["where"].append((cur["job"], old, new))
    return new
planner.later_start = later_start
import sys
for rec in svr.load_recordings(None):
    before = stats["differ"]
    svr.replay(rec)
    if stats["differ"] > before:
        print(rec["id"], stats["differ"] - before, stats["where"][before:before + 3])
print("tries", stats["tries"], "differ", stats["differ"], "old finite", sum(1 for _, o, _n in stats["where"] if o != INF), "new earlier", sum(1 for _, o, n in stats["where"] if n < o))
