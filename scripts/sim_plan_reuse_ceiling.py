"""The most incremental planning could save on the compiled pass with a given certificate: the
recorded passes replayed through this tree's pass kernel in one process, as it is and with some
searches answered by a copy instead of the plan search (``sim_plan_certificate.py --copies``: the
certified ones, i.e. a certificate that costs nothing; ``--copies-equal``: every answer equal to
the previous pass's, an oracle's; ``--copies-all``: every search, the searches' whole cost).
Timed as ``sim_pass_replay.py ab`` times two kernels (pass by pass, the kernels' order rotated
from pass to pass, each round from a cold fit-time cache; the sum over the passes of each pass's
minimum, medians beside), and with an A/A pair: the kernel as it is compiled twice, timed against
itself. The fit-time cache's ``note_pass`` (Python, the same in every variant) is outside the
clock: the figure is the compiled kernel's. Every variant must return the recorded run's digest
(the copies are the searches' own answers).

    python scripts/sim_plan_reuse_ceiling.py passes.pkl --copies cert=copies.pkl --copies all=all.pkl --rounds 7

The kernel is this tree's ``pass_kernel`` source (read through the installed package's module,
so a search moved to another module is followed), compiled uncached, with the plan search call
wrapped by a lookup of the copies; its callees are the package's own compiled functions.

Why: the certificate's share of searches times the searches' share of the kernel (measured by
doubling) is arithmetic; this measures it on the kernel itself, before anything is built.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import sys
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_pass_replay as replay  # noqa: E402

# (the pass calls the search with whole arrays and their lengths since the fourteenth session;
# the search's nodes come back in its scratch's W_OUT row, and _pass_core allocates nothing)
CALL = "            start, n_nodes = plan_kernel.search_in_pass("
COPY = """            ci = _find_copy(cp_jid, j_id[pj_i])
            if ci >= 0:
                start = cp_start[ci]
                n_nodes = cp_len[ci]
                for t in range(n_nodes):
                    iwork[plan_kernel.W_OUT, t] = cp_nodes[cp_off[ci] + t]
            else:
                start, n_nodes = plan_kernel.search_in_pass("""
EXTRA = "cp_jid, cp_start, cp_off, cp_len, cp_nodes"
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
    _find_copy = plan_kernel.njit(cache=False, _nrt=False)(_find_copy)
'''


def load(tag: str, copying: bool):  # noqa: ANN201
    """This tree's pass kernel compiled uncached from its source (its imports of the other
    kernel modules kept: the package's compiled functions); with ``copying`` its ``_pass`` takes
    the copies (five arrays after ``fc``) and skips their searches."""
    from asad.slurm.sim import pass_kernel

    path = pass_kernel.__file__
    src = open(path).read().replace("cache=True", "cache=False").replace("njit(**LEAF)", "njit(cache=False, _nrt=False)")
    src = src.replace("    drop_stale_cache(", "    (lambda *a: None)(")
    if copying:
        core_call, core_def = "sbits, iwork2, bwork2, fit_work)", "               fit_work):"
        assert src.count(CALL) == 1 and src.count("pj0, plan_all, fc):") == 1
        assert src.count(core_call) == 1 and src.count(core_def) == 1
        src = src.replace(CALL, COPY)
        src = src.replace("pj0, plan_all, fc):", f"pj0, plan_all, fc, {EXTRA}):")
        src = src.replace(core_call, f"sbits, iwork2, bwork2, fit_work, {EXTRA})")
        src = src.replace(core_def, f"               fit_work, {EXTRA}):")
        head, tail = src.split("\n\ndef _pass(", 1)
        src = head + FIND + "\n\ndef _pass(" + tail
    mod = types.ModuleType(f"pass_kernel_{tag}")
    mod.__file__ = path
    sys.modules[mod.__name__] = mod  # (dataclasses look their module up there)
    exec(compile(src, path, "exec"), mod.__dict__)  # noqa: S102 - this tree's own source, to time it
    return mod


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
    ``extra`` (per pass, the copies' arrays) called with them. Returns (outputs, CPU s of the
    kernel alone)."""
    from asad.slurm.sim import fit_cache

    cache = fit_cache.FitCache(0)

    def run(i, *a):  # noqa: ANN001, ANN002, ANN202
        nonlocal cache
        if cache.n != len(a[9]):
            cache = fit_cache.FitCache(len(a[9]))
        cache.note_pass(a[9], a[10], a[18:23])
        t0 = time.process_time()
        out = (module.backfill_pass(*a, cache.arrays) if extra is None
               else module.backfill_pass(*a, cache.arrays, *extra[i]))
        return out, time.process_time() - t0
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls")
    parser.add_argument("--copies", action="append", default=[], metavar="NAME=FILE",
                        help="a pickle of copies per pass (sim_plan_certificate.py --copies*), timed as NAME")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    with open(args.calls, "rb") as fh:
        recorded = pickle.load(fh)
    calls = recorded["calls"]
    full_a, full_b, copy = load("full_a", False), load("full_b", False), load("copy", True)
    variants = [("as it is", full_a, None), ("as it is, A/A copy", full_b, None),
                ("copy kernel, nothing copied", copy, [copies_of([]) for _ in calls])]
    n_copied = {}
    for spec in args.copies:
        name, path = spec.split("=", 1)
        with open(path, "rb") as fh:
            copies = pickle.load(fh)
        n_copied[name] = sum(len(v) for v in copies.values())
        variants.append((f"copied: {name}", copy, [copies_of(copies.get(i, [])) for i in range(len(calls))]))
    ok = {}
    for name, module, ex in variants:
        run = runner(module, ex)
        digest = hashlib.sha256()
        for i, a in enumerate(calls):
            replay._add(digest, run(i, *replay._copies(a))[0])
        ok[name] = digest.hexdigest()[:16] == recorded["digest"]
    nv = len(variants)
    times = [[[] for _ in calls] for _ in variants]
    for r in range(args.rounds):
        runs = [runner(m, ex) for _, m, ex in variants]
        for i, a in enumerate(calls):
            inputs = [replay._copies(a) for _ in variants]
            for j in range(nv):  # the order rotated from pass to pass and round to round
                k = (j + i + r) % nv
                times[k][i].append(runs[k](i, *inputs[k])[1])
    n = max(len(calls), 1)
    mins = [sum(min(v) for v in t) / n * 1e3 for t in times]
    meds = [sum(sorted(v)[len(v) // 2] for v in t) / n * 1e3 for t in times]
    fig = {"passes": len(calls), "rounds": args.rounds, "copied": n_copied, "variants": {}}
    print(f"{len(calls)} passes x {args.rounds} rounds; CPU ms a pass of the kernel (sum of each pass's minimum;"
          f" medians); ratio to 'as it is'; the recorded digest")
    for (name, _, _), mn, md in zip(variants, mins, meds):
        fig["variants"][name] = {"ms_min": round(mn, 4), "ms_median": round(md, 4), "ratio_min": round(mins[0] / mn, 4),
                                 "ratio_median": round(meds[0] / md, 4), "digest_ok": ok[name]}
        print(f"  {name:32s} {mn:7.3f} ({md:7.3f})  {mins[0] / mn:6.3f}x ({meds[0] / md:6.3f}x)  {ok[name]}")
    print(json.dumps(fig))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(fig, fh, indent=1)
    return 0 if all(ok.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
