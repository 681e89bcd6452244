"""``sizey-like``: an online ensemble of peak-memory predictors with a learned safety offset.

In the spirit of Sizey (Bader et al. 2024): per abstract task, several cheap predictors
of a task's peak memory from its input size are scored online, and the allocation is
the chosen predictor's prediction times a learned safety factor.

* Predictors (all fitted only on completed runs, never on kills): ``max`` (the largest
  peak so far), ``recent`` (the largest of the last 20), ``lr`` (least squares line of
  peak on input size), ``knn`` (the largest peak of the 5 runs nearest in log input size).
* Prequential errors: when a run completes, each predictor's prediction for it, made from
  the runs before it, gives a ratio ``peak / prediction``. The safety factor of a
  predictor is the ``1 - target_fail`` quantile of its recent ratios (the largest while
  it has few), so that about ``target_fail`` of first attempts are expected to be killed.
* Selection: the predictor (with its factor) whose replayed allocations over the recent
  runs would have cost the least memory·time, counting a kill as ``ttf`` × the attempt's
  allocation plus the retry's over-allocation (Witt's MAQ view of waste).

CPUs: the ``cpu_q`` quantile of the recent busy cores, rounded up, never above the
user's (the tool is started with that many threads). Until ``min_runs`` completed runs,
the user's values; then, until each predictor has ``min_ratios`` scored predictions,
the largest peak × ``cold_margin``.
"""

from __future__ import annotations

import math

import numpy as np

from asad.sizing.base import AgentBase, Outcome, Request, Sample
from asad.sizing.feedback import fit_line

PREDICTORS = ("max", "recent", "lr", "knn")


class BestAgent(AgentBase):
    kind = "best"
    name = "sizey-like"

    def __init__(self, target_fail: float = 0.01, window: int = 200, min_runs: int = 1,
                 min_ratios: int = 5, cold_margin: float = 1.1, ttf_assumed: float = 0.5,
                 knn_k: int = 5, recent_n: int = 20, cpu_q: float = 0.95, **kw) -> None:
        super().__init__(target_fail=target_fail, window=window, min_runs=min_runs, min_ratios=min_ratios,
                         cold_margin=cold_margin, ttf_assumed=ttf_assumed, knn_k=knn_k, recent_n=recent_n,
                         cpu_q=cpu_q, **kw)
        self.target_fail, self.window, self.min_runs = float(target_fail), int(window), int(min_runs)
        self.min_ratios, self.cold_margin, self.ttf_assumed = int(min_ratios), float(cold_margin), float(ttf_assumed)
        self.knn_k, self.recent_n, self.cpu_q = int(knn_k), int(recent_n), float(cpu_q)
        # per predictor: (ratio peak/prediction, prediction MB, peak MB, run s, max peak before) per scored run
        self.scored: dict[str, list[list[float]]] = {p: [] for p in PREDICTORS}

    # -- predictors -------------------------------------------------------------------------
    def _predict(self, name: str, samples: list[Sample], x: float | None) -> float | None:
        if not samples:
            return None
        if name == "max":
            return max(s.peak_mb for s in samples)
        if name == "recent":
            return max(s.peak_mb for s in samples[-self.recent_n:])
        have_x = x is not None and x > 0 and all(s.input_bytes for s in samples)
        if not have_x or len(samples) < 3:
            return None
        xs = np.array([s.input_bytes for s in samples[-self.window:]], dtype=float)
        ys = np.array([s.peak_mb for s in samples[-self.window:]], dtype=float)
        if name == "lr":
            if float(np.ptp(xs)) == 0.0:
                return None
            intercept, slope = fit_line(xs, ys)
            return max(float(intercept + slope * x), 0.05 * float(np.max(ys)))
        if name == "knn":
            d = np.abs(np.log(xs) - math.log(x))
            k = min(self.knn_k, len(xs))
            return float(np.max(ys[np.argpartition(d, k - 1)[:k]]))
        raise ValueError(name)

    def _learn(self, outcome: Outcome, sample: Sample | None) -> None:
        if sample is None:
            return
        before = self.history.samples[:-1][-self.window:]
        max_before = max((s.peak_mb for s in before), default=sample.peak_mb)
        for name in PREDICTORS:
            pred = self._predict(name, before, sample.input_bytes)
            if pred is None or pred <= 0:
                continue
            rows = self.scored[name]
            rows.append([sample.peak_mb / pred, pred, sample.peak_mb, max(sample.elapsed_s, 1e-3), max_before])
            if len(rows) > self.window:
                del rows[: len(rows) - self.window]

    # -- offset and selection -------------------------------------------------------------------
    def _factor(self, ratios: np.ndarray) -> float:
        if len(ratios) * self.target_fail < 1.0:
            return float(np.max(ratios))
        return float(np.quantile(ratios, 1.0 - self.target_fail, method="higher"))

    def _replay_cost(self, rows: np.ndarray, factor: float) -> float:
        """Memory·time this factor would have wasted over the scored runs (kills: ttf·alloc + retry excess)."""
        alloc = rows[:, 1] * factor
        peak, run_s, max_before = rows[:, 2], rows[:, 3], rows[:, 4]
        ok = alloc >= peak
        retry = np.where(max_before > alloc, np.maximum(max_before, 1.25 * alloc), 2.0 * alloc)
        retry = np.maximum(retry, peak)  # a second kill is rare; count it as the retry fitting
        waste = np.where(ok, alloc - peak, self.ttf_assumed * alloc + (retry - peak))
        return float(np.sum(waste * run_s) / np.sum(run_s))

    def _size(self, default: Request, input_bytes: float | None):
        samples = self.history.samples
        if len(samples) < self.min_runs:
            return None
        cpus = self._cpus(default)
        candidates = []
        for name in PREDICTORS:
            rows = self.scored[name]
            if len(rows) < self.min_ratios:
                continue
            pred = self._predict(name, samples, input_bytes)
            if pred is None:
                continue
            arr = np.array(rows, dtype=float)
            factor = self._factor(arr[:, 0])
            candidates.append((self._replay_cost(arr, factor), name, pred, factor, len(rows)))
        if not candidates:
            top = max(s.peak_mb for s in samples)
            mem = self._cap_mem(top * self.cold_margin)
            return cpus, mem, (f"sizey-like: {len(samples)} run(s), too few to score predictors: "
                               f"largest peak {top:.0f} MB × {self.cold_margin:g} = {mem:.0f} MB, {cpus} CPU(s)")
        cost, name, pred, factor, n = min(candidates)
        mem = self._cap_mem(pred * factor)
        return cpus, mem, (f"sizey-like: predictor {name} (lowest replayed waste of {len(candidates)}, "
                           f"over {n} scored runs) predicts {pred:.0f} MB × learned offset {factor:.3f} "
                           f"= {mem:.0f} MB; {cpus} CPU(s)")

    def _cpus(self, default: Request) -> int:
        usage = [s.cpu_usage for s in self.history.samples[-self.window:] if s.cpu_usage is not None]
        if not usage:
            return default.cpus
        need = float(np.quantile(np.array(usage), self.cpu_q))
        return int(max(1, min(default.cpus, math.ceil(need - 1e-9))))

    def _extra_state(self) -> dict:
        return {"scored": self.scored}

    def _load_extra_state(self, extra: dict) -> None:
        if extra:
            self.scored = {k: [list(map(float, r)) for r in v] for k, v in extra["scored"].items()}
