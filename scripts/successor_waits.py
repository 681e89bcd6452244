#!/usr/bin/env python3
"""Issue 35, fourth stop: the waits of a bench store's wide jobs (28 CPUs or more) by where they
stand in their workflow: a first stage; a successor whose predecessor was at least as wide (its end
frees the nodes the successor needs); a successor of a narrower predecessor.

    scripts/successor_waits.py STORE.db

``asad bench strategies --out DIR`` keeps each variant's store in ``DIR/asad-bench-*/``; the
per-stage variant's (``...-per-stage.db``) shows the waits a job submitted at its predecessor's end meets.
"""

from __future__ import annotations

import argparse
import sqlite3
from collections import defaultdict

import numpy as np

from asad.bench.strategies import EXAMPLES
from asad.spec.load import load_workflow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    args = parser.parse_args()
    conn = sqlite3.connect(args.store)
    rows = conn.execute("SELECT j.workflow_id, j.stage, j.alloc_cpus, j.eligible_time, j.start_time, w.name "
                        "FROM jobs j JOIN workflows w ON w.id = j.workflow_id ORDER BY j.id").fetchall()
    jobs: dict[int, dict[str, tuple]] = defaultdict(dict)
    names = {}
    for wf, stage, cpus, eligible, start, name in rows:
        jobs[wf][stage] = (cpus, eligible, start)
        names[wf] = name
    classes: dict[str, list[float]] = defaultdict(list)
    for wf, stages in jobs.items():
        spec = load_workflow(EXAMPLES / f"{names[wf].split('-')[0]}.yaml")
        for stage, (cpus, eligible, start) in stages.items():
            if start is None or eligible is None or cpus < 28:
                continue
            preds = spec.predecessors(stage)
            kind = ("first stage" if not preds else
                    "after a predecessor as wide" if max(stages[p][0] for p in preds) >= cpus else
                    "after a narrower predecessor")
            classes[kind].append(start - eligible)
    for kind, waits in classes.items():
        w = np.array(waits)
        print(f"{kind:30} {len(w):3} jobs: wait median {np.median(w):6.0f} s, 10 % {np.quantile(w, 0.1):6.0f} s, "
              f"90 % {np.quantile(w, 0.9):6.0f} s, sum {w.sum():7.0f} s")


if __name__ == "__main__":
    main()
