"""What each part of the compiled backfill pass costs, on recorded passes (issue 37, eleventh
session): copies of a tree's kernel in which one part is done twice (its result unused, or fed to
shadow arrays) are compiled in one process beside the tree as is and a second copy of it (the
A/A noise), and timed pass by pass as ``sim_pass_replay.py ab`` times two trees (rounds
alternating the order; CPU ms a pass, the sum of each pass's minimum over the rounds). A part's
cost is its doubled copy's time minus the tree's.

- ``search x2``: every plan search (``planned_start_kept``) made twice;
- ``map x2``: every plan's intervals and boundaries also added to shadow arrays (the plans' map
  upkeep: ``add_interval``, ``insert_bound``); ``map x2 (plans added together)`` the same for a
  tree whose pass adds a plan's nodes with ``add_plan`` (thirteenth session; each tree has one);
- ``start-now x2``: the start-now test with plans (the held nodes and ``find_consec``) twice;
- ``shape x2``: the per-shape state (``shape_fits``, ``shape_rank``, ``_ensure_sorted``) twice;
- ``entry x2``: a search's window arrays and first window's spans entered twice (into scratch);
- ``pick scan x2``: the final pick's scan of every node for its usable nodes twice (since the
  fifteenth session only the picks of a job that fits now or was counted scan).

    python scripts/sim_pass_parts_cost.py passes.pkl --rounds 7 [--tree DIR] [--also DIR ...]

``--also`` adds other trees, timed as they are (e.g. a change against the tree). A part whose
text the edit does not find in the tree is left out with a note. Every copy must return the
recorded passes' digest (checked first).

Why: the tenth session knew only that the searches are ~50 % of the kernel; this says which of
the rest (and which parts of the search) a cut should go after.

Since the fourteenth session the pass's work is ``_pass_core``, which allocates nothing
(``numba_cache.LEAF``): ``map x2``'s shadow copies cannot be made there and ``shape x2`` doubles a
block that runs once a shape (the second time finds it done), so only ``search x2``,
``start-now x2`` and ``entry x2`` still apply. Doubling a part also doubled numba's reference
counts around it, which hid them (a third of the kernel); ``sim_kernel_perf.py`` (perf by
function) is the better instrument now.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_pass_replay as spr  # noqa: E402

PLAN_BLOCK = """                n_bnd = plan_kernel.insert_bound(bnd, n_bnd, b)
                n_bnd = plan_kernel.insert_bound(bnd, n_bnd, e)
            for node in nodes:
                ev_nodes[n_evn] = node
                n_evn += 1
                n_iv, n_sp = plan_maps.add_interval(iv_node, iv_b, iv_e, iv_next, node_iv, n_iv, sp_b, sp_e,
                                                    sp_n, se_b, se_e, se_n, n_sp, min_b, node, b, e)
"""
# the same block since the thirteenth session: a plan's nodes added together (plan_maps.add_plan)
PLAN_BLOCK_TOGETHER = """                n_bnd = plan_kernel.insert_bound(bnd, n_bnd, b)
                n_bnd = plan_kernel.insert_bound(bnd, n_bnd, e)
            for node in nodes:
                ev_nodes[n_evn] = node
                n_evn += 1
            n_iv, n_sp = plan_maps.add_plan(iv_node, iv_b, iv_e, iv_next, node_iv, n_iv, sp_b, sp_e,
                                            sp_n, se_b, se_e, se_n, n_sp, min_b, nodes, b, e, fresh)
"""
SEARCH_CALL = """            start, n_nodes = plan_kernel.search_in_pass(
                s_times, s_order, si, free_c, free_m, k, c, m, float(lim), now, horizon, guess_s,
                iv_node, iv_b, iv_e, n_iv, pe, pn, pc, pm, n_p, first_piece, job_ends, n_groups,
                bnd, n_bnd, res, sp_b, sp_e, sp_n, cur_c, cur_m, cur_g, se_b, se_e, se_n, n_sp,
                s_fits, n_fit[si], s_rank, iv_next, node_iv, iwork, bwork, sbits)
"""
HELD_SCAN = """                    n_held = 0
                    for node in range(n):
                        if min_b[node] <= end:
                            held[n_held] = node
                            n_held += 1
                    if nn * cpn <= free_total:
                        n_got = plan_kernel.find_consec_into(free_c, free_m, held[:n_held], nn, cpn,
                                                             mem, iwork2, bwork2)
                        nodes = iwork2[plan_kernel.W_OUT, :n_got]
"""
ENSURE = """            if not s_ok[si]:
                _ensure_sorted(si, s_ok, s_times, s_order, s_sort, sh_c, sh_m,
                               free_c, free_m, pe, pn, pc, pm, n_p, now, sh_slot, fc, head, lst, csr_ok,
                               fit_work)
            t_min"""
SHAPE_FITS = "                n_fit[si] = plan_kernel.shape_fits(s_fits[si], free_c, free_m, c, m)\n"
WINDOW_START = """    nb = 0
    held_fit = 0
    start_res = now
    last_start = now
"""
ENTRY_TWICE = """    n_over2 = np.zeros(n, dtype=np.int64)
    avail2 = np.ones(n, dtype=np.bool_)
    bits2 = np.empty(max((n + 63) // 64, 1), dtype=np.uint64)
    _bits_reset(bits2, n)
    held2 = 0
    for i2 in range(ns):
        if span_b[i2] > now + limit:
            break
        node2 = span_n[i2]
        n_over2[node2] += 1
        if n_over2[node2] == 1:
            avail2[node2] = False
            held2 += fits_now[node2]
            _bits_clear(bits2, rank[node2])
    if held2 < 0 or bits2[0] == 7 or avail2[0] and n_over2[0] > 99999:
        raise RuntimeError("unused")
"""
PICK_SCAN = """            for i in range(n):
                if avail[i] and ((by == -INF and free_c[i] >= cpn and free_m[i] >= mem)
                                 or (counted and free_then[i] >= cpn and free_m_then[i] >= mem)):
                    idx[m] = i
                    m += 1
"""
SHADOWS = ("    held = np.empty(n, dtype=np.int64)\n",
           "    held = np.empty(n, dtype=np.int64)\n"
           "    iv_node2 = iv_node.copy(); iv_b2 = iv_b.copy(); iv_e2 = iv_e.copy(); iv_next2 = iv_next.copy()\n"
           "    node_iv2 = node_iv.copy(); sp_b2 = sp_b.copy(); sp_e2 = sp_e.copy(); sp_n2 = sp_n.copy()\n"
           "    se_b2 = se_b.copy(); se_e2 = se_e.copy(); se_n2 = se_n.copy(); min_b2 = min_b.copy(); bnd2 = bnd.copy()\n"
           "    n_iv2 = 0\n    n_sp2 = 0\n    n_bnd2 = 0\n")


def _shadowed(block: str) -> str:
    """The plan block with every map update also made on the shadow arrays."""
    out = []
    for line in block.splitlines(keepends=True):
        out.append(line)
        if "insert_bound(bnd, n_bnd," in line:
            out.append(line.replace("n_bnd", "n_bnd2").replace("(bnd,", "(bnd2,"))
    text = "".join(out)
    if "add_plan" in block:
        return text + ("            n_iv2, n_sp2 = plan_maps.add_plan(iv_node2, iv_b2, iv_e2, iv_next2, node_iv2, n_iv2,"
                       " sp_b2, sp_e2, sp_n2, se_b2, se_e2, se_n2, n_sp2, min_b2, nodes, b, e, fresh)\n")
    call = ("                n_iv2, n_sp2 = plan_maps.add_interval(iv_node2, iv_b2, iv_e2, iv_next2, node_iv2, n_iv2,"
            " sp_b2, sp_e2, sp_n2, se_b2, se_e2, se_n2, n_sp2, min_b2, node, b, e)\n")
    return text + call


# part -> (file, [(text, replacement)])
PARTS = {
    "search x2": ("pass_kernel.py", [(SEARCH_CALL, SEARCH_CALL + SEARCH_CALL)]),
    "map x2": ("pass_kernel.py", [SHADOWS, (PLAN_BLOCK, _shadowed(PLAN_BLOCK))]),
    "map x2 (plans added together)": ("pass_kernel.py", [SHADOWS, (PLAN_BLOCK_TOGETHER,
                                                                   _shadowed(PLAN_BLOCK_TOGETHER))]),
    "start-now x2": ("pass_kernel.py", [(HELD_SCAN, HELD_SCAN + HELD_SCAN)]),
    "shape x2": ("pass_kernel.py", [(SHAPE_FITS, SHAPE_FITS + SHAPE_FITS
                                     + "                plan_kernel.shape_rank(s_order[si], s_rank[si])\n"),
                                    (ENSURE, ENSURE.replace("            t_min", "") + ENSURE)]),
    "entry x2": ("plan_kernel.py", [(WINDOW_START, ENTRY_TWICE + WINDOW_START)]),
    "pick scan x2": ("plan_kernel.py", [(PICK_SCAN, PICK_SCAN + "            m = 0\n" + PICK_SCAN)]),
}


def _variant(tree: str, work: str, name: str, file: str, edits: list) -> str | None:
    dest = os.path.join(work, name.replace(" ", "_"))
    shutil.copytree(os.path.join(tree, "asad"), os.path.join(dest, "asad"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    path = os.path.join(dest, "asad", "slurm", "sim", file)
    src = open(path).read()
    for old, new in edits:
        if old not in src:
            return None
        src = src.replace(old, new, 1)
    open(path, "w").write(src)
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--also", nargs="*", default=[])
    parser.add_argument("--parts", nargs="*", default=list(PARTS))
    args = parser.parse_args()
    with open(args.calls, "rb") as fh:
        recorded = pickle.load(fh)
    calls = recorded["calls"]
    work = tempfile.mkdtemp(prefix="pass_parts_")
    trees = {"as is": args.tree, "as is (again)": _variant(args.tree, work, "again", "pass_kernel.py", [])}
    for name in args.parts:
        made = _variant(args.tree, work, name, *PARTS[name])
        if made is None:
            print(f"({name}: its text is not in {args.tree})")
        else:
            trees[name] = made
    for other in args.also:
        trees[other] = other
    mods = {name: spr._load_kernel(t, f"v{i}") for i, (name, t) in enumerate(trees.items())}
    for name, mod in mods.items():
        kernel, digest = spr._runner(mod), hashlib.sha256()
        for a in calls:
            spr._add(digest, kernel(*spr._copies(a)))
        if digest.hexdigest()[:16] != recorded["digest"]:
            print(f"{name}: NOT the recorded digest")
            return 1
    names = list(mods)
    times = dict(zip(names, spr.time_rotated([mods[name] for name in names], calls, args.rounds)))
    n = max(len(calls), 1)
    base = sum(min(v) for v in times["as is"]) / n * 1e3
    print(f"{len(calls)} passes x {args.rounds} rounds; CPU ms a pass (sum of minima / n), every copy the"
          f" recorded digest {recorded['digest']}:")
    print("| copy | ms a pass | − as is | share of the kernel | as is / copy |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        ms = sum(min(v) for v in times[name]) / n * 1e3
        print(f"| {name} | {ms:.3f} | {ms - base:+.3f} | {(ms - base) / base:+.1%} | {base / ms:.3f} |")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
