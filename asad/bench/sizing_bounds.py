"""Hindsight ceilings for the sizing replay, and the share of the gap an agent closes.

Not agents: bounds on what any agent that gives each process one memory size could reach.

* ``ceiling-hindsight``: one size per process, chosen knowing every peak of the trace, with
  the failed-attempt budget (``fail_budget`` × the workflow's tasks, 3 %) spent *across the
  workflow* where it saves most. A task above its process's size is killed at ``ttf`` × its
  run time and retried at the process's largest peak (so it fails once). Choosing the sizes is
  a multiple-choice knapsack (per process, options "k tasks above the size" with a cost in
  allocated MB·s; total k ≤ budget), solved exactly by dynamic programming over the budget
  (:func:`optimal_sizes`). A Lagrangian sweep (each process takes the size minimising
  MB·s + λ·failures, λ raised until the budget holds, :func:`lagrangian_sizes`) only reaches the
  points on the lower convex hull of each process's options; it is kept to show the difference.
* ``ceiling-cold-start``: the same, but each process's first task (in submission order) runs at
  the trace's request — no one knows a process's first peak — and the hindsight optimum is
  chosen for the tasks after it. The honest ceiling an agent is measured against.

:func:`gap_closed` gives an agent's MAQ as the share of the gap it closes between a baseline
(the anchor, or Witt's best agent) and the cold-start ceiling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from asad.bench.sizing_trace import Tally, TraceTask, default_request, play_attempt
from asad.sizing.base import Request

HINDSIGHT = "ceiling-hindsight"
COLD_START = "ceiling-cold-start"
BOUNDS = (HINDSIGHT, COLD_START)
FAIL_BUDGET = 0.03  # failed attempts per task the ceilings may spend (the issue's ≤ 3 %)


@dataclass(frozen=True)
class Option:
    """One size for one process: how many of its tasks it fails and what it allocates (MB·s)."""

    size_mb: int
    fails: int
    alloc_mb_s: float


def process_options(peaks_mb: np.ndarray, run_s: np.ndarray, ttf: float, max_fails: int) -> list[Option]:
    """Per possible failure count k ≤ ``max_fails``, the cheapest single size failing exactly k tasks.

    A size is worth trying only at a task's (rounded-up) peak. With size s, a task with peak ≤ s
    allocates s × run; one above is killed at ``ttf`` × run (s × ttf × run, all waste) and its
    retry at the process's largest peak allocates top × run.
    """
    order = np.argsort(peaks_mb, kind="stable")
    peaks, runs = peaks_mb[order], run_s[order]
    top = int(math.ceil(float(peaks[-1])))
    total_run = float(np.sum(runs))
    cum_run = np.concatenate([[0.0], np.cumsum(runs)])  # run time of the i smallest
    best: dict[int, Option] = {}
    for size in np.unique(np.ceil(peaks)).astype(int):
        fit = int(np.searchsorted(peaks, float(size), side="right"))  # tasks with peak ≤ size
        fails = len(peaks) - fit
        if fails > max_fails:
            continue
        over_run = total_run - float(cum_run[fit])
        cost = size * (float(cum_run[fit]) + ttf * over_run) + top * over_run
        if fails not in best or cost < best[fails].alloc_mb_s:
            best[fails] = Option(size_mb=int(size), fails=fails, alloc_mb_s=cost)
    return [best[k] for k in sorted(best)]


def optimal_sizes(options: dict[str, list[Option]], budget: int) -> dict[str, Option]:
    """The exact optimum: one option per process, total fails ≤ ``budget``, least total MB·s.

    Dynamic programming over the budget: ``cost[b]`` is the least MB·s of the processes so far
    with at most b failures. Every process has a zero-failure option (its largest peak), so a
    solution always exists.
    """
    names = list(options)
    cost = np.zeros(budget + 1)
    picks: list[np.ndarray] = []
    for name in names:
        new = np.full(budget + 1, np.inf)
        pick = np.full(budget + 1, -1, dtype=int)
        for i, opt in enumerate(options[name]):
            if opt.fails > budget:
                continue
            cand = np.full(budget + 1, np.inf)
            cand[opt.fails:] = cost[: budget + 1 - opt.fails] + opt.alloc_mb_s
            better = cand < new
            new[better], pick[better] = cand[better], i
        cost = new
        picks.append(pick)
    chosen: dict[str, Option] = {}
    b = budget
    for name, pick in zip(reversed(names), reversed(picks)):
        opt = options[name][int(pick[b])]
        chosen[name] = opt
        b -= opt.fails
    return {name: chosen[name] for name in names}


def lagrangian_sizes(options: dict[str, list[Option]], budget: int) -> dict[str, Option]:
    """Each process takes the option minimising MB·s + λ·fails, for the smallest λ within the budget.

    Total failures fall as λ rises, so the smallest feasible λ among the breakpoints (where
    some process's choice changes: the slopes of its options' lower convex hull) is found by
    bisection. Not exact: only points on each process's hull can be picked, and the sweep
    stops at the last hull point within the budget, leaving the rest of the budget unspent.
    """
    def at(lam: float) -> dict[str, Option]:
        return {n: min(opts, key=lambda o: (o.alloc_mb_s + lam * o.fails, o.fails)) for n, opts in options.items()}

    lams = {0.0}
    for opts in options.values():
        hull = _lower_hull(opts)
        for a, b in zip(hull, hull[1:]):  # a has fewer failures and costs more
            lams.add((a.alloc_mb_s - b.alloc_mb_s) / (b.fails - a.fails))
    ordered = sorted(lams)
    lo, hi = 0, len(ordered) - 1
    hi_pick = at(ordered[hi] + 1.0)  # above every breakpoint: each process at zero failures
    if sum(o.fails for o in at(ordered[hi]).values()) <= budget:
        hi_pick = at(ordered[hi])
    while lo < hi:  # the smallest feasible breakpoint
        mid = (lo + hi) // 2
        pick = at(ordered[mid])
        if sum(o.fails for o in pick.values()) <= budget:
            hi, hi_pick = mid, pick
        else:
            lo = mid + 1
    pick = at(ordered[lo])
    return pick if sum(o.fails for o in pick.values()) <= budget else hi_pick


def _lower_hull(opts: list[Option]) -> list[Option]:
    """The options on the lower convex hull of (fails, MB·s), in order of failures."""
    hull: list[Option] = []
    for o in sorted(opts, key=lambda o: (o.fails, o.alloc_mb_s)):
        if hull and o.alloc_mb_s >= hull[-1].alloc_mb_s:
            continue  # more failures for no saving: never chosen
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # b is above the segment a→o: drop it
            if (b.alloc_mb_s - a.alloc_mb_s) * (o.fails - a.fails) >= (o.alloc_mb_s - a.alloc_mb_s) * (b.fails - a.fails):
                hull.pop()
            else:
                break
        hull.append(o)
    return hull


def _total(pick: dict[str, Option]) -> float:
    return sum(o.alloc_mb_s for o in pick.values())


def hindsight_sizes(tasks: list[TraceTask], ttf: float, fail_budget: float = FAIL_BUDGET,
                    cold_start: bool = False, solver=optimal_sizes) -> dict[str, Option]:
    """Per process, its hindsight size (without each process's first task when ``cold_start``)."""
    budget = int(math.floor(fail_budget * len(tasks) + 1e-9))
    by_proc: dict[str, list[TraceTask]] = {}
    for task in tasks:
        by_proc.setdefault(task.process, []).append(task)
    options = {}
    for proc, ts in by_proc.items():
        sized = ts[1:] if cold_start else ts
        if not sized:
            continue
        options[proc] = process_options(np.array([t.peak_mb for t in sized]),
                                        np.array([t.realtime_s for t in sized]), ttf, budget)
    return solver(options, budget)


def replay_hindsight(tasks: list[TraceTask], ttf: float, fail_budget: float = FAIL_BUDGET,
                     cold_start: bool = False, solver=optimal_sizes) -> Tally:
    """Replay the hindsight sizes (see the module's doc); CPUs and time limits as requested."""
    sizes = hindsight_sizes(tasks, ttf, fail_budget, cold_start, solver)
    top: dict[str, float] = {}
    for task in tasks:
        top[task.process] = max(top.get(task.process, 0.0), task.peak_mb)
    seen: set[str] = set()
    tally = Tally()
    for task in tasks:
        tally.tasks += 1
        d = default_request(task)
        time_s = max(d.time_s, int(math.ceil(task.realtime_s)))
        first = cold_start and task.process not in seen
        seen.add(task.process)
        mem = d.mem_mb if first else sizes[task.process].size_mb
        if not play_attempt(tally, task, Request(d.cpus, mem, time_s), ttf).completed:
            play_attempt(tally, task, Request(d.cpus, int(math.ceil(top[task.process])), time_s), ttf)
    return tally


def gap_closed(maq: float, baseline: float, ceiling: float) -> float | None:
    """The share (0..1, can be < 0 or > 1) of the gap baseline → ceiling that ``maq`` closes."""
    gap = ceiling - baseline
    return None if abs(gap) < 1e-12 else (maq - baseline) / gap


WITT_AGENTS = ("pc50", "pc95", "lr-mean±", "lr-mean-", "lr-max-")


def gap_rows(block: dict, workflows: list[str], agents: list[str], anchor: str) -> dict:
    """Per agent and baseline (the anchor; Witt's best agent if any ran), the share of the gap
    to the cold-start ceiling closed on each workflow, on the mean MAQ of all of them, and on
    the mean without mag (it holds every policy's mean down)."""
    per, tot = block["per_workflow"], block["totals"]
    baselines = {"anchor": anchor}
    witt = [a for a in agents if a in WITT_AGENTS]
    if witt:
        baselines["witt-best"] = max(witt, key=lambda a: tot[a]["maq_mean"])
    rest = [w for w in workflows if w != "mag"]
    out: dict = {"baselines": baselines, "rows": {}}
    for label, base in baselines.items():
        rows = {}
        for name in agents:
            if name in BOUNDS:
                continue
            cells = {w: gap_closed(per[name][w]["maq"], per[base][w]["maq"], per[COLD_START][w]["maq"])
                     for w in workflows}

            def mean(ws: list[str], who: str) -> float:
                return sum(per[who][w]["maq"] for w in ws) / len(ws)

            cells["mean"] = gap_closed(mean(workflows, name), mean(workflows, base), mean(workflows, COLD_START))
            if rest and len(rest) < len(workflows):
                cells["mean-without-mag"] = gap_closed(mean(rest, name), mean(rest, base), mean(rest, COLD_START))
            rows[name] = cells
        out["rows"][label] = rows
    return out


def format_gaps(gaps: dict, workflows: list[str]) -> list[str]:
    cols = list(workflows) + ["mean"] + (["mean-without-mag"] if any(
        "mean-without-mag" in c for rows in gaps["rows"].values() for c in rows.values()) else [])
    lines = []
    for label, rows in gaps["rows"].items():
        base = gaps["baselines"][label]
        lines.append(f"share of the gap closed, {base} → {COLD_START} (%)")
        lines.append(f"{'agent':<20}" + "".join(f"{c[:16]:>17}" for c in cols))
        for name, cells in rows.items():
            lines.append(f"{name:<20}" + "".join(
                f"{'-':>17}" if cells.get(c) is None else f"{100 * cells[c]:>17.0f}" for c in cols))
        lines.append("")
    return lines
