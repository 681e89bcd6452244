"""Issue 38, thirteenth round: top levels whose weights are kept per bucket of the pending floor's
share of the back-off's answer as the job was told (``hedge_top_groups: floor``,
asad/learn/hedge_context.py: the bucket recorded when a job is told and carried back with its
wait), chosen on the tuning windows (before 2021-06-10) by the ninth round's rule, unchanged,
written down and committed before any run.

Why (scripts/hedge_contexts.py, tuning windows only; docs/results/learn.md, twelfth round): of
ten contexts known when a job is told, only the floor's share added to the per-cluster choice
carried from 04-29 .. 05-20 to 05-20 .. 06-10 on both clusters (+0.0039 / +0.0039; Graham's
day interval +0.000 .. +0.012, Cedar's -0.003 .. +0.010); the twelfth round could not build it
because the floor is applied after the learner's answer and the wait's feedback did not carry
the floor it was told under. It is built now (the pool's ``told`` answers with the top weights of
the job's floor-share bucket; the bucket rides with what the job was told to the wait).

Candidates (written down before any run): the three top levels the twelfth round ran per
disagreement context, now per floor share. All: ``hedge_top: learners``, ``hedge_top_told``,
``hedge_top_eta`` 1, ``hedge_top_groups: floor``::

    h-fl-wmed-m5       the ninth round's leader h-wmed-m5-a20h200 (loss "window": each learner's
                       median |error| over the group's last 1,000 waits; margin 0.005; the cold
                       step max 0.02, halflife 200), per floor share
    h-fl-miss-cum      the learner form of the analysis's "ahead" choice: per floor share, the
                       learner with fewer errors past tau (loss "over", tau the back-off's running
                       median error over the cluster's last 1,000 waits, hedge_top_tau_scope
                       cluster) over every judged wait of the bucket (hedge_top_memory_s 0); min
                       50 judged waits; margin 0.01; the cold step max 0.02, halflife 200
    h-fl-win-told-a20  the ninth round's draw h-win-told-a20 (loss "win", a seeded draw from the
                       weights, the cold step max 0.02, halflife 50), per floor share

Reference rows, not candidates: ``median-backoff``, ``median-k``, ``median-all``.

Tuning replay, one per cluster to 2021-06-10 (nothing later exists in it), nice 5, both clusters
in parallel::

    nice -n 5 asad bench predictors --cluster graham --until 2021-06-10 --rolling 3w --rolling-from 2021-04-29 \\
        --extra-window 2021-04-29..2021-05-20 --extra-window 2021-05-20..2021-06-10 --json \\
        --judge median-backoff --predictors median-backoff,median-k,median-all \\
        $(python scripts/tune_hedge_floor.py --adds) > R16-graham.json
    python scripts/tune_hedge_floor.py graham:R16-graham.json cedar:R16-cedar.json

The rule (the ninth round's, unchanged). A *cell* is one cluster x one tuning window (04-29 ..
05-20, 05-20 .. 06-10; Cedar and Graham: 4 cells). A candidate passes a cell when, in that
replay, its median |log10 error| on the warm jobs is no worse than ``median-backoff``'s; its
share within x3 on the warm jobs is no worse than the best running median's; and its worst
quantile-coverage gap (every job answered, q 0.1 .. 0.9) is within 5 points OR no worse than
``median-backoff``'s own worst gap in that cell. Kept: passes all 4 cells. Chosen: among the
kept, the largest summed median-error margin over Graham's two cells; ties: the smaller worst
gap over the 4 cells, then the label.

Result of the tuning run (docs/results/learn.md, thirteenth round), before the judged read:
**kept and chosen h-fl-win-told-a20** (Graham +0.0274 / +0.0007, Cedar +0.0115 / +0.0174, worst
gap 4.8). h-fl-wmed-m5 fails Cedar's second window's coverage (5.3, allowed 5.0); h-fl-miss-cum
fails Cedar's second window's coverage (5.04, allowed 5.0) and Graham's second
window's median error (-0.0004).

None kept: no change, the judged windows are not read. One chosen: it is judged ONCE on the
rolling windows (the eleventh read of those windows), by a full replay per cluster of
``median-backoff``, the running medians and it alone (``--judge LABEL``), read with
``--rolling LABEL``: only its rows and the reference rows. The default (``RECOMMENDED``) changes
only if it meets every target on both clusters' judged windows (median error no worse than the
back-off's and x3 no worse than the best running median's in >= 75 % of windows, every
quantile's coverage within +-5 points).
"""

from __future__ import annotations

import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from tune_hedge_account import adds as account_adds  # noqa: E402
from tune_hedge_account import cli  # noqa: E402

BASE = {"hedge_top": "learners", "hedge_top_told": True, "hedge_top_eta": 1, "hedge_top_groups": "floor"}
CANDIDATES = {
    "h-fl-wmed-m5": {**BASE, "hedge_top_combine": "leader", "hedge_top_loss": "window", "hedge_top_margin": 0.005,
                     "aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 200},
    "h-fl-miss-cum": {**BASE, "hedge_top_combine": "leader", "hedge_top_loss": "over", "hedge_top_tau_scope": "cluster",
                      "hedge_top_memory_s": 0, "hedge_top_min_n": 50, "hedge_top_margin": 0.01,
                      "aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 200},
    "h-fl-win-told-a20": {**BASE, "hedge_top_combine": "draw", "hedge_top_loss": "win",
                          "aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 50},
}


def adds(labels: list[str] | None = None) -> list[str]:
    """The ``--add`` arguments of the replay (all candidates, or the named ones)."""
    return account_adds(labels, CANDIDATES)


def main(argv: list[str]) -> int:
    return cli(argv, CANDIDATES, "tune_hedge_floor.py")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
