"""What each part of a plan search costs, on the searches of recorded passes (issue 37, ninth
session): every plan search of the first ``--passes`` passes (``sim_pass_replay.py capture``) is
captured with its arguments, then timed through variants of a tree's
``plan_kernel._planned_start_cursor`` made by editing its source, each compiled in this process:

- ``as is``; ``as is (again)``: the A/A noise;
- ``setup x2``: the per-search setup (fits-now marks, ranks, the window's arrays) made twice;
- ``walk x2``: every will-run walk made twice;
- ``pick x2``: every node pick (candidates, ``_consec_pick``, the clash test) made twice;
- ``noop``: a compiled function taking the same arguments and returning at once (the call's
  own cost from Python, in every other figure too).

Each variant's CPU time is the sum over searches of the minimum of ``--reps`` calls, rounds
alternating the variants; a doubled part's cost is its variant minus ``as is``.

    python scripts/sim_plan_search_cost.py passes.pkl --passes 20 --reps 5 [--tree DIR]

Why: the walk memo saved 72 % of the walks and made the kernel slower (``ab`` 0.954 against an
A/A of 1.005), so the walks were not where the time is; this says where it is.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _plan_search_legacy as legacy  # noqa: E402
import sim_plan_search_profile as prof  # noqa: E402


def _variant(tree: str, name: str, edit) -> types.FunctionType:  # noqa: ANN001
    path = f"{tree}/asad/slurm/sim/plan_kernel.py"
    src = open(path).read().replace("cache=True", "cache=False").replace("njit(**LEAF)", "njit(cache=False, _nrt=False)")
    src = edit(src)
    mod = types.ModuleType(f"plan_kernel_{name}")
    mod.__file__ = path
    sys.modules[mod.__name__] = mod
    # an older tree's search (or the window edits below) calls the heap and the tree, which
    # plan_kernel no longer re-exports
    mod.__dict__.update({k: getattr(legacy, k) for k in ("_heap_push", "_heap_pop", "_tree_add", "_tree_select")})
    exec(compile(src, path, "exec"), mod.__dict__)  # noqa: S102 - our own source, to time it
    return mod.planned_start_cursor


def _twice(src: str, start: str, stop: str) -> str:
    """Repeat the lines of the search from the one holding ``start`` up to the one before ``stop``."""
    body = src[src.index("def _planned_start_cursor("):]
    a = body.index(start)
    a = body.rindex("\n", 0, a) + 1
    b = body.index(stop, a)
    b = body.rindex("\n", 0, b) + 1
    block = body[a:b]
    return src.replace(body, body[:a] + block + block + body[b:], 1)


def _tree_twice(src: str) -> str:
    """The Fenwick tree of usable fit times built twice (into itself: the second build starts
    from the first's sums, so it is cleared first; the same work as a build, plus the clear)."""
    a = "                built = True\n"
    if a not in src:
        raise ValueError(a)
    b = ("                built = True\n                tree[:] = 0\n                for p in range(n):\n"
         "                    tree[p + 1] = avail[by_time[p]]\n                for i in range(1, n + 1):\n"
         "                    up = i + (i & -i)\n                    if up <= n:\n                        tree[up] += tree[i]\n")
    return src.replace(a, b, 1)


def _window_twice(src: str, heap_only: bool = False) -> str:
    """The tries' window kept twice: a second heap, counts and Fenwick tree fed the same spans
    (its answers unused), so the window's upkeep is paid twice."""
    body = src[src.index("def _planned_start_cursor("):]
    new = body
    for a, b in [("    heap_e = np.empty(ns)\n", "    heap_e2 = np.empty(ns)\n    heap_n2 = np.empty(ns, dtype=np.int64)\n    n_heap2 = 0\n    n_over2 = np.zeros(n, dtype=np.int64)\n    tree2 = np.zeros(n + 1, dtype=np.int64)\n    heap_e = np.empty(ns)\n"),
                 ("            n_heap = _heap_push(heap_e, heap_n, n_heap, span_e[nb], node)\n",
                  "            n_heap = _heap_push(heap_e, heap_n, n_heap, span_e[nb], node)\n            n_heap2 = _heap_push(heap_e2, heap_n2, n_heap2, span_e[nb], node)\n            n_over2[node] += 1\n            if built:\n                _tree_add(tree2, rank[node] + 1, -1)\n"),
                 ("            n_heap = _heap_pop(heap_e, heap_n, n_heap)\n",
                  "            n_heap = _heap_pop(heap_e, heap_n, n_heap)\n            n_heap2 = _heap_pop(heap_e2, heap_n2, n_heap2)\n            n_over2[node] -= 1\n            if built:\n                _tree_add(tree2, rank[node] + 1, 1)\n")]:
        if a not in new:
            raise ValueError(a)
        if heap_only:
            b = "\n".join(x for x in b.split("\n") if "n_over2" not in x and "built" not in x and "tree2" not in x)
        new = new.replace(a, b, 1)
    return src.replace(body, new, 1)


EDITS = {
    "as is": lambda s: s,
    "as is (again)": lambda s: s,
    "setup x2": lambda s: _twice(s, "fits_now = np.empty(n", "# the spans that entered"),
    "walk x2": lambda s: _twice(s, "at, by, gone, counted = _will_run_kth(", "if at == -INF:"),
    "window x2": lambda s: _window_twice(s),
    "heap x2": lambda s: _window_twice(s, heap_only=True),
    "arrays x2": lambda s: _twice(s, "heap_e = np.empty(ns)", "top = 1"),
    "tree build x2": lambda s: _tree_twice(s),
    "pick x2": lambda s: _twice(s, "_free_after(cur_c, cur_m, cur_g, gone", "if clash:"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls")
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--vs", help="another tree whose search is timed beside (its 'as is')")
    args = parser.parse_args()
    with open(args.calls, "rb") as fh:
        calls = pickle.load(fh)["calls"][: args.passes]
    searches = prof.searches_of(calls)
    fns = {}
    for name, e in EDITS.items():
        try:
            fns[name] = _variant(args.tree, name.replace(" ", "_").replace("(", "").replace(")", ""), e)
        except ValueError:  # the part is not spelled as this script expects in that tree
            print(f"({name}: not made for {args.tree})")
    if args.vs:
        fns["other tree as is"] = _variant(args.vs, "other", lambda s: s)
    from numba import njit

    @njit
    def noop(*a):  # noqa: ANN002, ANN202
        return a[7]
    inputs = [tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a) for a in searches]
    # each tree's search takes the arguments it has (the ninth session's adds the spans in end
    # order behind the others: a search of an older tree is given the first ones)
    n_args = {name: fn.py_func.__code__.co_argcount for name, fn in fns.items()}
    for name, fn in list(fns.items()):
        fns[name] = (lambda f, m: (lambda *a: f(*a[:m])))(fn, n_args[name])
    want = [fns["as is"](*a) for a in inputs]
    for name, fn in fns.items():  # compile, and check the variants give the same answers
        for a, w in zip(inputs, want):
            got = fn(*a)
            assert got[0] == w[0] and list(got[1]) == list(w[1]), name
    fns["noop"] = noop
    best = {name: np.full(len(inputs), np.inf) for name in fns}
    names = list(fns)
    for r in range(args.reps):
        order = names[r % len(names):] + names[: r % len(names)]
        for i, a in enumerate(inputs):
            for name in order:
                fn = fns[name]
                t0 = time.process_time_ns()
                fn(*a)
                best[name][i] = min(best[name][i], time.process_time_ns() - t0)
    n = len(inputs)
    base = best["as is"].sum() / n / 1e3
    print(f"{len(calls)} passes, {n} searches, min of {args.reps} calls each; CPU us a search:")
    for name in names:
        us = best[name].sum() / n / 1e3
        print(f"| {name} | {us:.2f} | {us - base:+.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
