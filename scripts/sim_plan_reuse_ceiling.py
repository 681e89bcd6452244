"""The most incremental planning could save on the compiled pass with a given certificate: the
recorded passes replayed through this tree's pass kernel twice in one process, once as it is and
once with the searches the certificate passed (``sim_plan_certificate.py --copies``) answered by a
copy instead of the plan search, i.e. with a certificate that costs nothing. Timed as
``sim_pass_replay.py ab`` times two kernels (pass by pass, alternating which goes first, each
round from a cold fit-time cache; the sum over the passes of each pass's minimum, medians beside).
Both must return the recorded run's digest: the copies are the searches' own answers.

    python scripts/sim_plan_reuse_ceiling.py passes.pkl copies.pkl --rounds 7

Why: the certificate's share of searches times the searches' share of the kernel (measured by
doubling) is arithmetic; this measures it on the kernel itself, before anything is built.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import re
import sys
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_pass_replay as replay  # noqa: E402

TREE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (the pass calls the search with its kept per-shape state since the tenth session)
CALL = "            start, nodes = plan_kernel.planned_start_kept("
COPY = """            ci = _find_copy(cp_jid, j_id[pj_i])
            if ci >= 0:
                start, nodes = cp_start[ci], cp_nodes[cp_off[ci]:cp_off[ci] + cp_len[ci]].copy()
            else:
                start, nodes = plan_kernel.planned_start_kept("""
FIND = '''

def _find_copy(cp_jid, jid):  # noqa: ANN001, ANN202
    """The index of ``jid`` in the sorted ``cp_jid``, -1 if absent."""
    lo, hi = 0, len(cp_jid)
    while lo < hi:
        mid = (lo + hi) // 2
        if cp_jid[mid] < jid:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < len(cp_jid) and cp_jid[lo] == jid else -1


if plan_kernel.njit is not None:
    _find_copy = plan_kernel.njit(cache=False)(_find_copy)
'''


def load(tag: str, copying: bool):  # noqa: ANN201
    """This tree's pass kernel on its own plan_kernel and fit_cache, compiled uncached; with
    ``copying`` its ``_pass`` takes the copies (five arrays after ``fc``) and skips their searches."""
    mods = {}
    for name in ("plan_kernel", "fit_cache", "pass_kernel"):
        path = f"{TREE}/asad/slurm/sim/{name}.py"
        src = open(path).read().replace("cache=True", "cache=False")
        src = re.sub(r"^from asad\.slurm\.sim import .*$", "", src, flags=re.M)
        src = src.replace("    drop_stale_cache(", "    (lambda *a: None)(")
        if name == "pass_kernel" and copying:
            assert src.count(CALL) == 1 and src.count("pj0, plan_all, fc):") == 1
            src = src.replace(CALL, COPY)
            src = src.replace("pj0, plan_all, fc):", "pj0, plan_all, fc, cp_jid, cp_start, cp_off, cp_len, cp_nodes):")
            head, tail = src.split("\n\ndef _pass(", 1)
            src = head + FIND + "\n\ndef _pass(" + tail
        mod = types.ModuleType(f"{name}_{tag}")
        mod.__file__ = path
        mod.__dict__.update(mods)
        sys.modules[mod.__name__] = mod
        exec(compile(src, path, "exec"), mod.__dict__)  # noqa: S102 - this tree's own source, to time it
        mods[name] = mod
    return mods["pass_kernel"]


def copies_of(entries: list) -> tuple:
    """(job ids sorted, starts, offsets, lengths, nodes) of one pass's copied answers."""
    entries = sorted(entries, key=lambda e: e[0])
    jid = np.array([e[0] for e in entries], dtype=np.int64)
    start = np.array([e[1] for e in entries], dtype=np.float64)
    lens = np.array([len(e[2]) for e in entries], dtype=np.int64)
    off = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64) if len(lens) else np.empty(0, np.int64)
    nodes = np.concatenate([e[2] for e in entries]).astype(np.int64) if entries else np.empty(0, np.int64)
    return jid, start, off, lens, nodes


def runner(module, extra: list | None):  # noqa: ANN001, ANN201
    """The kernel with a fit-time cache of its own kept from pass to pass (as ``run_pass``); with
    ``extra`` (per pass, the copies' arrays) called with them."""
    cache = module.fit_cache.FitCache(0)

    def run(i, *a):  # noqa: ANN001, ANN002, ANN202
        nonlocal cache
        if cache.n != len(a[9]):
            cache = module.fit_cache.FitCache(len(a[9]))
        cache.note_pass(a[9], a[10], a[18:23])
        if extra is None:
            return module.backfill_pass(*a, cache.arrays)
        return module.backfill_pass(*a, cache.arrays, *extra[i])
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls")
    parser.add_argument("copies")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with open(args.calls, "rb") as fh:
        recorded = pickle.load(fh)
    with open(args.copies, "rb") as fh:
        copies = pickle.load(fh)
    calls = recorded["calls"]
    extra = [copies_of(copies.get(i, [])) for i in range(len(calls))]
    modules = [load("full", False), load("copy", True)]
    extras = [None, extra]
    ok = True
    for module, ex in zip(modules, extras):
        run = runner(module, ex)
        digest = hashlib.sha256()
        for i, a in enumerate(calls):
            replay._add(digest, run(i, *replay._copies(a)))
        ok = ok and digest.hexdigest()[:16] == recorded["digest"]
    times = [[[] for _ in calls] for _ in modules]
    for r in range(args.rounds):
        runs = [runner(m, ex) for m, ex in zip(modules, extras)]
        for i, a in enumerate(calls):
            inputs = [replay._copies(a), replay._copies(a)]
            for k in ((0, 1) if (r + i) % 2 else (1, 0)):
                t0 = time.process_time()
                runs[k](i, *inputs[k])
                times[k][i].append(time.process_time() - t0)
    n = max(len(calls), 1)
    mins = [sum(min(v) for v in t) / n * 1e3 for t in times]
    meds = [sum(sorted(v)[len(v) // 2] for v in t) / n * 1e3 for t in times]
    n_copied = sum(len(v) for v in copies.values())
    print(f"{len(calls)} passes x {args.rounds} rounds, {n_copied} searches copied; CPU ms a pass: searched"
          f" {mins[0]:.3f} (medians {meds[0]:.3f}), copied {mins[1]:.3f} (medians {meds[1]:.3f});"
          f" ceiling {mins[0] / mins[1]:.3f}x (medians {meds[0] / meds[1]:.3f}x); both the recorded digest: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
