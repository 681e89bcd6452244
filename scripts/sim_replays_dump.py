"""Every recording's fixed replay (the grid and ``bf_poll``), each job's start, end and state, dumped
to JSON, or two dumps compared (issue 37, f37o): a rule change that should move no start shows 0.

    python scripts/sim_replays_dump.py dump OUT.json        (PYTHONPATH=OLD_TREE for another tree)
    python scripts/sim_replays_dump.py compare A.json B.json
"""

from __future__ import annotations

import json
import sys


def dump(path: str) -> None:
    import asad.bench.sim_vs_real as svr

    out = {}
    for rec in svr.load_recordings(None):
        for mode, kw in (("grid", {}), ("bf_poll", {"bf_poll": True, "bf_plan_all": True})):
            out[f"{rec['id']}|{mode}"] = svr.replay(rec, **kw)
    with open(path, "w") as fh:
        json.dump(out, fh)


def compare(path_a: str, path_b: str) -> int:
    a, b = json.load(open(path_a)), json.load(open(path_b))
    jobs = differ = 0
    for key in sorted(set(a) | set(b)):
        for label in sorted(set(a.get(key, {})) | set(b.get(key, {}))):
            jobs += 1
            if a.get(key, {}).get(label) != b.get(key, {}).get(label):
                differ += 1
                print(key, label, a.get(key, {}).get(label), b.get(key, {}).get(label))
    print(f"{len(a)} / {len(b)} replays, {jobs} jobs, {differ} differ")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2])
    else:
        raise SystemExit(compare(sys.argv[2], sys.argv[3]))
