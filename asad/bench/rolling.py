"""Rolling-origin scoring of wait predictors (``asad bench predictors --rolling 4w``).

One replay in time order (:func:`asad.bench.predictors.replay`) is scored in windows of a given
length whose start moves by ``step`` from ``--rolling-from`` on: every estimate a window scores
was made with only the waits known before that job was eligible, so each window is scored with
only earlier data, as a rolling-origin evaluation asks, without replaying once per window.

Per window and cluster: the median |log10 error| and the share within a factor of 3 of each
predictor on the warm jobs (those whose own key had seen a wait: the only ones a running median
answers), and, for a pooled learner, the worst gap of its quantiles' coverage from nominal over
every job it answered (cold ones included). Issue 38's targets, per window, for the judged
learner: median error no worse than ``median-backoff``'s, within-×3 no worse than the best
running median's, every quantile level within ±5 points; and over windows: each held in at least
75 % of them.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

UNITS_S = {"d": 86400, "w": 7 * 86400}
RUNNING_MEDIANS = ("median-k", "median-all")
SHARE_OF_WINDOWS = 0.75
COVERAGE_POINTS = 0.05


def parse_span(text: str) -> float:
    """``4w`` or ``10d`` as seconds; ValueError naming the form otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*([dw])\s*", text or "")
    if not match or int(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a span: give whole days or weeks, e.g. 4w or 28d")
    return float(int(match.group(1)) * UNITS_S[match.group(2)])


def parse_window(text: str) -> tuple[float, float]:
    """``2021-05-20..2021-06-10`` as (start, end) seconds; ValueError naming the form otherwise."""
    start, sep, end = (text or "").partition("..")
    try:
        span = (float(np.datetime64(start.strip(), "s").astype(np.int64)),
                float(np.datetime64(end.strip(), "s").astype(np.int64)))
    except ValueError:
        span = None
    if not sep or span is None or span[1] <= span[0]:
        raise ValueError(f"{text!r} is not a window: give FROM..UNTIL dates, e.g. 2021-05-20..2021-06-10")
    return span


def data_end_s(eligible_s: np.ndarray, share: float = 0.999) -> float:
    """The end of the day by which ``share`` of the jobs had become eligible: a window ends by it.
    (A few jobs of the 2021 file become eligible weeks after its last submission, on 2021-07-07;
    the last eligible time would stretch windows over days holding a handful of jobs.)"""
    day = 86400.0
    return float(np.ceil(np.quantile(eligible_s, share) / day) * day)


def windows(start_s: float, length_s: float, step_s: float, data_end_s: float) -> list[tuple[float, float]]:
    """Windows ``[start, start + length)`` from ``start_s`` every ``step_s`` that end by ``data_end_s``."""
    out, t = [], start_s
    while t + length_s <= data_end_s:
        out.append((t, t + length_s))
        t += step_s
    return out


@dataclass(frozen=True)
class WindowRow:
    n: int
    median_abs_log10: float
    within_x3: float
    worst_gap: float | None  # coverage, over every job answered (pooled learners), else None


def _row(est: np.ndarray, wait: np.ndarray, quantiles: np.ndarray, qs: tuple[float, ...],
         answered: np.ndarray | None) -> WindowRow | None:
    ok = ~np.isnan(est)
    if not ok.any():
        return None
    error = np.abs(np.log10(1.0 + est[ok]) - np.log10(1.0 + wait[ok]))
    gap = None
    if answered is not None and answered.any() and qs:
        q = quantiles[answered]
        good = ~np.isnan(q).any(axis=1)
        if good.any():
            covered = np.mean(wait[answered][good][:, None] <= q[good], axis=0)
            gap = float(np.max(np.abs(covered - np.asarray(qs))))
    return WindowRow(int(ok.sum()), float(np.median(error)), float(np.mean(error <= np.log10(3.0))), gap)


def score_windows(jobs: Any, replayed: dict[str, Any], predictors: list[tuple[str, str, dict[str, Any]]],
                  spans: list[tuple[float, float]], qs: tuple[float, ...], pooled: set[str]) -> dict[str, Any]:
    """{cluster: [{"start", "end", "rows": {label: WindowRow}}]} for every window."""
    out: dict[str, list[dict[str, Any]]] = {}
    warm = replayed["warm"]
    for cluster in sorted(set(jobs.cluster.tolist())):
        in_cluster = jobs.cluster == cluster
        blocks = []
        for start, end in spans:
            mask = in_cluster & (jobs.eligible_s >= start) & (jobs.eligible_s < end)
            rows: dict[str, Any] = {}
            for label, _, _ in predictors:
                estimates = replayed["estimates"][label]
                warm_est = np.where(mask & warm, estimates, np.nan)
                answered = (mask & ~np.isnan(estimates)) if label in pooled else None
                row = _row(warm_est, jobs.wait_s, replayed["quantiles"][label], qs, answered)
                if row is not None:
                    rows[label] = row
            blocks.append({"start": _day(start), "end": _day(end), "jobs": int(mask.sum()),
                           "warm": int((mask & warm).sum()), "rows": rows})
        out[cluster] = blocks
    return out


def summarise(scored: dict[str, Any], judged: str, reference: str, kinds: dict[str, str]) -> dict[str, Any]:
    """Per cluster: each target's share of windows met, and whether it reaches 75 %."""
    summary: dict[str, Any] = {}
    running = [lb for lb, kind in kinds.items() if kind in RUNNING_MEDIANS]
    for cluster, blocks in scored.items():
        met: dict[str, list[bool]] = {"median_error_le_reference": [], "x3_ge_best_running_median": [],
                                      "coverage_within_5_points": []}
        for block in blocks:
            rows = block["rows"]
            medians = {lb: rows[lb] for lb in running if lb in rows}
            if judged not in rows or reference not in rows or not medians:
                continue
            row, ref = rows[judged], rows[reference]
            met["median_error_le_reference"].append(row.median_abs_log10 <= ref.median_abs_log10)
            met["x3_ge_best_running_median"].append(row.within_x3 >= max(m.within_x3 for m in medians.values()))
            met["coverage_within_5_points"].append(row.worst_gap is not None and row.worst_gap <= COVERAGE_POINTS)
        summary[cluster] = {name: {"windows": len(flags), "met": int(sum(flags)),
                                   "share": (sum(flags) / len(flags)) if flags else None,
                                   "holds": bool(flags) and sum(flags) / len(flags) >= SHARE_OF_WINDOWS}
                            for name, flags in met.items()}
    return summary


def _day(t: float) -> str:
    return str(np.datetime64(int(t), "s"))[:10]


def as_json(scored: dict[str, Any]) -> dict[str, Any]:
    return {cluster: [{**block, "rows": {lb: asdict(row) for lb, row in block["rows"].items()}} for block in blocks]
            for cluster, blocks in scored.items()}


def print_rolling(scored: dict[str, Any], summary: dict[str, Any], judged: str, reference: str) -> None:
    for cluster, blocks in scored.items():
        labels = list(dict.fromkeys(lb for block in blocks for lb in block["rows"]))
        print(f"\n[{cluster}] rolling windows: median |log10 error| / within x3 (warm jobs) / worst coverage "
              f"gap in points (every job answered, pooled learners)")
        print(f"{'window':<23} {'jobs':>6} {'warm':>6} " + " ".join(f"{lb:>22}" for lb in labels))
        for block in blocks:
            cells = []
            for lb in labels:
                r = block["rows"].get(lb)
                gap = "" if r is None or r.worst_gap is None else f" {100 * r.worst_gap:4.1f}"
                cells.append(f"{'-':>22}" if r is None else f"{f'{r.median_abs_log10:.3f} {100 * r.within_x3:4.1f}{gap}':>22}")
            print(f"{block['start']}..{block['end']} {block['jobs']:>6} {block['warm']:>6} " + " ".join(cells))
        for lb in labels:
            values = [block["rows"][lb] for block in blocks if lb in block["rows"]]
            if values:
                errors = [v.median_abs_log10 for v in values]
                x3 = [v.within_x3 for v in values]
                gaps = [v.worst_gap for v in values if v.worst_gap is not None]
                gap_text = f", worst gap {100 * min(gaps):.1f}..{100 * max(gaps):.1f}" if gaps else ""
                print(f"  {lb}: median error {min(errors):.3f}..{np.median(errors):.3f}..{max(errors):.3f} "
                      f"(min..median..max over {len(values)} windows), x3 {100 * min(x3):.1f}..{100 * max(x3):.1f}"
                      f"{gap_text}")
        for name, target in summary.get(cluster, {}).items():
            share = "-" if target["share"] is None else f"{100 * target['share']:.0f} %"
            print(f"target {cluster} {judged} {name} (vs {reference} / running medians): met in {target['met']} of "
                  f"{target['windows']} windows ({share}): {'HOLDS' if target['holds'] else 'DOES NOT HOLD'} (needs 75 %)")
