"""Play N days of a preset as ``asad bench sim --preset P --days N --per-day`` plays them
(``make_simulator(preset, warmup_s=0)``, fifo, seed 0, Slurm backfill) and print each day's
process CPU seconds as it ends, then one JSON line: the total CPU s, jobs, backfill passes,
pending jobs and a digest of every job's start, end, nodes and limit (two trees that print the
same digest made the same schedule). The compiled kernels are warmed on a small run first, so
compiling is not in the figure.

    python scripts/sim_days_cpu.py --days 30                       # this tree
    PYTHONPATH=/tmp/old python scripts/sim_days_cpu.py --days 30   # another tree's asad

Why: the speed target is 30 days of ``hpc2n`` in CPU s, measured beside the old code in one run
(two processes started together share the machine's load alike); the digest shows the schedule
is the same at that scale.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="hpc2n")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    import asad.slurm.sim as sim_pkg
    from asad.slurm.sim import make_simulator

    warm = make_simulator("small", seed=1, warmup_s=0)
    warm.run_until(warm.now() + 0.3 * 86400)
    sim = make_simulator(args.preset, warmup_s=0)
    per_day = []
    cpu0 = time.process_time()
    for d in range(args.days):
        t0 = time.process_time()
        sim.run_until(sim.now() + 86400)
        per_day.append(round(time.process_time() - t0, 2))
        print(f"{args.tag} day {d + 1}: {per_day[-1]} CPU s", flush=True)
    cpu = time.process_time() - cpu0
    digest = hashlib.sha256()
    for jid in sorted(sim.jobs):
        job = sim.jobs[jid]
        digest.update(repr((jid, job.start_time, job.end_time, list(job.alloc_nodes), job.time_limit_s)).encode())
    st = sim.stats()
    print(json.dumps({"tag": args.tag, "code": sim_pkg.__file__, "cpu_s": round(cpu, 1), "jobs": len(sim.jobs),
                      "backfill_passes": st["backfill_passes"], "backfill_starts": st["backfill_starts"],
                      "pending": st["jobs_pending_eligible"], "schedule_digest": digest.hexdigest()[:16],
                      "per_day": per_day}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
