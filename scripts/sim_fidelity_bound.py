"""How many of issue 37's pair rows can any simulator meet? (f37q, 2026-11-28)

A *row* is (scenario, unordered pair {a, b} of unperturbed real runs, one run x of the pair): the
replay of x must reach tau(replay, x) >= tau_min and median |dstart| <= median_max, both set by the
real pair (``PairTarget.of(compare_runs(a, b))``). A scenario with n runs has n (n - 1) rows; 170 in
all. This script measures two things (no simulator change; it only imports the scorer):

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
   For a simulator whose replays of a scenario's runs are one ranking S (one schedule up to a
   whole-second clock shift), two rows on runs i != k can both hold only if
   K(R_i, R_k) <= r_i + r_k. The rows that can hold together are an independent set of that
   conflict graph; its maximum, maximised over S's unknown tie count V, bounds the rows any such
   simulator meets. The median condition is dropped (a weaker requirement: the bound stays sound)
   except where S ties every pair (V = P, where the code's tau_b is 1 by convention): there a
   row needs ceil(n/2) of the run's starts inside one window of 2 * median_max seconds.

Usage: python scripts/sim_fidelity_bound.py [--json OUT]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Sequence

import numpy as np

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


def radius(pairs: int, ties_run: int, tau_min: float, ties_sim: int) -> float | None:
    """The largest K^(1/2)(run, S) of any ranking S with ``ties_sim`` tied pairs and
    tau_b(run, S) >= tau_min (> 0), over the same ``pairs`` items; None if no such S can reach
    tau_min. Needs ties_sim < pairs (tau_b's denominator is then positive)."""
    assert tau_min > 0 and 0 <= ties_sim < pairs and 0 <= ties_run < pairs
    scale = math.sqrt((pairs - ties_run) * (pairs - ties_sim))
    if tau_min * scale > pairs - max(ties_run, ties_sim):  # C - D <= C + D <= P - max(U, V)
        return None
    tied_both_min = max(0, ties_run + ties_sim - pairs)
    return (pairs - tied_both_min - tau_min * scale) / 2


def conflicts(rows: Sequence[tuple[str, float]], dist: dict[tuple[str, str], float]) -> set[tuple[int, int]]:
    """Rows (run, radius): i and k conflict when their runs differ and dist(run_i, run_k) >
    r_i + r_k (the triangle inequality d(R_i, R_k) <= d(R_i, S) + d(S, R_k) fails for every S)."""
    out = set()
    for i, k in itertools.combinations(range(len(rows)), 2):
        (ri, di), (rk, dk) = rows[i], rows[k]
        if ri != rk and dist[(ri, rk)] > di + dk:
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


def _starts(rec: dict, labels: list[str]) -> list[float]:
    got = {j["label"]: j["start"] for j in rec["jobs"]}
    return [got[lab] for lab in labels]


def scenario_rows(runs: list[dict]) -> list[dict]:
    """The scorer's rows of one scenario, with the pair's target."""
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


# the scorer rounds tau to 4 places before comparing: round(t, 4) >= tau_min holds for
# t >= tau_min - 0.00005, so the bound takes that floor
ROUNDING = 0.00005


def bound(runs: list[dict], slack: float = 0.0) -> dict:
    """The metric bound for one scenario: the most rows a one-ranking simulator can meet, over
    every tie count V of its ranking. ``slack``: the replays of two runs may be up to this far
    apart in K^(1/2) (0: one ranking)."""
    labels = sorted(set.intersection(*({j["label"] for j in r["jobs"] if j["start"] is not None} for r in runs)))
    starts = {r["run"]: _starts(r, labels) for r in runs}
    pairs = len(labels) * (len(labels) - 1) // 2
    ties = {k: pair_counts(v, v)["tie_both"] for k, v in starts.items()}
    dist = {(i, k): kendall_p(starts[i], starts[k]) for i in starts for k in starts if i != k}
    rows = scenario_rows(runs)
    # V = P: S ties every pair; the code's tau is 1, so only the median can refuse a row
    n_jobs = len(labels)
    all_tied_ok = sum(window_holds(starts[r["run"]], 2 * r["target"].median_max_s) >= math.ceil(n_jobs / 2)
                      for r in rows)
    best, best_v, cache = -1, None, {}
    for v in range(pairs):
        rr = []
        for idx, r in enumerate(rows):
            rad = radius(pairs, ties[r["run"]], r["target"].tau_min - ROUNDING, v)
            if rad is not None:
                rr.append((idx, r["run"], rad + slack / 2))
        if len(rr) <= best:
            continue
        edges = conflicts([(run, rad) for _, run, rad in rr], dist)
        key = (tuple(i for i, _, _ in rr), frozenset(edges))
        if key not in cache:
            cache[key] = len(max_independent(len(rr), edges))
        if cache[key] > best:
            best, best_v = cache[key], v
    return {"rows": len(rows), "bound": max(best, all_tied_ok if all_tied_ok else 0), "at_ties": best_v,
            "all_tied_rows": all_tied_ok, "pairs": pairs, "jobs": n_jobs, "run_ties": ties,
            "dist": {f"{i}-{k}": d for (i, k), d in dist.items() if i < k}}


def need_apart(runs: list[dict]) -> float:
    """The least K^(1/2) by which the replays of two runs must differ for every row to hold: the
    largest d(R_i, R_k) - r_i - r_k over rows on different runs, each radius at its widest V."""
    labels = sorted(set.intersection(*({j["label"] for j in r["jobs"] if j["start"] is not None} for r in runs)))
    starts = {r["run"]: _starts(r, labels) for r in runs}
    pairs = len(labels) * (len(labels) - 1) // 2
    ties = {k: pair_counts(v, v)["tie_both"] for k, v in starts.items()}
    widest = {}
    for r in scenario_rows(runs):
        rads = [radius(pairs, ties[r["run"]], r["target"].tau_min - ROUNDING, v) for v in range(pairs)]
        rad = max(x for x in rads if x is not None)
        widest[r["run"]] = min(widest.get(r["run"], rad), rad)  # the tightest row on that run
    return max(kendall_p(starts[i], starts[k]) - widest[i] - widest[k] for i in starts for k in starts if i < k)


def main(argv: list[str]) -> int:
    from asad.bench.sim_vs_real import load_recordings
    from asad.bench.sim_vs_real_pairs import by_scenario

    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    scen = by_scenario(load_recordings(None))
    report = {"slurm": {}, "bound": {}}
    print("## Slurm in the simulator's place (scenarios with >= 3 unperturbed runs)")
    print("| scenario | runs | rows | (row, c) met | rows met, expected (share x rows) | rows met by every c | c meeting all its rows |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    tot = [0, 0, 0.0, 0, 0]
    for name, runs in scen.items():
        if len(runs) < 3:
            continue
        got = slurm_in_place(runs)
        report["slurm"][name] = got
        n_rows = len(runs) * (len(runs) - 1)
        met = sum(g["met"] for g in got)
        per_row: dict = {}
        for g in got:
            per_row.setdefault((g["pair"], g["run"]), []).append(g["met"])
        expected = sum(sum(v) / len(v) for v in per_row.values())
        every = sum(all(v) for v in per_row.values())
        per_c: dict = {}
        for g in got:
            per_c.setdefault(g["as_sim"], []).append(g["met"])
        whole = sum(all(v) for v in per_c.values())
        tot = [tot[0] + n_rows, tot[1] + len(got), tot[2] + expected, tot[3] + every, tot[4] + met]
        print(f"| {name} | {len(runs)} | {n_rows} | {met} of {len(got)} | {expected:.1f} | {every} | "
              f"{whole} of {len(runs)} |")
    print(f"| total | | {tot[0]} | {tot[4]} of {tot[1]} ({tot[4] / tot[1]:.3f}) | {tot[2]:.1f} | {tot[3]} | |")
    print()
    print("## The metric bound (K^(1/2), one ranking up to the clock)")
    print("| scenario | runs | jobs | rows | bound | at S's tied pairs V | rows possible with every pair tied | "
          "K(R_i,R_k) min-max | replays must differ by >= (all rows) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    total = [0, 0]
    for name, runs in scen.items():
        b = bound(runs)
        apart = need_apart(runs)
        report["bound"][name] = {**b, "need_apart": apart}
        total = [total[0] + b["rows"], total[1] + b["bound"]]
        d = list(b["dist"].values())
        print(f"| {name} | {len(runs)} | {b['jobs']} | {b['rows']} | {b['bound']} | {b['at_ties']} | "
              f"{b['all_tied_rows']} | {min(d):g}-{max(d):g} | {max(apart, 0):g} |")
    print(f"| total | | | {total[0]} | {total[1]} | | | | |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, default=str, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
