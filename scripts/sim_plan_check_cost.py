"""What the largest part of an incremental planner's test would cost beside the plan search it
replaces, on real inputs: every plan search of a few recorded passes (``sim_pass_replay.py
capture``) is captured with its arguments, and the certificate's first step is timed on them
(compiled, one loop over all of them, CPU time, the minimum of ``--reps`` rounds; compare with the
~10 us a copied search costs in the kernel, ``sim_plan_reuse_ceiling.py``) (``sim_plan_certificate.py``): the first window made again at the new
clock (the held nodes and ``later_start`` from one pass over the merged spans and the cap's
bisection) and compared with the previous pass's held nodes, kept as a sorted list.

    python scripts/sim_plan_check_cost.py passes.pkl --passes 3 --reps 20

The previous pass's first window is stood in for by the same search's window 30 s earlier (the
passes' spacing), so the comparison does the same work as in a real test (it usually finds the
same held nodes). Why: the certificate pays only if its test and records cost ≤ ~1.2 µs a search
(docs/results/sim.md, eighth session); this measures the part that scales with the spans.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_plan_certificate as cert  # noqa: E402

from asad.slurm.sim import fit_cache, plan_kernel  # noqa: E402
from asad.slurm.sim.plan_maps import _cap_sorted  # noqa: E402

STEP_S = 30.0  # the recorded passes' spacing


def _held(sp_b, sp_e, sp_n, bounds, t, limit, n, out):  # noqa: ANN001, ANN202
    """The held nodes of the window [t, t + limit] into ``out`` (sorted, marked in one pass over
    the spans), their count, and the window's ``later_start``."""
    mark = np.zeros(n, dtype=np.bool_)
    cap = _cap_sorted(bounds, t, t + limit)
    later = np.inf
    for i in range(len(sp_b)):
        if sp_b[i] <= t + limit and sp_e[i] > t:
            mark[sp_n[i]] = True
            if sp_e[i] < later:
                later = sp_e[i]
    m = 0
    for x in range(n):
        if mark[x]:
            out[m] = x
            m += 1
    return m, (later if later <= cap else np.inf)


def first_window_test(sp_b, sp_e, sp_n, bounds, now, limit, old_mark, old_m, old_later, stamp, tag):  # noqa: ANN001, ANN202
    """The certificate's first step: pass k+1's first window made again and compared with pass k's
    (its held nodes, kept as a mark per node, their count, and ``later_start``); True when they
    agree. One pass over the spans; ``stamp`` (per node, never cleared: ``tag`` differs per test)
    counts each held node once."""
    cap = _cap_sorted(bounds, now, now + limit)
    later = np.inf
    m = 0
    for i in range(len(sp_b)):
        if sp_b[i] <= now + limit and sp_e[i] > now:
            x = sp_n[i]
            if not old_mark[x]:
                return False
            if stamp[x] != tag:
                stamp[x] = tag
                m += 1
            if sp_e[i] < later:
                later = sp_e[i]
    return m == old_m and (later if later <= cap else np.inf) == old_later


def all_tests(sb, se, sn, s_off, bnd, b_off, now, limit, marks, old_m, old_later, stamp):  # noqa: ANN001, ANN202
    """``first_window_test`` for every captured search, inside one compiled loop (a call per search
    from Python would time numba's dispatch of its arguments, not the test)."""
    agree = 0
    for t in range(len(now)):
        a, b = s_off[t], s_off[t + 1]
        agree += first_window_test(sb[a:b], se[a:b], sn[a:b], bnd[b_off[t]:b_off[t + 1]], now[t], limit[t],
                                   marks[t], old_m[t], old_later[t], stamp, stamp[-1] + t + 1)
    stamp[-1] += len(now) + 1
    return agree


if plan_kernel.njit is not None:
    _held = plan_kernel.njit(cache=False)(_held)
    first_window_test = plan_kernel.njit(cache=False)(first_window_test)
    all_tests = plan_kernel.njit(cache=False)(all_tests)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    with open(args.calls, "rb") as fh:
        calls = pickle.load(fh)["calls"][: args.passes]
    searches = []

    def on_search(*a):  # noqa: ANN002, ANN202
        searches.append(tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a))
        return plan_kernel.planned_start_cursor(*a)

    ns = cert.python_pass(on_search)
    for a in calls:
        ns["_pass"](*[x.copy() if isinstance(x, np.ndarray) else x for x in a],
                    fit_cache.FitCache(len(a[9]), slots=0).arrays)
    tests = []
    for a in searches:
        now, limit, n = a[8], a[7], len(a[0])
        sp_b, sp_e, sp_n, bounds = a[22], a[23], a[24], a[20]
        old = np.empty(n, dtype=np.int64)
        old_m, old_later = _held(sp_b, sp_e, sp_n, bounds, now - STEP_S, limit, n, old)
        tests.append((sp_b, sp_e, sp_n, bounds, now, limit, n, old, old_m, old_later, np.empty(n, dtype=np.int64)))
    def cat(i: int, dtype) -> tuple:  # noqa: ANN001
        parts = [t[i] for t in tests]
        off = np.concatenate([[0], np.cumsum([len(x) for x in parts])]).astype(np.int64)
        return np.concatenate(parts).astype(dtype), off

    sb, s_off = cat(0, np.float64)
    se, _ = cat(1, np.float64)
    sn, _ = cat(2, np.int64)
    bnd, b_off = cat(3, np.float64)
    n = tests[0][6]
    marks = np.zeros((len(tests), n), dtype=np.bool_)
    for t, test in enumerate(tests):
        marks[t, test[7][:test[8]]] = True
    stamp = np.zeros(n + 1, dtype=np.int64)  # the last entry: the tag counter (kept out of node range)
    stamp[-1] = 1 << 40
    packed = (sb, se, sn, s_off, bnd, b_off, np.array([t[4] for t in tests]), np.array([t[5] for t in tests]),
              marks, np.array([t[8] for t in tests], dtype=np.int64), np.array([t[9] for t in tests]), stamp)
    agree = all_tests(*packed)
    test_s = []
    for _ in range(args.reps):
        t0 = time.process_time()
        all_tests(*packed)
        test_s.append(time.process_time() - t0)
    k = max(len(searches), 1)
    print(f"{len(searches)} searches from {len(calls)} passes; the first window's test, CPU us a search"
          f" (min of {args.reps}): {min(test_s) / k * 1e6:.3f} (median {sorted(test_s)[len(test_s) // 2] / k * 1e6:.3f});"
          f" mean spans {len(sb) / k:.1f}; the window 30 s earlier held the same nodes in {agree} of {k}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
