"""Issue 38, tenth round: the top level's weights kept per account (``hedge_top_groups:
account``) with the adaptive cold ACI step, chosen on the tuning windows (before 2021-06-10) by
the ninth round's rule, unchanged, written down and committed before any run.

Why per account (docs/results/learn.md, "Hindsight: what the learners' classes could reach on
Graham"): every candidate so far kept its top-level weights per cluster, and for that class the
hindsight optimum on Graham's judged windows is the back-off itself (a bound against fixed
comparators). Per account there is no such bound, and a per-account choice between the back-off
and the panel made on the 4 weeks before each judged window is no worse than the back-off in all
three Graham windows (+0.0000 / +0.0044 / +0.0039). **That direction was found by an analysis
of the judged windows**, so a judged read of a candidate chosen here is a validation more than a
test. The sixth round's per-account leader ``h-wmed-acct`` (no hysteresis, no cold step) failed
Cedar's first window's median error (-0.008) and Graham's first window's coverage (7.3); the
adaptive cold step has since fixed first-window coverage for the per-cluster leaders.

Candidates (written down before any run; the ninth round's two top levels, per account, each
with the cold step it passed the tuning cells with per cluster)::

    h-win-told-acct-a20        h-win-told (draw, loss win, told, eta 1) + hedge_top_groups account
                               + b-adapt20-h50's step (aci_cold_adapt_max 0.02, halflife 50)
    h-wmed-m5-acct-a20h200     h-wmed-m5 (leader, loss window, told, eta 1, margin 0.005)
                               + hedge_top_groups account + a20h200's step (max 0.02, halflife 200)

What a new account starts from (asad/learn/hedge.py, read before the run): an account's top
weights are created on its first wait from the prior (``hedge_prior`` 0: uniform over the
learners), not from its cluster's top weights; until its first wait is judged, a ``draw`` top
level has not drawn for it and follows the heaviest learner with ties to the back-off, and the
leader with hysteresis follows the back-off (``_kept`` defaults to learner 0) until the panel's
running median error over the account's own last waits (``hedge_top_window`` 1,000) beats the
back-off's by the margin. So an unseen account is told the back-off's answer, as the
hindsight's month-ahead choice gave an account unseen in the month before. A key without an
account keeps its cluster's top group.

Reference rows, not candidates: ``median-backoff`` (the default, whose median error and worst
gap each cell's legs are measured against) and ``median-k`` and ``median-all`` (the running
medians, whose best x3 the x3 leg asks for).

Tuning replay, one per cluster to 2021-06-10 (nothing later exists in it), nice 5, both clusters
in parallel::

    nice -n 5 asad bench predictors --cluster graham --until 2021-06-10 --rolling 3w --rolling-from 2021-04-29 \\
        --extra-window 2021-04-29..2021-05-20 --extra-window 2021-05-20..2021-06-10 --json \\
        --judge median-backoff --predictors median-backoff,median-k,median-all \\
        $(python scripts/tune_hedge_account.py --adds) > R11-graham.json
    python scripts/tune_hedge_account.py graham:R11-graham.json cedar:R11-cedar.json

The rule (the ninth round's, unchanged). A *cell* is one cluster x one tuning window (04-29 ..
05-20, 05-20 .. 06-10; Cedar and Graham: 4 cells). A candidate passes a cell when, in that
replay, its median |log10 error| on the warm jobs is no worse than ``median-backoff``'s; its
share within x3 on the warm jobs is no worse than the best running median's; and its worst
quantile-coverage gap (every job answered, q 0.1 .. 0.9) is within 5 points OR no worse than
``median-backoff``'s own worst gap in that cell. Kept: passes all 4 cells. Chosen: among the
kept, the largest summed median-error margin over Graham's two cells; ties: the smaller worst
gap over the 4 cells (the key the ninth round meant and did not write), then the label.

None kept: no change, the judged windows are not read. One chosen: it is judged ONCE on the
rolling windows, by a full replay per cluster of ``median-backoff``, the running medians and it
alone (``--judge LABEL``), read with ``--rolling LABEL``: only its rows and the reference rows.
Whatever it meets, the default (``RECOMMENDED``) is not changed in this round.

Result of the tuning run (docs/results/learn.md, "Issue 38, tenth round"): kept and chosen
``h-win-told-acct-a20`` (summed Graham margin +0.002; Graham's second window by an exact tie,
Cedar's first by +0.0003); ``h-wmed-m5-acct-a20h200`` fails Cedar's first window's median error
(-0.0055).
"""

from __future__ import annotations

import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from tune_hedge import REFERENCE, RUNNING, cells, passes, rolling  # noqa: E402
from tune_hedge_cold import WIN_TOLD, WMED_M5  # noqa: E402

ACCOUNT = {"hedge_top_groups": "account"}
CANDIDATES = {
    "h-win-told-acct-a20": {**WIN_TOLD, **ACCOUNT, "aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 50},
    "h-wmed-m5-acct-a20h200": {**WMED_M5, **ACCOUNT, "aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 200},
}


def adds(labels: list[str] | None = None, candidates: dict[str, dict] | None = None) -> list[str]:
    """The ``--add`` arguments of the replay (all candidates, or the named ones); ``candidates``:
    this round's (default), or a later round's."""
    candidates = CANDIDATES if candidates is None else candidates
    out = [f"{lb}=hedge:{json.dumps(candidates[lb], separators=(',', ':'))}" for lb in (labels or candidates)]
    return [arg for add in out for arg in ("--add", add)]


def choose(table: dict[tuple[str, str], dict], candidates: dict[str, dict] | None = None,
           script: str = "tune_hedge_account.py") -> str | None:
    """Print every cell and the rule's verdict; return the chosen candidate (None: none kept).
    ``candidates``: this round's (default), or a later round's under the same rule."""
    candidates = CANDIDATES if candidates is None else candidates
    print("cell: median |log10 error| / within x3 (warm) / worst coverage gap in points")
    for cell, rows in sorted(table.items()):
        best_x3 = max(rows[lb]["within_x3"] for lb in RUNNING if lb in rows)
        allowed = max(5.0, 100 * rows[REFERENCE]["worst_gap"])
        print(f"\n[{cell[0]} {cell[1]}] best running median x3 {100 * best_x3:.1f}; gap allowed {allowed:.1f}")
        for lb in [REFERENCE, *RUNNING, *candidates]:
            r = rows[lb]
            gap = "" if r["worst_gap"] is None else f" {100 * r['worst_gap']:4.1f}"
            ok, margin = passes(rows, lb)
            flag = f"  margin {margin:+.4f} {'pass' if ok else 'FAIL'}" + ("" if lb in candidates else " (reference)")
            print(f"  {lb:<24} {r['median_abs_log10']:.3f} {100 * r['within_x3']:5.1f}{gap}"
                  + (flag if lb != REFERENCE else ""))
    summary = {}
    for lb in candidates:
        results = {cell: passes(rows, lb) for cell, rows in table.items()}
        gaps = [rows[lb]["worst_gap"] for rows in table.values()]
        summary[lb] = (all(ok for ok, _ in results.values()),
                       sum(m for (c, _), (_, m) in results.items() if c == "graham"),
                       sum(m for (c, _), (_, m) in results.items() if c == "cedar"),
                       max(g if g is not None else 1.0 for g in gaps))
    print("\nlabel: passes all 4 cells / summed margin Graham / summed margin Cedar / worst-cell gap")
    for lb, (ok, graham, cedar, worst) in summary.items():
        print(f"  {lb:<24} {'yes' if ok else 'no ':<4} {graham:+.4f} {cedar:+.4f} {100 * worst:.1f}")
    kept = [lb for lb in candidates if summary[lb][0]]
    if not kept:
        print("\nchosen: none kept: no change, the judged windows are not read")
        return None
    chosen = min(kept, key=lambda lb: (-summary[lb][1], summary[lb][3], lb))
    print(f"\nchosen: {chosen} {json.dumps(candidates[chosen])}")
    print(f"  judge it once: a full replay with --judge {chosen} $(python scripts/{script}"
          f" --adds {chosen}), read with --rolling {chosen}")
    return chosen


def cli(argv: list[str], candidates: dict[str, dict], script: str) -> int:
    """A tuning round's command line (this round's and later rounds' under the same rule):
    ``CLUSTER:FILE ...`` (the tuning cells and the rule's verdict), ``--adds [LABEL ...]`` (the
    replay's arguments) or ``--rolling LABEL CLUSTER:FILE ...`` (the judged read)."""
    if argv[:1] == ["--adds"]:
        unknown = [lb for lb in argv[1:] if lb not in candidates]
        if unknown:
            print(f"--adds: not a candidate of this round: {', '.join(unknown)}", file=sys.stderr)
            return 2
        print(" ".join(adds(argv[1:], candidates)))  # no spaces in the JSON: safe to split as $(...)
        return 0
    if argv[:1] == ["--rolling"]:
        if len(argv) < 3 or argv[1] not in candidates:
            print("--rolling LABEL CLUSTER:FILE ...: LABEL must be a candidate of this round", file=sys.stderr)
            return 2
        return rolling(dict(arg.split(":", 1) for arg in argv[2:]), argv[1])
    if not argv or any(":" not in arg for arg in argv):
        print(f"usage: {script} CLUSTER:FILE ... | --adds [LABEL ...] | --rolling LABEL CLUSTER:FILE ...",
              file=sys.stderr)
        return 2
    choose(cells(dict(arg.split(":", 1) for arg in argv)), candidates, script)
    return 0


def main(argv: list[str]) -> int:
    return cli(argv, CANDIDATES, "tune_hedge_account.py")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
