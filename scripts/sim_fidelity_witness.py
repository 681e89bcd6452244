"""The witness search of scripts/sim_fidelity_bound.py (issue 37, f37q): one schedule per
scenario, found from hindsight, that meets as many pair rows as it can. Pure numpy on the runs'
aligned starts; the rows' verdicts are computed as the scorer computes them (``fast_score``,
checked against ``compare`` in tests/test_sim_fidelity_bound.py). A witness is a lower bound on
the rows one schedule can meet, not a simulator: it reads every run.
"""

from __future__ import annotations

import math

import numpy as np


def fast_score(sign_runs: np.ndarray, ties: np.ndarray, aligned: np.ndarray, s: np.ndarray,
                iu: tuple, tau_min: np.ndarray, med_max: np.ndarray, row_run: np.ndarray) -> tuple[int, float]:
    """The scorer's verdict on every row for one schedule ``s`` (aligned starts), vectorised:
    tau_b as kendall_tau computes it and the median |dstart| as compare does, both rounded as
    compare rounds them. Returns (rows met, the unmet rows' total shortfall)."""
    ss = np.sign(s[:, None] - s[None, :])[iu]
    pairs = len(ss)
    v = pairs - int(np.count_nonzero(ss))
    dot = sign_runs @ ss
    denom = np.sqrt((pairs - ties) * float(pairs - v))
    tau = np.where(denom > 0, dot / np.where(denom > 0, denom, 1.0), 1.0)
    med = np.median(np.abs(aligned - s[None, :]), axis=1)
    t, m = np.round(tau[row_run], 4), np.round(med[row_run], 2)
    ok = (t >= tau_min) & (m <= med_max)
    short = np.sum(np.maximum(0.0, tau_min - t) / 0.01 + np.maximum(0.0, m - med_max))
    return int(ok.sum()), float(short)


def climb(s: np.ndarray, sweeps: int, deltas: tuple[int, ...], score, aligned: np.ndarray,  # noqa: ANN001
           allowed=None) -> tuple:  # noqa: ANN001
    """First-improvement hill climb, one job's start at a time (only to schedules ``allowed``)."""
    best = score(s)
    rng = np.random.default_rng(0)
    for _ in range(sweeps):
        moved = False
        for j in rng.permutation(len(s)):
            here = s[j]
            for value in sorted({here + d for d in deltas} | set(aligned[:, j].tolist()) - {here}):
                s[j] = value
                if allowed is not None and not allowed(s):
                    continue
                got = score(s)
                if (got[0], -got[1]) > (best[0], -best[1]):
                    best, moved, here = got, True, value
            s[j] = here
        if not moved:
            break
    return s, best


def _anneal(s: np.ndarray, objective, better, rank, aligned: np.ndarray, iterations: int,  # noqa: ANN001
            seed: int, allowed, temp: float, temp_min: float, cooling: float, done) -> tuple:  # noqa: ANN001
    """Simulated annealing from ``s``: a random job moved onto a random run's start or by up to
    5 s; ``objective(s)`` scored by ``better(got) - better(cur)`` (a worse schedule kept with
    probability exp(that / T)); the best by ``rank`` kept, and the search stops once ``done(best)``."""
    rng = np.random.default_rng(seed)
    cur = objective(s)
    best, best_s = cur, s.copy()
    for _ in range(iterations):
        j = int(rng.integers(len(s)))
        old = s[j]
        s[j] = aligned[int(rng.integers(len(aligned))), j] if rng.random() < 0.5 else old + int(rng.integers(-5, 6))
        if allowed is not None and not allowed(s):
            s[j] = old
            continue
        got = objective(s)
        gain = better(got) - better(cur)
        if gain >= 0 or rng.random() < math.exp(gain / temp):
            cur = got
        else:
            s[j] = old
        if rank(cur) > rank(best):
            best, best_s = cur, s.copy()
            if done(best):
                break
        temp = max(temp_min, temp * cooling)
    return best_s, best


def anneal(s: np.ndarray, score, aligned: np.ndarray, iterations: int, seed: int,  # noqa: ANN001
           allowed=None) -> tuple:  # noqa: ANN001
    """Annealing on the count: ``score(s)`` is (rows met, shortfall), valued rows x 5 - shortfall.
    Returns the best seen."""
    return _anneal(s, score, lambda g: g[0] * 5.0 - g[1], lambda g: (g[0], -g[1]), aligned, iterations, seed, allowed,
                   2.0, 0.05, 0.9995, lambda best: False)


class Capacity:
    """Necessary conditions for a witness to be a schedule at all: with each job running its
    shortest recorded duration, the cores and the memory in use never above the cluster's totals
    (node packing not asked), and no job started before the end (``after``: the start) of a job
    its dependency names. The load peaks at some job's start, so only starts are checked."""

    def __init__(self, runs: list[dict], labels: list[str]) -> None:
        by_run = [{j["label"]: j for j in r["jobs"]} for r in runs]
        jobs = by_run[0]
        self.dur = np.array([min(b[lab]["end"] - b[lab]["start"] for b in by_run) for lab in labels], dtype=float)
        self.cores = np.array([jobs[lab]["nodes"] * jobs[lab]["cpus_per_node"] for lab in labels], dtype=float)
        self.mem = np.array([jobs[lab]["nodes"] * jobs[lab]["mem_mb"] for lab in labels], dtype=float)
        c = runs[0]["cluster"]
        self.cap = (c["nodes"] * c["cpus"], c["nodes"] * c["mem_mb"])
        pos = {lab: i for i, lab in enumerate(labels)}
        deps = [(pos[lab], pos[d], jobs[lab]["dep_type"] == "after") for lab in labels
                for d in jobs[lab]["dep_on"] or () if d in pos]
        self.dep_job = np.array([j for j, _, _ in deps], dtype=int)
        self.dep_on = np.array([d for _, d, _ in deps], dtype=int)
        self.dep_start = np.array([x for _, _, x in deps], dtype=bool)

    def violations(self, s: np.ndarray) -> tuple[int, int]:
        ends = s + self.dur
        live = (s[None, :] <= s[:, None]) & (s[:, None] < ends[None, :])
        over = int(np.count_nonzero((live @ self.cores > self.cap[0]) | (live @ self.mem > self.cap[1])))
        if not len(self.dep_job):
            return over, 0
        need = np.where(self.dep_start, s[self.dep_on], ends[self.dep_on])
        return over, int(np.count_nonzero(s[self.dep_job] < need))

    def ok(self, s: np.ndarray) -> bool:
        return self.violations(s) == (0, 0)


def min_slack(sign_runs: np.ndarray, ties: np.ndarray, aligned: np.ndarray, s: np.ndarray, iu: tuple,
               tau_min: np.ndarray, med_max: np.ndarray, row_run: np.ndarray) -> float:
    """The least slack over every row, tau in units of 0.01 and the median in seconds, both
    rounded as compare rounds them: >= 0 exactly when every row is met."""
    ss = np.sign(s[:, None] - s[None, :])[iu]
    pairs = len(ss)
    v = pairs - int(np.count_nonzero(ss))
    tau = np.round((sign_runs @ ss) / np.sqrt((pairs - ties) * float(pairs - v)), 4)
    med = np.round(np.median(np.abs(aligned - s[None, :]), axis=1), 2)
    return float(np.minimum((tau[row_run] - tau_min) / 0.01, med_max - med[row_run]).min())


def anneal_slack(s: np.ndarray, slack, aligned: np.ndarray, iterations: int, seed: int,  # noqa: ANN001
                 allowed=None) -> tuple:  # noqa: ANN001
    """Annealing on the least slack over the rows (not on the count): where the count's search
    leaves a row just short, this trades the other rows' room for it. Stops at the first
    schedule that meets every row. Returns the best seen and its slack."""
    return _anneal(s, slack, lambda g: g, lambda g: g, aligned, iterations, seed, allowed, 0.5, 0.01, 0.9998,
                   lambda best: best >= 0)
