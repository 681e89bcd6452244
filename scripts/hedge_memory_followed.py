"""Issue 38, eleventh round: why the per-account memory leaders follow the panel far more often
than the hindsight's month-ahead choice (a diagnosis on a tuning window, not a tuning round).

Replays one cluster to 2021-06-10 with one eleventh-round candidate (scripts/tune_hedge_memory.py)
and, for the second tuning window (05-20 .. 06-10), compares on its warm jobs the share that
followed the panel and the median error of: the candidate as run; and a choice per account fixed
at the window's start from the account's jobs told before it, by the candidate's own loss
(``clip`` at 0.3: the smaller mean clipped error, ties to the back-off) and by the month-ahead
choice's (the most errors at or below the threshold that reaches half the jobs), each fitted on
(a) the warm jobs before the window, as the hindsight's month-ahead choice, and (b) every job
told before it, warm or cold, as the candidate's memory holds them; and each of those restricted to the jobs that had started before
the window (the waits a learner could know then: the hindsight's fit also reads the waits of jobs
eligible before the window that were still pending at its start, the longest)::

    python scripts/hedge_memory_followed.py graham h-clip30-acct
"""

from __future__ import annotations

import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from hedge_hindsight import Told, carried, errors, recording  # noqa: E402
from tune_hedge_memory import CANDIDATES  # noqa: E402

from asad.bench import predictors as bench  # noqa: E402
from asad.bench import rolling  # noqa: E402

WINDOW = "2021-05-20..2021-06-10"


def clip_choice(fit_b: np.ndarray, fit_p: np.ndarray, fit_accounts: np.ndarray, accounts: np.ndarray,
                tau: float) -> np.ndarray:
    """1 where the account's mean clipped error of the panel is below the back-off's (fitted on
    the fit jobs; an account unseen there takes the back-off)."""
    picks = {}
    for account in set(fit_accounts.tolist()):
        rows = fit_accounts == account
        b = np.mean(np.minimum(fit_b[rows], tau))
        p = np.mean(np.minimum(fit_p[rows], tau))
        picks[account] = int(p < b)
    return np.array([picks.get(a, 0) for a in accounts.tolist()])


def main(argv: list[str]) -> int:
    cluster = argv[0] if argv else "graham"
    label = argv[1] if len(argv) > 1 else "h-clip30-acct"
    if label not in CANDIDATES:
        print(f"hedge_memory_followed: {label} is not an eleventh-round candidate ({', '.join(CANDIDATES)})",
              file=sys.stderr)
        return 2
    lo, hi = rolling.parse_window(WINDOW)
    jobs = bench.load_jobs(bench.DEFAULT_DATA, cluster, None, WINDOW.split("..")[1],
                           key_config=bench.KEY_CONFIGS["account"])
    t0 = time.process_time()
    with recording() as logs:
        replayed = bench.replay(jobs, [(label, "hedge", CANDIDATES[label])], seed=0)
    log: dict[int, Told] = logs[0][0]
    print(f"[{cluster}] {label}: {len(jobs)} jobs replayed in {time.process_time() - t0:.0f} CPU s")
    warm = replayed["warm"]
    y = np.log10(1.0 + jobs.wait_s)
    idx = [j for j in np.nonzero(warm & (jobs.eligible_s >= lo) & (jobs.eligible_s < hi))[0] if j in log]
    e_b, e_p, _ = errors(y[idx], [log[j] for j in idx])
    accounts = np.array([log[j].strata[-1] for j in idx])
    followed = np.array([log[j].followed for j in idx])
    base = float(np.median(e_b))
    print(f"{WINDOW}: {len(idx)} warm jobs; back-off {base:.4f}")
    as_run = float(np.median(np.where(followed == 1, e_p, e_b)))
    print(f"  as run: {as_run:.4f} ({base - as_run:+.4f}), the panel on {100 * followed.mean():.1f} %")
    tau = float(CANDIDATES[label].get("hedge_top_tau") or 0.3)
    known = jobs.start_s < lo  # the waits known at the window's start (started before it)
    for name, fit_mask in (("warm jobs before", warm), ("every job told before", np.ones(len(jobs), dtype=bool)),
                           ("warm jobs before, started before it", warm & known),
                           ("every job told before, started before it", known)):
        fit = [j for j in np.nonzero(fit_mask & (jobs.eligible_s < lo))[0] if j in log]
        fb, fp, _ = errors(y[fit], [log[j] for j in fit])
        fit_accounts = np.array([log[j].strata[-1] for j in fit])
        chosen = clip_choice(fb, fp, fit_accounts, accounts, tau)
        m = float(np.median(np.where(chosen == 1, e_p, e_b)))
        month, share = carried(np.stack([fb, fp], axis=1), fit_accounts, np.stack([e_b, e_p], axis=1), accounts)
        print(f"  fitted on the {len(fit)} {name}: mean clipped error at {tau}: {m:.4f} ({base - m:+.4f}), "
              f"the panel on {100 * chosen.mean():.1f} %; the month-ahead choice's count: {month:.4f} "
              f"({base - month:+.4f}), the panel on {100 * share:.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
