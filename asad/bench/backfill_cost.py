"""``asad bench backfill-cost``: what one sched/backfill pass costs slurmctld, and the simulator.

Issue 10 asks for 30 simulated days of a full ``hpc2n`` queue in 60 s. A Slurm-like backfill
plans up to ``bf_max_job_test`` queued jobs every ``bf_interval``; this bench measures what that
costs Slurm itself, so the target can be read against it.

On a running local cluster (``slurm-scripts/local-cluster.sh up ...``, ``SLURM_CONF`` set) it
submits a deep queue of long jobs (a fixed random mix: 1-4 cores, 8 cores to a whole node, 2-8
whole nodes; limits of 1 h to 3 days), waits for ``--cycles`` backfill cycles and reads
``sdiag``'s backfill statistics (reset first; cycle time without the lock yields, depth, queue
length) and slurmctld's CPU time over those cycles (``/proc``; all its threads, so an upper bound
of the backfill's own). Then it builds the same cluster and queue in the simulator with the same
``SchedulerParameters`` and times its backfill passes twice: as it runs by default (plans only
where they can change a start now) and with ``bf_plan_all`` (a plan for every tested job, as
slurmctld makes). The queued jobs are cancelled at the end.

Printed: per pass, slurmctld's cycle and CPU and the simulator's CPU, and each scaled to 30 days of
passes every ``bf_interval`` (the queue stays this deep).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from typing import Any

from asad.bench.sim_vs_real import scheduler_settings
from asad.common.arg_types import positive_int

DAY = 86400.0
NAME = "bfcost"


def register(subparsers) -> None:  # noqa: ANN001
    p = subparsers.add_parser("backfill-cost", help="CPU of a backfill pass: slurmctld against the simulator",
                              description=__doc__)
    p.add_argument("--jobs", type=positive_int, default=2500, help="jobs queued (default %(default)s)")
    p.add_argument("--cycles", type=positive_int, default=8, help="backfill cycles to measure (default %(default)s)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--sim-passes", type=positive_int, default=5, help="simulator passes timed per mode")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=main)


def job_mix(n: int, seed: int, cores_per_node: int, max_nodes: int) -> list[dict]:
    """The queue: (nodes, cores per node, limit) per job, the same for Slurm and the simulator."""
    rng = random.Random(seed)
    jobs = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.45:
            nodes, cores = 1, rng.choice([1, 1, 2, 4])
        elif kind < 0.75:
            nodes, cores = 1, rng.choice([8, max(8, cores_per_node // 2), cores_per_node])
        else:
            nodes, cores = rng.choice([2, 2, 4, 8]), cores_per_node
        jobs.append({"nodes": min(nodes, max_nodes), "cores": min(cores, cores_per_node),
                     "limit_min": rng.choice([60, 120, 240, 480, 720, 1440, 2880, 4320])})
    return jobs


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def default_partition() -> str:
    names = _run("sinfo", "-h", "-o", "%P").split()
    return next((n for n in names if n.endswith("*")), names[0]).rstrip("*")


def slurm_config() -> dict[str, str]:
    out = {}
    for line in _run("scontrol", "show", "config").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def backfill_stats() -> dict[str, float]:
    """sdiag's "Backfilling stats" block, as numbers (times in microseconds)."""
    text = _run("sdiag")
    block = text.split("Backfilling stats", 1)[1].split("\n\n", 1)[0]
    out = {}
    for key in ("Total cycles", "Last cycle", "Mean cycle", "Max cycle", "Depth Mean", "Queue length mean",
                "Last depth cycle", "Last queue length"):
        m = re.search(rf"^\s*{re.escape(key)}:\s*(\d+)", block, re.M)
        if m:
            out[key] = float(m.group(1))
    return out


def ctld_cpu_s(pid_file: str) -> float | None:
    try:
        pid = open(pid_file).read().strip()
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def measure_slurm(jobs: list[dict], cycles: int) -> dict[str, Any]:
    conf = slurm_config()
    partition = default_partition()
    try:  # the queue is cancelled whatever happens, a failed sbatch or ^C included
        for job in jobs:
            _run("sbatch", "-J", NAME, "-p", partition, "-N", str(job["nodes"]),
                 "--ntasks-per-node=1", "-c", str(job["cores"]), "--mem=1G", f"--time={job['limit_min']}",
                 "-o", "/dev/null", "--wrap", "sleep 1000000")
        start = backfill_stats().get("Total cycles", 0.0)
        while backfill_stats().get("Total cycles", 0.0) < start + 1:  # a first cycle on the full queue
            time.sleep(1)
        _run("sdiag", "--reset")  # sdiag's means then cover the measured cycles only
        cpu0 = ctld_cpu_s(conf.get("SlurmctldPidFile", ""))
        while backfill_stats().get("Total cycles", 0.0) < cycles:
            time.sleep(1)
        last = backfill_stats()
        cpu1 = ctld_cpu_s(conf.get("SlurmctldPidFile", ""))
        running = len(_run("squeue", "-h", "-t", "R", f"--name={NAME}", "-o", "%i").split())
    finally:
        subprocess.run(["scancel", f"--name={NAME}"], capture_output=True, check=False)
    n = last["Total cycles"]
    return {"slurm_version": conf.get("SLURM_VERSION"), "scheduler_parameters": conf.get("SchedulerParameters", ""),
            "cycles": int(n), "mean_cycle_ms": round(last["Mean cycle"] / 1000, 1),
            "last_cycle_ms": round(last["Last cycle"] / 1000, 1), "depth_mean": last.get("Depth Mean"),
            "queue_length": last.get("Last queue length"), "running": running,
            "ctld_cpu_per_cycle_ms": None if cpu0 is None or cpu1 is None else round(1000 * (cpu1 - cpu0) / n, 1)}


def measure_sim(jobs: list[dict], nodes: int, cores: int, mem_mb: int, params: str, passes: int) -> dict[str, Any]:
    from asad.slurm.backend import JobRequest, SimTruth
    from asad.slurm.sim import PartitionSpec, SimConfig, Simulator

    out: dict[str, Any] = {}
    for mode, plan_all in (("default", False), ("plan_all", True)):
        sim = Simulator(SimConfig(
            partitions=(PartitionSpec("main", nodes=nodes, cores_per_node=cores, mem_per_node_mb=mem_mb,
                                      max_time_s=None, default=True),),
            **scheduler_settings(params), bf_plan_all=plan_all))
        for job in jobs:
            sim.submit(JobRequest(name=NAME, command="true", partition="main", nodes=job["nodes"],
                                  ntasks=job["nodes"], cpus_per_task=job["cores"], mem_mb=1024,
                                  time_limit_s=60.0 * job["limit_min"], truth=SimTruth(runtime_s=1e6)))
        sim.run_until(sim.now() + 120)
        now = sim.now()
        cpu = []
        for _ in range(passes):
            sim._changed()  # a pass that cannot be skipped as "nothing changed", as slurmctld's here
            t0 = time.process_time()
            sim.sched.backfill_pass(now)
            cpu.append(time.process_time() - t0)
        st = sim.stats()
        out[mode] = {"cpu_per_pass_ms": round(1000 * sorted(cpu)[len(cpu) // 2], 2),
                     "running": st.get("jobs_running"), "pending": st.get("jobs_pending_eligible")}
    return out


def main(args: argparse.Namespace) -> int:
    if args.jobs < 1 or args.cycles < 1 or args.sim_passes < 1:
        print("asad bench backfill-cost: --jobs, --cycles and --sim-passes must be at least 1", file=sys.stderr)
        return 2
    if not os.environ.get("SLURM_CONF"):
        print("asad bench backfill-cost: needs a running local cluster: start one with "
              "slurm-scripts/local-cluster.sh up --nodes 40 --cpus 28 --mem 128000 --sched-params "
              "bf_interval=30,bf_resolution=60,bf_window=1440,bf_max_job_test=500,bf_continue,sched_interval=60 "
              "and eval \"$(slurm-scripts/local-cluster.sh env)\"", file=sys.stderr)
        return 2
    try:
        # the default partition's nodes (sinfo -N lists a node once per partition it is in)
        partition = default_partition()
        line = _run("sinfo", "-h", "-N", "-p", partition, "-o", "%c %m").split("\n")[0].split()
        nodes = len(_run("sinfo", "-h", "-N", "-p", partition, "-o", "%N").split())
        cores, mem_mb = int(line[0]), int(line[1])
        jobs = job_mix(args.jobs, args.seed, cores, nodes)
        real = measure_slurm(jobs, args.cycles)
    except (subprocess.CalledProcessError, OSError) as exc:
        detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) and exc.stderr else str(exc)
        print(f"asad bench backfill-cost: Slurm did not answer ({detail}); is the cluster up "
              "(slurm-scripts/local-cluster.sh status)?", file=sys.stderr)
        return 1
    sim = measure_sim(jobs, nodes, cores, mem_mb, real["scheduler_parameters"], args.sim_passes)
    passes_30d = 30 * DAY / scheduler_settings(real["scheduler_parameters"])["bf_interval_s"]
    result = {"nodes": nodes, "cores_per_node": cores, "jobs": args.jobs, "slurm": real, "simulator": sim,
              "passes_in_30_days": int(passes_30d)}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{nodes} nodes x {cores} cores, {args.jobs} jobs queued (Slurm: {real['running']} running, "
          f"simulator: {sim['default']['running']}; "
          f"queue {real['queue_length']:.0f}, depth {real['depth_mean']:.0f}); Slurm {real['slurm_version']}, "
          f"SchedulerParameters={real['scheduler_parameters']}")
    rows = [("slurmctld backfill cycle (sdiag, no yields)", real["mean_cycle_ms"]),
            ("slurmctld CPU per cycle (all threads)", real["ctld_cpu_per_cycle_ms"]),
            ("simulator, default (plans where a start can change)", sim["default"]["cpu_per_pass_ms"]),
            ("simulator, bf_plan_all (a plan per tested job)", sim["plan_all"]["cpu_per_pass_ms"])]
    print(f"{'per backfill pass':<52} {'ms':>9} {'30 days of passes (s)':>22}")
    for label, ms in rows:
        total = "-" if ms is None else f"{ms / 1000 * passes_30d:,.0f}"
        print(f"{label:<52} {ms if ms is not None else '-':>9} {total:>22}")
    return 0
