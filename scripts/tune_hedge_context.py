"""Issue 38, twelfth round: top levels whose weights are kept per context known when a job is
told (``hedge_top_groups: disagreement``: the bucket of |back-off - mixture| and its sign,
asad/learn/hedge_context.py), chosen on the tuning windows (before 2021-06-10) by the ninth
round's rule, unchanged, written down and committed before any run.

Why (scripts/hedge_contexts.py, tuning windows only; docs/results/learn.md, twelfth round): of
ten contexts, a fixed choice between the back-off and the panel's mixture per bucket, fitted on
04-29 .. 05-20 and applied to 05-20 .. 06-10 ("ahead"), beat the back-off by >= 0.003 on both
clusters for ``disagree x sign`` (Graham +0.0061, Cedar +0.0066), ``floor share`` (+0.0065,
+0.0182) and ``sign`` (+0.0030, +0.0143). ``floor share`` is not built: the pending floor is
applied after the learner's answer, which is cached per key, and the wait's feedback does not
carry the floor it was told under; building it would change how every answer is made (left for
the lead). ``sign`` alone is a coarsening of ``disagree x sign``. On the judged windows the
per-cluster fixed choice is the back-off (the ninth round's hindsight): a context is useful only
if it discriminates; ahead, ``disagree x sign`` beats the per-cluster choice on Graham (+0.0035)
and trails it on Cedar (-0.0077), as scripts/hedge_contexts.py printed before this run.

Candidates (written down before any run). Both: ``hedge_top: learners``, ``leader``,
``hedge_top_told``, ``hedge_top_eta`` 1, ``hedge_top_groups: disagreement``, the cold ACI step
max 0.02, halflife 200 (``a20h200``, as the ninth round's leader passed with)::

    h-ds-wmed-m5      the ninth round's leader h-wmed-m5-a20h200 (loss "window": each learner's
                      median |error| over the group's last 1,000 waits; margin 0.005), per context
    h-ds-miss-cum     the learner form of the "ahead" choice: per context, the learner with fewer
                      errors past tau (loss "over", tau the back-off's running median error over
                      the cluster's last 1,000 waits, hedge_top_tau_scope cluster) over every
                      judged wait of the context (hedge_top_memory_s 0); min 50 judged waits;
                      margin 0.01

Reference rows, not candidates: ``median-backoff``, ``median-k``, ``median-all``.

Tuning replay, one per cluster to 2021-06-10 (nothing later exists in it), nice 5, both clusters
in parallel::

    nice -n 5 asad bench predictors --cluster graham --until 2021-06-10 --rolling 3w --rolling-from 2021-04-29 \\
        --extra-window 2021-04-29..2021-05-20 --extra-window 2021-05-20..2021-06-10 --json \\
        --judge median-backoff --predictors median-backoff,median-k,median-all \\
        $(python scripts/tune_hedge_context.py --adds) > R15-graham.json
    python scripts/tune_hedge_context.py graham:R15-graham.json cedar:R15-cedar.json

The rule (the ninth round's, unchanged). A *cell* is one cluster x one tuning window (04-29 ..
05-20, 05-20 .. 06-10; Cedar and Graham: 4 cells). A candidate passes a cell when, in that
replay, its median |log10 error| on the warm jobs is no worse than ``median-backoff``'s; its
share within x3 on the warm jobs is no worse than the best running median's; and its worst
quantile-coverage gap (every job answered, q 0.1 .. 0.9) is within 5 points OR no worse than
``median-backoff``'s own worst gap in that cell. Kept: passes all 4 cells. Chosen: among the
kept, the largest summed median-error margin over Graham's two cells; ties: the smaller worst
gap over the 4 cells, then the label.

Result of the first run (docs/results/learn.md, twelfth round): **none kept**. Both beat the
back-off's median error in all four cells (h-ds-wmed-m5 Graham +0.0329 / +0.0052, Cedar +0.0111 /
+0.0176; h-ds-miss-cum +0.0272 / +0.0026, +0.0143 / +0.0100) and the best running median's x3,
but miss Cedar's coverage: h-ds-wmed-m5 7.8 (allowed 7.7) and 5.5 (allowed 5.0), h-ds-miss-cum
5.8 in the second window (allowed 5.0). The judged windows were not read.

Second list (``--second``), written down and committed after the first run's result and before
its own run, under the same rule: the top level that passed the ninth round's tuning cells with
its coverage, the draw ``h-win-told-a20`` (loss "win": 1 for the learner farther from the wait,
told, eta 1, a seeded draw from the weights; hedge_share's fixed share; the cold step max 0.02,
halflife 50), with its weights per context::

    h-ds-win-told-a20 the ninth round's h-win-told-a20, hedge_top_groups: disagreement

Result of the second run: **none kept**: h-ds-win-told-a20 fails Graham's second window's
median error (-0.0052; Graham +0.0271 / -0.0052, Cedar +0.0086 / +0.0106, worst gap 5.4 within
the allowance). The judged windows were not read in this round.

None kept: no change, the judged windows are not read. One chosen: it is judged ONCE on the
rolling windows (the eleventh read of those windows), by a full replay per cluster of
``median-backoff``, the running medians and it alone (``--judge LABEL``), read with
``--rolling LABEL``: only its rows and the reference rows. The default (``RECOMMENDED``) is
not changed in this round unless it meets every target on both clusters' judged windows.
"""

from __future__ import annotations

import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from tune_hedge_account import adds as account_adds  # noqa: E402
from tune_hedge_account import cli  # noqa: E402

BASE = {"hedge_top": "learners", "hedge_top_combine": "leader", "hedge_top_told": True, "hedge_top_eta": 1,
        "hedge_top_groups": "disagreement", "aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 200}
CANDIDATES = {
    "h-ds-wmed-m5": {**BASE, "hedge_top_loss": "window", "hedge_top_margin": 0.005},
    "h-ds-miss-cum": {**BASE, "hedge_top_loss": "over", "hedge_top_tau_scope": "cluster", "hedge_top_memory_s": 0,
                      "hedge_top_min_n": 50, "hedge_top_margin": 0.01},
}


SECOND = {
    "h-ds-win-told-a20": {"hedge_top": "learners", "hedge_top_combine": "draw", "hedge_top_loss": "win",
                          "hedge_top_told": True, "hedge_top_eta": 1, "hedge_top_groups": "disagreement",
                          "aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 50},
}


def adds(labels: list[str] | None = None) -> list[str]:
    """The ``--add`` arguments of the replay (all candidates, or the named ones)."""
    return account_adds(labels, CANDIDATES)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--second"]:  # the second list, under the same rule
        return cli(argv[1:], SECOND, "tune_hedge_context.py --second")
    return cli(argv, CANDIDATES, "tune_hedge_context.py")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
