"""How much of a backfill pass an incremental planner could copy from the previous pass, on a
snapshot written by ``sim_schedule_equal.py run --snapshot``: per pair of consecutive compiled
passes, whether the pass's inputs other than the clock (free cores and memory per node, the
running jobs' pieces, completing nodes) are identical, the identical prefix of the tested jobs
in priority order, and the share of plans (job, start, nodes) equal to one of the previous
pass's.

    python scripts/sim_pass_reuse.py SNAPSHOT --days 0.03

Why it matters (docs/results/sim.md, "Issue 37 (speed half)"): copying a plan is exact only if
every input its search reads is unchanged, and the search reads every node's free resources and
every running job's end; equal outputs (which the issue counted) do not make equal inputs.
"""

from __future__ import annotations

import argparse
import json
import pickle

import numpy as np

from asad.slurm.sim import pass_kernel


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("snapshot")
    parser.add_argument("--days", type=float, default=0.03)
    args = parser.parse_args()
    with open(args.snapshot, "rb") as fh:
        sim = pickle.load(fh)
    kernel = pass_kernel.backfill_pass
    passes = []

    def recording(*a):  # noqa: ANN002, ANN202
        out = kernel(*a)
        free_total, free_c, free_m, completing = a[8], a[9], a[10], a[11]
        j_nodes, j_cpn, j_mem, j_limit, j_id = a[12], a[13], a[15], a[16], a[17]
        p_end, p_node, p_c, p_m, p_job = a[18:23]
        base = b"".join(x.tobytes() for x in (free_c, free_m, completing, p_end, p_node, p_c, p_m, p_job))
        tested = np.stack([j_id, j_nodes, j_cpn, j_mem, j_limit.astype(np.int64)]).T.copy()
        kinds, which, ts, offs, lens, flat = out
        plans = {(int(j_id[w]), float(t), tuple(flat[o:o + n].tolist()))
                 for k, w, t, o, n in zip(kinds, which, ts, offs, lens) if k == pass_kernel.EV_PLAN}
        passes.append((free_total, base, tested, plans))
        return out

    pass_kernel.backfill_pass = recording
    sim.run_until(sim.now() + args.days * 86400)
    same_base = same_base_same_plans = 0
    prefix, plans_equal = [], []
    for (f0, b0, t0, p0), (f1, b1, t1, p1) in zip(passes, passes[1:]):
        if f0 == f1 and b0 == b1:
            same_base += 1
            same_base_same_plans += p0 == p1
        m = min(len(t0), len(t1))
        k = int(np.argmin((t0[:m] == t1[:m]).all(axis=1))) if m and not (t0[:m] == t1[:m]).all() else m
        prefix.append(k / max(len(t1), 1))
        if p1:
            plans_equal.append(len(p1 & p0) / len(p1))
    print(json.dumps({
        "passes": len(passes), "pairs": len(passes) - 1,
        "inputs_but_clock_identical": same_base, "of_those_all_plans_equal": same_base_same_plans,
        "tested_prefix_identical_median": round(float(np.median(prefix)), 3),
        "tested_prefix_identical_mean": round(float(np.mean(prefix)), 3),
        "plans_equal_to_previous_median": round(float(np.median(plans_equal)), 3),
        "plans_equal_to_previous_mean": round(float(np.mean(plans_equal)), 3),
        "plans_per_pass_mean": round(float(np.mean([len(p[3]) for p in passes])), 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
