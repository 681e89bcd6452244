"""Issue 38, eleventh round: per-account top levels that choose like the month-ahead choice, by
each account's error over a long memory (``hedge_top_memory_s``, asad/learn/hedge_memory.py),
chosen on the tuning windows (before 2021-06-10) by the ninth round's rule, unchanged, written
down and committed before any run.

Why (docs/results/learn.md, ninth round's "Hindsight" and tenth round): a per-account choice
between the back-off and the panel's mixture, made on each account's 4 weeks of waits before a
judged window (an account unseen there takes the back-off), was no worse than the back-off in all
three Graham windows (+0.0000 / +0.0044 / +0.0039), following the panel on 12-21 % of the warm
jobs. **That direction was found by an analysis of the judged windows**, so a judged read of a
candidate chosen here is a validation more than a test. The tenth round's per-account draw
(loss ``win``, charged wait by wait to the farther learner) followed the panel on ~55 % and
trailed; its per-account leader (median error over the account's last 1,000 waits, margin 0.005,
no minimum count) failed Cedar's first tuning cell (-0.0055).

What the month-ahead choice computes (scripts/hedge_hindsight.py ``carried`` and
``best_per_stratum``): per account, the learner with *more of its errors at or below a threshold
t*, the least t at which the accounts' best counts reach half the jobs (about the cluster's
median error), over the account's waits of the 4 weeks before; ties to the back-off. The
candidates make that choice continuously, per account, in ASA's spirit: each judged wait
multiplies each learner's weight by ``exp(-eta * loss)`` and a wait leaving the memory gives its
factor back (weights ``exp(-eta * n * mean loss)``), and the leader is the heavier one, with a
minimum count of judged waits before an account may leave the back-off and a margin on the mean
loss (hysteresis). An account seen for the first time follows the back-off (``follow``: fewer
than ``hedge_top_min_n`` judged waits in its memory).

Candidates (written down before any run). Every one: ``hedge_top: learners``, ``leader``,
``hedge_top_told``, ``hedge_top_eta`` 1 (with a leader over the memory eta does not change whom
it follows, only the weights ``asad explain`` shows), ``hedge_top_groups: account``, and the
cold ACI step the ninth round passed the tuning cells with under the leader (max 0.02, halflife
200, ``a20h200``)::

    h-miss28-acct     loss "over" (1 when |error| > tau), tau = the back-off's running median
                      error over the cluster's last 1,000 waits (hedge_top_tau_scope cluster):
                      the month-ahead choice's count below t*, over the account's waits of the
                      last 28 days; min 50 judged waits; margin 0.01 (1 point of its waits)
    h-miss-cum-acct   the same, cumulative (every judged wait of the account, no forgetting)
    h-clip30-acct     loss "clip": min(|error|, 0.3) / 0.3 (0.3 near Cedar's and Graham's
                      typical median error on the tuning weeks, 0.21-0.33), cumulative; min 100;
                      margin 0.01 (of the normalised loss: 0.003 decades of mean clipped error)
    h-wmed28-acct     loss "window": each learner's median |error| over the account's waits of
                      the last 28 days (the score itself, per account); min 100; margin 0.005
                      (the seventh round's hysteresis)

Reference rows, not candidates: ``median-backoff`` (the default, whose median error and worst
gap each cell's legs are measured against) and ``median-k`` and ``median-all`` (the running
medians, whose best x3 the x3 leg asks for).

Tuning replay, one per cluster to 2021-06-10 (nothing later exists in it), nice 5, both clusters
in parallel::

    nice -n 5 asad bench predictors --cluster graham --until 2021-06-10 --rolling 3w --rolling-from 2021-04-29 \\
        --extra-window 2021-04-29..2021-05-20 --extra-window 2021-05-20..2021-06-10 --json \\
        --judge median-backoff --predictors median-backoff,median-k,median-all \\
        $(python scripts/tune_hedge_memory.py --adds) > R13-graham.json
    python scripts/tune_hedge_memory.py graham:R13-graham.json cedar:R13-cedar.json

and, for how often each follows the panel on the tuning cells (a measurement, not part of the
rule): ``python scripts/hedge_hindsight.py --tuning CLUSTER LABEL ...``.

The rule (the ninth round's, unchanged). A *cell* is one cluster x one tuning window (04-29 ..
05-20, 05-20 .. 06-10; Cedar and Graham: 4 cells). A candidate passes a cell when, in that
replay, its median |log10 error| on the warm jobs is no worse than ``median-backoff``'s; its
share within x3 on the warm jobs is no worse than the best running median's; and its worst
quantile-coverage gap (every job answered, q 0.1 .. 0.9) is within 5 points OR no worse than
``median-backoff``'s own worst gap in that cell. Kept: passes all 4 cells. Chosen: among the
kept, the largest summed median-error margin over Graham's two cells; ties: the smaller worst
gap over the 4 cells, then the label.

None kept: no change, the judged windows are not read. One chosen: it is judged ONCE on the
rolling windows (the tenth read of those windows), by a full replay per cluster of
``median-backoff``, the running medians and it alone (``--judge LABEL``), read with
``--rolling LABEL``: only its rows and the reference rows. Whatever it meets, the default
(``RECOMMENDED``) is not changed in this round; if it meets every target on both clusters the
change is prepared (named and listed), not made.

Result of the tuning run (docs/results/learn.md, "Issue 38, eleventh round"): kept and chosen
``h-clip30-acct``, the only candidate to pass all four cells (summed Graham margin +0.0038,
Cedar +0.0261; Graham's second window by +0.0010). ``h-miss28-acct`` and ``h-miss-cum-acct``
(equal to every digit in all four cells) fail Cedar's first window (-0.0012) and Graham's second
(-0.0030); ``h-wmed28-acct`` fails Graham's second (-0.0047).
"""

from __future__ import annotations

import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from tune_hedge_account import adds as account_adds  # noqa: E402
from tune_hedge_account import cli  # noqa: E402

DAYS_28 = 28 * 86400.0
BASE = {"hedge_top": "learners", "hedge_top_combine": "leader", "hedge_top_told": True, "hedge_top_eta": 1,
        "hedge_top_groups": "account", "aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 200}
MISS = {**BASE, "hedge_top_loss": "over", "hedge_top_tau_scope": "cluster", "hedge_top_min_n": 50,
        "hedge_top_margin": 0.01}
CANDIDATES = {
    "h-miss28-acct": {**MISS, "hedge_top_memory_s": DAYS_28},
    "h-miss-cum-acct": {**MISS, "hedge_top_memory_s": 0},
    "h-clip30-acct": {**BASE, "hedge_top_loss": "clip", "hedge_top_tau": 0.3, "hedge_top_memory_s": 0,
                      "hedge_top_min_n": 100, "hedge_top_margin": 0.01},
    "h-wmed28-acct": {**BASE, "hedge_top_loss": "window", "hedge_top_memory_s": DAYS_28, "hedge_top_min_n": 100,
                      "hedge_top_margin": 0.005},
}


def adds(labels: list[str] | None = None) -> list[str]:
    """The ``--add`` arguments of the replay (all candidates, or the named ones)."""
    return account_adds(labels, CANDIDATES)


def main(argv: list[str]) -> int:
    return cli(argv, CANDIDATES, "tune_hedge_memory.py")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
