"""``asad bench placement``: ReASSIGN's Q-learning placement against Slurm's ``-p a,b``.

On the simulator's ``two-speed`` preset (``fast``: 16 nodes, run time halved, busy;
``slow``: 32 nodes, less busy), a stream of stages of three kinds arrives (Poisson); each
policy places them: Slurm's own multi-partition submission (``-p fast,slow``: the job starts
in whichever partition can start it first), either partition alone, ReASSIGN (one agent per
stage kind, its paper's reward) and our turnaround-rewarded variant. The background load, the
arrivals and the true run times are the same for every policy (same seed). Measured: mean
turnaround (submit → end), over all stages and over the second half (after learning).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass

import numpy as np

from asad.common.arg_types import int_list, positive_float, positive_int
from asad.sizing.placement import PlacementAgent
from asad.slurm.backend import JobRequest, SimTruth

DAY = 86400


@dataclass(frozen=True)
class StageKind:
    name: str
    cpus: int
    mem_mb: int
    median_run_s: float  # at speed 1


KINDS = (StageKind("small", 4, 8000, 1200.0), StageKind("medium", 14, 32000, 5400.0),
         StageKind("large", 28, 100000, 10800.0))


@dataclass(frozen=True)
class StageArrival:
    at_s: float  # after the warm-up
    kind: StageKind
    run_s: float


def workload(n: int, mean_gap_s: float, seed: int) -> list[StageArrival]:
    rng = np.random.default_rng(seed)
    t = 0.0
    out = []
    for _ in range(n):
        t += float(rng.exponential(mean_gap_s))
        kind = KINDS[int(rng.choice(len(KINDS), p=[0.5, 0.3, 0.2]))]
        out.append(StageArrival(t, kind, float(kind.median_run_s * rng.lognormal(0.0, 0.4))))
    return out


def request(a: StageArrival, partition: str, i: int) -> JobRequest:
    limit = int(math.ceil(2.5 * a.run_s / 60.0) * 60)  # users overestimate; valid on the slow nodes
    return JobRequest(name=f"stage{i}-{a.kind.name}", command="true", partition=partition,
                      cpus_per_task=a.kind.cpus, mem_mb=a.kind.mem_mb, time_limit_s=limit,
                      truth=SimTruth(runtime_s=a.run_s))


def play(policy: str, arrivals: list[StageArrival], seed: int, preset: str = "two-speed",
         warmup_s: float = 3 * DAY) -> dict:
    from asad.slurm.sim import make_simulator

    sim = make_simulator(preset, seed=seed)
    names = [p.name for p in sim.partitions()]
    sim.run_until(sim.now() + warmup_s)
    t0 = sim.now()
    agents: dict[str, PlacementAgent] = {}
    if policy in ("reassign", "reassign-turnaround"):
        variant = "reassign" if policy == "reassign" else "turnaround"
        agents = {k.name: PlacementAgent(names, variant=variant, seed=seed + i) for i, k in enumerate(KINDS)}
    jobs: dict[int, tuple[int, StageArrival]] = {}
    open_ids: set[int] = set()

    def feed_finished() -> None:
        if not agents or not open_ids:
            return
        for jid, st in sim.poll(sorted(open_ids)).items():
            if st.state.is_final and st.start_time is not None and st.end_time is not None:
                i, a = jobs[jid]
                agents[a.kind.name].observe(str(i), st.start_time - st.submit_time, st.end_time - st.start_time)
                open_ids.discard(jid)

    for i, a in enumerate(arrivals):
        sim.run_until(t0 + a.at_s)
        feed_finished()
        if policy == "slurm-multi":
            part = ",".join(names)
        elif policy in names:
            part = policy
        else:
            est = {p: sim.estimate_start(request(a, p, i)) for p in names}
            part = agents[a.kind.name].choose(str(i), est).partition
        jid = sim.submit(request(a, part, i))
        jobs[jid] = (i, a)
        open_ids.add(jid)
    deadline = sim.now() + 30 * DAY
    while open_ids and sim.now() < deadline:
        sim.run_until(min(deadline, sim.now() + DAY))
        done = {j for j, st in sim.poll(sorted(open_ids)).items() if st.state.is_final}
        open_ids -= done
    final = sim.poll(sorted(jobs))
    rows = []
    for jid, st in final.items():
        i, a = jobs[jid]
        if st.end_time is None or st.start_time is None:
            continue
        rows.append((i, a.kind.name, st.partition, st.start_time - st.submit_time, st.end_time - st.submit_time))
    rows.sort()
    tt = np.array([r[4] for r in rows])
    wait = np.array([r[3] for r in rows])
    half = len(rows) // 2
    return {"policy": policy, "seed": seed, "jobs": len(rows), "unfinished": len(arrivals) - len(rows),
            "turnaround_h": float(np.mean(tt)) / 3600, "turnaround_h_2nd_half": float(np.mean(tt[half:])) / 3600,
            "wait_h": float(np.mean(wait)) / 3600,
            "share": {p: sum(1 for r in rows if r[2] == p) / max(1, len(rows)) for p in names},
            "per_kind_turnaround_h": {k.name: float(np.mean([r[4] for r in rows if r[1] == k.name] or [0])) / 3600
                                      for k in KINDS}}


POLICIES = ("slurm-multi", "fast", "slow", "reassign", "reassign-turnaround")


def run(seeds: list[int], n: int, mean_gap_s: float, policies: tuple[str, ...] = POLICIES) -> dict:
    results = {"preset": "two-speed", "n": n, "mean_gap_s": mean_gap_s, "seeds": seeds, "runs": [], "summary": {}}
    for seed in seeds:
        arrivals = workload(n, mean_gap_s, seed)
        for policy in policies:
            results["runs"].append(play(policy, arrivals, seed))
    for policy in policies:
        runs = [r for r in results["runs"] if r["policy"] == policy]
        results["summary"][policy] = {
            "turnaround_h": float(np.mean([r["turnaround_h"] for r in runs])),
            "turnaround_h_2nd_half": float(np.mean([r["turnaround_h_2nd_half"] for r in runs])),
            "wait_h": float(np.mean([r["wait_h"] for r in runs])),
            "fast_share": float(np.mean([r["share"].get("fast", 0.0) for r in runs])),
            "unfinished": int(sum(r["unfinished"] for r in runs)),
        }
    return results


def format_text(res: dict) -> str:
    lines = [f"two-speed preset, {res['n']} stages per seed (mean gap {res['mean_gap_s']:.0f} s), "
             f"seeds {res['seeds']}: mean over seeds",
             f"{'policy':<22}{'turnaround h':>14}{'2nd half h':>12}{'wait h':>9}{'in fast':>9}"]
    base = res["summary"].get("slurm-multi", {}).get("turnaround_h")
    for policy, s in res["summary"].items():
        rel = f"  ({100 * (s['turnaround_h'] / base - 1):+.1f}% vs -p)" if base and policy != "slurm-multi" else ""
        lines.append(f"{policy:<22}{s['turnaround_h']:>14.3f}{s['turnaround_h_2nd_half']:>12.3f}"
                     f"{s['wait_h']:>9.3f}{100 * s['fast_share']:>8.0f}%{rel}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    seeds = [int(s) for s in str(args.seeds).split(",") if s.strip()]
    res = run(seeds, args.n, args.gap)
    res["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(res, indent=1) if args.json else format_text(res) + f"\n({res['elapsed_s']} s)")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("placement", help="ReASSIGN placement vs Slurm's multi-partition submission")
    p.add_argument("--seeds", default="1,2,3", type=int_list, help="comma-separated seeds")
    p.add_argument("--n", type=positive_int, default=300, help="stages per seed")
    p.add_argument("--gap", type=positive_float, default=600.0, help="mean seconds between stage arrivals")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=main)
