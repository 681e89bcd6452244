"""How many of issue 37's pair rows can any simulator meet? (f37q, 2026-11-28)

A *row* is (scenario, unordered pair {a, b} of unperturbed real runs, one run x of the pair): the
replay of x must reach tau(replay, x) >= tau_min and median |dstart| <= median_max, both set by the
real pair (``PairTarget.of(compare_runs(a, b))``). A scenario with n runs has n (n - 1) rows; 170 in
all. This script measures three things (no simulator change; it only imports the scorer):

1. **Slurm in the simulator's place.** For a scenario with >= 3 runs, each real run c is scored as
   if it were the simulator's replay of x, on every row whose pair does not contain c:
   ``compare_runs(x, c)`` (c's clock shifted onto x's by the first submission, as the scorer aligns
   two real runs; the simulator replays x on x's own clock).

2. **A metric bound.** The scorer's tau is tau-b with ties (whole-second starts tie). Kendall's
   distance with ties K^(p) (Fagin, Kumar, Mahdian, Sivakumar, Vee 2004/2006) counts a discordant
   pair 1 and a pair tied in one ranking only p; for p = 1/2 it is a metric on bucket orders. Over
   P job pairs with U pairs tied in the run, V tied in the schedule S and W tied in both,

       K(run, S) = D + (U - W + V - W) / 2 = (P - W - tau_b * sqrt((P - U) (P - V))) / 2,

   so tau_b >= t (t > 0) gives K <= r(t, U, V) = (P - max(0, U + V - P) - t sqrt((P-U)(P-V))) / 2,
   and is possible at all only if t sqrt((P-U)(P-V)) <= P - max(U, V) (tau_b <= (C + D) / denom).
   The second metric is the angle arccos(tau_b) between the rankings' sign vectors over the pairs
   (tau_b is their cosine), for which tau_b >= t is exactly angle <= arccos(t).
   For a simulator whose replays of a scenario's runs are one ranking S (one schedule up to a
   whole-second clock shift), two rows on runs i != k can both hold only if
   d(R_i, R_k) <= r_i + r_k under both metrics. The rows that can hold together are an independent
   set of that conflict graph; its maximum, maximised over S's unknown tie count V, bounds the
   rows any such simulator meets. The median condition is dropped (a weaker requirement: the
   bound stays sound) except where S ties every pair (V = P, where the code's tau_b is 1 by
   convention): there a row needs ceil(n/2) of the run's starts inside one window of
   2 * median_max seconds.

3. **Witnesses.** One schedule per scenario found from hindsight and scored by ``compare`` on
   each run's clock: how many rows one schedule does meet (a lower bound on the optimum the
   metric bound bounds from above), free and within the cluster's capacity and dependencies.

Usage: python scripts/sim_fidelity_bound.py [--sim] [--iterations N] [--json OUT]
  --sim: replay every run too (the simulator's rows on the same rows; its replays of two runs)
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Sequence

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))  # the sibling below
import sim_fidelity_witness as W  # noqa: E402

# --------------------------------------------------------------------------- the bound's core ---


def pair_counts(a: Sequence[float], b: Sequence[float]) -> dict[str, int]:
    """Over all pairs of items: concordant, discordant, tied in a only, in b only, in both."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    iu = np.triu_indices(len(x), 1)
    da = np.sign(x[:, None] - x[None, :])[iu]
    db = np.sign(y[:, None] - y[None, :])[iu]
    both = (da == 0) & (db == 0)
    return {"pairs": int(len(da)), "conc": int(np.sum(da * db > 0)), "disc": int(np.sum(da * db < 0)),
            "tie_a": int(np.sum((da == 0) & (db != 0))), "tie_b": int(np.sum((db == 0) & (da != 0))),
            "tie_both": int(np.sum(both))}


def kendall_p(a: Sequence[float], b: Sequence[float], p: float = 0.5) -> float:
    """Fagin et al.'s K^(p): discordant pairs count 1, pairs tied in exactly one ranking count p.
    A metric on bucket orders for 1/2 <= p <= 1."""
    c = pair_counts(a, b)
    return c["disc"] + p * (c["tie_a"] + c["tie_b"])


def tau_b(c: dict[str, int]) -> float:
    """tau-b from the counts, as asad.bench.sim_vs_real.kendall_tau computes it (1.0 on a zero
    denominator)."""
    denom = math.sqrt((c["conc"] + c["disc"] + c["tie_a"]) * (c["conc"] + c["disc"] + c["tie_b"]))
    return (c["conc"] - c["disc"]) / denom if denom else 1.0


def angle(c: dict[str, int]) -> float:
    """arccos(tau_b): tau_b is the cosine of the angle between the two rankings' sign vectors over
    the pairs (entries -1, 0, 1; C - D their dot product, P - U and P - V their squared lengths),
    so this angle is a metric on rankings that do not tie every pair, and tau_b >= t is exactly
    angle <= arccos(t)."""
    return math.acos(max(-1.0, min(1.0, tau_b(c))))


def radius(pairs: int, ties_run: int, tau_min: float, ties_sim: int) -> float | None:
    """The largest K^(1/2)(run, S) of any ranking S with ``ties_sim`` tied pairs and
    tau_b(run, S) >= tau_min (> 0), over the same ``pairs`` items; None if no such S can reach
    tau_min. Needs ties_sim < pairs (tau_b's denominator is then positive)."""
    assert tau_min > 0 and 0 <= ties_sim < pairs and 0 <= ties_run < pairs
    scale = math.sqrt((pairs - ties_run) * (pairs - ties_sim))
    # C - D <= C + D <= P - max(U, V); a tau_min computed as (C - D) / scale comes back times
    # scale an ulp or so off, which must not turn a reachable target unreachable (hypothesis
    # found one: C - D = P - U exactly, tau * scale one ulp above it)
    if tau_min * scale > pairs - max(ties_run, ties_sim) + 1e-9 * max(1.0, scale):
        return None
    tied_both_min = max(0, ties_run + ties_sim - pairs)
    return (pairs - tied_both_min - tau_min * scale) / 2


def conflicts(rows: Sequence[tuple[str, float]], dist: dict[tuple[str, str], float],
              tol: float = 0.0) -> set[tuple[int, int]]:
    """Rows (run, radius): i and k conflict when their runs differ and dist(run_i, run_k) >
    r_i + r_k + tol (the triangle inequality d(R_i, R_k) <= d(R_i, S) + d(S, R_k) fails for every
    S). ``tol`` absorbs float error where the distance is not an exact count (the angle)."""
    out = set()
    for i, k in itertools.combinations(range(len(rows)), 2):
        (ri, di), (rk, dk) = rows[i], rows[k]
        if ri != rk and dist[(ri, rk)] > di + dk + tol:
            out.add((i, k))
    return out


def max_independent(n: int, edges: set[tuple[int, int]]) -> list[int]:
    """A maximum independent set of a graph on 0..n-1 by branch and bound (exact; fine for the
    scenarios' <= 56 vertices, whose rows on one run never conflict)."""
    nbr = [0] * n
    for i, k in edges:
        nbr[i] |= 1 << k
        nbr[k] |= 1 << i
    best: list[int] = [0]

    def go(cand: int, chosen: int) -> None:
        if chosen.bit_count() + cand.bit_count() <= best[0].bit_count():
            return
        if not cand:
            best[0] = chosen
            return
        # isolated candidates join every maximum set
        free = 0
        for v in _bits(cand):
            if not nbr[v] & cand:
                free |= 1 << v
        if free:
            go(cand & ~free, chosen | free)
            return
        v = max(_bits(cand), key=lambda u: (nbr[u] & cand).bit_count())
        go(cand & ~(1 << v) & ~nbr[v], chosen | (1 << v))  # take v
        go(cand & ~(1 << v), chosen)  # leave v

    go((1 << n) - 1, 0)
    return list(_bits(best[0]))


def _bits(mask: int):  # noqa: ANN202
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def window_holds(starts: Sequence[float], width: float) -> int:
    """The most starts inside one closed window of ``width`` seconds."""
    s = sorted(starts)
    return max(int(np.searchsorted(s, x + width, side="right")) - i for i, x in enumerate(s))




# --------------------------------------------------------------------------- on the recordings ---
# the scorer rounds tau to 4 places before comparing: round(t, 4) >= tau_min holds for
# t >= tau_min - 0.00005, so the bound takes that floor
ROUNDING = 0.00005
# the angle is a float: a conflict needs the triangle to fail by more than this
ANGLE_TOL = 1e-9


def common_labels(runs: list[dict]) -> list[str]:
    """The jobs every run started (the same set in every scenario: checked in ``inputs_equal``)."""
    return sorted(set.intersection(*({j["label"] for j in r["jobs"] if j["start"] is not None} for r in runs)))


def aligned_starts(rec: dict, labels: list[str]) -> list[float]:
    """The run's starts less its first submission: the scorer's clock alignment (compare_runs
    shifts one run onto another by their first submissions; a replay runs on its run's clock)."""
    got = {j["label"]: j["start"] for j in rec["jobs"]}
    first = min(j["submit"] for j in rec["jobs"])
    return [got[lab] - first for lab in labels]


INPUT_KEYS = ("label", "submit_s", "nodes", "cpus_per_node", "mem_mb", "limit_s", "runtime_s", "exit_code",
              "oom_after_s", "dep_type", "dep_on", "begin_after_s")


def inputs_equal(runs: list[dict]) -> dict[str, bool]:
    """What a simulator reading only the workload sees, run against run: the job set with every
    request and truth field, the submission order (by job id) and the submission offsets
    (``submit_s``), and which jobs never started."""
    def inputs(r: dict) -> list:
        return sorted(tuple(str(j.get(k)) for k in INPUT_KEYS) for j in r["jobs"])

    def order(r: dict) -> list:
        return [j["label"] for j in sorted(r["jobs"], key=lambda j: j["job_id"])]

    def unstarted(r: dict) -> set:
        return {j["label"] for j in r["jobs"] if j["start"] is None}

    base = runs[0]
    return {"jobs_and_offsets": all(inputs(r) == inputs(base) for r in runs),
            "order": all(order(r) == order(base) for r in runs),
            "unstarted": all(unstarted(r) == unstarted(base) for r in runs)}


def scenario_rows(runs: list[dict]) -> list[dict]:
    """The scorer's rows of one scenario (pair_rows' order), with the pair's target."""
    from asad.bench.sim_vs_real import compare_runs
    from asad.bench.sim_vs_real_pairs import PairTarget

    out = []
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            target = PairTarget.of(compare_runs(a, b))
            for x in (a, b):
                out.append({"pair": (a["run"], b["run"]), "run": x["run"], "target": target})
    return out


def slurm_in_place(runs: list[dict]) -> list[dict]:
    """Each real run c scored as the replay on every row whose pair leaves c out."""
    from asad.bench.sim_vs_real import compare_runs

    by_run = {r["run"]: r for r in runs}
    out = []
    for row in scenario_rows(runs):
        for c in runs:
            if c["run"] in row["pair"]:
                continue
            got = compare_runs(by_run[row["run"]], c)
            out.append({"pair": row["pair"], "run": row["run"], "as_sim": c["run"], "tau": got["kendall_tau"],
                        "median_s": got["median_abs_start_diff_s"], "met": row["target"].met_by(got)})
    return out


def bound(runs: list[dict]) -> dict:
    """The most rows of one scenario a simulator with one ranking S for all its runs can meet:
    a maximum independent set of the rows' conflict graph under two metrics (K^(1/2), whose
    radius depends on S's tie count V, swept over every V < P; and the angle, exact for tau_b),
    and, at V = P (S ties every pair), the rows whose median test a one-second S can pass."""
    labels = common_labels(runs)
    starts = {r["run"]: aligned_starts(r, labels) for r in runs}
    pairs = len(labels) * (len(labels) - 1) // 2
    ties = {k: pair_counts(v, v)["tie_both"] for k, v in starts.items()}
    counts = {(i, k): pair_counts(starts[i], starts[k]) for i in starts for k in starts if i != k}
    kdist = {key: c["disc"] + 0.5 * (c["tie_a"] + c["tie_b"]) for key, c in counts.items()}
    adist = {key: angle(c) for key, c in counts.items()}
    rows = scenario_rows(runs)
    theta = [math.acos(r["target"].tau_min - ROUNDING) for r in rows]
    angle_edges = conflicts([(r["run"], t) for r, t in zip(rows, theta)], adist, tol=ANGLE_TOL)
    all_tied = [idx for idx, r in enumerate(rows)
                if window_holds(starts[r["run"]], 2 * r["target"].median_max_s) >= math.ceil(len(labels) / 2)]
    best, best_v, kept, cache, at_v0 = len(all_tied), pairs, all_tied, {}, None
    for v in range(pairs):
        live = [(idx, radius(pairs, ties[r["run"]], r["target"].tau_min - ROUNDING, v)) for idx, r in enumerate(rows)]
        live = [(idx, rad) for idx, rad in live if rad is not None]
        if len(live) <= best and v > 0:
            continue
        k_edges = conflicts([(rows[idx]["run"], rad) for idx, rad in live], kdist)
        pos = {idx: p for p, (idx, _) in enumerate(live)}
        edges = k_edges | {(pos[i], pos[k]) for i, k in angle_edges if i in pos and k in pos}
        key = (tuple(pos), frozenset(edges))
        if key not in cache:
            cache[key] = [live[p][0] for p in max_independent(len(live), edges)]
        if v == 0:
            at_v0 = len(cache[key])
        if len(cache[key]) > best:
            best, best_v, kept = len(cache[key]), v, cache[key]
    return {"rows": len(rows), "bound": best, "at_ties": best_v, "pairs": pairs, "jobs": len(labels),
            "angle_conflicts": len(angle_edges), "all_tied_rows": len(all_tied), "at_v0": at_v0,
            "left_out": [(rows[i]["pair"], rows[i]["run"]) for i in range(len(rows)) if i not in kept],
            "kdist": {f"{i}-{k}": d for (i, k), d in kdist.items() if i < k},
            "run_ties": ties}


def margins(runs: list[dict]) -> dict:
    """How near the rows come to a conflict, over rows on different runs: under K^(1/2), the
    least r_i(V) + r_k(V) - d(R_i, R_k) at the common V that makes it largest (among the V at
    which every row can reach its tau), and that least margin at V = 0
    (an S that ties no pair); under the angle, the least theta_i + theta_k - angle(R_i, R_k).
    Negative is a conflict."""
    labels = common_labels(runs)
    starts = {r["run"]: aligned_starts(r, labels) for r in runs}
    pairs = len(labels) * (len(labels) - 1) // 2
    ties = {k: pair_counts(v, v)["tie_both"] for k, v in starts.items()}
    rows = scenario_rows(runs)
    cross = [(i, k) for i, k in itertools.combinations(range(len(rows)), 2) if rows[i]["run"] != rows[k]["run"]]
    counts = {(i, k): pair_counts(starts[i], starts[k]) for i in starts for k in starts if i != k}
    kd = np.array([counts[(rows[i]["run"], rows[k]["run"])]["disc"]
                   + 0.5 * (counts[(rows[i]["run"], rows[k]["run"])]["tie_a"]
                            + counts[(rows[i]["run"], rows[k]["run"])]["tie_b"]) for i, k in cross])
    rad = np.array([[np.nan if (x := radius(pairs, ties[r["run"]], r["target"].tau_min - ROUNDING, v)) is None else x
                     for v in range(pairs)] for r in rows])
    ii, kk = np.array([i for i, _ in cross]), np.array([k for _, k in cross])
    slack = rad[ii] + rad[kk] - kd[:, None]  # pairs x V; nan where a row cannot hold at that V
    every = ~np.isnan(rad).any(axis=0)  # the V at which every row can still reach its tau
    least = np.min(np.where(np.isnan(slack), np.inf, slack), axis=0)
    theta = [math.acos(r["target"].tau_min - ROUNDING) for r in rows]
    ang = min(theta[i] + theta[k] - angle(counts[(rows[i]["run"], rows[k]["run"])]) for i, k in cross)
    worst = cross[int(np.argmin(slack[:, 0]))]
    return {"k_best_v": float(np.max(least[every])), "best_v": int(np.flatnonzero(every)[np.argmax(least[every])]),
            "k_at_v0": float(least[0]), "tightest_at_v0": [(rows[i]["pair"], rows[i]["run"]) for i in worst],
            "angle": ang}


def witness(runs: list[dict], sweeps: int = 40, deltas: tuple[int, ...] = (-3, -2, -1, 1, 2, 3),
            iterations: int = 0, seed: int = 1, capacity: bool = False, slack_iterations: int = 0,
            slack_seed: int = 12) -> dict:
    """One schedule for all of a scenario's runs (whole-second starts after the first
    submission), from hindsight: each job at the median of its runs' aligned starts, then moved
    a job at a time (by ``deltas`` or onto one run's start) while the rows met rise (or their
    shortfall falls); where rows are still missed, ``iterations`` steps of annealing on the
    count, then up to ``slack_iterations`` on the least slack (W.anneal_slack). Scored at the end by the
    scorer itself (compare, on each run's clock). A lower bound on the rows one ranking can
    meet. With ``capacity``, only schedules that pass ``Capacity`` (from the real runs' own,
    which pass it) are searched."""
    from asad.bench.sim_vs_real import compare

    labels = common_labels(runs)
    aligned = np.array([aligned_starts(r, labels) for r in runs], dtype=float)
    iu = np.triu_indices(len(labels), 1)
    sign_runs = np.array([np.sign(a[:, None] - a[None, :])[iu] for a in aligned])
    ties = np.array([np.count_nonzero(x == 0) for x in sign_runs], dtype=float)
    rows = scenario_rows(runs)
    index = {r["run"]: i for i, r in enumerate(runs)}
    row_run = np.array([index[r["run"]] for r in rows])
    tau_min = np.array([r["target"].tau_min for r in rows])
    med_max = np.array([r["target"].median_max_s for r in rows])
    args = (iu, tau_min, med_max, row_run)
    check = W.Capacity(runs, labels)
    allowed = check.ok if capacity else None
    # starts: the per-job median (not with capacity: it need not pass), and each run's own schedule
    starts = [a.copy() for a in aligned if allowed is None or allowed(a)]
    if not capacity:
        starts.insert(0, np.floor(np.median(aligned, axis=0)))
    found = None
    for start in starts:
        got = W.climb(start, sweeps, deltas, lambda x: W.fast_score(sign_runs, ties, aligned, x, *args), aligned,
                     allowed)
        if found is None or (got[1][0], -got[1][1]) > (found[1][0], -found[1][1]):
            found = got
    s, best = found
    if iterations and best[0] < len(rows):
        s, best = W.anneal(s.copy(), lambda x: W.fast_score(sign_runs, ties, aligned, x, *args), aligned, iterations,
                          seed, allowed)
    if slack_iterations and best[0] < len(rows):
        # the least slack is not the count: kept only where it meets more rows
        tried, _ = W.anneal_slack(s.copy(), lambda x: W.min_slack(sign_runs, ties, aligned, x, *args), aligned,
                                  slack_iterations, slack_seed, allowed)
        got = W.fast_score(sign_runs, ties, aligned, tried, *args)
        if got[0] > best[0]:
            s, best = tried, got
    met = []
    for r in rows:
        rec = runs[index[r["run"]]]
        first = min(j["submit"] for j in rec["jobs"])
        at = dict(zip(labels, s))
        sim = {j["label"]: {"start": None if j["label"] not in at else at[j["label"]] + first, "end": None,
                            "state": None} for j in rec["jobs"]}
        met.append(r["target"].met_by(compare(rec, sim)))
    over, deps = check.violations(s)
    return {"rows": len(rows), "met": sum(met), "fast_met": best[0], "schedule": dict(zip(labels, s.tolist())),
            "over_capacity": over, "deps_broken": deps, "starts_tried": len(starts),
            "missed": [(r["pair"], r["run"]) for r, ok in zip(rows, met) if not ok]}


def one_seed_analogue(runs: list[dict]) -> tuple[int, int]:
    """The 20-seed figure with Slurm in the simulator's place. Taken literally (run c's "seeds"
    are the other real runs) it compares the median of a set with itself: met by construction.
    So one real run c stands for one seed: tau(c, a) >= median over d not in {a, c} of
    tau(a, d) - 0.02, for every run a and c != a. Returns (met, asked)."""
    import statistics

    from asad.bench.sim_vs_real import compare_runs
    from asad.bench.sim_vs_real_pairs import TAU_MARGIN

    met = asked = 0
    for a in runs:
        for c in runs:
            if c is a:
                continue
            rest = [compare_runs(a, d)["kendall_tau"] for d in runs if d is not a and d is not c]
            asked += 1
            met += compare_runs(a, c)["kendall_tau"] >= statistics.median(rest) - TAU_MARGIN
    return met, asked


def simulator_rows(recs: list[dict]) -> tuple[list[dict], dict[str, list[float]]]:
    """The simulator's rows as the scorer gives them (pair_rows, the fixed replay), and per
    scenario tau_b between its replays of two different runs, each on its run's clock aligned
    as the scorer aligns two runs: is it a one-schedule simulator?"""
    from asad.bench.sim_vs_real import compare, replay
    from asad.bench.sim_vs_real_pairs import by_scenario, pair_rows

    reps = {}
    apart: dict[str, list[float]] = {}
    for name, runs in by_scenario(recs).items():
        labels = common_labels(runs)
        aligned = {}
        for r in runs:
            reps[r["id"]] = replay(r)
            first = min(j["submit"] for j in r["jobs"])
            aligned[r["run"]] = [reps[r["id"]][lab]["start"] - first for lab in labels]
        apart[name] = [tau_b(pair_counts(aligned[i], aligned[k])) for i, k in itertools.combinations(aligned, 2)]
    rows = pair_rows(recs, sims={rid: compare(next(r for r in recs if r["id"] == rid), rep) for rid, rep in reps.items()})
    return rows, apart


def main(argv: list[str]) -> int:
    from asad.bench.sim_vs_real import load_recordings
    from asad.bench.sim_vs_real_pairs import by_scenario

    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--sim", action="store_true", help="also replay every run (~1 min) for the simulator's rows")
    ap.add_argument("--iterations", type=int, default=200000, help="annealing steps where the climb misses rows")
    ap.add_argument("--slack-iterations", type=int, default=2000000,
                    help="then annealing steps on the least slack, where rows are still missed")
    args = ap.parse_args(argv)
    recs = load_recordings(None)
    scen = by_scenario(recs)
    sim_met: dict = {}
    apart: dict = {}
    if args.sim:
        rows_sim, apart = simulator_rows(recs)
        for r in rows_sim:
            sim_met.setdefault(r["scenario"], {})[(tuple(int(x) for x in r["pair"].split("-")), r["run"])] = r["met"]
    report: dict = {"inputs": {}, "slurm": {}, "bound": {}, "witness": {}, "replays_apart": apart}

    print("## Inputs: what a simulator reading only the workload sees, run against run")
    for name, runs in scen.items():
        report["inputs"][name] = inputs_equal(runs)
    same = [n for n, v in report["inputs"].items() if all(v.values())]
    print(f"job set, requests and truths, submission offsets, order and never-started jobs equal in every run: "
          f"{len(same)} of {len(scen)} scenarios")
    print()
    print("## 1. Slurm in the simulator's place (scenarios with >= 3 unperturbed runs)")
    print("| scenario | runs | rows | (row, c) met | share | rows met, expected | rows every c meets | "
          "c meeting all its rows | one-seed analogue | simulator, same rows |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    tot = {"rows": 0, "asked": 0, "met": 0, "expected": 0.0, "every": 0, "seed": [0, 0], "sim": 0}
    for name, runs in scen.items():
        if len(runs) < 3:
            continue
        got = slurm_in_place(runs)
        report["slurm"][name] = got
        per_row: dict = {}
        per_c: dict = {}
        for g in got:
            per_row.setdefault((g["pair"], g["run"]), []).append(g["met"])
            per_c.setdefault(g["as_sim"], []).append(g["met"])
        met = sum(g["met"] for g in got)
        expected = sum(sum(v) / len(v) for v in per_row.values())
        every = sum(all(v) for v in per_row.values())
        whole = sum(all(v) for v in per_c.values())
        seed = one_seed_analogue(runs)
        sim = sum(sim_met.get(name, {}).values()) if args.sim else None
        for key, val in (("rows", len(per_row)), ("asked", len(got)), ("met", met), ("expected", expected),
                         ("every", every), ("sim", sim or 0)):
            tot[key] += val
        tot["seed"] = [tot["seed"][0] + seed[0], tot["seed"][1] + seed[1]]
        print(f"| {name} | {len(runs)} | {len(per_row)} | {met} of {len(got)} | {met / len(got):.3f} | {expected:.1f} | "
              f"{every} | {whole} of {len(runs)} | {seed[0]} of {seed[1]} | {'' if sim is None else sim} |")
    print(f"| total | | {tot['rows']} | {tot['met']} of {tot['asked']} | {tot['met'] / tot['asked']:.3f} | "
          f"{tot['expected']:.1f} | {tot['every']} | | {tot['seed'][0]} of {tot['seed'][1]} | "
          f"{tot['sim'] if args.sim else ''} |")
    print()
    print("## 2. The metric bound: rows one ranking (one schedule up to the clock) can meet together")
    print("| scenario | runs | jobs | rows | bound (K^(1/2) and angle) | the same if S ties no pair | angle conflicts | "
          "least K margin, best V / V = 0 | least angle margin (rad) | rows a one-second S passes |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    total = [0, 0, 0]
    for name, runs in scen.items():
        b = bound(runs)
        m = margins(runs)
        report["bound"][name] = {**b, "margins": m}
        total = [total[0] + b["rows"], total[1] + b["bound"], total[2] + b["at_v0"]]
        print(f"| {name} | {len(runs)} | {b['jobs']} | {b['rows']} | {b['bound']} | {b['at_v0']} | "
              f"{b['angle_conflicts']} | {m['k_best_v']:.1f} / {m['k_at_v0']:.1f} | {m['angle']:.3f} | "
              f"{b['all_tied_rows']} |")
    print(f"| total | | | {total[0]} | {total[1]} | {total[2]} | | | | |")
    print()
    print("## 3. Witnesses: one schedule per scenario, from hindsight, scored by compare on each run's clock")
    print("| scenario | rows | free witness: met | its starts over capacity / dependencies broken | "
          "witness within capacity and dependencies: met | missed by it |")
    print("|---|---:|---:|---:|---:|---|")
    total = [0, 0, 0]
    for name, runs in scen.items():
        free = witness(runs, iterations=args.iterations, slack_iterations=args.slack_iterations)
        held = witness(runs, iterations=args.iterations, capacity=True, slack_iterations=args.slack_iterations)
        report["witness"][name] = {"free": free, "capacity": held}
        total = [total[0] + free["rows"], total[1] + free["met"], total[2] + held["met"]]
        missed = ", ".join(f"{a}-{b} run {r}" for (a, b), r in held["missed"])
        print(f"| {name} | {free['rows']} | {free['met']} | {free['over_capacity']} / {free['deps_broken']} | "
              f"{held['met']} | {missed} |")
    print(f"| total | {total[0]} | {total[1]} | | {total[2]} | |")
    if apart:
        print()
        print("## The simulator's own replays of two different runs (tau_b, aligned as two real runs)")
        print("| scenario | replay pairs | identical order | tau_b min / median |")
        print("|---|---:|---:|---:|")
        for name, taus in apart.items():
            print(f"| {name} | {len(taus)} | {sum(t == 1.0 for t in taus)} | {min(taus):.3f} / {np.median(taus):.3f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, default=str, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
