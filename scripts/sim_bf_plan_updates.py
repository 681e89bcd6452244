"""What the ``bf_poll`` replay's backfill passes leave as work for the thread's next look, pass by
pass in a window of a recording (issue 37, c37p): the running jobs (start, expected end, nodes,
cores), the plans (job id, start, end, nodes, cores, memory) and which pass-made update fired:
PLANNED nodes (``_handle_planned``: a plan on a node that runs nothing, or last pass's marks
cleared) or a plan held back by another plan (``_plans_later``: backfill.c's
``start_res > start_time``). Used to tell a plan set by the will-run walk's batch edge (no update in
Slurm) from one pushed past another plan's edge (an update).

Usage: python scripts/sim_bf_plan_updates.py ID FROM_S UNTIL_S   (seconds after the loop's start)
"""

from __future__ import annotations

import argparse

import asad.bench.sim_vs_real as svr
from asad.slurm.sim import controller_loop as cl_mod


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("id")
    ap.add_argument("t_from", type=float)
    ap.add_argument("until", type=float)
    args = ap.parse_args()
    rec = next(r for r in svr.load_recordings(None) if r["id"] == args.id)
    ls = rec["timers"]["loop_start"]
    orig_idle = cl_mod.ControllerLoop._plans_on_idle_nodes

    def spy_idle(self):  # noqa: ANN001, ANN202 - called once per bf_poll pass, right after it
        fired = orig_idle(self)
        now = self._now
        if args.t_from <= now - ls <= args.until:
            part = self.sched.parts[0]
            running = sorted((j.name, round(j.start_time - ls, 1), round(j.start_time + j.time_limit_s - ls, 1),
                              list(j.alloc_nodes), j.cpus_per_node) for j in self._running.values())
            plans = [(r.job_id, round(r.start - ls, 2), round(r.end - ls, 2), list(r.nodes), r.cores, r.mem_mb)
                     for r in part.reservations]
            print(f"{now - ls:8.3f} planned-idle={fired} planned-before={self._bf_planned} "
                  f"held-back={self._plans_later(now)} free-cores={[int(c) for c in part.np_free_c]}")
            print(f"         running={running}")
            print(f"         plans={plans}")
        return fired

    cl_mod.ControllerLoop._plans_on_idle_nodes = spy_idle
    try:
        svr.replay(rec, bf_poll=True, bf_plan_all=True)
    finally:
        cl_mod.ControllerLoop._plans_on_idle_nodes = orig_idle
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
