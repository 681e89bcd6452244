"""Issue 38, twelfth round: does a context the learner knows when a job is told predict which of
the back-off and the panel's mixture is nearer? Tuning windows only (a replay to 2021-06-10).

For each candidate context (a bucketing of what is known at the instant a job is told) and each
tuning window (04-29 .. 05-20, 05-20 .. 06-10), on the warm jobs it prints the back-off's median
|log10 error| and:

- ``hindsight``: the exact least median of a fixed choice (back-off or panel) per context bucket,
  chosen on that window itself (hedge_hindsight.best_per_stratum: for a threshold every bucket
  takes its choice with more errors at or below it; bisection over the errors);
- ``ahead``: the choice per bucket fitted on the first tuning window, applied to the second (a
  bucket the first window did not see takes the back-off): what a specialist top level that had
  settled by 05-20 could keep. This is the figure the round's gate reads (>= +0.003 on both
  clusters), the hindsight figures bound it; with its 90 % interval over the second window's
  days drawn with replacement (500 draws), and over the per-cluster choice carried the same way
  (what the context adds to one choice per cluster), its interval paired by day.

The contexts (all known when the job is told; the waits a key has seen are those whose job had
started by then, as in the replay):

- ``disagree``: |log10 backoff - log10 panel| (the two answers, before the floor), bucketed;
- ``sign``: whether the back-off answers above, below or level with the panel (within 0.005);
- ``disagree x sign``;
- ``key count``: the waits the job's own key (account and geometry) has seen, bucketed;
- ``since last``: the time since the key's last known wait (the last start), bucketed;
- ``floor share``: the pending floor over the back-off's answer (log10(1 + s)), bucketed, with
  "no floor" and "the floor binds" (the floor at or above the back-off's answer);
- ``queue depth``: the key's own jobs eligible before this one and not started (what squeue
  shows the user at this geometry), bucketed;
- ``level``: the back-off's answering level (the panel's weight group, ``hedge_groups: slot``);
- ``level x count``: the answering level and its count bucket (``slot-count``; the ninth round's);
- ``level x disagree``.

    python scripts/hedge_contexts.py graham     # results: docs/results/learn.md, twelfth round
    python scripts/hedge_contexts.py cedar

The replay runs the ninth round's leader (hedge_hindsight.LEARNER): the panel's mixture and the
back-off do not depend on the top level, so every figure but "as run" is the same for any top
level.
"""

from __future__ import annotations

import heapq
import sys
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from hedge_hindsight import LEARNER, TUNING, Told, best_per_stratum, errors, recording  # noqa: E402

from asad.bench import predictors as bench  # noqa: E402
from asad.bench import rolling  # noqa: E402

GATE = 0.003  # the margin ahead, on both clusters, that would open step 2
BOOT = 500  # day resamples for the ahead margin's interval


def bucket(values: np.ndarray, edges: tuple[float, ...], names: tuple[str, ...]) -> np.ndarray:
    """One label per value: names[i] for edges[i-1] <= value < edges[i] (len(names) == len(edges) + 1)."""
    return np.asarray(names, dtype=object)[np.searchsorted(np.asarray(edges), values, side="right")]


def key_context(jobs: bench.Jobs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per job, at its eligible instant: its key's known waits, the seconds since the key's last
    known wait (inf: none), and its key's own jobs eligible earlier and not yet started. A wait is
    known once its job started (start <= now), as the replay feeds it."""
    count = np.zeros(len(jobs), dtype=int)
    since = np.full(len(jobs), np.inf)
    depth = np.zeros(len(jobs), dtype=int)
    pending: dict[str, list[float]] = {}  # key -> start times of its earlier jobs not yet started
    known: dict[str, tuple[int, float]] = {}  # key -> (waits known, last start)
    for j in range(len(jobs)):
        key, now = jobs.key[j], jobs.eligible_s[j]
        heap = pending.setdefault(key, [])
        n, last = known.get(key, (0, -np.inf))
        while heap and heap[0] <= now:
            last = max(last, heapq.heappop(heap))
            n += 1
        known[key] = (n, last)
        count[j], since[j], depth[j] = n, now - last, len(heap)
        heapq.heappush(heap, jobs.start_s[j])
    return count, since, depth


def contexts(told: list[Told], count: np.ndarray, since: np.ndarray, depth: np.ndarray) -> dict[str, np.ndarray]:
    b = np.array([t.backoff for t in told])
    p = np.array([t.panel for t in told])
    floor = np.array([t.floor for t in told])
    d = np.abs(b - p)
    disagree = bucket(d, (0.01, 0.03, 0.1, 0.3, 1.0), ("<0.01", "0.01-0.03", "0.03-0.1", "0.1-0.3", "0.3-1", ">=1"))
    sign = np.where(d < 0.005, "level", np.where(b > p, "b>p", "b<p")).astype(object)
    share = np.where(b > 0, floor / np.maximum(b, 1e-9), 0.0)
    floor_share = bucket(share, (0.25, 0.5, 0.75, 1.0), ("<0.25", "0.25-0.5", "0.5-0.75", "0.75-1", "binds"))
    floor_share = np.where(floor < 0, "none", floor_share).astype(object)
    level = np.array([t.group.split("#", 1)[1] for t in told], dtype=object)
    return {
        "disagree": disagree,
        "sign": sign,
        "disagree x sign": disagree + "|" + sign,
        "key count": bucket(count.astype(float), (2, 5, 20, 100, 500), ("1", "2-4", "5-19", "20-99", "100-499", ">=500")),
        "since last": bucket(since, (600, 3600, 6 * 3600, 86400, 3 * 86400, 7 * 86400),
                             ("<10m", "10m-1h", "1-6h", "6h-1d", "1-3d", "3-7d", ">=7d")),
        "floor share": floor_share,
        "queue depth": bucket(depth.astype(float), (1, 2, 4, 8, 16, 64), ("0", "1", "2-3", "4-7", "8-15", "16-63", ">=64")),
        "level": level,
        "level x count": np.array([t.strata[0].split("#", 1)[1] for t in told], dtype=object),
        "level x disagree": level + "|" + disagree,
    }


def carried_choice(fit: tuple[np.ndarray, np.ndarray], buckets: np.ndarray) -> np.ndarray:
    """The column per job of ``buckets`` chosen per bucket on ``fit`` (errors jobs x 2, buckets);
    an unseen bucket takes the back-off (column 0)."""
    _, choice = best_per_stratum(*fit)
    picks = dict(zip(fit[1].tolist(), choice.tolist()))
    return np.array([picks.get(s, 0) for s in buckets.tolist()], dtype=int)


def carried_margin(fit: tuple[np.ndarray, np.ndarray], apply: tuple[np.ndarray, np.ndarray]) -> tuple[float, float]:
    """The choice per bucket fitted on ``fit`` applied to ``apply`` (errors, buckets). Returns
    (median error, share of jobs told the panel)."""
    chosen = carried_choice(fit, apply[1])
    return float(np.median(apply[0][np.arange(len(chosen)), chosen])), float(np.mean(chosen == 1))


def day_interval(errors_: np.ndarray, chosen: np.ndarray, days: np.ndarray, reps: int = BOOT,
                 seed: int = 0, against: np.ndarray | None = None) -> tuple[float, float]:
    """The 90 % interval of the margin (the back-off's median, or that of the choice ``against``,
    minus the choice's) over days drawn with replacement (waits of one day move together: a day
    is the unit of resampling)."""
    told = errors_[np.arange(len(chosen)), chosen]
    reference = errors_[:, 0] if against is None else errors_[np.arange(len(against)), against]
    labels, inverse = np.unique(days, return_inverse=True)
    members = [np.flatnonzero(inverse == d) for d in range(len(labels))]
    rng = np.random.default_rng(seed)
    margins = []
    for _ in range(reps):
        idx = np.concatenate([members[d] for d in rng.integers(0, len(members), len(members))])
        margins.append(np.median(reference[idx]) - np.median(told[idx]))
    lo, hi = np.percentile(margins, [5, 95])
    return float(lo), float(hi)


def main(argv: list[str]) -> int:
    cluster = argv[0] if argv else "graham"
    until = TUNING[-1].split("..")[1]
    jobs = bench.load_jobs(bench.DEFAULT_DATA, cluster, None, until, key_config=bench.KEY_CONFIGS["account"])
    t0 = time.process_time()
    with recording() as logs:
        replayed = bench.replay(jobs, [("h-wmed-m5-a20h200", "hedge", LEARNER)], seed=0)
    log = logs[0][0]
    print(f"[{cluster}] {len(jobs)} jobs to {until} replayed in {time.process_time() - t0:.0f} CPU s")
    count, since, depth = key_context(jobs)
    warm, y = replayed["warm"], np.log10(1.0 + jobs.wait_s)
    cells: list[tuple[np.ndarray, dict[str, np.ndarray], float]] = []
    for text in TUNING:
        lo, hi = rolling.parse_window(text)
        idx = [j for j in np.nonzero(warm & (jobs.eligible_s >= lo) & (jobs.eligible_s < hi))[0] if j in log]
        told = [log[j] for j in idx]
        e_b, e_p, _ = errors(y[idx], told)
        assert np.all(count[idx] > 0), "a warm job's key has a known wait"
        ctx = contexts(told, count[idx], since[idx], depth[idx])
        base = float(np.median(e_b))
        oracle = float(np.median(np.minimum(e_b, e_p)))
        print(f"\n{text}: {len(idx)} warm jobs; back-off {base:.4f}, panel {np.median(e_p):.4f}, "
              f"per-job oracle {oracle:.4f} ({base - oracle:+.4f}); panel nearer on {100 * np.mean(e_p < e_b):.1f} %, "
              f"back-off nearer on {100 * np.mean(e_b < e_p):.1f} %")
        cells.append((np.stack([e_b, e_p], axis=1), ctx, base))
        days = np.floor(jobs.eligible_s[idx] / 86400.0)
    (fit_e, fit_ctx, _), (e2, ctx2, base2) = cells
    header = ("context / buckets / hindsight W1 (margin, panel %) / hindsight W2 / ahead W1->W2 (margin, panel %) "
              "/ ahead's 90 % interval over days of W2 / ahead over the per-cluster choice ahead (interval)")
    print(f"\n{header}")
    rows: list[tuple[str, Callable[[dict[str, np.ndarray], int], np.ndarray]]] = [
        ("cluster (one bucket)", lambda c, n: np.zeros(n, dtype=int))]
    rows += [(name, lambda c, n, name=name: c[name]) for name in fit_ctx]
    one_bucket = carried_choice((fit_e, np.zeros(len(fit_e), dtype=int)), np.zeros(len(e2), dtype=int))
    one_ahead = float(np.median(e2[np.arange(len(e2)), one_bucket]))
    for name, get in rows:
        out = [name, str(len(set(get(ctx2, len(e2)).tolist())))]
        for e, ctx, base in cells:
            m, pick = best_per_stratum(e, get(ctx, len(e)))
            out.append(f"{m:.4f} ({base - m:+.4f}, {100 * pick.mean():.1f} %)")
        m, share = carried_margin((fit_e, get(fit_ctx, len(fit_e))), (e2, get(ctx2, len(e2))))
        out.append(f"{m:.4f} ({base2 - m:+.4f}, {100 * share:.1f} %){' GATE' if base2 - m >= GATE else ''}")
        chosen = carried_choice((fit_e, get(fit_ctx, len(fit_e))), get(ctx2, len(e2)))
        lo, hi = day_interval(e2, chosen, days)
        out.append(f"{lo:+.4f} .. {hi:+.4f}")
        # over the per-cluster choice carried the same way (what the context adds), paired by day
        lo, hi = day_interval(e2, chosen, days, against=one_bucket)
        out.append(f"over one bucket {one_ahead - m:+.4f} ({lo:+.4f} .. {hi:+.4f})")
        print("  " + " | ".join(out))
    print("\nper bucket, W2 (tuning): jobs / back-off median / panel median / panel nearer %, for the "
          "disagreement and the sign")
    for name in ("disagree", "sign", "floor share"):
        labels = ctx2[name]
        for lb in sorted(set(labels.tolist())):
            sel = labels == lb
            print(f"  {name:12s} {lb:10s} {sel.sum():6d}  {np.median(e2[sel, 0]):.4f}  {np.median(e2[sel, 1]):.4f}  "
                  f"{100 * np.mean(e2[sel, 1] < e2[sel, 0]):.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
