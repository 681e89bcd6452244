"""Issue 38's missing expert on the simulator: is Slurm's start estimate worth a place in hedge's panel?

A preset cluster under its closed-loop background load is warmed up, then probe jobs of a few
geometries are submitted one every ``--gap`` seconds. Before each, the simulator's
``estimate_start`` (what ``sbatch --test-only`` answers: the running jobs to their limits and the
last backfill plan) is noted with ``hedge`` + ``slurm`` as the daemon's probe would be, and every
learner tells the job its wait; each learner then learns the waits of the probe jobs as they start.
Scored on the warm probe jobs (every learner had an answer): median |log10 error| and the share
within x3, per seed and pooled.

    .venv/bin/python scripts/bench_slurm_expert.py --preset hpc2n --seeds 3 --jobs 300
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time

from asad.learn.geometry import request_key
from asad.learn.registry import make_pool
from asad.slurm.backend import JobRequest, JobState, SimTruth
from asad.slurm.sim import make_simulator

LEARNERS = ("median-backoff", "hedge", "hedge+slurm")
SCORED = (*LEARNERS, "slurm alone")
LOG3 = math.log10(3.0)


def geometries(cores: int) -> list[tuple[int, int, int]]:
    """(nodes, cpus, time limit s): narrow to wide, short to long."""
    out = []
    for nodes, cpus in ((1, 4), (1, cores), (2, 2 * cores), (8, 8 * cores)):
        for limit in (3600, 4 * 3600, 24 * 3600):
            out.append((nodes, cpus, limit))
    return out


def run(preset: str, seed: int, jobs: int, gap_s: float, warmup_s: float, priority: str) -> dict[str, list[float]]:
    sim = make_simulator(preset, seed=seed, priority=priority)
    part = sim.partitions()[0]
    cores = part.cpus_per_node
    sim.run_until(sim.now() + warmup_s)
    rng = random.Random(seed)
    shapes = geometries(cores)
    pools = {"median-backoff": make_pool("median-backoff"), "hedge": make_pool("hedge"),
             "hedge+slurm": make_pool("hedge", hedge_slurm=True)}
    pending: dict[int, tuple[str, float, dict, float | None]] = {}  # id -> key, eligible, told, slurm
    errors: dict[str, list[float]] = {name: [] for name in SCORED}
    for i in range(jobs + 200):  # the last 200 slots only let the last probe jobs start
        now = sim.now()
        if i < jobs:
            nodes, cpus, limit = rng.choice(shapes)
            req = JobRequest(name=f"probe{i}", command="", partition=part.name, nodes=nodes, ntasks=cpus,
                             cpus_per_task=1, time_limit_s=limit, mem_mb=1000,
                             truth=SimTruth(limit * rng.uniform(0.2, 0.9), 1000.0 * nodes, 1.0))
            key = request_key(req, "sim")
            start = sim.estimate_start(req)
            slurm = None if start is None else max(0.0, start - now)
            pools["hedge+slurm"].note_slurm(key, now, slurm)
            told = {name: pool.told(key, now, None) for name, pool in pools.items()}
            pending[sim.submit(req)] = (key, now, told, slurm)
        sim.run_until(now + gap_s)
        statuses = sim.poll(list(pending))
        started = sorted((st.start_time, jid) for jid, st in statuses.items()
                         if st.start_time is not None and st.state is not JobState.PENDING)
        for start_time, jid in started:
            key, eligible, told, slurm = pending.pop(jid)
            wait = max(0.0, start_time - eligible)
            y = math.log10(1.0 + wait)
            if all(t is not None for t in told.values()) and slurm is not None:
                for name in LEARNERS:
                    errors[name].append(abs(told[name][0] - y))
                errors["slurm alone"].append(abs(math.log10(1.0 + slurm) - y))
            for name, pool in pools.items():
                pool.observe(key, wait, at_s=start_time, told=told[name])
        if not pending and i >= jobs:
            break
    return errors


def summary(errs: list[float], against: list[float] | None = None) -> str:
    if not errs:
        return "n=0"
    out = (f"median |log10 err| {statistics.median(errs):.3f}, mean {statistics.fmean(errs):.3f}, within x3 "
           f"{100 * sum(e <= LOG3 for e in errs) / len(errs):.1f} % (n={len(errs)})")
    if against is not None:  # job by job against hedge without Slurm's estimate
        nearer = sum(e < a - 1e-9 for e, a in zip(errs, against))
        farther = sum(e > a + 1e-9 for e, a in zip(errs, against))
        out += f"; nearer than hedge on {100 * nearer / len(errs):.1f} %, farther on {100 * farther / len(errs):.1f} %"
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", default="hpc2n")
    p.add_argument("--priority", default="multifactor")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=300)
    p.add_argument("--gap", type=float, default=600.0, help="seconds between probe jobs")
    p.add_argument("--warmup-days", type=float, default=1.0)
    args = p.parse_args()
    pooled: dict[str, list[float]] = {name: [] for name in SCORED}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        cpu0 = time.process_time()
        errors = run(args.preset, seed, args.jobs, args.gap, args.warmup_days * 86400, args.priority)
        print(f"seed {seed} ({time.process_time() - cpu0:.0f} s CPU)")
        for name in SCORED:
            print(f"  {name:15s} {summary(errors[name], errors['hedge'] if name == 'hedge+slurm' else None)}")
            pooled[name] += errors[name]
    print(f"pooled over {args.seeds} seeds ({args.preset}, {args.priority}, {args.jobs} probe jobs each, "
          f"one every {args.gap:.0f} s)")
    for name in SCORED:
        print(f"  {name:15s} {summary(pooled[name], pooled['hedge'] if name == 'hedge+slurm' else None)}")


if __name__ == "__main__":
    main()
