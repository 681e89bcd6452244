#!/usr/bin/env python3
"""Issue 35, fourth stop: which queue feature, visible at decision time, predicts a fresh job's wait?

    scripts/wait_feature_probe.py SEED CORES LIMIT_S PROBES    (e.g. 4002 56 1800 30)

Warms a ``hpc2n`` simulator up for a day (``multifactor-limits``, EASY backfill, as the strategies
bench), then every 10 minutes reads the features below and submits a job of CORES CPUs and a
LIMIT_S time limit to a copy of the simulator, to measure its wait. Prints each probe and each
feature's correlation with log(1 + wait). Features: ``p28`` the pressure ``wait_pressure`` uses
(``Simulator.pending_load``: CPUs queued in competing jobs of at least 28 CPUs); ``pall`` every
competing pending CPU; ``idle`` idle CPUs; ``ending`` / ``ending3`` CPUs of running jobs whose time
limit ends within LIMIT_S / 3 x LIMIT_S; ``pshort`` CPUs queued in jobs of at least 28 CPUs and a
time limit of at most 2 x LIMIT_S; ``testonly`` Slurm's own forecast (``sbatch --test-only``).
"""

from __future__ import annotations

import pickle
import sys

import numpy as np

from asad.slurm.backend import JobRequest, JobState, SimTruth
from asad.slurm.sim import make_simulator


def main() -> None:
    seed, cores, limit, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    base = make_simulator("hpc2n", seed=seed, priority="multifactor-limits", backfill="easy")
    base.run_until(base.now() + 86400)
    nodes = max(1, cores // 28)
    rows = []
    for k in range(n):
        t = base.now()
        load = base.pending_load()
        running = [j for j in base.jobs.values() if j.state is JobState.RUNNING]
        total = sum(p.spec.total_cpus for p in base.parts)
        queued = [j for j in base.jobs.values() if j.state is JobState.PENDING and j.queued]
        req = JobRequest(name="probe", command="", nodes=nodes, ntasks=nodes, cpus_per_task=cores // nodes,
                         mem_mb=4096, time_limit_s=limit, truth=SimTruth(limit * 0.6))
        est = base.estimate_start(req)
        features = dict(
            p28=load.pressure("", 28), pall=load.pressure("", 1), idle=total - sum(j.cpus for j in running),
            ending=sum(j.cpus for j in running if j.start_time + j.time_limit_s <= t + limit),
            ending3=sum(j.cpus for j in running if j.start_time + j.time_limit_s <= t + 3 * limit),
            pshort=sum(j.cpus for j in queued if j.cpus >= 28 and j.time_limit_s <= 2 * limit),
            testonly=np.log1p(max(0.0, est - t)) if est is not None else np.nan)
        sim = pickle.loads(pickle.dumps(base))
        jid = sim.submit(req)
        while sim.poll([jid])[jid].start_time is None and sim.advance() is not None:
            pass
        wait = sim.poll([jid])[jid].start_time - t
        rows.append((features, wait))
        print(k, features, "wait", wait, flush=True)
        base.run_until(t + 600)
    log_wait = np.log1p([w for _, w in rows])
    for name in rows[0][0]:
        x = np.array([f[name] for f, _ in rows], dtype=float)
        ok = ~np.isnan(x)
        print(f"corr({name}, log wait) = {np.corrcoef(x[ok], log_wait[ok])[0, 1]:+.2f} ({ok.sum()} probes)")


if __name__ == "__main__":
    main()
