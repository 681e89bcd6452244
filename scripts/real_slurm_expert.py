"""Issue 38's missing expert on a real slurmctld: how far is ``sbatch --test-only`` from the wait?

Submits ``--jobs`` sleep jobs of random width (1, 2 or all nodes) and length (a quarter to all of
a ``--limit`` time limit), one every ``--gap`` seconds; before each, Slurm's estimate for the same
request (``sbatch --test-only``, the CLI backend's ``estimate_start``) is noted with ``hedge`` +
``slurm``, and each learner tells the job its wait, then learns it when the job starts (as
scripts/bench_slurm_expert.py does on the simulator). Prints Slurm's own error and the learners'
on the jobs every learner had an answer for. Use only your own test cluster (SLURM_CONF).

    SLURM_CONF=... .venv/bin/python scripts/real_slurm_expert.py --jobs 24
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import time

from asad.learn.geometry import request_key
from asad.learn.registry import make_pool
from asad.slurm.backend import JobRequest, JobState
from asad.slurm.cli import SlurmCLI

LOG3 = math.log10(3.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=24)
    p.add_argument("--gap", type=float, default=8.0)
    p.add_argument("--limit", type=int, default=120, help="time limit of each job (s)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if not os.environ.get("SLURM_CONF"):
        raise SystemExit("set SLURM_CONF to your own test cluster's slurm.conf")
    slurm = SlurmCLI(timeout_s=20, retries=2)
    part = next(pt for pt in slurm.partitions() if pt.default)
    rng = random.Random(args.seed)
    pools = {"median-backoff": make_pool("median-backoff"), "hedge": make_pool("hedge"),
             "hedge+slurm": make_pool("hedge", hedge_slurm=True)}
    pending: dict[int, tuple[str, float, dict, float | None]] = {}
    rows: list[tuple[float, float | None, dict]] = []  # (wait, slurm, told) per started job
    ids: list[int] = []
    try:
        for i in range(args.jobs):
            nodes = rng.choice((1, 2, part.nodes))
            run_s = int(rng.uniform(0.25, 1.0) * args.limit)
            req = JobRequest(name=f"asad-probe-{i}", command=f"sleep {run_s}", partition=part.name, nodes=nodes,
                             ntasks=nodes, cpus_per_task=part.cpus_per_node, time_limit_s=args.limit,
                             mem_mb=100, output="/dev/null")
            key = request_key(req, "real")
            now = time.time()
            start = slurm.estimate_start(req)
            est = None if start is None else max(0.0, start - now)
            pools["hedge+slurm"].note_slurm(key, now, est)
            told = {name: pool.told(key, now, None) for name, pool in pools.items()}
            job = slurm.submit(req)
            ids.append(job)
            pending[job] = (key, time.time(), told, est)
            time.sleep(args.gap)
            _collect(slurm, pending, pools, rows)
        deadline = time.time() + 4 * args.limit * args.jobs
        while pending and time.time() < deadline:
            time.sleep(3)
            _collect(slurm, pending, pools, rows)
    finally:
        slurm.cancel(ids)
    scored = [(w, s, t) for w, s, t in rows if s is not None and all(v is not None for v in t.values())]
    print(f"{len(rows)} jobs started, {len(scored)} warm with a probe ({args.jobs} submitted, one every "
          f"{args.gap:.0f} s, {args.limit}-s limits, seed {args.seed})")
    for name in ("median-backoff", "hedge", "hedge+slurm", "slurm alone"):
        errs = [abs((math.log10(1 + s) if name == "slurm alone" else t[name][0]) - math.log10(1 + w))
                for w, s, t in scored]
        if errs:
            print(f"  {name:15s} median |log10 err| {statistics.median(errs):.3f}, within x3 "
                  f"{100 * sum(e <= LOG3 for e in errs) / len(errs):.0f} % (n={len(errs)})")
    all_slurm = [(w, s) for w, s, _ in rows if s is not None]
    if all_slurm:
        over = sum(s > w for w, s in all_slurm) / len(all_slurm)
        print(f"  Slurm's estimate above the wait on {100 * over:.0f} % of {len(all_slurm)} jobs")


def _collect(slurm: SlurmCLI, pending: dict, pools: dict, rows: list) -> None:
    if not pending:
        return
    for jid, st in sorted(slurm.poll(list(pending)).items(), key=lambda item: item[1].start_time or 0):
        if st.start_time is None or st.state is JobState.PENDING or jid not in pending:
            continue
        key, eligible, told, est = pending.pop(jid)
        wait = max(0.0, st.start_time - eligible)
        rows.append((wait, est, told))
        for name, pool in pools.items():
            pool.observe(key, wait, at_s=st.start_time, told=told[name])


if __name__ == "__main__":
    main()
