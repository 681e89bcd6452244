"""Do two versions of the learner code give the same answers? (issue 38, fourteenth round: the
split of hedge.py, and the meta level's change to the pool, must change no answer of an existing
setting.) Replays the named candidates on one cluster's prefix and keeps every job's estimate and
quantiles; run it under each version (PYTHONPATH=<tree>), then compare the two files.

    PYTHONPATH=/tmp/old python scripts/hedge_answers_equal.py dump cedar 2021-05-08 old.npz --add ...
    python scripts/hedge_answers_equal.py dump cedar 2021-05-08 new.npz --add ...
    python scripts/hedge_answers_equal.py compare old.npz new.npz
"""

from __future__ import annotations

import sys

import numpy as np

DATA = "/work/shared/data/slurm-queue-cedar-graham-2021/jobs.csv.gz"


def dump(cluster: str, until: str, out: str, adds: list[str], seed: int = 0) -> None:
    import asad
    from asad.bench.predictors import QUANTILES, load_jobs, parse_predictors, replay
    predictors = parse_predictors("median-backoff", adds)
    jobs = load_jobs(DATA, cluster, None, until)
    replayed = replay(jobs, predictors, seed, quantiles=QUANTILES)
    arrays = {}
    for label, _, _ in predictors:
        arrays[f"{label}.estimate"] = replayed["estimates"][label]
        arrays[f"{label}.quantiles"] = replayed["quantiles"][label]
    np.savez(out, **arrays)
    print(f"{asad.__file__}: {len(jobs)} jobs, {len(predictors)} learners -> {out}")


def compare(a: str, b: str) -> int:
    left, right = np.load(a), np.load(b)
    bad = 0
    for name in sorted(set(left.files) | set(right.files)):
        if name not in left.files or name not in right.files:
            print(f"{name}: only in one file")
            bad += 1
            continue
        x, y = left[name], right[name]
        differ = int(np.sum(~((x == y) | (np.isnan(x) & np.isnan(y)))))
        answered = int(np.sum(~np.isnan(x)))
        print(f"{name}: {differ} of {x.size} values differ ({answered} answered)")
        bad += differ
    print("equal" if not bad else f"NOT equal: {bad}")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["compare"] and len(argv) == 3:
        return compare(argv[1], argv[2])
    if argv[:1] == ["dump"] and len(argv) >= 4:
        adds = [argv[i + 1] for i in range(4, len(argv) - 1) if argv[i] == "--add"]
        dump(argv[1], argv[2], argv[3], adds)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
