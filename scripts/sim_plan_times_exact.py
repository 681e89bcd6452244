"""The running jobs' expected ends and the plans of the ``bf_poll`` replay's passes in a window, at
full precision in epoch seconds (issue 37, f37o; lead (a)): whether the planner holds Slurm's
whole-second times (end_time = floor(start) + limit, plans on whole seconds) where
``sim_bf_plan_updates.py`` prints start + limit rounded to a tenth.

Usage: python scripts/sim_plan_times_exact.py ID FROM_S TO_S   (seconds after the loop's start)
"""

from __future__ import annotations

import math
import sys

import asad.bench.sim_vs_real as svr
from asad.slurm.sim import controller_loop as cl_mod


def main(argv: list[str]) -> int:
    rid, t_from, t_to = argv[0], float(argv[1]), float(argv[2])
    rec = next(r for r in svr.load_recordings(None) if r["id"] == rid)
    ls = rec["timers"]["loop_start"]
    orig = cl_mod.ControllerLoop._plans_on_idle_nodes

    def spy(self):  # noqa: ANN001, ANN202 - called once per bf_poll pass, right after it
        fired = orig(self)
        now = self._now
        if t_from <= now - ls <= t_to:
            print(f"pass at {now:.3f} (loop + {now - ls:.3f})")
            for job in self._running.values():
                print(f"  running {job.name} start {job.start_time:.3f} "
                      f"end_time floor(start)+limit {math.floor(job.start_time) + job.time_limit_s:.3f}")
            for res in self.sched.parts[0].reservations:
                print(f"  plan job {res.job_id} start {res.start:.3f} end {res.end:.3f} nodes {list(res.nodes)}")
        return fired

    cl_mod.ControllerLoop._plans_on_idle_nodes = spy
    try:
        svr.replay(rec, bf_poll=True, bf_plan_all=True)
    finally:
        cl_mod.ControllerLoop._plans_on_idle_nodes = orig
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
