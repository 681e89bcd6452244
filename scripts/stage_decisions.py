#!/usr/bin/env python3
"""Issue 35's diagnosis: what the default's rule decided for each stage of each workflow in a bench
store, and where the wait went.

    scripts/stage_decisions.py STORE.db [--workflow montage-28]

``asad bench strategies --out DIR`` keeps each variant's store in ``DIR/asad-bench-*/`` (e.g.
``hpc2n-multifactor-limits-auto.db``). Per stage: its CPUs; when its (last) job was submitted,
became eligible and was allocated, and when its work started, each against its predecessor's end
(negative: before it); its run time; ``dep`` if it went with ``afterok``; released jobs (an
allocation that came too early); and the rule's reason, shortened.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3


def rel(t: float | None, ref: float | None) -> str:
    return f"{t - ref:+7.0f}" if t is not None and ref is not None else "      -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    parser.add_argument("--workflow", default="", help="only workflows whose name contains this")
    args = parser.parse_args()
    con = sqlite3.connect(args.store)
    for wid, name, created, ended, spec in con.execute(
            "select id, name, created_at, ended_at, spec from workflows order by id"):
        if args.workflow not in name:
            continue
        stages = [s["name"] for s in json.loads(spec)["stages"]]
        print(f"== workflow {wid} {name}: makespan {(ended or created) - created:.0f} s")
        rows = {r[0]: r for r in con.execute(
            "select name, plan_why, start_time, end_time from stages where workflow_id=?", (wid,))}
        prev_end = None
        for s in stages:
            _, why, start, end = rows[s]
            jobs = con.execute("select submitted_at, eligible_time, start_time, request, cancelled_by_asad "
                               "from jobs where workflow_id=? and stage=? order by id", (wid, s)).fetchall()
            released = sum(1 for j in jobs if j[4] and j[2] is not None)
            sub, elig, alloc, req, _ = jobs[-1] if jobs else (None, None, None, "{}", 0)
            req = json.loads(req)
            cpus = req.get("cpus_per_task", 1) * req.get("ntasks", 1)
            dep = "dep" if req.get("dependency") else "   "
            reason = re.sub(r"rule quantile \(.*?accrues no age \(AccountingStorageEnforce has limits\)\): ", "",
                            why or "")
            run = f"{end - start:6.0f}" if start is not None and end is not None else "     -"
            print(f"  {s:12} c{cpus:>3} submit{rel(sub, prev_end)} eligible{rel(elig, prev_end)} "
                  f"alloc{rel(alloc, prev_end)} start{rel(start, prev_end)} run {run} {dep} "
                  f"{'released ' + str(released) if released else ''}| {reason[:160]}")
            prev_end = end


if __name__ == "__main__":
    main()
