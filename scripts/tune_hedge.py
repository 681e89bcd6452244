"""Issue 38, third to sixth rounds: choose ``hedge``'s settings on two tuning windows before 2021-06-10.

Input: per cluster, the JSON of one replay that stops at 2021-06-10 (nothing later is read)
and is scored in two 3-week windows, 2021-04-29 .. 05-20 and 05-20 .. 06-10::

    asad bench predictors --cluster graham --until 2021-06-10 --rolling 3w --rolling-from 2021-04-29 \
        --rolling-step 3w --json --predictors median-backoff,median-k,median-all --add 'h-...=hedge:{...}' ...
    python scripts/tune_hedge.py graham:/tmp/tg.json cedar:/tmp/tc.json

(A replay to 2021-06-10 ends its windows by the day 99.9 % of its jobs were eligible, 06-09, so
it scores only the first window. The second is then scored apart in the frozen run's replay,
``--rolling 4w --extra-window 2021-04-29..2021-05-20 --extra-window 2021-05-20..2021-06-10``:
every estimate uses only waits known before its job was eligible, so the tuning windows'
scores do not depend on later data; this script reads only the "extra" block.)

The rule, written down (and committed) before any of these runs was read. Labels of hedge
variants start with ``h-``. A *cell* is one cluster × one tuning window (4 cells). A variant
passes a cell when, on the warm jobs, its median |log10 error| is no worse than
``median-backoff``'s, its share within ×3 no worse than the best running median's
(``median-k``, ``median-all``), and its worst quantile-coverage gap (every job answered) is
within 5 points: the issue's three targets. Kept: the variants that pass all 4 cells. Chosen:
among the kept, the largest *worst-cell margin*, min over the cells of (``median-backoff``'s
median error − the variant's). Last round's choice passed the one tuning window by 0.001 on
Graham and lost every rolling window there, so the rule asks for a margin that holds in the
worst cell, and two windows instead of one. None kept: ``median-backoff`` stays the default
and the variant with the largest worst-cell margin is frozen as ``hedge``'s preset anyway, to
be judged once on the rolling windows and reported.

Fourth round (the top level over whole learners, ``hedge_top: learners``), fixed before its
runs: the coverage leg of a cell passes within 5 points *or* no worse than ``median-backoff``'s
own worst gap in that cell. In the first tuning window every learner's residual strata are
still warming up (the file starts 04-24) and the reference itself misses by 6.6 / 7.7 points,
so "within 5" alone failed every variant there whatever it did, and the rule could keep none.
The judged rolling windows keep the issue's plain ±5 points.

Fifth round (the top level's own loss, rate and share; ``hedge_top_loss``, ``hedge_top_eta``,
``hedge_top_share``, ``hedge_top_combine: draw``), fixed and committed before its runs: the
fourth round's rule unchanged, over these six variants, all ``hedge`` (the third round's
panel preset) with ``hedge_top: learners``; one full replay per cluster with the tuning
windows as ``--extra-window``, this script reading only the "extra" block before the freeze::

    --add 'h-win-lead=hedge:{"hedge_top":"learners","hedge_top_combine":"leader","hedge_top_loss":"win","hedge_top_eta":1}'
    --add 'h-win-fast=hedge:{"hedge_top":"learners","hedge_top_combine":"leader","hedge_top_loss":"win","hedge_top_eta":4,"hedge_top_share":0.01}'
    --add 'h-win-slow=hedge:{"hedge_top":"learners","hedge_top_combine":"leader","hedge_top_loss":"win","hedge_top_eta":0.25,"hedge_top_share":0.0001}'
    --add 'h-win-draw=hedge:{"hedge_top":"learners","hedge_top_combine":"draw","hedge_top_loss":"win","hedge_top_eta":1}'
    --add 'h-med-lead=hedge:{"hedge_top":"learners","hedge_top_combine":"leader","hedge_top_loss":"over","hedge_top_eta":1}'
    --add 'h-x3-lead=hedge:{"hedge_top":"learners","hedge_top_combine":"leader","hedge_top_loss":"over","hedge_top_tau":0.4771,"hedge_top_eta":1}'

(``win``: a learner pays 1 when it is farther from the wait than the other; ``over``: 1 past
the back-off's running median error, or past x3; the judged score is a median and a share
within x3, so these count what it counts, where the capped |error| of rounds three and four
rewarded a smaller mean.)

Sixth round (the top level judged on what the score counts; ``hedge_top_loss: window``,
``hedge_top_window``, ``hedge_top_groups``, ``hedge_top: learners-median20``,
``hedge_top_told``), fixed and committed before its runs: the fourth round's rule unchanged
(the same cells, legs, coverage allowance, "kept" and "chosen"; none kept: the largest
worst-cell margin is still frozen and judged, and median-backoff stays the default), over these
three variants, all ``hedge`` with ``hedge_top_told`` (the learners judged after the pending
floor, as the job was told: scripts/hedge_followed.py found the floor binding on 12-14 % of
Graham's tuning jobs, where the pre-floor answers named a different learner nearer); one full
replay per cluster with the tuning windows as ``--extra-window``, this script reading only the
"extra" block before the freeze::

    --add 'h-wmed-lead=hedge:{"hedge_top":"learners","hedge_top_combine":"leader","hedge_top_loss":"window","hedge_top_eta":1,"hedge_top_told":true}'
    --add 'h-wmed-acct=hedge:{"hedge_top":"learners","hedge_top_combine":"leader","hedge_top_loss":"window","hedge_top_groups":"account","hedge_top_eta":1,"hedge_top_told":true}'
    --add 'h-win-told=hedge:{"hedge_top":"learners","hedge_top_combine":"draw","hedge_top_loss":"win","hedge_top_eta":1,"hedge_top_told":true}'

(``window``: a learner pays its own median |log10 error| over the top group's last 1,000
waits, the score itself, so the leader is the learner whose running median error is lower and
converges to the back-off where the back-off is best; ``h-wmed-acct`` keeps those weights per
account; ``h-win-told`` is the fifth round's frozen ``h-win-draw`` with the floor fix alone.
Two more were committed first, ``h-wmed-long`` (``"hedge_top_window":5000``) and
``h-win3-told`` (``"hedge_top":"learners-median20"``, a third learner), and dropped before any
of their rows existed: the two replays ran at a fifth of a core each on the shared machine,
too slow for the session's deadline with five variants.) Frozen by the rule on the tuning
cells alone: ``h-win-told``, the only one of the three to pass all four cells (worst-cell
margin +0.000; ``h-wmed-lead`` misses coverage in both first windows, ``h-wmed-acct`` trails
Cedar's first by 0.008).

Seventh round (cold answers' calibration and the leader's hysteresis). Stage 1
(scripts/tune_cold_calibration.py, its rule committed in 88f2334 before its run) kept no
calibration variant: a faster ACI for cold strata helped Cedar's tuning cells and hurt
Graham's first window (8.0-9.7 points against the back-off's 6.6), so CAL is the default's
calibration and the three variants committed with it above collapse: ``h-wmed-cal`` is the
sixth round's ``h-wmed-lead`` and ``h-win-cal`` its ``h-win-told``, both with the same code path
(the new settings off) on the same data, deterministic, so their tuning cells are the sixth
round's (learn.md) and are not replayed again (the machine is shared). Fixed and committed
before the stage 2 run, the fourth round's rule unchanged over ``h-wmed-lead``, ``h-win-told``
(their sixth-round cells) and two hysteresis variants, in one full replay per cluster with the
tuning windows as ``--extra-window``, this script reading only the "extra" block::

    --add 'h-wmed-m5=hedge:{"hedge_top":"learners","hedge_top_combine":"leader","hedge_top_loss":"window","hedge_top_eta":1,"hedge_top_told":true,"hedge_top_margin":0.005}'
    --add 'h-wmed-m10=hedge:{"hedge_top":"learners","hedge_top_combine":"leader","hedge_top_loss":"window","hedge_top_eta":1,"hedge_top_told":true,"hedge_top_margin":0.01}'

(the sixth round's ``h-wmed-lead`` switching only once the other learner's running median error
over 1,000 waits is 0.005 / 0.01 lower, so the told answers, and the residuals behind the
quantiles, do not flip with every lead: the sixth round's leader had the largest median-error
margins and failed the first windows' coverage). Chosen on a tie: ``h-win-told``, already judged.

``--rolling LABEL`` (after the freeze): LABEL's targets in each rolling window ("scored"),
the issue's three legs as ``asad bench predictors --rolling`` counts them.
"""

from __future__ import annotations

import json
import sys

REFERENCE = "median-backoff"
RUNNING = ("median-k", "median-all")
GAP = 0.05


def cells(files: dict[str, str]) -> dict[tuple[str, str], dict]:
    out = {}
    for cluster, path in files.items():
        with open(path) as handle:
            data = json.load(handle)
        # a replay to 2021-06-10 scores its 3-week windows under "scored"; a full replay scores the
        # tuning windows apart, under "extra" (--extra-window), and only those are read here
        for block in (data["extra"] or data["scored"])[cluster]:
            out[(cluster, f"{block['start']}..{block['end']}")] = block["rows"]
    return out


def passes(rows: dict, label: str) -> tuple[bool, float]:
    """(meets the three targets in this cell, margin of median error over the reference)."""
    me, ref = rows[label], rows[REFERENCE]
    best_x3 = max(rows[lb]["within_x3"] for lb in RUNNING if lb in rows)
    margin = ref["median_abs_log10"] - me["median_abs_log10"]
    gap_allowed = max(GAP, ref["worst_gap"] if ref["worst_gap"] is not None else GAP)
    ok = margin >= 0 and me["within_x3"] >= best_x3 and me["worst_gap"] is not None and me["worst_gap"] <= gap_allowed
    return ok, margin


def rolling(files: dict[str, str], label: str) -> int:
    """The frozen LABEL's per-window targets on the rolling windows (read after the freeze)."""
    for cluster, path in files.items():
        with open(path) as handle:
            blocks = json.load(handle)["scored"][cluster]
        met = [0, 0, 0]
        print(f"\n[{cluster}] {label}: median error vs {REFERENCE} / x3 vs best running median / worst gap")
        for block in blocks:
            rows = block["rows"]
            me, ref = rows[label], rows[REFERENCE]
            best_x3 = max(rows[lb]["within_x3"] for lb in RUNNING if lb in rows)
            legs = (me["median_abs_log10"] <= ref["median_abs_log10"], me["within_x3"] >= best_x3,
                    me["worst_gap"] is not None and me["worst_gap"] <= GAP)
            met = [m + int(leg) for m, leg in zip(met, legs)]
            gap = "-" if me["worst_gap"] is None else f"{100 * me['worst_gap']:.1f}"
            ref_gap = "-" if ref["worst_gap"] is None else f"{100 * ref['worst_gap']:.1f}"
            print(f"  {block['start']}..{block['end']}  {me['median_abs_log10']:.3f} vs {ref['median_abs_log10']:.3f}"
                  f"  {100 * me['within_x3']:.1f} / {100 * best_x3:.1f}  {gap} ({ref_gap})  "
                  + " ".join("met" if leg else "NOT" for leg in legs))
        n = len(blocks)
        print(f"  windows met: {met[0]} / {met[1]} / {met[2]} of {n}"
              f" ({'holds' if n and min(met) / n >= 0.75 else 'does NOT hold'} at 75 %)")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--rolling"]:
        return rolling(dict(arg.split(":", 1) for arg in argv[2:]), argv[1])
    files = dict(arg.split(":", 1) for arg in argv)
    table = cells(files)
    variants = sorted({lb for rows in table.values() for lb in rows if lb.startswith("h-")})
    print("cell: median |log10 error| / within x3 (warm) / worst coverage gap in points")
    for cell, rows in sorted(table.items()):
        best_x3 = max(rows[lb]["within_x3"] for lb in RUNNING if lb in rows)
        print(f"\n[{cell[0]} {cell[1]}] best running median x3 {100 * best_x3:.1f}")
        for lb in [REFERENCE, *RUNNING, *variants]:
            r = rows[lb]
            gap = "" if r["worst_gap"] is None else f" {100 * r['worst_gap']:.1f}"
            flag = ""
            if lb.startswith("h-"):
                ok, margin = passes(rows, lb)
                flag = f"  margin {margin:+.3f} {'pass' if ok else 'FAIL'}"
            print(f"  {lb:<14} {r['median_abs_log10']:.3f} {100 * r['within_x3']:5.1f}{gap}{flag}")
    summary = {}
    for lb in variants:
        results = [passes(rows, lb) for rows in table.values()]
        summary[lb] = (all(ok for ok, _ in results), min(m for _, m in results))
    kept = [lb for lb, (ok, _) in summary.items() if ok]
    pool = kept or variants
    chosen = max(pool, key=lambda lb: summary[lb][1])
    print("\nvariant: passes all cells / worst-cell margin")
    for lb, (ok, margin) in sorted(summary.items(), key=lambda item: -item[1][1]):
        print(f"  {lb:<14} {'yes' if ok else 'no ':<4} {margin:+.3f}")
    print(f"\nchosen: {chosen} ({'meets the rule' if kept else 'NO variant meets the rule; median-backoff stays'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
