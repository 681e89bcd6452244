"""Print the replay's backfill passes of one recording in a time window (issue 37, g37f): per pass
the queue in the order the pass tests it (label, nodes x cpus, limit, priority), the running jobs
(label, nodes, expected end = start + limit) and every plan the pass made (label, planned start,
nodes). Runs the Python pass (ASAD_SIM_COMPILED_PASS=0) with bf_plan_all, so every tested job
that cannot start gets its plan printed (the starts are the same: plan_all only adds plans after
the pass's last start).

Usage: ASAD_SIM_COMPILED_PASS=0 python scripts/sim_pass_probe.py ID FROM_S TO_S [--set NAME=PYVALUE]
  FROM_S/TO_S: seconds after the recording's t0 (the recording's own clock).
"""

from __future__ import annotations

import argparse
import ast

import asad.bench.sim_vs_real as svr
from asad.slurm.sim import scheduler as sched_mod


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("id")
    ap.add_argument("t_from", type=float)
    ap.add_argument("t_to", type=float)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--override", action="append", default=[], help="replay() keyword NAME=PYVALUE")
    args = ap.parse_args()
    for item in args.set:
        name, _, value = item.partition("=")
        setattr(svr, name, ast.literal_eval(value))
    overrides = {}
    for item in args.override:
        name, _, value = item.partition("=")
        overrides[name] = ast.literal_eval(value)
    rec = next(r for r in svr.load_recordings(None) if r["id"] == args.id)
    t0 = rec["t0"]
    names: dict[int, str] = {}
    orig_submit = None
    orig = sched_mod.Scheduler._backfill_pass

    def probe(self, now):  # noqa: ANN001
        inside = args.t_from <= now - t0 <= args.t_to
        if inside:
            part = self.parts[0]
            q = self.queues[0]
            order = [j for j in (q.jobs[i] for i in range(q.first_live(), len(q.jobs))) if j.queued]
            sim0 = self.start_fn.__self__
            print(f"--- pass at {now - t0:.3f}; free cores per node {part.np_free_c.tolist()}; completing {sorted(part.completing)}; last change {sim0._last_change_t - t0:.3f}; last bf end {sim0._last_bf_end - t0:.3f}")
            print("  queue:", ", ".join(
                f"{j.name}({j.nodes}x{j.cpus_per_node},{int(j.time_limit_s)}s,p={-j.sort_key[0]})"
                for j in order))
            sim = self.start_fn.__self__
            run = sorted(sim._running.values(), key=lambda j: j.start_time + j.time_limit_s)
            for j in run:
                print(f"  running {j.name}: nodes {j.alloc_nodes} cpn {j.cpus_per_node} start {j.start_time - t0:.2f} "
                      f"expected end {j.start_time + j.time_limit_s - t0:.2f}")
        started = orig(self, now)
        if inside:
            for r in sorted(self.parts[0].reservations, key=lambda r: r.start):
                print(f"  plan job {self.start_fn.__self__.jobs[r.job_id].name}: start {r.start - t0:.2f} end {r.end - t0:.2f} nodes {r.nodes}")
            print(f"  started {started}")
        return started

    sched_mod.Scheduler._backfill_pass = probe
    overrides.setdefault("bf_plan_all", True)
    out = svr.replay(rec, **overrides)
    for label in sorted(out, key=lambda k: out[k]["start"] or 1e18):
        s = out[label]["start"]
        print(label, None if s is None else round(s - t0, 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
