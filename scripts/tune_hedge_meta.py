"""Issue 38, fourteenth round: a meta level that chooses between the cluster's top level and the
floor share's (``hedge_top_groups: floor+cluster``, asad/learn/hedge_meta.py), chosen on the
tuning windows (before 2021-06-10) under a rule that does not turn on one draw's luck, written
down and committed before any run.

Why (docs/results/learn.md, thirteenth round): judged, the per-floor-share draw
``h-fl-win-told-a20`` beat the back-off in 2 of Graham's 3 windows and lost Cedar's last two,
where the per-cluster draw ``h-win-told-a20`` won all four: the context helps on one cluster
and period and hurts on another, so the learner chooses it. And every rule since the ninth round
turned on margins (+0.0007 in Graham's W2) smaller than one draw's seed-to-seed spread
(0.001 .. 0.009 per cell), so the rule now scores a randomised learner by its expectation.

Candidates (written down before any run). Both top levels are the ninth/thirteenth rounds' draws
(``hedge_top: learners``, told, eta 1, loss ``win``, a seeded draw, the cold step max 0.02,
halflife 50), i.e. ``h-win-told-a20`` and ``h-fl-win-told-a20``, each with its weights as alone;
the meta level per cluster, at the top level's rate (1) and share (the preset's 0.001)::

    h-mx-draw     the meta level draws the top level to follow from its weights (loss win)
    h-mx-lead     the meta level follows the heavier top level (loss win; ties: the cluster's)
    h-mx-wlead    my reading of the per-cell tables: the floor share gains +0.010 .. +0.012 in
                  Graham W1 and Cedar W2 seed for seed and nothing in Graham W2, and lost Cedar's
                  later judged windows: a slow, score-shaped switch. The meta level follows the
                  top level with the smaller median |error| over the cluster's last 1,000 waits
                  (loss window), the heavier under those weights

Reference rows, not candidates: ``median-backoff``, ``median-k``, ``median-all``.

Tuning replays, one per cluster and seed (0, 1, 2) to 2021-06-10 (nothing later exists in it),
nice 5, two at a time::

    nice -n 5 asad bench predictors --cluster C --until 2021-06-10 --seed S --rolling 3w \\
        --rolling-from 2021-04-29 --extra-window 2021-04-29..2021-05-20 \\
        --extra-window 2021-05-20..2021-06-10 --json --judge median-backoff \\
        --predictors median-backoff,median-k,median-all $(python scripts/tune_hedge_meta.py --adds) > T<S>-C.json
    python scripts/tune_hedge_meta.py graham:0:T0-graham.json graham:1:T1-graham.json ... cedar:2:T2-cedar.json

The rule (fourteenth round). A *cell* is one cluster x one tuning window (W1 = 04-29 .. 05-20,
W2 = 05-20 .. 06-10; Cedar and Graham: 4 cells). A randomised candidate's score is its
expectation, so each candidate is replayed under seeds 0, 1 and 2 and read on the MEAN over the
seeds of each statistic (a deterministic candidate, with no draw, would need one seed; every
candidate here draws). A candidate passes a cell when:

- the mean over seeds of its median |log10 error| on the warm jobs is no worse than the mean of
  ``median-backoff``'s (the same in every seed: it does not draw);
- the mean of its share within x3 on the warm jobs is no worse than the mean of the best running
  median's;
- the mean of its worst quantile-coverage gap (every job answered, q 0.1 .. 0.9) is within 5
  points OR no worse than the mean of ``median-backoff``'s own worst gap in that cell;
- and no single seed loses the median-error margin by more than 0.003 (each seed's margin over
  ``median-backoff`` >= -0.003).

A candidate missing a seed in a cell fails it. Kept: passes all 4 cells. Chosen: among the kept,
the largest summed MEAN median-error margin over Graham's two cells; ties: the smaller worst mean
gap over the 4 cells, then the label.

None kept: no change, the judged windows are not read. One chosen: it is judged ONCE on the
rolling windows (the twelfth read of those windows), by a full replay per cluster and seed (0, 1,
2) of ``median-backoff``, the running medians and it alone (``--judge LABEL``), read with
``--rolling LABEL CLUSTER:SEED:FILE ...``, which reports every seed and the mean, a window met on
the mean. The default (``RECOMMENDED``) changes only if it meets every target on both clusters'
judged windows (median error no worse than the back-off's and x3 no worse than the best running
median's in >= 75 % of windows, every quantile's coverage within +-5 points: Graham 3 of 3,
Cedar 3 of 4).

Result of the tuning run (docs/results/learn.md, fourteenth round; the replays' JSON in
docs/results/data/learn-r14), before the judged read: **kept and chosen h-mx-lead** (summed mean
Graham margin +0.0273: W1 +0.0258, W2 +0.0015 with seeds -0.0004 / +0.0039 / +0.0012; Cedar
+0.0067 / +0.0163; worst mean gap 5.0 in Cedar W1, allowed 7.7). h-mx-wlead is kept too (Graham
+0.0224). h-mx-draw fails Graham's W2 on the mean (-0.0012; seeds -0.0017 / -0.0003 / -0.0014).
"""

from __future__ import annotations

import json
import sys
from statistics import mean

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from tune_hedge import GAP, REFERENCE, RUNNING, cells  # noqa: E402
from tune_hedge_account import adds as account_adds  # noqa: E402

SEEDS = (0, 1, 2)
SEED_LOSS = 0.003  # no single seed may lose the median-error margin by more than this
DRAW = {"hedge_top": "learners", "hedge_top_combine": "draw", "hedge_top_loss": "win", "hedge_top_eta": 1,
        "hedge_top_told": True, "aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 50,
        "hedge_top_groups": "floor+cluster"}
CANDIDATES = {
    "h-mx-draw": {**DRAW, "hedge_meta_combine": "draw", "hedge_meta_loss": "win"},
    "h-mx-lead": {**DRAW, "hedge_meta_combine": "leader", "hedge_meta_loss": "win"},
    "h-mx-wlead": {**DRAW, "hedge_meta_combine": "leader", "hedge_meta_loss": "window"},
}


def adds(labels: list[str] | None = None) -> list[str]:
    return account_adds(labels, CANDIDATES)


def stats(rows: dict, label: str) -> tuple[float, float, float | None, float, float, float | None]:
    """(median error, x3, worst gap) of ``label`` and (median error, best running x3, worst gap)
    of the reference, in one replay's cell."""
    me, ref = rows[label], rows[REFERENCE]
    best_x3 = max(rows[lb]["within_x3"] for lb in RUNNING if lb in rows)
    return (me["median_abs_log10"], me["within_x3"], me["worst_gap"], ref["median_abs_log10"], best_x3,
            ref["worst_gap"])


def cell_verdict(per_seed: dict[int, tuple]) -> tuple[bool, float, float, list[float], str]:
    """(passes, mean margin, mean worst gap, each seed's margin, why it fails) of one candidate
    in one cell from its per-seed statistics (see :func:`stats`)."""
    if set(per_seed) != set(SEEDS):
        return False, float("nan"), float("nan"), [], f"seeds {sorted(per_seed)} of {list(SEEDS)}"
    rows = [per_seed[s] for s in SEEDS]
    margins = [r[3] - r[0] for r in rows]
    m_margin = mean(margins)
    m_x3, m_best = mean(r[1] for r in rows), mean(r[4] for r in rows)
    gaps = [r[2] for r in rows]
    m_gap = float("inf") if any(g is None for g in gaps) else mean(gaps)
    ref_gaps = [r[5] for r in rows]
    allowed = max(GAP, mean(ref_gaps)) if all(g is not None for g in ref_gaps) else GAP
    why = []
    if m_margin < 0:
        why.append("mean median error")
    if m_x3 < m_best:
        why.append("mean x3")
    if m_gap > allowed:
        why.append("mean coverage")
    if min(margins) < -SEED_LOSS:
        why.append(f"a seed loses by more than {SEED_LOSS}")
    return not why, m_margin, m_gap, margins, ", ".join(why)


def choose(files: list[tuple[str, int, str]]) -> str | None:
    """Print every cell per seed and on the mean and the rule's verdict; return the chosen."""
    by_seed = {}  # (cluster, window) -> seed -> rows
    for cluster, seed, path in files:
        for cell, rows in cells({cluster: path}).items():
            by_seed.setdefault(cell, {})[seed] = rows
    summary: dict[str, list] = {lb: [True, 0.0, 0.0, 0.0] for lb in CANDIDATES}
    for cell in sorted(by_seed):
        seeds = by_seed[cell]
        refs = {s: stats(rows, REFERENCE) for s, rows in seeds.items()}
        print(f"\n[{cell[0]} {cell[1]}] {REFERENCE} per seed: "
              + "  ".join(f"s{s} {r[3]:.4f} / best x3 {100 * r[4]:.1f} / gap {100 * (r[5] or 0):.1f}"
                          for s, r in sorted(refs.items())))
        for lb in CANDIDATES:
            per_seed = {s: stats(rows, lb) for s, rows in seeds.items() if lb in rows}
            ok, m_margin, m_gap, margins, why = cell_verdict(per_seed)
            for s, r in sorted(per_seed.items()):
                gap = "-" if r[2] is None else f"{100 * r[2]:.1f}"
                print(f"  {lb:<12} s{s}  {r[0]:.4f} / {100 * r[1]:.1f} / {gap}  (margin {r[3] - r[0]:+.4f})")
            if per_seed:
                print(f"  {lb:<12} mean {mean(r[0] for r in per_seed.values()):.4f} / "
                      f"{100 * mean(r[1] for r in per_seed.values()):.1f} / {100 * m_gap:.1f}  "
                      f"(margin {m_margin:+.4f})  {'pass' if ok else 'FAIL: ' + why}")
            s = summary[lb]
            s[0] = s[0] and ok
            s[1 if cell[0] == "graham" else 2] += m_margin if per_seed else float("nan")
            s[3] = max(s[3], m_gap)
    if len(by_seed) != 4:
        print(f"\n{len(by_seed)} cells read, 4 needed: no verdict")
        return None
    print("\nlabel: passes all 4 cells / summed mean margin Graham / Cedar / worst mean gap")
    for lb, (ok, graham, cedar, worst) in summary.items():
        print(f"  {lb:<12} {'yes' if ok else 'no ':<4} {graham:+.4f} {cedar:+.4f} {100 * worst:.1f}")
    kept = [lb for lb in CANDIDATES if summary[lb][0]]
    if not kept:
        print("\nchosen: none kept: no change, the judged windows are not read")
        return None
    chosen = min(kept, key=lambda lb: (-summary[lb][1], summary[lb][3], lb))
    print(f"\nchosen: {chosen} {json.dumps(CANDIDATES[chosen])}")
    return chosen


def rolling(files: list[tuple[str, int, str]], label: str) -> int:
    """The judged read: each window per seed and on the mean over seeds (met on the mean)."""
    for cluster in dict.fromkeys(c for c, _, _ in files):
        runs = {seed: json.load(open(path))["scored"][cluster] for c, seed, path in files if c == cluster}
        blocks = runs[min(runs)]
        met = [0, 0, 0]
        print(f"\n[{cluster}] {label}: median error vs {REFERENCE} / x3 vs best running median / worst gap;"
              f" seeds {sorted(runs)}")
        for k, block in enumerate(blocks):
            per = {s: stats(run[k]["rows"], label) for s, run in runs.items()}
            for s, r in sorted(per.items()):
                print(f"  {block['start']}..{block['end']} s{s}  {r[0]:.4f} vs {r[3]:.4f}  {100 * r[1]:.1f} / "
                      f"{100 * r[4]:.1f}  {100 * (r[2] or 0):.1f} ({100 * (r[5] or 0):.1f})")
            m = [mean(r[i] for r in per.values()) for i in (0, 1, 3, 4)]
            gaps = [r[2] for r in per.values()]
            m_gap = float("inf") if any(g is None for g in gaps) else mean(gaps)
            legs = (m[0] <= m[2], m[1] >= m[3], m_gap <= GAP)
            met = [a + int(b) for a, b in zip(met, legs)]
            print(f"  {block['start']}..{block['end']} mean {m[0]:.4f} vs {m[2]:.4f}  {100 * m[1]:.1f} / "
                  f"{100 * m[3]:.1f}  {100 * m_gap:.1f}  " + " ".join("met" if leg else "NOT" for leg in legs))
        n = len(blocks)
        print(f"  windows met (mean over seeds): {met[0]} / {met[1]} / {met[2]} of {n}"
              f" ({'holds' if n and min(met) / n >= 0.75 else 'does NOT hold'} at 75 %)")
    return 0


def parse(args: list[str]) -> list[tuple[str, int, str]]:
    out = []
    for arg in args:
        cluster, seed, path = arg.split(":", 2)
        out.append((cluster, int(seed), path))
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--adds"]:
        print(" ".join(adds(argv[1:] or None)))
        return 0
    if argv[:1] == ["--rolling"] and len(argv) >= 3 and argv[1] in CANDIDATES:
        return rolling(parse(argv[2:]), argv[1])
    if not argv or argv[0].startswith("-"):
        print("usage: tune_hedge_meta.py CLUSTER:SEED:FILE ... | --adds [LABEL ...] | --rolling LABEL CLUSTER:SEED:FILE ...",
              file=sys.stderr)
        return 2
    choose(parse(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
