"""Issue 38: how much of the cold jobs' coverage gap is noise no learner can remove.

A job is cold when its key (partition, account, size, limit) had no started job when it became
eligible (``asad bench predictors``' "warm" is the complement). So every cold job of a key is
one **burst**: the key's jobs that became eligible before its first start, told before any of
its waits was known. A learner gives a burst's jobs nearly the same quantiles, and their waits
move together (one queue, one moment), so whether each is covered is nearly one coin per burst,
not per job.

This script measures that on the data and asks what it costs a learner that is *calibrated*
(each quantile level covers its share in expectation): with the window's real burst sizes and the
real within-burst correlation, how often does such a learner's coverage of the cold jobs alone
come within +-5 points at every level (the bar the rounds held cold jobs to)?

- bursts: per window (the two tuning windows and the 4-week rolling windows from 2021-05-20,
  as ``asad bench predictors --rolling 4w`` builds them), the cold jobs, their bursts, the
  largest burst's share and the effective count (sum w)^2 / sum w^2 (cold jobs as good as
  independent if every burst were one coin);
- correlation: with ``--replay``, the default learner (``median-backoff``) is replayed on the
  whole file (~15-30 CPU s a cluster) and, per level q, the intra-burst correlation of "the
  wait was covered at q" is estimated (one-way ANOVA, the standard estimator); without it,
  the intra-burst correlation of the waits' normal scores within the window (rank-based);
- by burst: the same coverage with each burst counted once (its jobs weighted 1 / its size),
  for the default and for the calibrated learner;
- simulation: a calibrated learner's PITs drawn as a Gaussian copula with that correlation
  inside bursts (one shared normal per burst, one per job), 4,000 windows of the real burst
  sizes: the share in which every level q (0.1, 0.25, 0.5, 0.75, 0.9) is covered within +-5 points, and the
  median worst gap.

It chooses and tunes nothing; it reads the judged windows' jobs (which keys, when eligible,
when started) but no learner's answer on them unless ``--replay``, whose quantiles are the
default's, already judged.

    python scripts/cold_bursts.py cedar [--replay]
    python scripts/cold_bursts.py cedar --replay --tuning-only --learner 'b-once=median-backoff:{"cold_once_per_key": true}'
    python scripts/cold_bursts.py cedar --replay --tuning-only --track 1,10,100:0.01
    python scripts/cold_bursts.py cedar --replay --tuning-only --learner 'b-burst4=median-backoff:{"cold_burst_edges": [1, 10, 100]}'

(The columns say "default" for whichever learner ``--learner`` names.)
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

import numpy as np

from asad.bench import predictors as bench
from asad.bench import rolling

TUNING = ("2021-04-29..2021-05-20", "2021-05-20..2021-06-10")
GAP = 0.05


def cold_mask(key: np.ndarray, eligible_s: np.ndarray, start_s: np.ndarray) -> np.ndarray:
    """Cold as the bench's replay has it (jobs in eligible order): no job of the key that came
    before in that order had started by this one's eligible time (a start at ``<= now`` counts).
    "Eligible before the key's first start" is not quite that rule: a job that starts the
    second it became eligible (1,283 on Graham) is unknown to a job of its key eligible in the
    same second but earlier in the order, and a start before eligibility (none in the file)
    would be unknown until its turn."""
    import heapq

    seen: set[str] = set()
    started: list[tuple[float, int]] = []
    cold = np.zeros(len(key), dtype=bool)
    keys = key.tolist()
    for j, now in enumerate(eligible_s.tolist()):
        while started and started[0][0] <= now:
            seen.add(keys[heapq.heappop(started)[1]])
        cold[j] = keys[j] not in seen
        heapq.heappush(started, (float(start_s[j]), j))
    return cold


def icc(values: np.ndarray, groups: np.ndarray) -> float:
    """One-way ANOVA intra-class correlation of ``values`` within ``groups`` (unequal sizes:
    n0 = (N - sum n_i^2 / N) / (k - 1)); 0 when it cannot be told (one group, or all alike)."""
    labels, inverse, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    k, n = len(labels), len(values)
    if k < 2 or n <= k:
        return 0.0
    means = np.bincount(inverse, weights=values) / sizes
    grand = values.mean()
    ssb = float(np.sum(sizes * (means - grand) ** 2))
    ssw = float(np.sum((values - means[inverse]) ** 2))
    msb, msw = ssb / (k - 1), ssw / (n - k)
    n0 = (n - np.sum(sizes.astype(float) ** 2) / n) / (k - 1)
    if msb + (n0 - 1) * msw <= 0:
        return 0.0
    return float(max(0.0, (msb - msw) / (msb + (n0 - 1) * msw)))


def normal_scores(x: np.ndarray) -> np.ndarray:
    from statistics import NormalDist

    ranks = np.argsort(np.argsort(x, kind="stable"), kind="stable") + 1
    inv = NormalDist().inv_cdf
    return np.array([inv(r / (len(x) + 1)) for r in ranks])


def calibrated_pass_share(sizes: np.ndarray, rho: float, qs: tuple[float, ...], draws: int,
                          rng: np.random.Generator, by_burst: bool = False) -> tuple[float, float]:
    """Share of simulated windows in which a calibrated learner covers every level within +-5
    points, and the median worst gap (points): PIT = Phi(sqrt(rho) Z_burst + sqrt(1-rho) Z_job).
    ``by_burst``: coverage with each burst counted once (its jobs weighted 1 / its size)."""
    from math import erf, sqrt

    rho = min(max(rho, 0.0), 1.0)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    weight = 1.0 / sizes[owner] / len(sizes) if by_burst else np.full(len(owner), 1.0 / len(owner))
    ok, worst = 0, []
    for _ in range(draws):
        z = sqrt(rho) * rng.standard_normal(len(sizes))[owner] + sqrt(1.0 - rho) * rng.standard_normal(len(owner))
        pit = 0.5 * (1.0 + np.vectorize(erf)(z / sqrt(2.0)))
        gaps = np.abs(weight @ (pit[:, None] <= np.asarray(qs)) - np.asarray(qs))
        worst.append(float(gaps.max()))
        ok += bool(gaps.max() <= GAP)
    return ok / draws, 100.0 * float(np.median(worst))


def tracked_cold_quantiles(key: np.ndarray, eligible_s: np.ndarray, start_s: np.ndarray, wait_s: np.ndarray,
                           quant: np.ndarray, cold_told: np.ndarray, qs: tuple[float, ...],
                           edges: tuple[int, ...], step: float) -> np.ndarray:
    """The cold jobs' quantiles moved by quantile tracking per class of burst size as known when
    the job is told (how many jobs of its key are pending then: below ``edges[0]``, ...), in event
    order (a job told at its eligible time, its outcome heard at its start): each class keeps a
    shift per level, in log10, moved by ``step * (miss - (1 - q))`` on every outcome heard, from
    what that job was told. What the lead "a cold stratum per burst size" could reach, read from
    a replay's own answers with nothing from later; warm jobs' quantiles are left as they were."""
    import bisect
    import heapq

    out = quant.copy()
    shift = np.zeros((len(edges) + 1, len(qs)))
    levels = np.asarray(qs)
    told_log = np.full(quant.shape, np.nan)
    klass = np.full(len(key), -1)
    pending: dict[str, int] = defaultdict(int)
    outcomes: list[tuple[float, int]] = []
    keys = key.tolist()
    for j, now in enumerate(eligible_s.tolist()):
        while outcomes and outcomes[0][0] <= now:
            _, done = heapq.heappop(outcomes)
            pending[keys[done]] -= 1
            c = klass[done]
            if c >= 0:
                miss = np.log10(1.0 + wait_s[done]) > told_log[done]
                shift[c] += step * (miss - (1.0 - levels))
        if cold_told[j]:
            c = klass[j] = bisect.bisect_right(edges, pending[keys[j]])
            told_log[j] = np.log10(1.0 + quant[j]) + shift[c]
            out[j] = 10.0 ** told_log[j] - 1.0
        pending[keys[j]] += 1
        heapq.heappush(outcomes, (float(start_s[j]), j))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cluster")
    parser.add_argument("--replay", action="store_true", help="the default learner's own coverage correlation")
    parser.add_argument("--learner", metavar="LABEL=KIND:{json}",
                        help="with --replay: this learner's quantiles instead of the default's (as --add takes it)")
    parser.add_argument("--tuning-only", action="store_true", help="only the two tuning windows (before 2021-06-10)")
    parser.add_argument("--track", metavar="EDGES:STEP",
                        help="with --replay: the cold quantiles moved by tracked_cold_quantiles per burst-size "
                             "class (e.g. 1,10,100:0.02); the learner's own otherwise")
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    jobs = bench.load_jobs(bench.DEFAULT_DATA, args.cluster, None, None, key_config=bench.KEY_CONFIGS["account"])
    key = np.asarray(jobs.key)
    cold = cold_mask(key, jobs.eligible_s, jobs.start_s)
    qs = tuple(bench.QUANTILES)
    covered = None
    if args.replay:
        t0 = time.process_time()
        learners = bench.parse_predictors("median-backoff", [args.learner] if args.learner else [])
        label = learners[-1][0]
        replayed = bench.replay(jobs, learners, seed=0, quantiles=bench.QUANTILES)
        assert np.array_equal(~replayed["warm"], cold), "cold here must be the bench's not-warm"
        quant = replayed["quantiles"][label]
        estimates = replayed["estimates"][label]
        error = np.abs(np.log10(1.0 + estimates) - np.log10(1.0 + jobs.wait_s))
        told = ~np.isnan(quant).any(axis=1)
        if args.track:
            edges_text, _, step = args.track.partition(":")
            edges = tuple(int(e) for e in edges_text.split(",") if e)
            quant = tracked_cold_quantiles(key, jobs.eligible_s, jobs.start_s, jobs.wait_s, quant, cold & told, qs,
                                           edges, float(step))
        covered = jobs.wait_s[:, None] <= quant
        print(f"[{args.cluster}] replayed {len(jobs)} jobs in {time.process_time() - t0:.0f} CPU s")
    spans = [rolling.parse_window(w) for w in TUNING]
    if not args.tuning_only:  # the judged windows as `asad bench predictors --rolling 4w` builds them
        spans += rolling.windows(rolling.parse_window("2021-05-20..2021-05-21")[0], rolling.parse_span("4w"),
                                 rolling.parse_span("1w"), rolling.data_end_s(jobs.eligible_s))
    rng = np.random.default_rng(0)
    rows = []
    print(f"[{args.cluster}] {len(jobs)} jobs, {int(cold.sum())} cold in all")
    print("window                  jobs   cold  bursts  largest  n_eff   rho    calibrated: all levels within 5   median worst gap"
          + ("   default: worst gap (cold)" if covered is not None else ""))
    for lo, hi in spans:
        inside = (jobs.eligible_s >= lo) & (jobs.eligible_s < hi)
        sel = inside & cold
        if covered is not None:
            sel &= told
        burst = key[sel]
        _, sizes = np.unique(burst, return_counts=True)
        n = int(sel.sum())
        if not n:
            continue
        n_eff = float(sizes.sum() ** 2 / np.sum(sizes.astype(float) ** 2))
        if covered is not None:  # the default's own indicators: the mean ICC over the levels
            rho = float(np.mean([icc(covered[sel, i].astype(float), burst) for i in range(len(qs))]))
            cov = covered[sel].mean(axis=0)
            default_gap = 100.0 * float(np.max(np.abs(cov - np.asarray(qs))))
            _, inverse, counts = np.unique(burst, return_inverse=True, return_counts=True)
            per_burst = (1.0 / counts[inverse] / len(counts)) @ covered[sel]
            default_burst_gap = 100.0 * float(np.max(np.abs(per_burst - np.asarray(qs))))
            coverage = {"by_job": [round(100 * float(c), 1) for c in cov], "by_burst": [round(100 * float(c), 1) for c in per_burst]}
            answered = inside & told  # the bench's coverage set: every job answered
            coverage["all_answered_worst_gap"] = round(100 * float(np.max(np.abs(
                covered[answered].mean(axis=0) - np.asarray(qs)))), 2)
            coverage["warm_median_abs_log10"] = round(float(np.median(error[inside & ~cold & ~np.isnan(estimates)])), 4)
        else:
            rho = icc(normal_scores(np.log10(1.0 + jobs.wait_s[sel])), burst)
            default_gap = default_burst_gap = coverage = None
        share, med_gap = calibrated_pass_share(sizes, rho, qs, args.draws, rng)
        b_share, b_med_gap = calibrated_pass_share(sizes, rho, qs, args.draws // 4, rng, by_burst=True)
        name = f"{rolling._day(lo)}..{rolling._day(hi)}"  # noqa: SLF001 - the bench's own day format
        row = {"window": name, "jobs": int(inside.sum()), "cold": n, "bursts": len(sizes),
               "largest_share": float(sizes.max() / n), "n_eff": n_eff, "rho": rho,
               "calibrated_within_5": share, "calibrated_median_worst_gap": med_gap, "default_worst_gap": default_gap,
               "by_burst_calibrated_within_5": b_share, "by_burst_calibrated_median_worst_gap": b_med_gap,
               "by_burst_default_worst_gap": default_burst_gap, "default_coverage_pct": coverage}
        rows.append(row)
        print(f"{name}  {row['jobs']:>6} {n:>6} {len(sizes):>7} {100 * row['largest_share']:>7.1f}% {n_eff:>6.1f} "
              f"{rho:>6.3f}    {100 * share:>20.1f} %   {med_gap:>15.1f}"
              + (f"   {default_gap:>10.1f}" if default_gap is not None else "")
              + f"   | by burst: calibrated {100 * b_share:5.1f} %, median gap {b_med_gap:4.1f}"
              + (f", default {default_burst_gap:4.1f}" if default_burst_gap is not None else ""))
        if coverage is not None:
            print(f"{'':24}cold coverage at q = {', '.join(f'{q:g}' for q in qs)}: by job "
                  f"{coverage['by_job']}, by burst {coverage['by_burst']}; every job answered: worst gap "
                  f"{coverage['all_answered_worst_gap']}; warm median |log10 error| {coverage['warm_median_abs_log10']}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"cluster": args.cluster, "replay": args.replay, "rows": rows}, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
