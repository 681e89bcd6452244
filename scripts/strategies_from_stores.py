#!/usr/bin/env python3
"""Rebuild an `asad bench strategies` run's rows from its per-variant stores, for a run that was
stopped before it printed (the rows live in the bench's memory until the end).

    scripts/strategies_from_stores.py OUT/asad-bench-XXXX NEW_OUT FIRST_SEED TRAIN

FIRST_SEED and TRAIN as given to the bench; the workflows and geometries must be the bench's
defaults (montage, blast, statistics at the preset's three core counts). Only whole seeds that
every variant of a priority finished are kept. Writes NEW_OUT/strategies.json (rows and targets,
as the bench does; `scripts/strategies_pool.py NEW_OUT` reads it). Checked on a finished run
(seeds 1000-1003, three priorities, seven variants): all 756 rows equal the bench's own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from asad.bench.strategies import (CORES_PER_NODE, EXAMPLES, SCALES, SERIAL_FRACTION, aggregate, result_row,
                                   scale_spec)
from asad.spec.load import load_workflow
from asad.store.repo import Store

db_dir, out, first_seed, train = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rows = []
for db in sorted(db_dir.glob("*.db")):
    preset, priority, variant = db.stem.split("-", 2)
    cpn = CORES_PER_NODE[preset]
    cells = [(wf, c) for wf in SERIAL_FRACTION for c in SCALES[preset]]  # the bench's default order
    store = Store(f"sqlite:///{db}")
    wrs = sorted((r for r in store.workflow_rows() if r.summary is not None), key=lambda r: r.id)  # ended
    n_full = len(wrs) // len(cells) * len(cells)  # only whole seeds
    for i, r in enumerate(wrs[:n_full]):
        seed = i // len(cells)
        wf_name, cores = cells[i % len(cells)]
        spec = scale_spec(load_workflow(EXAMPLES / f"{wf_name}.yaml"), cores, cpn, SERIAL_FRACTION[wf_name])
        s = r.summary
        assert s["workflow"] == spec.name, (s["workflow"], spec.name)
        rows.append(result_row(s, spec, preset=preset, priority=priority, seed=first_seed + seed,
                               measured=seed >= train, workflow=wf_name, cores=cores, variant=variant))
    store.close()
    print(db.stem, len(wrs), "workflows,", n_full // len(cells), "whole seeds", file=sys.stderr)
# a variant set per (priority, seed) must be complete: keep seeds every variant of a priority finished
keep = []
for prio in sorted({r["priority"] for r in rows}):
    vs = {r["variant"] for r in rows if r["priority"] == prio}
    seeds = set.intersection(*({r["seed"] for r in rows if r["priority"] == prio and r["variant"] == v} for v in vs))
    keep += [r for r in rows if r["priority"] == prio and r["seed"] in seeds]
agg = aggregate(keep)
out.mkdir(parents=True, exist_ok=True)
(out / "strategies.json").write_text(json.dumps({"rows": keep, **agg}, indent=1))
print(json.dumps(agg["targets"], indent=1))
