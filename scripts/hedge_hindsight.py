"""Issue 38, ninth round: the hindsight optimum of the comparator classes of the learners built,
on Graham's three judged rolling windows. An analysis for the record, not a tuning round: no
setting is chosen from what it prints.

Replays one cluster over the whole file with the ninth round's ``h-wmed-m5-a20h200`` (the panel's
mixture does not depend on the top level: the panel's weights learn from the panel's own loss)
and records, for every job as it is told, the back-off's answer, the panel's mixture, each of the
panel's experts, the panel's weight group (the coarse stratum: the cluster and the level that
answered, the back-off's answering level), the learner the top level followed and the pending
floor. Every answer is raised to the floor, as the job was told it; an expert that is silent for
a job (``parent`` at the coarsest level; ``slurm``, never probed in a replay) is replaced by the
back-off's answer there. On each window's warm jobs (the bench's set) it prints the back-off's
median |log10 error| and, chosen in hindsight to minimise that window's median:

1. the top level's class: follow the panel with probability p, else the back-off (p = 0, 0.05,
   ..., 1; the expected median over 200 seeded draws and its deterministic equivalent, the
   median of the mixture of the two error distributions); the best fixed choice of the two per
   coarse stratum (the top level keeps one weight group per cluster, so its strata are the
   panel's);
2. the panel's class: each expert alone, the best single one, the best fixed expert per stratum;
3. for scale, not a bound: the per-job oracle (the nearer of back-off and panel per job).

    python scripts/hedge_hindsight.py graham    # results: docs/results/learn.md, ninth round

A second argument replays a tenth-round candidate instead (scripts/tune_hedge_account.py), for
its share of jobs that followed the panel and its median as run; the classes' figures do not
depend on it (the panel's mixture is the same)::

    python scripts/hedge_hindsight.py graham h-win-told-acct-a20   # docs/results/learn.md, tenth round

The eleventh round's candidates (scripts/tune_hedge_memory.py) are accepted too; ``--tuning``
replays only to 2021-06-10 with one or more of them and prints, per tuning window (04-29 ..
05-20, 05-20 .. 06-10), the share of warm jobs on which each followed the panel and its median
as run, beside the back-off's, and the per-account month-ahead choice's share for scale::

    python scripts/hedge_hindsight.py --tuning graham h-miss28-acct h-wmed28-acct   # eleventh round
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from asad.bench import predictors as bench
from asad.bench import rolling
from asad.learn.hedge import ACCOUNT_LEVEL, PANEL, HedgePool
from asad.learn.key_levels import key_levels_by_slot
from asad.learn.key_stats import count_bucket

WINDOWS = ("2021-05-20..2021-06-17", "2021-05-27..2021-06-24", "2021-06-03..2021-07-01")
LEARNER = {"hedge_top": "learners", "hedge_top_combine": "leader", "hedge_top_loss": "window", "hedge_top_eta": 1,
           "hedge_top_told": True, "hedge_top_margin": 0.005,
           "aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 200}
EXPERTS = PANEL[:-1]  # "slurm" never speaks in a replay
# the coarse strata a built option keeps its weights by, besides the preset's ``slot`` group:
# ``hedge_groups: slot-count`` (the answering level and its count bucket), the back-off's residual
# stratum, ``hedge_top_groups: account`` (the sixth round's per-account top weights)
STRATA = ("slot-count", "residual stratum", "account")
FIT_S = 28 * 86400.0  # the weeks before a window on which a per-account choice is fitted
P_STEPS = np.round(np.arange(0.0, 1.0001, 0.05), 2)
DRAWS = 200


@dataclass(frozen=True)
class Told:
    """One job as it was told: the answers (log10(1 + s)) before the floor."""

    backoff: float
    panel: float
    experts: tuple[float, ...]  # in EXPERTS order, a silent expert as the back-off
    group: str  # the panel's weight group (``hedge_groups: slot``, the preset)
    strata: tuple[str, ...]  # the finer groups of options built: see STRATA
    followed: int
    floor: float  # -1: no pending floor


def best_per_stratum(errors: np.ndarray, strata: np.ndarray) -> tuple[float, np.ndarray]:
    """The fixed choice of one column per stratum that minimises the median of the chosen errors.

    ``errors`` is jobs x choices, ``strata`` one label per job. The median is not a sum, but
    "at least k errors <= t" is: for a threshold t each stratum independently takes the choice
    with the most errors <= t, so the smallest t at which the best counts reach k (found by
    bisection over the errors) is exactly the least possible k-th smallest error, k = n // 2 + 1.
    Returns (np.median of the chosen errors, the choice per job); that median is within one
    order statistic of the minimum (it averages the k-1-th and k-th for an even n)."""
    n, _ = errors.shape
    k = n // 2 + 1
    labels, inverse = np.unique(strata, return_inverse=True)
    sorted_cols = [[np.sort(errors[inverse == s, c]) for c in range(errors.shape[1])] for s in range(len(labels))]

    def best_counts(t: float) -> tuple[int, list[int]]:
        total, picks = 0, []
        for cols in sorted_cols:
            counts = [int(np.searchsorted(col, t, side="right")) for col in cols]
            pick = int(np.argmax(counts))  # ties to the lower column: the back-off first
            total += counts[pick]
            picks.append(pick)
        return total, picks

    candidates = np.unique(errors)
    lo, hi = 0, len(candidates) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if best_counts(float(candidates[mid]))[0] >= k:
            hi = mid
        else:
            lo = mid + 1
    _, picks = best_counts(float(candidates[lo]))
    choice = np.asarray(picks)[inverse]
    return float(np.median(errors[np.arange(n), choice])), choice


def mixture_median(e_backoff: np.ndarray, e_panel: np.ndarray, p: float) -> float:
    """The deterministic equivalent of the draw's median: the median of the mixture of the two
    error distributions (each job's back-off error with weight 1 - p, its panel error with p)."""
    values = np.concatenate([e_backoff, e_panel])
    weights = np.concatenate([np.full(len(e_backoff), 1.0 - p), np.full(len(e_panel), p)])
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, 0.5 * cum[-1])])


def drawn_median(e_backoff: np.ndarray, e_panel: np.ndarray, p: float, draws: int = DRAWS, seed: int = 0) -> float:
    """The expected median |error| over ``draws`` seeded draws, each job following the panel with
    probability p."""
    rng = np.random.default_rng(seed)
    follow = rng.random((draws, len(e_backoff))) < p
    return float(np.mean(np.median(np.where(follow, e_panel, e_backoff), axis=1)))


def record(pool: HedgePool, log: dict[int, Told], order: list[int]) -> None:
    """Wrap ``pool.told`` so every job told logs its answers under its index."""
    inner = pool.told

    def told(key: str, now_s: float | None = None, pending_since_s: float | None = None, shifts: bool = True):
        out = inner(key, now_s, pending_since_s, shifts)
        if not shifts:  # the estimate's and quantiles' own calls, not the job being told
            return out
        panel = pool.panel(key)
        if out is not None and panel is not None:
            backoff, mixed = pool.top_values(panel)
            experts = tuple(backoff if v is None else float(v) for v in panel.values[:len(EXPERTS)])
            floor = -1.0 if now_s is None or pending_since_s is None else math.log10(1.0 + max(0.0, now_s - pending_since_s))
            count = next(iter(pool.level_snapshots(key)))[1][1]
            strata = (f"{panel.group}:{count_bucket(count)}", panel.stratum, key_levels_by_slot(key, ACCOUNT_LEVEL)[0])
            log[len(order)] = Told(backoff, mixed, experts, panel.group, strata, pool.top_followed(panel), floor)
        order.append(0)  # one such call per job, in job order
        return out

    pool.told = told  # type: ignore[method-assign]


@contextmanager
def recording(record_fn: Callable = record) -> Iterator[list[tuple[dict, list[int]]]]:
    """While open, every pool a replay makes logs what it told (``record_fn``, :func:`record` by
    default) into its own ``(log, order)``, appended to the yielded list in the order the pools
    are made (one per learner); the bench's ``make_pool`` is put back on leaving."""
    logs: list[tuple[dict, list[int]]] = []
    make_pool = bench.make_pool

    def patched(kind: str, **kwargs):
        pool = make_pool(kind, **kwargs)
        logs.append(({}, []))
        record_fn(pool, *logs[-1])
        return pool

    bench.make_pool = patched  # type: ignore[assignment]
    try:
        yield logs
    finally:
        bench.make_pool = make_pool


def errors(y: np.ndarray, told: list[Told]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """|log10 error| of the back-off, the panel and each expert, each raised to the floor."""
    floor = np.array([t.floor for t in told])
    e_b = np.abs(np.maximum([t.backoff for t in told], floor) - y)
    e_p = np.abs(np.maximum([t.panel for t in told], floor) - y)
    e_x = np.abs(np.maximum(np.array([t.experts for t in told]), floor[:, None]) - y[:, None])
    return e_b, e_p, e_x


def carried(fit_errors: np.ndarray, fit_strata: np.ndarray, errors_: np.ndarray,
            strata: np.ndarray) -> tuple[float, float]:
    """The median error of the choice per stratum fitted on earlier jobs, applied to later ones
    (a stratum the fit did not see takes column 0, the back-off): how much of a hindsight
    margin survives when the choice is made before the window. Returns (that median, the share
    of the later jobs not given column 0)."""
    _, choice = best_per_stratum(fit_errors, fit_strata)
    picks = dict(zip(fit_strata.tolist(), choice.tolist()))
    chosen = np.array([picks.get(s, 0) for s in strata.tolist()])
    return float(np.median(errors_[np.arange(len(strata)), chosen])), float(np.mean(chosen != 0))


def report(text: str, y: np.ndarray, told: list[Told], before: tuple[np.ndarray, list[Told]]) -> None:
    e_b, e_p, e_x = errors(y, told)
    followed = np.array([t.followed for t in told])
    strata = np.array([t.group for t in told])
    base = float(np.median(e_b))
    print(f"\n{text}: {len(told)} warm jobs, {len(set(strata.tolist()))} strata; back-off median |log10 e| "
          f"{base:.4f}; the panel's mixture {np.median(e_p):.4f}; the learner as run "
          f"{np.median(np.where(followed == 1, e_p, e_b)):.4f} (followed the panel on {100 * followed.mean():.1f} %)")
    print("  1. top level: p / expected median over draws / deterministic equivalent")
    best_p = (math.inf, 0.0)
    for p in P_STEPS:
        drawn, det = drawn_median(e_b, e_p, float(p)), mixture_median(e_b, e_p, float(p))
        best_p = min(best_p, (drawn, float(p)))
        print(f"     {p:.2f}  {drawn:.4f}  {det:.4f}")
    print(f"     best p = {best_p[1]:.2f}: {best_p[0]:.4f} (margin over the back-off {base - best_p[0]:+.4f})")
    top_strata, pick = best_per_stratum(np.stack([e_b, e_p], axis=1), strata)
    print(f"     best fixed choice per stratum: {top_strata:.4f} (margin {base - top_strata:+.4f}; "
          f"the panel on {100 * pick.mean():.1f} % of the jobs)")
    for s, name in enumerate(STRATA):
        finer = np.array([t.strata[s] for t in told])
        m, pick = best_per_stratum(np.stack([e_b, e_p], axis=1), finer)
        print(f"     best fixed choice per {name} ({len(set(finer.tolist()))} strata): {m:.4f} "
              f"(margin {base - m:+.4f}; the panel on {100 * pick.mean():.1f} %)")
    print("  2. panel: each expert alone (margin)")
    for i, name in enumerate(EXPERTS):
        m = float(np.median(e_x[:, i]))
        print(f"     {name:10s} {m:.4f} ({base - m:+.4f})")
    single, _ = best_per_stratum(e_x, np.zeros(len(told)))
    per_stratum, pick = best_per_stratum(e_x, strata)
    print(f"     best single expert: {single:.4f} (margin {base - single:+.4f})")
    print(f"     best fixed expert per stratum: {per_stratum:.4f} (margin {base - per_stratum:+.4f}; "
          f"experts used by job share: " + ", ".join(f"{EXPERTS[c]} {100 * np.mean(pick == c):.0f} %"
                                                    for c in range(len(EXPERTS)) if np.any(pick == c)) + ")")
    for s, name in enumerate(STRATA):
        finer = np.array([t.strata[s] for t in told])
        m, pick = best_per_stratum(e_x, finer)
        print(f"     best fixed expert per {name} ({len(set(finer.tolist()))} strata): {m:.4f} "
              f"(margin {base - m:+.4f}; not the back-off on {100 * np.mean(pick != 0):.1f} %)")
    # the account strata chosen on the four weeks before the window (not hindsight)
    fb, fp, fx = errors(*before)
    fit_accounts = np.array([t.strata[-1] for t in before[1]])
    accounts = np.array([t.strata[-1] for t in told])
    top = carried(np.stack([fb, fp], axis=1), fit_accounts, np.stack([e_b, e_p], axis=1), accounts)
    panel = carried(fx, fit_accounts, e_x, accounts)
    print(f"     per account, chosen on the 4 weeks before ({len(before[1])} warm jobs): the top level's two "
          f"{top[0]:.4f} (margin {base - top[0]:+.4f}; the panel on {100 * top[1]:.1f} %), the panel's experts "
          f"{panel[0]:.4f} (margin {base - panel[0]:+.4f}; not the back-off on {100 * panel[1]:.1f} %)")
    oracle = float(np.median(np.minimum(e_b, e_p)))
    print(f"  3. per-job oracle (nearer of back-off and panel; no bound): {oracle:.4f} (margin {base - oracle:+.4f})")


TUNING = ("2021-04-29..2021-05-20", "2021-05-20..2021-06-10")


def candidates() -> dict[str, dict]:
    """The tenth and eleventh rounds' candidates by label."""
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from tune_hedge_account import CANDIDATES as TENTH
    from tune_hedge_memory import CANDIDATES as ELEVENTH
    return {**TENTH, **ELEVENTH}


def tuning(cluster: str, labels: list[str]) -> int:
    """Each candidate's share of warm jobs that followed the panel on the tuning windows, and its
    median as run (a replay to 2021-06-10: nothing later is read)."""
    known = candidates()
    unknown = [lb for lb in labels if lb not in known]
    if unknown or not labels:
        print(f"hedge_hindsight --tuning: not a candidate: {', '.join(unknown) or '(none given)'} "
              f"(known: {', '.join(known)})", file=sys.stderr)
        return 2
    jobs = bench.load_jobs(bench.DEFAULT_DATA, cluster, None, TUNING[-1].split("..")[1],
                           key_config=bench.KEY_CONFIGS["account"])
    t0 = time.process_time()
    with recording() as logs:
        replayed = bench.replay(jobs, [(lb, "hedge", known[lb]) for lb in labels], seed=0)
    print(f"[{cluster}] {len(jobs)} jobs to {TUNING[-1].split('..')[1]} replayed in "
          f"{time.process_time() - t0:.0f} CPU s ({len(labels)} learners)")
    warm = replayed["warm"]
    y = np.log10(1.0 + jobs.wait_s)
    for text in TUNING:
        lo, hi = rolling.parse_window(text)
        print(f"\n{text}: label / warm jobs / back-off median / as run / followed the panel")
        for label, (log, _) in zip(labels, logs):
            idx = [j for j in np.nonzero(warm & (jobs.eligible_s >= lo) & (jobs.eligible_s < hi))[0] if j in log]
            told = [log[j] for j in idx]
            e_b, e_p, _ = errors(y[idx], told)
            followed = np.array([t.followed for t in told])
            as_run = float(np.median(np.where(followed == 1, e_p, e_b)))
            print(f"  {label:<24} {len(idx)} {np.median(e_b):.4f} {as_run:.4f} ({np.median(e_b) - as_run:+.4f})"
                  f" {100 * followed.mean():.1f} %")
        # for scale: the per-account choice made on the (up to) 4 weeks before the window
        log = logs[0][0]
        idx = [j for j in np.nonzero(warm & (jobs.eligible_s >= lo) & (jobs.eligible_s < hi))[0] if j in log]
        fit = [j for j in np.nonzero(warm & (jobs.eligible_s >= lo - FIT_S) & (jobs.eligible_s < lo))[0] if j in log]
        if not fit:  # the file starts on 04-24: no warm job may precede the first window
            print("  per-account month-ahead choice: no warm jobs before the window")
            continue
        fb, fp, _ = errors(y[fit], [log[j] for j in fit])
        e_b, e_p, _ = errors(y[idx], [log[j] for j in idx])
        accounts = np.array([log[j].strata[-1] for j in idx])
        m, share = carried(np.stack([fb, fp], axis=1), np.array([log[j].strata[-1] for j in fit]),
                           np.stack([e_b, e_p], axis=1), accounts)
        print(f"  per-account month-ahead choice ({len(fit)} warm jobs before): {m:.4f} "
              f"({np.median(e_b) - m:+.4f}) the panel on {100 * share:.1f} %")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--tuning"]:
        return tuning(argv[1] if len(argv) > 1 else "graham", argv[2:])
    cluster = argv[0] if argv else "graham"
    label, learner = "h-wmed-m5-a20h200", LEARNER
    if len(argv) > 1:
        known = candidates()
        if argv[1] not in known:
            print(f"hedge_hindsight: {argv[1]} is not a tenth- or eleventh-round candidate ({', '.join(known)})",
                  file=sys.stderr)
            return 2
        label, learner = argv[1], known[argv[1]]
    jobs = bench.load_jobs(bench.DEFAULT_DATA, cluster, None, None, key_config=bench.KEY_CONFIGS["account"])
    t0 = time.process_time()
    with recording() as logs:
        replayed = bench.replay(jobs, [(label, "hedge", learner)], seed=0)
    log = logs[0][0]
    print(f"[{cluster}] {label}: {len(jobs)} jobs replayed in {time.process_time() - t0:.0f} CPU s")
    warm = replayed["warm"]
    y = np.log10(1.0 + jobs.wait_s)
    for text in WINDOWS:
        lo, hi = rolling.parse_window(text)
        idx = [j for j in np.nonzero(warm & (jobs.eligible_s >= lo) & (jobs.eligible_s < hi))[0] if j in log]
        fit = [j for j in np.nonzero(warm & (jobs.eligible_s >= lo - FIT_S) & (jobs.eligible_s < lo))[0] if j in log]
        report(text, y[idx], [log[j] for j in idx], (y[fit], [log[j] for j in fit]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
