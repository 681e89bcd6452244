"""``asad bench convergence``: the paper's Figure 5 (ASA estimates when the true wait changes).

1000 iterations; the true wait is constant within segments starting at 0, 200, 400, 600
and 800. Each iteration a predictor gives its estimate, then observes the wait. Without
``--noise`` it observes the segment's level exactly; with ``--noise SIGMA`` the observed
wait is ``level * exp(SIGMA * N(0, 1))`` (log-normal, median = level) and a running median
(``median-k``, and medians of the last 3, 5, 20, 50) are scored beside the ASA policies; the
recommended predictor (``recommended_predictor()``, label ``recommended``) always is.
Estimates are always scored against the level (what a perfect predictor would say).

With ``--slurm-sigma SIGMA`` every predictor is also given a stand-in for Slurm's start
estimate, ``level * exp(SIGMA * N(0, 1))`` (used by ``asa-slurm`` and ``slurm-estimate``).

Per predictor and segment: mean absolute error (s), mean absolute error of log10(1 + s),
the fraction of iterations within one grid step of the level, and ``settle``: iterations
after the change until the estimate is within one grid step for ``--settle-run``
consecutive iterations (None when it never is).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from asad.common.arg_types import non_negative_float, positive_int
from asad.learn.grid import PAPER_GRID_S, nearest_index
from asad.learn.registry import make_predictor, recommended_predictor

# Levels like the paper's Figure 5: rises and drops over three orders of magnitude.
DEFAULT_LEVELS_S = (3000.0, 20000.0, 500.0, 7000.0, 100.0)
DEFAULT_CHANGES = (0, 200, 400, 600, 800)
DEFAULT_POLICIES = ("asa-greedy", "asa", "asa-tuned")
RUNNING_MEDIAN_WINDOWS = (3, 5, 20, 50)  # besides median-k's default 10


@dataclass(frozen=True)
class SegmentScore:
    start: int
    level_s: float
    mae_s: float
    mae_log10: float
    within_one_step: float
    settle: int | None


def _settle(within: np.ndarray, run: int) -> int | None:
    streak = 0
    for i, ok in enumerate(within):
        streak = streak + 1 if ok else 0
        if streak >= run:
            return i - run + 1
    return None


def observed_waits(levels: np.ndarray, noise_sigma: float, seed: int) -> np.ndarray:
    if noise_sigma <= 0:
        return levels.copy()
    rng = np.random.Generator(np.random.PCG64([seed, 7919]))
    return levels * np.exp(noise_sigma * rng.standard_normal(len(levels)))


def slurm_estimates(levels: np.ndarray, slurm_sigma: float | None, seed: int) -> np.ndarray | None:
    """A stand-in for Slurm's start estimate: the level times log-normal error (None: no estimate)."""
    if slurm_sigma is None:
        return None
    rng = np.random.Generator(np.random.PCG64([seed, 104729]))
    return levels * np.exp(slurm_sigma * rng.standard_normal(len(levels)))


def run_predictor(kind: str, observed: np.ndarray, seed: int, params: dict[str, Any],
                  slurm: np.ndarray | None = None) -> np.ndarray:
    predictor = make_predictor(kind, seed=seed, **params)
    estimates = np.empty(len(observed))
    for i, wait in enumerate(observed):
        slurm_s = None if slurm is None else float(slurm[i])
        estimates[i] = predictor.estimate(slurm_estimate_s=slurm_s)
        predictor.observe(float(wait), slurm_estimate_s=slurm_s)
    return estimates


def score(estimates: np.ndarray, levels: np.ndarray, changes: tuple[int, ...], settle_run: int,
          grid: np.ndarray) -> list[SegmentScore]:
    level_index = np.array([nearest_index(grid, v) for v in levels])
    estimate_index = np.array([nearest_index(grid, v) for v in estimates])
    within = np.abs(estimate_index - level_index) <= 1
    bounds = [*changes, len(levels)]
    segments = []
    for start, end in zip(bounds[:-1], bounds[1:]):
        sl = slice(start, end)
        segments.append(SegmentScore(
            start=start,
            level_s=float(levels[start]),
            mae_s=float(np.mean(np.abs(estimates[sl] - levels[sl]))),
            mae_log10=float(np.mean(np.abs(np.log10(1 + estimates[sl]) - np.log10(1 + levels[sl])))),
            within_one_step=float(np.mean(within[sl])),
            settle=_settle(within[sl], settle_run),
        ))
    return segments


def run_convergence(*, policies: tuple[str, ...] = DEFAULT_POLICIES, levels_s: tuple[float, ...] = DEFAULT_LEVELS_S,
                    changes: tuple[int, ...] = DEFAULT_CHANGES, iterations: int = 1000,
                    noise_sigma: float = 0.0, seed: int = 0, settle_run: int = 5,
                    params: dict[str, Any] | None = None, with_recommended: bool = True,
                    slurm_sigma: float | None = None) -> dict[str, Any]:
    bounds = [*changes, iterations]
    levels = np.concatenate([np.full(b - a, lv) for a, b, lv in zip(bounds[:-1], bounds[1:], levels_s)])
    observed = observed_waits(levels, noise_sigma, seed)
    slurm = slurm_estimates(levels, slurm_sigma, seed)
    runs = [(kind, kind, dict(params or {}) if kind.startswith("asa") else {}) for kind in policies]
    if noise_sigma > 0:
        if "median-k" not in policies:
            runs.append(("median-k", "median-k", {}))
        # the best running median is judged over several windows (chosen in hindsight: a high bar)
        runs += [(f"median-{k}", "median-k", {"k": k}) for k in RUNNING_MEDIAN_WINDOWS]
    if with_recommended:
        kind, recommended_params = recommended_predictor()
        runs.append(("recommended", kind, recommended_params))
    grid = np.asarray(PAPER_GRID_S)
    results: dict[str, Any] = {}
    traces: dict[str, list[float]] = {}
    for kind, registry_kind, kind_params in runs:
        estimates = run_predictor(registry_kind, observed, seed, kind_params, slurm)
        segments = score(estimates, levels, changes, settle_run, grid)
        settles = [s.settle for s in segments]
        results[kind] = {
            "segments": [asdict(s) for s in segments],
            "mae_s": float(np.mean(np.abs(estimates - levels))),
            "mae_log10": float(np.mean(np.abs(np.log10(1 + estimates) - np.log10(1 + levels)))),
            "worst_settle": None if None in settles else max(settles),
        }
        traces[kind] = estimates.tolist()
    return {
        "iterations": iterations, "changes": list(changes), "levels_s": list(levels_s),
        "noise_sigma": noise_sigma, "slurm_sigma": slurm_sigma, "seed": seed, "settle_run": settle_run,
        "params": params or {},
        "predictors": results, "_levels": levels.tolist(), "_observed": observed.tolist(), "_traces": traces,
    }


def plot(result: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"asa-greedy": ("tab:red", ":", 1.6), "asa": ("black", "-", 1.8), "asa-tuned": ("hotpink", "-", 1.0),
              "median-k": ("tab:green", "--", 1.0), "recommended": ("tab:orange", "-", 1.2)}
    fig, ax = plt.subplots(figsize=(9, 4.5))
    x = np.arange(result["iterations"])
    if result["noise_sigma"] > 0:
        ax.scatter(x, np.maximum(result["_observed"], 1), s=3, color="lightsteelblue", label="observed wait")
    ax.step(x, result["_levels"], where="post", color="tab:blue", linestyle="--", linewidth=2, label="true wait")
    for kind, trace in result["_traces"].items():
        color, style, width = styles.get(kind, (None, "-", 1.0))
        ax.plot(x, np.maximum(trace, 1), color=color, linestyle=style, linewidth=width, label=kind)
    ax.set_yscale("log")
    ax.set_xlabel("iteration (observed wait)")
    ax.set_ylabel("waiting time (s)")
    title = "ASA convergence (paper Fig. 5)"
    if result["noise_sigma"] > 0:
        title += f", log-normal noise sigma={result['noise_sigma']}"
    ax.set_title(title)
    ax.legend(loc="lower left", fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _print_table(result: dict[str, Any]) -> None:
    print(f"convergence: {result['iterations']} iterations, changes at {result['changes']}, "
          f"levels {result['levels_s']} s, noise sigma {result['noise_sigma']}, seed {result['seed']}, "
          f"settle = first run of {result['settle_run']} estimates within one grid step")
    header = f"{'predictor':<12} {'segment':>8} {'level s':>8} {'MAE s':>9} {'MAE log10':>9} {'in 1 step':>9} {'settle':>7}"
    print(header)
    for kind, res in result["predictors"].items():
        for seg in res["segments"]:
            settle = "never" if seg["settle"] is None else str(seg["settle"])
            print(f"{kind:<12} {seg['start']:>8} {seg['level_s']:>8.0f} {seg['mae_s']:>9.0f} "
                  f"{seg['mae_log10']:>9.3f} {seg['within_one_step']:>9.2f} {settle:>7}")
        worst = "never" if res["worst_settle"] is None else res["worst_settle"]
        print(f"{kind:<12} {'all':>8} {'':>8} {res['mae_s']:>9.0f} {res['mae_log10']:>9.3f} {'':>9} {worst!s:>7}")
    _print_targets(result)


def targets(result: dict[str, Any]) -> dict[str, Any]:
    preds = result["predictors"]
    out: dict[str, Any] = {}
    if result["noise_sigma"] <= 0 and "asa-tuned" in preds:
        worst = preds["asa-tuned"]["worst_settle"]
        out["tuned_settles_within_5"] = {"worst_settle": worst, "met": worst is not None and worst <= 5}
    if result["noise_sigma"] <= 0 and "asa-greedy" in preds:
        levels = result["levels_s"]
        drops = [i for i in range(1, len(levels)) if levels[i] < levels[i - 1]]
        after = [preds["asa-greedy"]["segments"][i] for i in drops]
        # the paper's claim: after a drop greedy does not re-converge (stuck for the segment)
        out["greedy_stuck_after_drop"] = {
            "settle_after_drops": [s["settle"] for s in after],
            "tuned_settle_after_drops": [preds.get("asa-tuned", {}).get("segments", [{}] * len(levels))[i].get("settle")
                                         for i in drops],
            "within_one_step_after_drops": [s["within_one_step"] for s in after],
            "met": any(s["settle"] is None for s in after),
        }
    if result["noise_sigma"] <= 0 and "recommended" in preds:
        worst = preds["recommended"]["worst_settle"]
        out["recommended_settles_within_5"] = {"worst_settle": worst, "met": worst is not None and worst <= 5}
    if result["noise_sigma"] > 0 and "median-k" in preds:
        med = preds["median-k"]["mae_log10"]
        for label, name in (("asa", "paper_default"), ("recommended", "recommended_default")):
            if label in preds:
                out[f"{name}_no_worse_than_running_median"] = {
                    f"{label}_mae_log10": preds[label]["mae_log10"], "median_k_mae_log10": med,
                    "met": preds[label]["mae_log10"] <= med}
        medians = [lb for lb in preds if lb == "median-k" or lb.startswith("median-") and lb[7:].isdigit()]
        best = min(medians, key=lambda lb: preds[lb]["mae_log10"])
        if "recommended" in preds:
            out["recommended_no_worse_than_best_running_median"] = {
                "recommended_mae_log10": preds["recommended"]["mae_log10"], "best_running_median": best,
                "its_mae_log10": preds[best]["mae_log10"],
                "met": preds["recommended"]["mae_log10"] <= preds[best]["mae_log10"]}
    return out


def _print_targets(result: dict[str, Any]) -> None:
    for name, target in targets(result).items():
        detail = {k: v for k, v in target.items() if k != "met"}
        print(f"target {name}: {'MET' if target['met'] else 'NOT MET'} {detail}")


def run_seeds(seeds: int, **kwargs: Any) -> dict[str, Any]:
    """Summary over ``seeds`` consecutive seeds: per predictor, worst settle and mean errors."""
    first = kwargs.pop("seed", 0)
    runs = [run_convergence(seed=first + i, **kwargs) for i in range(seeds)]
    summary: dict[str, Any] = {}
    for label in runs[0]["predictors"]:
        per_seed = [run["predictors"][label] for run in runs]
        summary[label] = {
            "worst_settle_per_seed": [p["worst_settle"] for p in per_seed],
            "mean_mae_log10": float(np.mean([p["mae_log10"] for p in per_seed])),
            "mean_mae_s": float(np.mean([p["mae_s"] for p in per_seed])),
        }
    return {"seeds": list(range(first, first + seeds)), "noise_sigma": kwargs.get("noise_sigma", 0.0),
            "params": kwargs.get("params") or {}, "predictors": summary,
            "targets_met_per_seed": [{k: v["met"] for k, v in targets(run).items()} for run in runs]}


def main(args: argparse.Namespace) -> int:
    params = json.loads(args.params) if args.params else {}
    if args.seeds > 1:
        summary = run_seeds(args.seeds, policies=tuple(args.predictors.split(",")), noise_sigma=args.noise,
                            seed=args.seed, settle_run=args.settle_run, params=params, slurm_sigma=args.slurm_sigma)
        if args.json:
            print(json.dumps(summary, indent=2))
        else:
            print(f"convergence over seeds {summary['seeds']}, noise sigma {summary['noise_sigma']}, "
                  f"params {summary['params']}")
            for label, res in summary["predictors"].items():
                settles = ["never" if s is None else s for s in res["worst_settle_per_seed"]]
                print(f"{label:<12} mean MAE log10 {res['mean_mae_log10']:.3f}  mean MAE {res['mean_mae_s']:.0f} s  "
                      f"worst settle per seed {settles}")
            for i, met in zip(summary["seeds"], summary["targets_met_per_seed"]):
                print(f"seed {i} targets: " + ", ".join(f"{k}={'MET' if v else 'NOT MET'}" for k, v in met.items()))
        return 0
    result = run_convergence(policies=tuple(args.predictors.split(",")), noise_sigma=args.noise, seed=args.seed,
                             settle_run=args.settle_run, params=params, slurm_sigma=args.slurm_sigma)
    if args.plot:
        plot(result, args.plot)
    public = {k: v for k, v in result.items() if not k.startswith("_")}
    public["targets"] = targets(result)
    if args.json:
        print(json.dumps(public, indent=2))
    else:
        _print_table(result)
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("convergence", help="paper Fig. 5: ASA convergence when the wait changes")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG of the estimates")
    parser.add_argument("--noise", type=non_negative_float, default=0.0, metavar="SIGMA",
                        help="log-normal noise on observed waits (sigma of ln)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--slurm-sigma", type=non_negative_float, metavar="SIGMA",
                        help="feed a stand-in Slurm estimate (level * exp(SIGMA * N(0,1))) to every predictor")
    parser.add_argument("--seeds", type=positive_int, default=1, help="run this many seeds and print a summary")
    parser.add_argument("--settle-run", type=positive_int, default=5, help="consecutive hits that count as settled")
    parser.add_argument("--predictors", default=",".join(DEFAULT_POLICIES),
                        help="comma list of registry names (default: %(default)s)")
    parser.add_argument("--params", help="JSON of extra params for every asa-* predictor, e.g. '{\"gamma\": 2}'")
    parser.set_defaults(func=main)
