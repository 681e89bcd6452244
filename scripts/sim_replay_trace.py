"""One recording's fixed replay traced (issue 37, f37o): the backfill passes in a window (instant,
jobs started) and the starts and ends of chosen jobs, all in seconds after the loop's start (the
scale of ``scripts/sim_first_difference.py`` and the slurmctld.log lines). Beside the log it tells
a millisecond race (an end or submission just before or after a pass) from a rule.

Usage: python scripts/sim_replay_trace.py ID FROM_S TO_S LABEL[,LABEL...] [--bf-poll]
"""

from __future__ import annotations

import argparse

import asad.bench.sim_vs_real as svr
from asad.slurm.sim import scheduler as sched_mod
from asad.slurm.sim import simulator as simmod


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("id")
    ap.add_argument("t_from", type=float)
    ap.add_argument("t_to", type=float)
    ap.add_argument("labels")
    ap.add_argument("--bf-poll", action="store_true")
    args = ap.parse_args()
    labels = set(args.labels.split(","))
    rec = next(r for r in svr.load_recordings(None) if r["id"] == args.id)
    ls = rec["timers"]["loop_start"]
    at = svr.submit_instants(rec)
    for label in sorted(labels):
        print(f"submit {label} {at[label] - ls:.3f} (estimated instant)")
    orig_pass = sched_mod.Scheduler.backfill_pass
    orig_start, orig_end = simmod.Simulator._start_job, simmod.Simulator._record_end

    def bf_pass(self, now):  # noqa: ANN001, ANN202
        n = orig_pass(self, now)
        if args.t_from <= now - ls <= args.t_to:
            print(f"backfill pass {now - ls:.3f} started {n}")
        return n

    def start(self, job, part, nodes):  # noqa: ANN001, ANN202
        if job.name in labels:
            print(f"start {job.name} {self._now - ls:.3f} nodes {list(nodes)}")
        return orig_start(self, job, part, nodes)

    def end(self, job, state, t, **kw):  # noqa: ANN001, ANN003, ANN202
        if job.name in labels:
            print(f"end {job.name} {t - ls:.3f} {state.value}")
        return orig_end(self, job, state, t, **kw)

    sched_mod.Scheduler.backfill_pass = bf_pass
    simmod.Simulator._start_job, simmod.Simulator._record_end = start, end
    try:
        svr.replay(rec, **({"bf_poll": True, "bf_plan_all": True} if args.bf_poll else {}))
    finally:
        sched_mod.Scheduler.backfill_pass = orig_pass
        simmod.Simulator._start_job, simmod.Simulator._record_end = orig_start, orig_end
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
