"""``sizey-like``: an online ensemble of peak-memory predictors with a learned safety offset.

In the spirit of Sizey (Bader et al. 2024): per abstract task, several cheap predictors
of a task's peak memory from its input size are scored online, and the allocation is
the chosen predictor's prediction times a learned safety factor.

* Predictors (all fitted only on completed runs, never on kills): ``max`` (the largest
  peak so far), ``recent`` (the largest of the last 20), ``lr`` (least squares line of
  peak on input size), ``knn`` (the largest peak of the 10 runs nearest in log input size),
  and, when ``quantile_q`` > 0 (off by default), ``quantile`` (that quantile of the last
  ``quantile_n`` peaks; tried for processes whose peaks vary widely at the same input: it
  did not help on held-out traces, docs/results/sizing.md).
* Prequential errors: when a run completes, each predictor's prediction for it, made from
  the runs before it, gives a ratio ``peak / prediction``.
* Learned offset: for each predictor, the safety factor (a quantile of its recent
  ratios, or the largest ratio plus its spread) whose replayed allocations over the
  recent runs cost least: memory·time wasted (a kill wastes ``ttf`` × its allocation plus
  the retry's over-allocation, Witt's MAQ view) plus ``fail_penalty`` × the mean peak ×
  the expected kill rate (counting the next run as possibly the largest: 1/(n+1)).
* Selection: the predictor with the lowest such cost (recomputed after every run).

CPUs: the ``cpu_q`` quantile of the recent busy cores, rounded up, never above the
user's (the tool is started with that many threads); a run that kept ≥ 90% of its CPUs
busy counts as needing one more (its usage was capped by them). Until ``min_runs`` completed runs,
the user's values; then, until each predictor has ``min_ratios`` scored predictions,
the largest peak × ``cold_margin``.
"""

from __future__ import annotations

import math

import numpy as np

from asad.sizing.agent import AgentBase
from asad.sizing.base import GrowingColumns, Outcome, Request, Sample
from asad.sizing.feedback import fit_line

PREDICTORS = ("max", "recent", "lr", "knn", "quantile", "scaled")


class BestAgent(AgentBase):
    kind = "best"
    name = "sizey-like"

    # fail_penalty 2 and a time margin of 3 × the longest run (the other agents: 2 ×) were chosen on
    # the three tuning traces (chipseq, iwd, methylseq) for issue 39: a time-out of a long task
    # wastes its whole allocation, and the ceiling this agent is measured against never times out
    def __init__(self, fail_penalty: float = 2.0, window: int = 400, min_runs: int = 1,
                 min_ratios: int = 5, cold_margin: float = 1.1, ttf_assumed: float = 0.5,
                 knn_k: int = 10, recent_n: int = 20, cpu_q: float = 0.95, quantile_q: float = 0.0,
                 quantile_n: int = 50, scaled: bool = True, fail_cost_gbh: float = 0.0,
                 time_margin: float = 3.0, **kw) -> None:
        super().__init__(fail_penalty=fail_penalty, window=window, min_runs=min_runs, min_ratios=min_ratios,
                         cold_margin=cold_margin, ttf_assumed=ttf_assumed, knn_k=knn_k, recent_n=recent_n,
                         cpu_q=cpu_q, quantile_q=quantile_q, quantile_n=quantile_n, scaled=scaled, fail_cost_gbh=fail_cost_gbh,
                         time_margin=time_margin, **kw)
        self.scaled = bool(scaled)
        self.fail_cost_gbh = float(fail_cost_gbh)
        self.quantile_q, self.quantile_n = float(quantile_q), int(quantile_n)
        self.fail_penalty, self.window, self.min_runs = float(fail_penalty), int(window), int(min_runs)
        self._cached_choice: list | None = None
        self._cached_at = -1
        self.min_ratios, self.cold_margin, self.ttf_assumed = int(min_ratios), float(cold_margin), float(ttf_assumed)
        self.knn_k, self.recent_n, self.cpu_q = int(knn_k), int(recent_n), float(cpu_q)
        # per predictor: (ratio peak/prediction, prediction MB, peak MB, run s, max peak before) per scored run
        self.scored: dict[str, GrowingColumns] = {p: GrowingColumns(5) for p in PREDICTORS}

    # -- predictors -------------------------------------------------------------------------
    def _predict(self, name: str, xs: np.ndarray, ys: np.ndarray, x: float | None) -> float | None:
        """Predictor ``name``'s peak for input ``x`` from runs (xs input bytes, ys peaks MB)."""
        if len(ys) == 0:
            return None
        if name == "max":
            return float(np.max(ys))
        if name == "recent":
            return float(np.max(ys[-self.recent_n:]))
        if name == "quantile":
            if not self.quantile_q > 0:
                return None
            return float(np.quantile(ys[-self.quantile_n:], self.quantile_q, method="higher"))
        xs, ys = xs[-self.window:], ys[-self.window:]
        if name == "scaled":
            return self._scaled(xs, ys, x)
        if x is None or not x > 0 or len(ys) < 3 or not np.all(xs > 0):  # NaN fails > 0
            return None
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

    def _scaled(self, xs: np.ndarray, ys: np.ndarray, x: float | None) -> float | None:
        """The largest peak, each run's scaled up in proportion where the task's input is larger
        than that run's: ``max(peak_i × max(1, x / x_i))``, once the runs show the peak growing with
        the input (a log-log slope ≥ 0.5). Safe for such a stage (a fixed part makes it an
        over-estimate); it needs two runs with different inputs."""
        if not self.scaled or x is None or not x > 0:
            return None
        known = (xs > 0) & (ys > 0)  # NaN (unknown input) fails > 0
        lx, ly = np.log(xs[known]), np.log(ys[known])
        # only where the runs show it: peaks growing with input (log-log slope ≥ 0.5 over inputs at
        # least 1.2× apart); a stand-in for input size that says little would only over-allocate
        if len(lx) < 2 or float(np.ptp(lx)) < math.log(1.2):
            return None
        slope = float(np.polyfit(lx, ly, 1)[0])
        if slope < 0.5:
            return None
        return float(np.max(ys[known] * np.maximum(1.0, x / xs[known])))

    def _learn(self, outcome: Outcome, sample: Sample | None) -> None:
        if sample is None:
            return
        xs, ys = self.history.inputs()[:-1], self.history.peaks()[:-1]
        max_before = float(np.max(ys)) if len(ys) else sample.peak_mb
        for name in PREDICTORS:
            pred = self._predict(name, xs, ys, sample.input_bytes)
            if pred is None or pred <= 0:
                continue
            self.scored[name].append([sample.peak_mb / pred, pred, sample.peak_mb,
                                      max(sample.elapsed_s, 1e-3), max_before])

    # -- offset and selection -------------------------------------------------------------------
    def _choose_factor(self, rows: np.ndarray) -> tuple[float, float, float]:
        """(cost, factor, expected kill rate) of the best safety factor over the scored runs.

        Candidates: quantiles of the ratios peak/prediction, and the largest ratio plus
        its spread. Cost per unit time (MB): replayed waste (a kill wastes ``ttf`` × its
        allocation plus the retry's excess) + ``fail_penalty`` × mean peak × expected kill
        rate. The kill rate counts one more kill than replayed for a factor within the
        ratios seen (the next run is as likely as any to be the largest: 1/(n+1)), and
        half of one above them.
        """
        ratios, pred, peak, run_s, max_before = rows.T
        n = len(ratios)
        ordered = np.sort(ratios)
        top = float(ordered[-1])
        spread = top - float(ordered[(n - 1) // 2])
        # quantiles ("higher" method) straight from the sorted ratios
        levels = ordered[np.ceil(self._levels * (n - 1)).astype(int)]
        factors = np.append(levels, top + spread)
        alloc = pred[:, None] * factors[None, :]
        ok = alloc >= peak[:, None]
        retry = np.where(max_before[:, None] > alloc, np.maximum(max_before[:, None], 1.25 * alloc), 2.0 * alloc)
        retry = np.maximum(retry, peak[:, None])  # a second kill is rare; count the retry as fitting
        waste = np.where(ok, alloc - peak[:, None], self.ttf_assumed * alloc + (retry - peak[:, None]))
        waste_mb = (run_s @ waste) / float(np.sum(run_s))
        kills = np.sum(~ok, axis=0) + np.where(factors > top, 0.5, 1.0)
        kill_rate = kills / (n + 1)
        if self.fail_cost_gbh > 0:  # a kill costs the same GB·h in every stage (the ceiling's λ)
            cost = waste_mb + self.fail_cost_gbh * 1024.0 * 3600.0 * kill_rate / float(np.mean(run_s))
        else:  # a kill costs in proportion to the stage's own peak
            cost = waste_mb + self.fail_penalty * float(np.mean(peak)) * kill_rate
        i = int(np.argmin(cost))
        return float(cost[i]), float(factors[i]), float(kill_rate[i])

    _levels = np.array([0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.96, 0.97, 0.98, 0.99, 0.995, 1.0])

    def _choice(self) -> list[tuple[float, str, float, float, int]]:
        """Per scored predictor: (cost, name, factor, kill rate, n).

        Recomputed after every run while there are few, then after every ``n/20`` runs
        (a window of 400 moves 5% between refreshes; the choice barely changes).
        """
        n = self.history.n
        stale = n - self._cached_at >= max(1, min(n, self.window) // 20)
        if self._cached_choice is None or stale:
            out = []
            for name in PREDICTORS:
                arr = self.scored[name].view()[-self.window:]
                if len(arr) >= self.min_ratios:
                    cost, factor, rate = self._choose_factor(arr)
                    out.append((cost, name, factor, rate, len(arr)))
            self._cached_choice, self._cached_at = sorted(out), n
        return self._cached_choice

    def _size(self, default: Request, input_bytes: float | None):
        n = self.history.n
        if n < self.min_runs:
            return None
        cpus = self._cpus(default)
        for cost, name, factor, rate, n_scored in self._choice():
            pred = self._predict(name, self.history.inputs(), self.history.peaks(), input_bytes)
            if pred is None:
                continue  # e.g. no input size for this task: the next best predictor
            mem = self._cap_mem(pred * factor)
            return cpus, mem, (f"predictor {name} (lowest replayed cost over {n_scored} "
                               f"scored runs) predicts {pred:.0f} MB × learned offset {factor:.3f} = "
                               f"{mem:.0f} MB, expected kill rate {100 * rate:.1f}%; {cpus} CPU(s)")
        top = float(np.max(self.history.peaks()))
        scaled = self._scaled(self.history.inputs(), self.history.peaks(), input_bytes)
        if scaled is not None and scaled > top:  # a larger input than the runs seen: their peaks scaled up
            mem = self._cap_mem(scaled * self.cold_margin)
            return cpus, mem, (f"{n} run(s), too few to score predictors: largest peak scaled to this "
                               f"input {scaled:.0f} MB × {self.cold_margin:g} = {mem:.0f} MB; {cpus} CPU(s)")
        mem = self._cap_mem(top * self.cold_margin)
        return cpus, mem, (f"{n} run(s), too few to score predictors: largest peak "
                           f"{top:.0f} MB × {self.cold_margin:g} = {mem:.0f} MB; {cpus} CPU(s)")

    def _cpus(self, default: Request) -> int:
        usage = self.history.usages()[-self.window:]
        ran = self.history.cpus()[-self.window:]
        known = ~np.isnan(usage)
        usage, ran = usage[known], ran[known]
        if len(usage) == 0:
            return default.cpus
        # a run that kept (nearly) all its CPUs busy was capped by them: its need is a lower
        # bound, so count it as one core more (this probes upward instead of ratcheting down)
        usage = np.where(usage >= 0.9 * ran, np.maximum(usage, ran + 1.0), usage)
        need = float(np.quantile(usage, self.cpu_q))
        return int(max(1, min(default.cpus, math.ceil(need - 1e-9))))

    def _extra_state(self) -> dict:
        return {"scored": {k: v.view()[-self.window:].tolist() for k, v in self.scored.items()},
                "choice": None if self._cached_choice is None else [list(c) for c in self._cached_choice],
                "choice_at": self._cached_at}

    def _load_extra_state(self, extra: dict) -> None:
        if extra:
            self.scored = {k: GrowingColumns(5) for k in PREDICTORS}
            for k, rows in extra["scored"].items():
                for r in rows:
                    self.scored[k].append(r)
            choice = extra.get("choice")
            self._cached_choice = None if choice is None else [
                (float(c), str(name), float(f), float(r), int(n)) for c, name, f, r, n in choice]
            self._cached_at = int(extra.get("choice_at", -1))
