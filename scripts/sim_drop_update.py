"""Counterfactual (issue 37, g37f): the ``bf_poll`` replay of one recording with the main passes'
``_failed_partition`` update (``ControllerLoop._note_failed_partitions``) dropped in one window of
seconds after the loop's start, to see whether the backfill thread then takes Slurm's parity.
Prints tau, the median |start difference| and the jobs in their logged second.

Usage: python scripts/sim_drop_update.py ID FROM_S TO_S   (e.g. fairshare-users.run4 45.9 46.3;
  0 0 drops nothing)
"""
import sys, math
import asad.bench.sim_vs_real as svr
from asad.slurm.sim import controller_loop as cl
rec = next(r for r in svr.load_recordings(None) if r["id"] == sys.argv[1])
ls = rec["timers"]["loop_start"]
lo, hi = float(sys.argv[2]), float(sys.argv[3])
orig = cl.ControllerLoop._note_failed_partitions
def patched(self, now):
    if lo <= now - ls <= hi:
        return
    orig(self, now)
cl.ControllerLoop._note_failed_partitions = patched
sim = svr.replay(rec, bf_poll=True, bf_plan_all=True)
c = svr.compare(rec, sim)
jobs = {j["label"]: j for j in rec["jobs"]}
ins = sum(1 for l, j in jobs.items() if j["start"] is not None and sim[l]["start"] == j["start"])
print(sys.argv[1:], "tau", c["kendall_tau"], "median", c["median_abs_start_diff_s"], "in second", ins)
