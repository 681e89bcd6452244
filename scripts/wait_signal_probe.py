#!/usr/bin/env python3
"""Issue 35's diagnosis: does anything known at planning time tell a fresh job's wait on the simulator?

    scripts/wait_signal_probe.py [--seed 4001] [--cores 28] [--limit 1800] [--probes 36]

Warms a ``hpc2n`` simulator up for a day (``multifactor-limits``, the EASY model, as the strategies
bench), then every 10 minutes asks (1) what ``sbatch --test-only`` would answer for a job of
``--cores`` CPUs (the simulator's ``estimate_start``) and (2) how many CPUs wait in the queue in
jobs of at least 28 CPUs, then submits that job to a copy of the simulator and measures its real
wait. Prints each probe and the correlation of each signal with log(1 + wait).
"""

from __future__ import annotations

import argparse
import pickle

import numpy as np

from asad.slurm.backend import JobRequest, JobState, SimTruth
from asad.slurm.sim import make_simulator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=4001)
    parser.add_argument("--cores", type=int, default=28)
    parser.add_argument("--limit", type=int, default=1800, help="the probe's time limit (s); it runs 60 %% of it")
    parser.add_argument("--probes", type=int, default=36)
    args = parser.parse_args()
    base = make_simulator("hpc2n", seed=args.seed, priority="multifactor-limits", backfill="easy")
    base.run_until(base.now() + 86400)
    nodes = max(1, args.cores // 28)
    rows = []
    for k in range(args.probes):
        t = base.now()
        req = JobRequest(name="probe", command="", nodes=nodes, ntasks=nodes, cpus_per_task=args.cores // nodes,
                         mem_mb=4096, time_limit_s=args.limit, truth=SimTruth(args.limit * 0.6))
        est = base.estimate_start(req)
        queued = sum(j.cpus for j in base.jobs.values() if j.state is JobState.PENDING and j.cpus >= 28)
        sim = pickle.loads(pickle.dumps(base))
        jid = sim.submit(req)
        while sim.poll([jid])[jid].start_time is None and sim.advance() is not None:
            pass
        start = sim.poll([jid])[jid].start_time
        wait = start - t if start is not None else float("nan")
        rows.append(((est - t) if est is not None else float("nan"), queued, wait))
        print(f"{k:3} test-only {rows[-1][0]:8.0f} s  queued CPUs (jobs >= 28) {queued:6d}  wait {wait:8.0f} s",
              flush=True)
        base.run_until(t + 600)
    a = np.array(rows)
    ok = ~np.isnan(a).any(axis=1)
    log_wait = np.log1p(a[ok, 2])
    print(f"corr(log test-only estimate, log wait) {np.corrcoef(np.log1p(a[ok, 0]), log_wait)[0, 1]:+.2f}; "
          f"corr(queued CPUs, log wait) {np.corrcoef(a[ok, 1], log_wait)[0, 1]:+.2f} ({ok.sum()} probes)")


if __name__ == "__main__":
    main()
