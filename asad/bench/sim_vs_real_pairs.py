"""The simulator judged against Slurm's own spread, pair by pair (issue 37).

For every pair of unperturbed real runs (a, b) of a scenario (no ``DebugFlags``: the runs
recorded with ``--debug-flags Backfill`` are left out), the simulator's replay of a and of b
must each be as close to that run as the other real run is, less a margin:

    tau(sim, run) >= min(0.95, tau_rr - 0.02)   and   median |start diff| <= max(2 s, m_rr + 1 s)

where tau_rr and m_rr compare a and b (b's clock shifted onto a's). Where Slurm reproduces itself
closely the simulator must too; where two real runs part ways (timer phases, launch latencies) the
simulator need only be as close as Slurm is to itself.

The distributional figure: the launch delay and epilog drawn per job from their measured ranges
(``LATENCY_DRAWS``; the launch delay's from the recording's own log where it has one), the
ALREADY_COMPLETE reply per end, the OOM kill's lag per job (measured on the scenario's runs), the
background loop's tick length and the backfill pass's length per seed (measured in the kept
slurmctld.logs; ``seed_draws``) over N seeds; per real run, the median over seeds of tau(sim, run)
against the median tau of that run against the scenario's other real runs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from asad.bench.sim_vs_real import EPILOG_MESSAGE_DIST_S, REPLY_SHARE, compare, compare_runs, replay, sim_settings
from asad.bench.sim_vs_real_logs import launch_latencies
from asad.slurm.sim.job_end import draw_latency

TAU_CAP = 0.95
TAU_MARGIN = 0.02
MEDIAN_FLOOR_S = 2.0
MEDIAN_MARGIN_S = 1.0
# Measured in slurmctld's log of the recorded runs (sim_settings): (min, median, max) seconds from
# "sched: Allocate" to the program running. A racing end's path drawn per end: the reply with
# P = REPLY_SHARE, else the epilog message after a delay from EPILOG_MESSAGE_DIST_S (both read
# from the slurmd.logs, sim_vs_real.py); the fixed replay sends every racing end by the reply.
LATENCY_DRAWS = {"launch_delay_dist_s": (0.03, 0.05, 0.13), "epilog_dist_s": EPILOG_MESSAGE_DIST_S,
                 "already_complete_share": REPLY_SHARE}
# The background loop's tick length, (min, median, max) s: measured between the loop's logged
# passes in the kept slurmctld.logs (sim_vs_real_logs.loop_tick_spans; 30 spans in eight logs, all
# within a run's first 30 s: later passes are too far apart to count their ticks). t37f's three
# runs (multifactor 8-9, aged-deps 7: 1.0008-1.0015 s) ran faster ticks than the earlier logs'
# 1.0030-1.0086 (17 spans in five logs).
LOOP_TICK_DIST_S = (1.0008, 1.0036, 1.0086)
# The backfill pass's length as a share of BF_PASS_COST_S's fit, (min, median, max): each kept
# log's measured drift over the fit's (sim_vs_real_logs.bf_pass_scales; eighteen logs: t37f's
# multifactor 8-9 and aged-deps 7 x 0.56 / 0.73 / 0.65; fifteen gave 0.699, 0.891, 1.381; ten
# 0.802, 0.935, 1.381).
BF_PASS_SCALE_DIST = (0.56, 0.87, 1.381)
# What the figure draws beyond the per-job launch delay, epilog and ALREADY_COMPLETE reply.
SEED_DRAWS = frozenset({"oom_kill", "loop_tick", "bf_pass"})


def latency_draws(rec: dict, runs: list[dict] | None = None) -> dict:
    """``LATENCY_DRAWS``, with the launch latency's range measured in the recording's own
    slurmctld.log where it has one (sim_vs_real_logs.py), and the OOM kill's lag measured on
    ``runs`` (the scenario's real runs) where they have OOM kills."""
    own = launch_latencies(rec)
    out = dict(LATENCY_DRAWS) if own is None else {**LATENCY_DRAWS, "launch_delay_dist_s": own}
    kills = oom_kill_latencies(runs or [rec])
    if kills is not None:
        launch = out["launch_delay_dist_s"][1]
        out["oom_kill_lag_dist_s"] = tuple(round(max(0.0, k - launch), 3) for k in kills)
        # the drawn lag is measured whole (start to end less oom_after_s): it holds the wait for
        # slurmstepd's sample already, so no sample clock on top of it
        out["mem_sample_s"] = None
    return out


def oom_kill_latencies(runs: list[dict]) -> tuple[float, float, float] | None:
    """(min, median, max) seconds from an OOM-killed job's start to its end beyond the time its
    program allocates past its limit (``oom_after_s``), over the runs' OOM kills: whole seconds,
    as Slurm records them (so each value is the latency to within a second; over many jobs
    their spread is the kill's). None without such jobs. Measured: timeouts-oom runs 1-2 1-3 s
    (median 2), ends-deps runs 1-3 4-8 s (median 5), against the fixed replay's 1.5 s past the
    launch: the kill's lag varies by run and scenario (the machine's load at recording time)."""
    got = sorted(j["end"] - j["start"] - j["oom_after_s"] for rec in runs for j in rec["jobs"]
                 if j.get("oom_after_s") is not None and j.get("state") == "OUT_OF_MEMORY"
                 and j.get("start") is not None and j.get("end") is not None)
    if not got:
        return None
    return float(got[0]), float(statistics.median(got)), float(got[-1])


@dataclass(frozen=True)
class PairTarget:
    tau_min: float
    median_max_s: float

    @classmethod
    def of(cls, real_vs_real: dict) -> PairTarget:
        return cls(min(TAU_CAP, real_vs_real["kendall_tau"] - TAU_MARGIN),
                   max(MEDIAN_FLOOR_S, real_vs_real["median_abs_start_diff_s"] + MEDIAN_MARGIN_S))

    def met_by(self, sim_vs_run: dict) -> bool:
        # both: a close order with starts far off (or the reverse) is not Slurm's behaviour
        return sim_vs_run["kendall_tau"] >= self.tau_min and sim_vs_run["median_abs_start_diff_s"] <= self.median_max_s


def unperturbed(rec: dict) -> bool:
    """A run recorded as Slurm runs unobserved: no DebugFlags (``--debug-flags Backfill`` logs
    every plan, which lengthens each backfill pass threefold and moves the thread's phase) and
    slurmctld at info (``ASAD_SLURMCTLD_DEBUG=debug`` logs every pass and main-pass skip: a few
    lines a pass, not shown harmless to the schedule, so such runs set no target either)."""
    conf = rec.get("slurm_config") or {}
    return (conf.get("DebugFlags") in (None, "", "(null)", "None")
            and conf.get("SlurmctldDebug") in (None, "", "info"))


def by_scenario(recs: list[dict]) -> dict[str, list[dict]]:
    """The unperturbed runs of each scenario, by run number; perturbed runs are left out."""
    out: dict[str, list[dict]] = {}
    for rec in sorted(recs, key=lambda r: (r["scenario"], r["run"])):
        if not unperturbed(rec):
            continue
        out.setdefault(rec["scenario"], []).append(rec)
    return out


def pair_rows(recs: list[dict], sims: dict[str, dict] | None = None, **overrides) -> list[dict]:
    """One row per (real pair, run of the pair): the target from the pair, the simulator against
    that run. ``sims``: replays already made, by recording id."""
    sims = dict(sims or {})
    rows = []
    for scenario, runs in by_scenario(recs).items():
        for i, a in enumerate(runs):
            for b in runs[i + 1:]:
                rr = compare_runs(a, b)
                target = PairTarget.of(rr)
                for run in (a, b):
                    if run["id"] not in sims:
                        sims[run["id"]] = compare(run, replay(run, **overrides))
                    got = sims[run["id"]]
                    rows.append({"scenario": scenario, "pair": f"{a['run']}-{b['run']}", "run": run["run"],
                                 "rr_tau": rr["kendall_tau"], "rr_median_s": rr["median_abs_start_diff_s"],
                                 "tau_min": round(target.tau_min, 4), "median_max_s": target.median_max_s,
                                 "sim_tau": got["kendall_tau"], "sim_median_s": got["median_abs_start_diff_s"],
                                 "met": target.met_by(got)})
    return rows


def scenario_verdicts(rows: list[dict]) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for r in rows:
        out[r["scenario"]] = out.get(r["scenario"], True) and r["met"]
    return out


def pair_table(rows: list[dict]) -> str:
    lines = ["| scenario | real pair | real vs real (tau / median) | simulator vs run | target (tau / median) | "
             "simulator (tau / median) | met |", "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['scenario']} | {r['pair']} | {r['rr_tau']:.3f} / {r['rr_median_s']:.1f} s | "
                     f"run {r['run']} | >= {r['tau_min']:.3f} / <= {r['median_max_s']:.1f} s | "
                     f"{r['sim_tau']:.3f} / {r['sim_median_s']:.1f} s | {'met' if r['met'] else 'not met'} |")
    return "\n".join(lines)


def seed_draws(rec: dict, runs: list[dict], seed: int, draws: frozenset[str] = SEED_DRAWS) -> dict:
    """The replay's overrides for one seed of the distributional figure: the per-job latencies
    (``latency_draws``; the OOM kill's lag with "oom_kill" in ``draws``) and, with "loop_tick",
    the background loop's tick length drawn once for the replay from ``LOOP_TICK_DIST_S``; with
    "bf_pass", the backfill pass's length (BF_PASS_COST_S) scaled by a share drawn once from
    ``BF_PASS_SCALE_DIST`` (recordings with DebugFlags keep their own fixed drift)."""
    out = latency_draws(rec, runs)
    if "oom_kill" not in draws:
        out.pop("oom_kill_lag_dist_s", None)
    out["latency_seed"] = seed
    if "loop_tick" in draws:
        out["loop_tick_s"] = draw_latency(np.random.default_rng([seed, 2]), LOOP_TICK_DIST_S)
    cost = sim_settings(rec).get("bf_pass_cost_s")
    if "bf_pass" in draws and cost is not None:
        scale = draw_latency(np.random.default_rng([seed, 3]), BF_PASS_SCALE_DIST)
        out["bf_pass_cost_s"] = (cost[0] * scale, cost[1] * scale)
    return out


def latency_spread(recs: list[dict], seeds: int, draws: frozenset[str] = SEED_DRAWS, **overrides) -> list[dict]:
    """Per real run of a scenario with at least two runs: tau of the simulator against it, with the
    latencies drawn per job, over ``seeds`` seeds (median, min, max), the median tau of that run
    against the other real runs, and the simulator's replays of it against each other (its own
    spread: consecutive seeds)."""
    rows = []
    for scenario, runs in by_scenario(recs).items():
        if len(runs) < 2:
            continue
        for run in runs:
            starts, taus = [], []
            for seed in range(seeds):
                sim = replay(run, **{**seed_draws(run, runs, seed, draws), **overrides})
                taus.append(compare(run, sim)["kendall_tau"])
                starts.append(sim)
            self_taus = [compare_runs(_as_rec(run, starts[k]), _as_rec(run, starts[k + 1]))["kendall_tau"]
                         for k in range(seeds - 1)]
            real = [compare_runs(run, other)["kendall_tau"] for other in runs if other is not run]
            med, real_med = statistics.median(taus), statistics.median(real)
            rows.append({"scenario": scenario, "run": run["run"], "seeds": seeds, "sim_tau_median": round(med, 4),
                         "sim_tau_min": min(taus), "sim_tau_max": max(taus),
                         "sim_self_tau_median": round(statistics.median(self_taus), 4) if self_taus else None,
                         "real_tau_median": round(real_med, 4), "met": med >= real_med - TAU_MARGIN})
    return rows


def _as_rec(run: dict, sim: dict[str, dict]) -> dict:
    """A replay in a recording's shape (same submits), to compare two replays with compare_runs."""
    return {**run, "jobs": [{**j, "start": sim[j["label"]]["start"], "end": sim[j["label"]]["end"],
                             "state": sim[j["label"]]["state"]} for j in run["jobs"]]}


def spread_table(rows: list[dict]) -> str:
    lines = ["| scenario | run | simulator vs run: median tau (min-max) over seeds | simulator vs itself (median) | "
             "real run vs the other real runs (median tau) | met (median >= real - 0.02) |",
             "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['scenario']} | {r['run']} | {r['sim_tau_median']:.3f} ({r['sim_tau_min']:.3f}-"
                     f"{r['sim_tau_max']:.3f}) | {r['sim_self_tau_median']} | {r['real_tau_median']:.3f} | "
                     f"{'met' if r['met'] else 'not met'} |")
    return "\n".join(lines)
