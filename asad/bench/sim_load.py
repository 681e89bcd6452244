"""``asad bench sim-load``: does the background load reach a steady state, and do its waits look
like a real queue's?

Plays a preset from an empty cluster for ``--days`` simulated days at its default (or the given)
offered load and prints, per simulated day, the utilisation, the jobs started and their mean wait
(start - eligible; all jobs, and jobs of at least one whole node), the eligible jobs pending at the
end of the day and the submissions users let go (the closed loop). After ``--warmup-days`` it
compares the mean wait of the first and the last whole week (target: within +-20 %). Presets
whose weekly mean is noisy, or slow to settle, pool several seeds and warm up longer by default
(``STEADY_DEFAULTS``); from five seeds on, the pooled ratio comes with its 90 % interval over seeds.

The calibration table compares median waits per size class (1, 2-8, 9-32, > 32 cores) with the
real Cedar/Graham 2021 queues (``../shared/data/slurm-queue-cedar-graham-2021``). That sample
holds only jobs that were pending at a daily noon snapshot, which favours long waits, so the
simulated jobs are sampled the same way: jobs eligible after the warm-up that were pending at some
noon (UTC, the simulator's clock) of the run. Target: every class within a factor of 2.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import sys
import time
from datetime import datetime, timezone

import numpy as np

from asad.common.arg_types import non_negative_float, non_negative_int, positive_float, positive_int
from asad.slurm.sim import PRESETS, make_simulator

DAY = 86400.0
DEFAULT_REAL = "/work/shared/data/slurm-queue-cedar-graham-2021/jobs.csv.gz"
SIZE_EDGES = (1.5, 8.5, 32.5)  # classes: 1 | 2-8 | 9-32 | > 32 cores
SIZE_CLASSES = ("1", "2-8", "9-32", ">32")
STEADY_TOLERANCE = 0.20
CALIBRATION_FACTOR = 2.0
# Days, warm-up days and pooled seeds per preset for the week comparison (default: 30 days, 9 of
# warm-up, one seed), read off the tuning seeds (small 1-40, two-speed 1-4, 60 days each).
# `small` and `two-speed` hold a few whole-partition jobs with week-long limits, so one drain
# moves a week's mean wait several-fold. `small`'s pooled weekly mean was flat from day 16 on,
# within 11 % week to week at 40 seeds; 240 seeds put the ratio's spread near 6.5 %, so that
# +-20 % is some three spreads. `two-speed`'s rose until day 30 (6.8, 9.1, 9.3 h, then 10.0-10.9 h:
# its fast partition fills its users' caps slowly) and was within 4 % week to week after that at
# 4 seeds; 8 seeds halve that. `uppmax`'s single seeds (1 and 2, Slurm backfill) moved by about
# 8 % week to week (one had three low days in its first week: 1.223), so it pools 3 seeds.
STEADY_DEFAULTS = {"small": {"days": 30, "warmup_days": 16, "seeds": 240},
                   "two-speed": {"days": 44, "warmup_days": 30, "seeds": 8},
                   "uppmax": {"seeds": 3}}
BOOTSTRAP_RESAMPLES = 2000


def size_class(cpus: np.ndarray) -> np.ndarray:
    return np.digitize(cpus, SIZE_EDGES)


def pending_at_noon(eligible: np.ndarray, start: np.ndarray) -> np.ndarray:
    """True for jobs pending at some noon (UTC): eligible <= noon < start."""
    next_noon = np.ceil((eligible - DAY / 2) / DAY) * DAY + DAY / 2  # first noon >= eligible
    return next_noon < start


def _ts(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def real_medians(path: str) -> dict[str, dict[str, object]]:
    """Median wait (h) and job count per size class of the real CPU jobs, per cluster and both."""
    rows: dict[str, list[tuple[int, float]]] = {}
    with gzip.open(path, "rt", newline="") as fh:
        for row in csv.DictReader(fh):
            if "gpu" in row["req_tres"]:
                continue
            try:
                wait = _ts(row["start_time"]) - _ts(row["eligible_time"])
                cpus = int(row["req_cpus"])
            except (ValueError, KeyError):
                continue
            rows.setdefault(row["cluster"], []).append((cpus, wait))
    rows["both"] = [r for name in sorted(rows) for r in rows[name]]
    out = {}
    for name, pairs in rows.items():
        arr = np.array(pairs, dtype=float)
        out[name] = _class_medians(arr[:, 0], arr[:, 1])
    return out


def _class_medians(cpus: np.ndarray, wait_s: np.ndarray) -> dict[str, object]:
    cls = size_class(cpus)
    res: dict[str, object] = {}
    for k, label in enumerate(SIZE_CLASSES):
        w = wait_s[cls == k]
        res[label] = {"jobs": int(len(w)),
                      "median_h": round(float(np.median(w)) / 3600, 2) if len(w) else None}
    return res


def run(preset: str, days: int, warmup_days: int, load: float | None, seed: int, priority: str,
        backfill: str, closed_loop: bool, users: dict | None = None) -> dict:
    model = dict(users or {})
    if not closed_loop:
        model["closed_loop"] = False
    extra = {"users": model} if model else {}
    wall0, cpu0 = time.perf_counter(), time.process_time()
    sim = make_simulator(preset, load=load, seed=seed, priority=priority, backfill=backfill,
                         warmup_s=0.0, extra=extra)
    t0 = sim.now()
    total_cpus = sum(p.spec.total_cpus for p in sim.parts)
    busy_prev, dropped_prev = 0.0, 0
    per_day = []
    for day in range(days):
        sim.run_until(t0 + (day + 1) * DAY)
        st = sim.stats()
        busy = float(st["utilisation"]) * total_cpus * float(st["sim_seconds"])
        dropped = int(sim.counters.get("background_dropped", 0))
        per_day.append({"day": day + 1, "utilisation": round((busy - busy_prev) / (total_cpus * DAY), 3),
                        "pending_at_end": int(st["jobs_pending_eligible"]),
                        "dropped": dropped - dropped_prev})
        busy_prev, dropped_prev = busy, dropped
        # a slow run (the Slurm backfill on a full queue) shows how far it got
        print(f"  day {day + 1}/{days}: utilisation {per_day[-1]['utilisation']}, "
              f"{per_day[-1]['pending_at_end']} pending, {time.process_time() - cpu0:.0f} CPU s",
              file=sys.stderr, flush=True)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0

    jobs = [j for j in sim.jobs.values() if j.background and j.start_time is not None]
    start = np.array([j.start_time for j in jobs])
    elig = np.array([j.eligible_time for j in jobs])
    cpus = np.array([j.cpus for j in jobs])
    whole = np.array([j.cpus >= j.part.cores for j in jobs])
    wait = start - elig
    day_of = ((start - t0) // DAY).astype(int)
    for row in per_day:
        m = day_of == row["day"] - 1
        row["started"] = int(m.sum())
        row["wait_mean_h"] = round(float(wait[m].mean()) / 3600, 2) if m.any() else None
        mw = m & whole
        row["wait_mean_whole_node_h"] = round(float(wait[mw].mean()) / 3600, 2) if mw.any() else None

    weeks = []
    first = warmup_days
    while first + 7 <= days:
        m = (day_of >= first) & (day_of < first + 7)
        weeks.append({"days": f"{first + 1}-{first + 7}", "started": int(m.sum()),
                      "wait_sum_h": float(wait[m].sum()) / 3600,
                      "wait_mean_h": round(float(wait[m].mean()) / 3600, 3) if m.any() else None,
                      "utilisation": round(float(np.mean([d["utilisation"] for d in per_day[first:first + 7]])), 3)})
        first += 7
    steady = steadiness([weeks])

    after = elig >= t0 + warmup_days * DAY
    sampled = after & pending_at_noon(elig, start)
    stats = sim.stats()
    return {
        "preset": preset,
        "load": load if load is not None else {p.name: sim.config.base_load(p.spec) for p in sim.parts},
        "seed": seed, "priority": priority, "backfill": backfill, "closed_loop": closed_loop,
        "user_model": model,
        "days": days, "warmup_days": warmup_days,
        "users": len(sim.workload.users) if sim.workload else 0,
        "accounts": len(sim.workload.users.accounts) if sim.workload else 0,
        "submitted": int(stats["background_jobs_submitted"]),
        "dropped": int(sim.counters.get("background_dropped", 0)),
        "utilisation_after_warmup": round(float(np.mean([d["utilisation"] for d in per_day[warmup_days:]])), 3)
        if days > warmup_days else None,
        "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "loadavg_1min": round(os.getloadavg()[0], 2),
        "per_day": per_day, "weeks": weeks, "steady": steady,
        "sim_noon_sampled": _class_medians(cpus[sampled], wait[sampled]),
        "sim_all_after_warmup": _class_medians(cpus[after], wait[after]),
    }


def steadiness(runs_weeks: list[list[dict]]) -> dict | None:
    """Last whole week's mean wait over the first's, pooling the jobs of every run (seed): a
    steady state is a mean that does not drift, and on a small cluster one run's weekly mean is
    too noisy to show it (a few hundred jobs, waits from seconds to days)."""
    if not runs_weeks or len(runs_weeks[0]) < 2:
        return None
    first_n = sum(w[0]["started"] for w in runs_weeks)
    last_n = sum(w[-1]["started"] for w in runs_weeks)
    if not first_n or not last_n:
        return None
    first = sum(w[0]["wait_sum_h"] for w in runs_weeks) / first_n
    last = sum(w[-1]["wait_sum_h"] for w in runs_weeks) / last_n
    if first <= 0:
        return None
    ratio = last / first
    out = {"runs": len(runs_weeks), "first_week_wait_mean_h": round(first, 3),
           "last_week_wait_mean_h": round(last, 3), "last_over_first": round(ratio, 3),
           "met": bool(abs(ratio - 1.0) <= STEADY_TOLERANCE)}
    if len(runs_weeks) >= 5:
        out["last_over_first_90pct"] = _bootstrap_ratio(runs_weeks)
    return out


def _bootstrap_ratio(runs_weeks: list[list[dict]]) -> list[float]:
    """The pooled ratio's 90 % interval, resampling whole runs (seeds) with replacement: how far
    the measured ratio could be from the preset's own by the luck of the seeds."""
    sums = np.array([[w[0]["wait_sum_h"], w[0]["started"], w[-1]["wait_sum_h"], w[-1]["started"]]
                     for w in runs_weeks], dtype=float)
    picks = np.random.default_rng(0).integers(0, len(sums), size=(BOOTSTRAP_RESAMPLES, len(sums)))
    totals = sums[picks].sum(axis=1)  # (resamples, 4)
    ok = (totals[:, 0] > 0) & (totals[:, 1] > 0) & (totals[:, 3] > 0)
    ratios = (totals[ok, 2] / totals[ok, 3]) / (totals[ok, 0] / totals[ok, 1])
    return [round(float(v), 3) for v in np.percentile(ratios, [5, 95])]


def calibration(result: dict, real: dict[str, dict[str, object]], against: str) -> list[dict]:
    rows = []
    for label in SIZE_CLASSES:
        sim_c, real_c = result["sim_noon_sampled"][label], real[against][label]
        ratio = (sim_c["median_h"] / real_c["median_h"]
                 if sim_c["median_h"] is not None and real_c["median_h"] else None)
        rows.append({"class": label, "sim_jobs": sim_c["jobs"], "sim_median_h": sim_c["median_h"],
                     "real_jobs": real_c["jobs"], "real_median_h": real_c["median_h"],
                     "ratio": round(ratio, 2) if ratio is not None else None,
                     "within_2x": ratio is not None and 1 / CALIBRATION_FACTOR <= ratio <= CALIBRATION_FACTOR})
    return rows


def _print_text(result: dict, brief: bool = False) -> None:
    print(f"preset {result['preset']}  load {result['load']}  seed {result['seed']}  "
          f"{result['priority']}/{result['backfill']}  closed loop: {result['closed_loop']}  "
          f"{result['user_model'] or ''}  "
          f"users {result['users']} in {result['accounts']} accounts")
    print(f"submitted {result['submitted']}  let go {result['dropped']}  wall {result['wall_s']} s  "
          f"CPU {result['cpu_s']} s  (load average {result['loadavg_1min']})")
    if not brief:
        print("day  util   started  wait_mean_h  whole_node_wait_h  pending  let_go")
        for d in result["per_day"]:
            mark = " (warm-up)" if d["day"] <= result["warmup_days"] else ""
            print(f"{d['day']:3d}  {d['utilisation']:.3f}  {d['started']:7d}  {d['wait_mean_h']!s:>11}  "
                  f"{d['wait_mean_whole_node_h']!s:>17}  {d['pending_at_end']:7d}  {d['dropped']:6d}{mark}")
    _print_rest(result)


def _print_rest(result: dict) -> None:
    for w in result["weeks"]:
        print(f"week days {w['days']}: utilisation {w['utilisation']}, started {w['started']}, "
              f"mean wait {w['wait_mean_h']} h")
    if result["steady"]:
        s = result["steady"]
        print(f"steady state: last week / first week = {s['last_over_first']} "
              f"(target within +-{STEADY_TOLERANCE:.0%}): {'met' if s['met'] else 'not met'}")
    if "calibration" in result:
        print(f"median wait per size class, noon-sampled, vs real ({result['real_against']}):")
        print("class  sim_jobs  sim_median_h  real_jobs  real_median_h  ratio  within_2x")
        for r in result["calibration"]:
            print(f"{r['class']:5s}  {r['sim_jobs']:8d}  {r['sim_median_h']!s:>12}  {r['real_jobs']:9d}  "
                  f"{r['real_median_h']!s:>13}  {r['ratio']!s:>5}  {r['within_2x']}")


def main(args: argparse.Namespace) -> int:
    presets = sorted(PRESETS) if args.preset == "all" else [args.preset]  # the parser checked the rest
    real = None
    if not args.no_real:
        if os.path.exists(args.real):
            real = real_medians(args.real)
        else:
            print(f"asad bench sim-load: no real queue data at {args.real}; calibration table left out "
                  "(give --real PATH, or --no-real)", file=sys.stderr)
    users = {k: v for k, v in (("pile_up_days", args.pile_up_days), ("min_cap", args.min_cap))
             if v is not None}
    results = []
    for name in presets:
        runs = []
        defaults = STEADY_DEFAULTS.get(name, {})
        days = args.days if args.days is not None else defaults.get("days", 30)
        warmup_days = args.warmup_days if args.warmup_days is not None else defaults.get("warmup_days", 9)
        n_seeds = args.seeds if args.seeds is not None else defaults.get("seeds", 1)
        for seed in range(args.seed, args.seed + n_seeds):
            try:
                result = run(name, days, warmup_days, args.load, seed, args.priority,
                             args.backfill, not args.open, users)
            except ValueError as exc:
                print(f"asad bench sim-load: {exc}", file=sys.stderr)
                return 2
            if real is not None:
                result["real_against"] = args.against
                result["calibration"] = calibration(result, real, args.against)
            if not args.json:
                _print_text(result, brief=bool(runs))
            runs.append(result)
        pooled = steadiness([r["weeks"] for r in runs])
        if not args.json and n_seeds > 1 and pooled:
            spread = pooled.get("last_over_first_90pct")
            print(f"{name}, {len(runs)} seeds pooled: first week mean wait {pooled['first_week_wait_mean_h']} h, "
                  f"last week {pooled['last_week_wait_mean_h']} h, ratio {pooled['last_over_first']}"
                  + (f" (90 % over seeds {spread[0]}-{spread[1]})" if spread else "")
                  + f" (target within +-{STEADY_TOLERANCE:.0%}): {'met' if pooled['met'] else 'not met'}")
        if not args.json:
            print()
        results.append({"preset": name, "runs": runs, "steady_pooled": pooled})
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0]))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("sim-load",
                                   help="background load: steady state and waits per size class vs real queues",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="hpc2n", choices=[*sorted(PRESETS), "all"], help="a simulator preset, or 'all' (default hpc2n)")
    parser.add_argument("--load", type=non_negative_float, default=None,
                        help="offered load for every partition (default: each preset's own)")
    parser.add_argument("--days", type=positive_int, default=None,
                        help="simulated days (default 30; two-speed 44)")
    parser.add_argument("--warmup-days", type=non_negative_int, default=None,
                        help="days left out of the week comparison and the calibration (default 9; "
                             "small 16, two-speed 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=positive_int, default=None,
                        help="runs with seeds --seed, --seed+1, ...; the week comparison pools their jobs "
                             "(default 1; small 240, two-speed 8, uppmax 3: their weekly means are noisy)")
    parser.add_argument("--priority", choices=["fifo", "multifactor", "fairshare"], default="fifo")
    parser.add_argument("--backfill", choices=["slurm", "easy", "none"], default="easy",
                        help="slurm: sched/backfill as Slurm runs it (a full hpc2n queue costs some 7 "
                             "CPU s a simulated day); easy (default here): EASY, far cheaper")
    parser.add_argument("--open", action="store_true",
                        help="the open stream: users never stop submitting (the old background load)")
    parser.add_argument("--pile-up-days", type=positive_float, default=None,
                        help="users stop submitting at this many days of their own submissions pending (default 0.35)")
    parser.add_argument("--min-cap", type=positive_int, default=None,
                        help="... but always tolerate this many pending jobs (default 2)")
    parser.add_argument("--real", default=DEFAULT_REAL, help="the real queue sample (jobs.csv.gz)")
    parser.add_argument("--against", choices=["both", "cedar", "graham"], default="both",
                        help="which real cluster's waits to compare with (default both)")
    parser.add_argument("--no-real", action="store_true", help="leave out the calibration table")
    parser.add_argument("--json", action="store_true", help="JSON on stdout")
    parser.set_defaults(func=main)
