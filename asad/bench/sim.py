"""``asad bench sim``: how fast the simulator plays a busy cluster, and how that grows.

Runs a preset at an offered load for some simulated days from an empty cluster (no warm-up)
and prints jobs, events, wall and CPU seconds, jobs per wall second and peak RSS. ``--scaling``
repeats the run at a quarter and half of the days and fits how wall time grows with the number
of jobs (an exponent near 1 is linear). ``--reference`` plays the same days again with the Python
backfill pass (the reference of the compiled one, ``ASAD_SIM_COMPILED_PASS=0``) in the same
process and reports its CPU time and how many jobs got a different start, end, node list or
time limit (0 = the same schedule).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np

from asad.common.arg_types import non_negative_float, positive_float
from asad.slurm.sim import backfill as slurm_backfill
from asad.slurm.sim import make_simulator
from asad.slurm.sim.presets import PRESETS


def run_once(preset: str, days: float, load: float | None, seed: int, priority: str, backfill: str,
             per_day: bool = False, will_run: str = "slurm") -> dict:
    return _summary(*_play(preset, days, load, seed, priority, backfill, per_day, will_run), preset, seed,
                    priority, backfill, will_run, days, per_day)


def _play(preset: str, days: float, load: float | None, seed: int, priority: str, backfill: str,
          per_day: bool, will_run: str) -> tuple:
    wall0, cpu0 = time.perf_counter(), time.process_time()
    sim = make_simulator(preset, load=load, seed=seed, priority=priority, backfill=backfill,
                         warmup_s=0.0, will_run=will_run)
    days_log = []
    end = sim.now() + days * 86400
    if per_day:  # the same run, paused once a simulated day to read the clocks
        day = 0
        while sim.now() < end:
            sim.run_until(min(end, sim.now() + 86400))
            day += 1
            st = sim.stats()
            days_log.append({"day": day, "cpu_s": round(time.process_time() - cpu0, 2),
                             "wall_s": round(time.perf_counter() - wall0, 2),
                             "jobs": st["jobs_submitted"], "pending": st["jobs_pending_eligible"]})
    else:
        sim.run_until(end)
    return sim, time.perf_counter() - wall0, time.process_time() - cpu0, days_log


def schedule_of(sim) -> dict[int, tuple]:  # noqa: ANN001
    """Every job's start, end, node list and time limit."""
    return {j.job_id: (j.start_time, j.end_time, tuple(j.alloc_nodes), j.time_limit_s) for j in sim.jobs.values()}


def with_reference(preset: str, days: float, load: float | None, seed: int, priority: str, backfill: str,
                   will_run: str) -> dict:
    """The same run with the Python backfill pass (after the compiled run, in the same process:
    the plan search's compiled code, which both use, is loaded by then)."""
    compiled = slurm_backfill._COMPILED
    try:
        slurm_backfill._COMPILED = False
        ref, _, ref_cpu, _ = _play(preset, days, load, seed, priority, backfill, False, will_run)
    finally:
        slurm_backfill._COMPILED = compiled
    return {"reference_cpu_s": round(ref_cpu, 2), "reference_schedule": schedule_of(ref)}


def _summary(sim, wall: float, cpu: float, days_log: list, preset: str, seed: int, priority: str,  # noqa: ANN001
             backfill: str, will_run: str, days: float, per_day: bool) -> dict:
    stats = sim.stats()
    waits = np.array([j.start_time - j.eligible_time for j in sim.jobs.values()
                      if j.start_time is not None])
    jobs = int(stats["jobs_submitted"])
    return {
        "preset": preset, "load": {p.name: sim.config.base_load(p) for p in sim.config.partitions},
        "seed": seed, "priority": priority, "backfill": backfill,
        "will_run": will_run,
        "sim_days": days, "jobs": jobs, "jobs_started": stats["jobs_started"],
        "events": stats["events"], "main_passes": stats["main_passes"],
        "backfill_passes": stats["backfill_passes"],
        "backfill_passes_skipped_unchanged": stats["backfill_skipped_unchanged"],
        "backfill_starts": stats["backfill_starts"],
        "pending_at_end": stats["jobs_pending_eligible"],
        "utilisation": round(float(stats["utilisation"]), 4),
        "wait_mean_s": round(float(waits.mean()), 1) if len(waits) else None,
        "wait_median_s": round(float(np.median(waits)), 1) if len(waits) else None,
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "jobs_per_wall_s": round(jobs / wall, 1) if wall > 0 else None,
        "jobs_per_cpu_s": round(jobs / cpu, 1) if cpu > 0 else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "loadavg_1min": round(os.getloadavg()[0], 2),  # other processes share this machine
        "compiled_pass": slurm_backfill.compiled_enabled(sim.sched) if backfill == "slurm" else None,
        **({"per_day": days_log} if per_day else {}),
    }


def growth_exponent(jobs: list[int], seconds: list[float]) -> float:
    """Slope of log(seconds) against log(jobs): 1 = linear, 2 = quadratic."""
    return float(np.polyfit(np.log(jobs), np.log(seconds), 1)[0])


def main(args: argparse.Namespace) -> int:
    sizes = [args.days / 4, args.days / 2, args.days] if args.scaling else [args.days]
    runs = []
    for d in sizes:
        per_day = args.per_day and d == sizes[-1]
        played = _play(args.preset, d, args.load, args.seed, args.priority, args.backfill, per_day, args.will_run)
        runs.append(_summary(*played, args.preset, args.seed, args.priority, args.backfill, args.will_run, d, per_day))
    sim = played[0]
    result = dict(runs[-1])
    if args.reference:
        ref = with_reference(args.preset, args.days, args.load, args.seed, args.priority, args.backfill,
                             args.will_run)
        mine, theirs = schedule_of(sim), ref.pop("reference_schedule")
        result.update(ref)
        result["reference_speedup"] = round(ref["reference_cpu_s"] / result["cpu_s"], 2) if result["cpu_s"] else None
        result["jobs_differing_from_reference"] = sum(
            1 for jid in set(mine) | set(theirs) if mine.get(jid) != theirs.get(jid))
    if args.scaling:
        jobs = [r["jobs"] for r in runs]
        result["scaling"] = [{k: r[k] for k in ("sim_days", "jobs", "wall_s", "cpu_s")} for r in runs]
        result["growth_exponent_wall"] = round(growth_exponent(jobs, [r["wall_s"] for r in runs]), 3)
        result["growth_exponent_cpu"] = round(growth_exponent(jobs, [r["cpu_s"] for r in runs]), 3)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:34s} {value}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("sim", help="simulator speed: simulated days per wall second",
                                   description=__doc__)
    parser.add_argument("--preset", default="hpc2n", choices=sorted(PRESETS))
    parser.add_argument("--days", type=positive_float, default=30.0)
    parser.add_argument("--load", type=non_negative_float, default=None,
                        help="offered load for every partition (default: the preset's own, e.g. hpc2n 1.2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--priority", choices=["fifo", "multifactor", "fairshare"], default="fifo")
    parser.add_argument("--backfill", choices=["slurm", "easy", "none"], default="slurm")
    parser.add_argument("--will-run", choices=["slurm", "exact"], default="slurm",
                        help="how the Slurm backfill finds a planned start (docs/simulator.md)")
    parser.add_argument("--scaling", action="store_true",
                        help="also run a quarter and half of the days; report the growth exponent")
    parser.add_argument("--per-day", action="store_true",
                        help="also report cumulative CPU/wall seconds and queue length per simulated day")
    parser.add_argument("--reference", action="store_true",
                        help="also play the same days with the Python backfill pass (the compiled pass's "
                             "reference) and report its CPU time and the jobs whose schedule differs")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.set_defaults(func=main)


