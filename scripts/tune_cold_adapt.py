"""Issue 38, eighth round: choose a cold ACI step that adapts, on the tuning windows (before
2021-06-10; nothing later is read), by a rule written down and committed before the run.

The seventh round (docs/results/learn.md) found a fixed faster cold step (``aci_gamma_cold``)
fixes Cedar's tuning windows but overshoots Graham's (its first window 6.6 -> 8.0-9.7 points).
The mechanism tried here, ``aci_cold_adapt_max`` (asad/learn/calibration.py AciAdapt): a cold
stratum's step grows from the base 0.0004 with the level's recent miss bias (decayed mean of
``q - covered`` over ``aci_cold_adapt_halflife`` outcomes, in units of sqrt(q(1-q)), clipped at 1)
up to the max; a calibrated cold stratum keeps the slow step. Candidates, all ``median-backoff``::

    b-adapt8-h50     {"aci_cold_adapt_max": 0.008, "aci_cold_adapt_halflife": 50}
    b-adapt8-h200    {"aci_cold_adapt_max": 0.008, "aci_cold_adapt_halflife": 200}
    b-adapt20-h50    {"aci_cold_adapt_max": 0.02,  "aci_cold_adapt_halflife": 50}
    b-adapt20-h200   {"aci_cold_adapt_max": 0.02,  "aci_cold_adapt_halflife": 200}

Second round (committed after the first run's result, before its own run; tuning windows
only): the first round's best, ``b-adapt20-h50`` (worst cell 6.1 against the back-off's 7.7,
but Graham's second window 2.8 against 1.9, cold jobs up to 10.0), was the fastest and shortest
memory, so the second goes further that way, and adds the seventh round's cold pool to it
(``--second``)::

    b-adapt50-h50       {"aci_cold_adapt_max": 0.05, "aci_cold_adapt_halflife": 50}
    b-adapt50-h20       {"aci_cold_adapt_max": 0.05, "aci_cold_adapt_halflife": 20}
    b-adapt20-h20       {"aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 20}
    b-adapt20-h50-pool  {"aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 50, "cold_pool": true}

The rule (the brief's, the same for both rounds): a *cell* is one cluster x one tuning window (04-29 .. 05-20, 05-20 ..
06-10; Cedar and Graham, 4 cells). A candidate *passes* when in every cell every quantile level
(q 0.1 .. 0.9, the protocol's) is covered within +-5 points, over every job answered AND over
the cold jobs alone, and its median error is no worse than ``median-backoff``'s (it is the
back-off's point estimate, so it should be equal; checked). Chosen: among those that pass, the
smallest worst-cell gap over every job (ties: the smaller mean). None passes: no change, and
the judged windows are not read. Also printed, not deciding: whether a candidate is no worse
than ``median-backoff`` in every cell (the seventh round's "kept"). The chosen one is then
judged ONCE on the rolling windows::

    nice python scripts/tune_cold_adapt.py [--second] cedar graham
    python scripts/tune_cold_adapt.py --from-json cedar.json graham.json   # the rule over saved runs
"""

from __future__ import annotations

import json
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from tune_cold_calibration import REFERENCE, WINDOWS, cell_gaps  # noqa: E402

VARIANTS = {
    "b-adapt8-h50": {"aci_cold_adapt_max": 0.008, "aci_cold_adapt_halflife": 50},
    "b-adapt8-h200": {"aci_cold_adapt_max": 0.008, "aci_cold_adapt_halflife": 200},
    "b-adapt20-h50": {"aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 50},
    "b-adapt20-h200": {"aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 200},
}
SECOND = {
    "b-adapt50-h50": {"aci_cold_adapt_max": 0.05, "aci_cold_adapt_halflife": 50},
    "b-adapt50-h20": {"aci_cold_adapt_max": 0.05, "aci_cold_adapt_halflife": 20},
    "b-adapt20-h20": {"aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 20},
    "b-adapt20-h50-pool": {"aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 50, "cold_pool": True},
}
BOUND = 0.05


def main(argv: list[str]) -> int:
    variants = VARIANTS
    if argv[:1] == ["--second"]:
        variants, argv = SECOND, argv[1:]
    if argv[:1] == ["--from-json"]:  # the rule again over saved runs' JSON (one per cluster)
        saved: dict = {}
        for path in argv[1:]:
            with open(path) as handle:
                for cluster, value in json.load(handle).items():
                    saved[cluster] = value
        gaps = {c: v["gaps"] for c, v in saved.items()}
        variants = {lb: VARIANTS.get(lb, SECOND.get(lb)) for lb in next(iter(gaps.values())) if lb != REFERENCE}
        errors = {c: v["median_errors"] for c, v in saved.items()}
    else:
        gaps, errors = {}, {}
        for cluster in argv or ["cedar", "graham"]:
            errors[cluster] = {}
            gaps[cluster] = cell_gaps(cluster, variants, errors[cluster])
            print(json.dumps({cluster: {"gaps": gaps[cluster], "median_errors": errors[cluster]}}), flush=True)
    clusters = list(gaps)
    cells = [(c, w) for c in clusters for w in WINDOWS]
    print("\ncell: worst coverage gap, every job answered (cold jobs alone) in points; median error")
    for label in [REFERENCE, *variants]:
        print(f"  {label:<15} " + "  ".join(f"{c[:5]} {w[5:10]} {100 * gaps[c][label][w][0]:4.1f} "
                                           f"({100 * gaps[c][label][w][1]:4.1f}) {errors[c][label][w]:.3f}"
                                           for c, w in cells))
    passing = [lb for lb in variants
               if all(gaps[c][lb][w][0] <= BOUND and gaps[c][lb][w][1] <= BOUND
                      and errors[c][lb][w] <= errors[c][REFERENCE][w] + 1e-12 for c, w in cells)]
    no_worse = [lb for lb in variants if all(gaps[c][lb][w][0] <= gaps[c][REFERENCE][w][0] for c, w in cells)]
    summary = {lb: (max(gaps[c][lb][w][0] for c, w in cells), float(np.mean([gaps[c][lb][w][0] for c, w in cells])),
                    max(gaps[c][lb][w][1] for c, w in cells))
               for lb in [REFERENCE, *variants]}
    print("\nlabel: worst-cell gap all / mean all / worst-cell gap cold / passes / no worse than the reference")
    for lb, (worst, mean, worst_cold) in summary.items():
        print(f"  {lb:<15} {100 * worst:4.1f} {100 * mean:4.1f} {100 * worst_cold:4.1f} "
              f"{'passes' if lb in passing else '-'} {'no-worse' if lb in no_worse else ''}")
    chosen = min(passing, key=lambda lb: summary[lb][:2]) if passing else None
    print(f"\nchosen: {chosen or 'none passes: no calibration change, the judged windows not read'}"
          + (f" {json.dumps(variants[chosen])}" if chosen else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
