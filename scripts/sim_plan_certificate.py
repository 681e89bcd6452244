"""Incremental planning, measured: how many of a backfill pass's plan searches a sound certificate
could copy from the previous pass, on passes recorded by ``sim_pass_replay.py capture``.

    python scripts/sim_plan_certificate.py passes.pkl [--json out.json]

Every recorded pass is run again through the pass kernel's own source (``pass_kernel._pass``, as
Python) with each plan search (``plan_kernel.planned_start_cursor``) made by a copy of it that
writes down what it read, try by try (the tries' windows, the cap, the held nodes, the fit-now
count, the k-th fit time, the will-run walk's reads of the running jobs, the node pick's inputs
and the clash test). The compiled search is called too, and must agree (exit 1 if not); so must
the passes' digest.

For each search of pass k+1 whose job was searched in pass k too, the certificate is the test an
incremental planner would make before copying pass k's answer. It is sound for *this* search: the
search is a deterministic chain of tries (start_res = now, then each try either ends with a plan
or moves start_res forward), so if every value each of pass k's tries read is the same in pass
k+1, pass k+1's search makes the same tries with the same outcomes. The differences between the
two searches' inputs are taken as sets, and each try is checked against them:

* the clock: pass k+1's first try starts at its own ``now``: no plan boundary may lie where the
  window moved (begins in (now+L, now'+L], ends in (now, now'])); every k-th fit time the search
  read must be after now' (the nodes that fit now have fit time ``now``), every will-run batch end
  it read after now' (``by = max(last, now)``, overdue jobs), and a plan at ``now`` itself is
  never copied;
* the earlier plans (node intervals present in one pass only, what re-planned or new jobs above
  changed): none may overlap a try's window up to its cap, bring a boundary into the cap's reach,
  or meet the chosen nodes in the clash test;
* the nodes whose free cores or memory, or fit time for the job's shape (other than by the clock),
  differ: where usable in a try, none may change the fit-now count's verdict, the k-th fit time,
  a counted will-run batch's verdict, or the node pick's candidates and their free cores;
* the running jobs (groups of pieces present in one pass only: ends, starts): all must end after
  everything the will-run walks read.

Every certified search's answer is then compared with the full search's (it must be equal: exit 1
if not), and the shares and why the others failed are printed. The check's own cost in an
implementation is O(tries x (changed nodes + changed intervals)) a plan, besides the records.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from asad.slurm.sim import fit_cache, pass_kernel, plan_kernel
from asad.slurm.sim.plan_maps import _cap_sorted

INF = np.inf
BESIDE: Counter = Counter()  # which of the walk's reads an added running job met first
WIN = plan_kernel.WILL_RUN_WINDOW_S


# ---- the plan search, writing down its reads (planned_start_cursor / _will_run_kth) ------------

def _usable(j, avail, p_node, first_piece, n_jobs, n_pieces):  # noqa: ANN001, ANN202
    stop = first_piece[j + 1] if j + 1 < n_jobs else n_pieces
    return bool(avail[p_node[first_piece[j]:stop]].any())


def will_run_kth(kth, avail, k, now, guess_s, p_node, first_piece, job_ends, free_c, free_m,
                 p_c, p_m, cpn, mem, log):  # noqa: ANN001, ANN202
    """plan_kernel._will_run_kth, noting in ``log``: ``read`` the running jobs (indices in end
    order; ``len(job_ends)``: past the last) it read, ``batches`` each batch's bisection bound and
    edges, ``lasts`` the batch ends it compared with ``now``, ``counted`` the first job not gone
    and the count of each counted-fit test, ``pos`` that of its answer."""
    n_jobs = len(job_ends)
    n_pieces = len(p_node)
    read: set = set()
    log.update(read=read, lasts=[], counted=[], pos=None, first_use=n_jobs, batches=[])

    why_read: dict = {}  # index -> what read it (for the figures: which reads an added job met)
    log["why_read"] = why_read

    def use(j, tag="usable"):  # noqa: ANN001, ANN202
        read.add(j)
        why_read.setdefault(j, tag)
        return _usable(j, avail, p_node, first_piece, n_jobs, n_pieces)

    if n_jobs == 0 or kth == INF:
        read.add(n_jobs)
        return -INF, 0.0, 0, False
    first_use = 0
    while first_use < n_jobs and not use(first_use, "first usable"):
        first_use += 1
    read.add(first_use)
    log["first_use"] = first_use
    if first_use == n_jobs:
        return -INF, 0.0, 0, False
    none_from = n_jobs
    first = job_ends[first_use]
    anchor = first + (WIN - first % WIN)
    window = WIN
    pos = 0
    while True:
        lim = anchor + window
        q = max(pos, int(np.searchsorted(job_ends, lim, side="right")))
        read.add(q)  # the first end after lim: where the bisection stopped
        if q > 0:
            read.add(q - 1)
        last_i = -1
        batch = {"pos": pos, "lim": lim, "q": q, "direct": False, "hi": q}
        log["batches"].append(batch)
        if q > pos and use(q - 1):
            last_i = q - 1
            batch["direct"] = True
        else:
            j = q
            while j < none_from and not use(j, "forward"):
                j += 1
            read.add(j)
            batch["hi"] = j
            if j < none_from:
                last_i = j
            else:
                batch["hi"] = n_jobs
                read.add(n_jobs)  # "no usable job from here on"
                none_from = min(none_from, q)
                j = q - 2
                while j >= pos and not use(j, "backward"):
                    j -= 1
                if j >= pos:
                    last_i = j
        if last_i < 0:
            return -INF, 0.0, 0, False
        read.add(last_i)
        pos = last_i + 1
        read.add(pos)
        batch["last"], batch["pos_after"] = last_i, pos
        if pos < n_jobs:
            window *= 2
            while job_ends[pos] > anchor + window:
                window *= 2
        last = job_ends[last_i]
        log["lasts"].append(last)
        by = max(last, now)
        if kth <= by:
            gone = first_piece[pos] if pos < n_jobs else n_pieces
            counted = pos < n_jobs and job_ends[pos] <= by
            if counted:
                fc = free_c.copy()
                fm = free_m.copy()
                np.add.at(fc, p_node[:gone], p_c[:gone])
                np.add.at(fm, p_node[:gone], p_m[:gone])
                n_fit = int((avail & (fc >= cpn) & (fm >= mem)).sum())
                log["counted"].append((pos, n_fit))
                counted = n_fit >= k
                if not counted:
                    if pos >= n_jobs:
                        return -INF, 0.0, 0, False
                    continue
            if last <= now:
                last = max(last + guess_s, now + 1.0)
            log["pos"] = pos
            return last, by, gone, counted
        if pos >= n_jobs:
            return -INF, 0.0, 0, False


def search(times, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s, iv_node, iv_b, iv_e,
           p_node, p_c, p_m, first_piece, job_ends, bounds, res, span_b, span_e, span_n):  # noqa: ANN001, ANN202
    """planned_start_cursor, the held nodes found per try from the merged spans (as its per-try
    reference): (start, nodes, record). The record: per try its window, cap, held nodes, fit-now
    count, k-th fit time, walk reads and node pick; ``stop`` how the search ended."""
    n = len(times)
    fits_now = (free_c >= cpn) & (free_m >= mem)
    n_fits_now = int(fits_now.sum())
    tries = []
    rec = {"tries": tries, "stop": "loop"}
    start_res = now
    for _ in range(1000):
        if start_res > horizon:
            rec["stop"] = "horizon"
            rec["last_T"] = start_res
            break
        end_time = start_res + limit
        over = (span_b <= end_time) & (span_e > start_res)
        avail = np.ones(n, dtype=bool)
        avail[span_n[over]] = False
        cap = _cap_sorted(bounds, start_res, end_time)
        u = len(bounds)
        cap_last = u > 0 and bounds[u - 1] > start_res and int(np.searchsorted(bounds, end_time, side="right")) + 1 >= u
        # later_start: the first span end after start_res, entered or not (planner.later_start
        # since f37o: a span filling the segment after the window counts too), if by the cap
        ends_after = span_e[span_e > start_res]
        later = float(ends_after.min()) if len(ends_after) and ends_after.min() <= cap else INF
        fitcount = int((fits_now & avail).sum())
        tr = {"T": start_res, "cap": cap, "cap_last": cap_last, "later": later, "avail": avail,
              "fitcount": fitcount, "kth": None, "walk": None, "pick": None,
              "exit": "later"}  # how the try ended: moved to later_start (else set below)
        tries.append(tr)
        if fitcount >= k:
            at, by, gone, counted = now, -INF, 0, False
            tr["kind"] = "now"
        else:
            kth = INF
            if int(avail.sum()) >= k:
                kth = float(np.sort(times[avail])[k - 1])
            tr["kth"] = kth
            if kth > later:
                tr["kind"] = "jump"
                start_res = later
                continue
            tr["kind"] = "walk"
            tr["walk"] = {}
            at, by, gone, counted = will_run_kth(kth, avail, k, now, guess_s, p_node, first_piece, job_ends,
                                                 free_c, free_m, p_c, p_m, cpn, mem, tr["walk"])
        if at == -INF:
            if later == INF:
                rec["stop"] = "none"
                tr["exit"] = "none"
                break
            start_res = later
            continue
        start = max(at, start_res)
        if start > later:
            start_res = later
            continue
        cur_c = free_c.copy()
        cur_m = free_m.copy()
        np.add.at(cur_c, p_node[:gone], p_c[:gone])
        np.add.at(cur_m, p_node[:gone], p_m[:gone])
        if by == -INF:
            cand = avail & fits_now
        elif counted:
            cand = avail & (cur_c >= cpn) & (cur_m >= mem)
        else:
            cand = avail & (times <= by)
        idx = np.flatnonzero(cand).astype(np.int64)
        nodes = plan_kernel.consec_pick(idx, cur_c[idx].astype(np.int64), k, cpn)
        b_res = (start // res) * res
        e_res = ((start + limit) // res) * res
        hit = np.isin(iv_node, nodes) & (iv_e > b_res) & (iv_b < e_res)
        tr["pick"] = {"by": by, "counted": counted, "gone": gone, "pos": tr["walk"]["pos"] if tr["walk"] else 0,
                      "start": start, "b_res": b_res,
                      "e_res": e_res, "nodes": nodes.copy(), "cand": cand}
        if hit.any():
            tr["exit"] = "clash"
            start_res = start if start > start_res else float(iv_e[hit].min())
            continue
        rec["stop"] = "plan"
        tr["exit"] = "plan"
        return start, nodes, rec
    return -INF, np.empty(0, dtype=np.int64), rec


# ---- the pass, as Python, with each search recorded -------------------------------------------

class _PlanKernel:
    """plan_kernel for the pass's source: every name the real one has, but the search recorded."""

    def __init__(self, on_search) -> None:  # noqa: ANN001
        self.on_search = on_search

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(plan_kernel, name)

    def planned_start_cursor(self, *a):  # noqa: ANN002, ANN201
        return self.on_search(*a)

    def planned_start_kept(self, *a):  # noqa: ANN002, ANN201
        # the pass's call from the tenth to the thirteenth session: planned_start_cursor's 31
        # arguments, then the per-shape state the pass keeps
        return self.on_search(*a[:31])

    def search_in_pass(self, times2, by_time2, si, free_c, free_m, k, cpn, mem, limit, now, horizon,  # noqa: ANN001, ANN201
                       guess_s, iv_node, iv_b, iv_e, n_iv, p_end, p_node, p_c, p_m, n_p, first_piece,
                       job_ends, n_groups, bounds, n_bnd, res, span_b, span_e, span_n, cur_c, cur_m,
                       cur_g, end_b, end_e, end_n, n_sp, fits2, n_fits_now, rank2, iv_next, node_iv,
                       iwork, bwork, bits):
        # the pass's call since the fourteenth session: whole arrays with their lengths, the
        # nodes into the scratch's W_OUT row (plan_kernel.search_in_pass)
        start, nodes = self.on_search(
            times2[si], by_time2[si], free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s,
            iv_node[:n_iv], iv_b[:n_iv], iv_e[:n_iv], p_end[:n_p], p_node[:n_p], p_c[:n_p], p_m[:n_p],
            first_piece[:n_groups], job_ends[:n_groups], bounds[:n_bnd], res, span_b[:n_sp],
            span_e[:n_sp], span_n[:n_sp], cur_c, cur_m, cur_g, end_b[:n_sp], end_e[:n_sp], end_n[:n_sp])
        iwork[plan_kernel.W_OUT, :len(nodes)] = nodes
        return start, len(nodes)


def python_pass(on_search):  # noqa: ANN001, ANN201
    """pass_kernel._pass from its own source, run as Python, with the job being planned noted in
    ``CUR[0]`` before each search."""
    src = Path(pass_kernel.__file__).read_text()
    src = src.split("\nif plan_kernel.njit is not None:")[0]
    call = "start, n_nodes = plan_kernel.search_in_pass("
    assert src.count(call) == 1
    src = src.replace(call, "CUR[0] = j_id[pj_i]; " + call)
    ns = {"__name__": "pass_kernel_recorded"}
    exec(compile(src, pass_kernel.__file__, "exec"), ns)  # noqa: S102 - the repository's own source
    # its per-shape loops stay compiled: the source calls them as ``pass_shapes.*``
    ns["plan_kernel"] = _PlanKernel(on_search)
    ns["fit_cache"] = fit_cache
    ns["CUR"] = [None]
    return ns


# ---- the certificate ---------------------------------------------------------------------------

def _groups(pe, pn, pc, pm, first_piece, job_ends):  # noqa: ANN001, ANN202
    """The running jobs as the search sees them: (end, nodes, cores, memory) per group."""
    out = []
    n_g, n_p = len(job_ends), len(pe)
    for g in range(n_g):
        a, b = first_piece[g], (first_piece[g + 1] if g + 1 < n_g else n_p)
        out.append((float(job_ends[g]), tuple(pn[a:b].tolist()), tuple(pc[a:b].tolist()), tuple(pm[a:b].tolist())))
    return out


def _diff(a: list, b: list) -> list:
    ca, cb = Counter(a), Counter(b)
    return list((ca - cb).elements()) + list((cb - ca).elements())


def _added_harms(e: float, usable: bool, w: dict, e_o: np.ndarray, n_jobs: int) -> str:
    """Where a running job that ends at ``e`` and is not in pass k's list would change pass k's
    will-run walk (``w``), or '' if nowhere. ``usable``: it has a piece on a node usable in the
    try. ``e_o``: pass k's running jobs' ends in order, inf appended. Ties count both ways.
    Inserted among pass k's jobs it shifts their indices, which the walk reads only relatively;
    it changes the walk only where the walk looks at one job: before the first usable job (if
    usable: the new anchor), at a batch's last job (a direct batch: as the new last job ending by
    ``lim``; a batch that searched: if usable, found by the search), or as the job after a batch
    (its end, the window's doubling and the counted test read it)."""
    if usable and e <= e_o[w["first_use"]]:
        return "before the first usable job"
    for b in w["batches"]:
        if b["direct"]:
            if b["q"] > 0 and e_o[b["q"] - 1] <= e <= b["lim"]:
                return "a batch's last job"
        elif usable and e_o[b["pos"]] <= e <= e_o[b["hi"]]:
            return "a batch's search for a usable job"
        if "last" in b and e_o[b["last"]] <= e <= e_o[b["pos_after"]]:
            return "the job after a batch"
    return ""


def certify(old: dict, new: dict) -> list[str]:
    """Every reason pass k's search (``old``) is not certified to give pass k+1's (``new``) answer
    (each reason once; empty: certified). Pass k+1's first try is made again exactly (its held
    nodes, cap and later_start: one look at the spans); everything else is checked against the
    differences."""
    why: list[str] = []

    def no(reason: str) -> None:
        if reason not in why:
            why.append(reason)

    o, nw = old["args"], new["args"]
    if (o["k"], o["cpn"], o["mem"], o["limit"], o["res"], o["guess_s"]) != (
            nw["k"], nw["cpn"], nw["mem"], nw["limit"], nw["res"], nw["guess_s"]):
        return ["job changed"]
    rec = old["rec"]
    now_o, now_n, L, k = o["now"], nw["now"], o["limit"], o["k"]
    if rec["stop"] == "loop" or (rec["stop"] == "horizon" and not rec["last_T"] > nw["horizon"]):
        # (a search that ended past the horizon ends there again only if past the new one too)
        return ["search ended at the horizon"]
    if now_n < now_o:
        return ["clock went back"]
    cpn, mem = o["cpn"], o["mem"]
    g_o, g_n = old["groups"], new["groups"]
    c_o, c_n = Counter(g_o), Counter(g_n)
    removed, added = c_o - c_n, c_n - c_o
    # the nodes that differ: free cores or memory, the fit time (other than by the clock), or a
    # running job ended or started on them
    t_o, t_n = o["times"], nw["times"]
    clock_only = (t_o == now_o) & (t_n == now_n)
    dmask = ((o["free_c"] != nw["free_c"]) | (o["free_m"] != nw["free_m"]) | ((t_o != t_n) & ~clock_only))
    for g in list(removed) + list(added):
        dmask[list(g[1])] = True
    dirty = np.flatnonzero(dmask)
    fits_o = (o["free_c"] >= cpn) & (o["free_m"] >= mem)
    fits_n = (nw["free_c"] >= cpn) & (nw["free_m"] >= mem)
    # the earlier plans' intervals present in one search only
    delta = _diff(list(zip(o["iv_node"].tolist(), o["iv_b"].tolist(), o["iv_e"].tolist())),
                  list(zip(nw["iv_node"].tolist(), nw["iv_b"].tolist(), nw["iv_e"].tolist())))
    e_o = np.append(o["job_ends"], INF)
    new["check_size"] = (len(rec["tries"]), len(delta), len(dirty), sum(removed.values()) + sum(added.values()),
                         int(((nw["sp_b"] <= now_n + L) & (nw["sp_e"] > now_n)).sum()), len(nw["sp_b"]))
    for i, tr in enumerate(rec["tries"]):
        T, TL, cap = tr["T"], tr["T"] + L, tr["cap"]
        avail_o = tr["avail"]
        avail_n = avail_o
        if i == 0:  # pass k+1's first window, at its own now, made again: held nodes, cap, later
            tn = now_n
            over = (nw["sp_b"] <= tn + L) & (nw["sp_e"] > tn)
            avail_n = np.ones(len(avail_o), dtype=bool)
            avail_n[nw["sp_n"][over]] = False
            cap_n = _cap_sorted(nw["bounds"], tn, tn + L)
            ends = nw["sp_e"][nw["sp_e"] > tn]  # (entered or not, as the search takes it)
            later_n = float(ends.min()) if len(ends) and ends.min() <= cap_n else INF
            # A first try that ended in a plan or a clash read later_start only through
            # "kth > later", "start > later" and the walk's skip test (_walk_past, which says
            # skip only when the walk's start is past later): all false for pass k's later, so
            # false for any later one. A later_start that moved later (spans that left with the
            # clock) then changes nothing; one that moved earlier, or a try that moved to it, does.
            if later_n != tr["later"] and not (tr["exit"] in ("plan", "clash") and later_n > tr["later"]):
                no("clock: the first try's later_start moved")
        else:
            reach = max(TL, cap)
            for node, b, e in delta:
                if e > T and b <= reach:
                    no("earlier plans: an interval in a try's window")
                for v in (b, e):
                    if v > TL and (v <= cap or tr["cap_last"]):
                        no("earlier plans: a boundary within the cap's reach")
        pk = tr["pick"]
        if pk is not None:
            for node, b, e in delta:
                if node in pk["nodes"] and e > pk["b_res"] and b < pk["e_res"]:
                    no("earlier plans: an interval in the clash test")
        moved = np.flatnonzero(avail_n != avail_o)
        xs = np.union1d(dirty, moved)
        xs = xs[avail_o[xs] | avail_n[xs]]
        # the fit-now count's verdict
        fit_n = tr["fitcount"] + int((avail_n[xs] & fits_n[xs]).sum()) - int((avail_o[xs] & fits_o[xs]).sum())
        if (tr["fitcount"] >= k) != (fit_n >= k):
            no("nodes: the fit-now verdict")
        if tr["kind"] == "now" and i == 0:
            no("clock: fits now at the first try (start = now)")
        kth = tr["kth"]
        if kth is not None:
            if not kth > now_n:
                no("clock: the k-th fit time is not after the new now")
            a0, a1 = avail_o[xs], avail_n[xs]
            lt = int((a1 & (t_n[xs] < kth)).sum()) - int((a0 & (t_o[xs] < kth)).sum())
            le = int((a1 & (t_n[xs] <= kth)).sum()) - int((a0 & (t_o[xs] <= kth)).sum())
            if lt or (kth < INF and le):
                no("nodes: the k-th fit time")
        w = tr["walk"]
        if w is not None:
            if any(not last > now_n for last in w["lasts"]):
                no("clock: a will-run batch end not after the new now")
            read = w["read"]
            read_ids = {g_o[j] for j in read if j < len(g_o)}
            if any(g in read_ids for g in removed):
                no("running jobs: one the will-run walk read ended or changed")
            for g in added:
                usable_g = bool((avail_o | avail_n)[list(g[1])].any())
                where = _added_harms(g[0], usable_g, w, e_o, len(g_o))
                if where:
                    no("running jobs: one started where the will-run walk looks")
                    BESIDE[where] += 1
                    break
            if len(moved):
                nodes_read = {x for g in read_ids for x in g[1]}
                if any(int(x) in nodes_read for x in moved):
                    no("clock: a node the walk read moved in or out of the first window")
            for pos, n_fit in w["counted"]:
                if len(xs):
                    d = sum(int(a1) * _fits_then(nw, g_n, x, g_o, pos, cpn, mem)
                            - int(a0) * _fits_then(o, g_o, x, g_o, pos, cpn, mem)
                            for x, a0, a1 in zip(xs, avail_o[xs], avail_n[xs]))
                    if (n_fit >= k) != (n_fit + d >= k):
                        no("nodes: a counted batch's fit")
        if pk is not None:
            for x in xs:
                cand_n = bool(avail_n[x]) and _cand(nw, g_n, x, pk, g_o, cpn, mem, fits_n)
                if bool(pk["cand"][x]) != cand_n:
                    no("nodes: the node pick's candidates")
                elif cand_n and _then(o, g_o, x, g_o, pk["pos"])[0] != _then(nw, g_n, x, g_o, pk["pos"])[0]:
                    no("nodes: a candidate's free cores")
            if not pk["by"] == -INF and not pk["by"] > now_n:
                no("clock: the pick's fit-by instant")
    return why


def _then(a: dict, groups: list, x: int, g_old: list, pos: int) -> tuple[int, int]:
    """Node ``x``'s free cores and memory once the running jobs before pass k's ``pos``-th (the
    same job, found by what it is, in ``groups``) have gone."""
    if pos >= len(g_old):
        cut = len(groups)
    elif g_old[pos] in groups:
        cut = groups.index(g_old[pos])
    else:  # that job ended: the walk's reads differ, which ``certify`` says already
        return -1, -1
    n_pieces = sum(len(g[1]) for g in groups[:cut])
    sel = a["p_node"][:n_pieces] == x
    return int(a["free_c"][x] + a["p_c"][:n_pieces][sel].sum()), int(a["free_m"][x] + a["p_m"][:n_pieces][sel].sum())


def _fits_then(a: dict, groups: list, x: int, g_old: list, pos: int, cpn: int, mem: int) -> int:
    c, m = _then(a, groups, x, g_old, pos)
    return int(c >= cpn and m >= mem)


def _cand(a: dict, groups: list, x: int, pk: dict, g_old: list, cpn: int, mem: int, fits: np.ndarray) -> bool:
    if pk["by"] == -INF:
        return bool(fits[x])
    if pk["counted"]:
        return bool(_fits_then(a, groups, x, g_old, pk["pos"], cpn, mem))
    return bool(a["times"][x] <= pk["by"])


# ---- the run -----------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls")
    parser.add_argument("--passes", type=int, default=0, help="only the passes before the N-th (0: all)")
    parser.add_argument("--start", type=int, default=0, help="from the N-th pass on (a held-out part)")
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--copies", help="pickle the certified searches' answers per pass here (for the ceiling)")
    parser.add_argument("--copies-equal", help="pickle here, per pass, the answers equal to the previous pass's"
                                               " (what an oracle that knew which answers stay could copy)")
    parser.add_argument("--copies-all", help="pickle here every search's answer per pass (every search free)")
    parser.add_argument("--explain", type=int, default=-1, metavar="PASS",
                        help="print why each of that pass's first 25 searches was (not) certified")
    parser.add_argument("--weaken", action="append", default=[], metavar="KIND",
                        help="ignore one kind of difference (clock, earlier plans, nodes, running jobs): "
                             "a mutation of the certificate, which must then copy some answers wrongly")
    args = parser.parse_args()
    with open(args.calls, "rb") as fh:
        recorded = pickle.load(fh)
    calls = recorded["calls"][args.start: args.passes or None]
    this_pass: dict = {}
    mismatches = []

    def on_search(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s, iv_node, iv_b,
                  iv_e, pe, pn, pc, pm, first_piece, job_ends, bounds, res, sp_b, sp_e, sp_n, cur_c, cur_m, cur_g,
                  *by_end):  # noqa: ANN001, ANN202
        # (by_end: the spans in end order, which the search takes since the ninth session)
        start, nodes = plan_kernel.planned_start_cursor(
            times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s, iv_node, iv_b, iv_e,
            pe, pn, pc, pm, first_piece, job_ends, bounds, res, sp_b, sp_e, sp_n, cur_c, cur_m, cur_g, *by_end)
        s2, n2, rec = search(times.copy(), free_c.copy(), free_m.copy(), k, cpn, mem, limit, now, horizon, guess_s,
                             iv_node.copy(), iv_b.copy(), iv_e.copy(), pn.copy(), pc.copy(), pm.copy(),
                             first_piece.copy(), job_ends.copy(), bounds.copy(), res, sp_b.copy(), sp_e.copy(),
                             sp_n.copy())
        if not (s2 == start and np.array_equal(n2, nodes)):
            mismatches.append((ns["CUR"][0], start, s2))
        a = {"times": times.copy(), "free_c": free_c.copy(), "free_m": free_m.copy(), "k": k, "cpn": cpn,
             "mem": mem, "limit": limit, "now": now, "horizon": horizon, "guess_s": guess_s, "res": res, "iv_node": iv_node.copy(),
             "iv_b": iv_b.copy(), "iv_e": iv_e.copy(), "p_node": pn.copy(), "p_c": pc.copy(), "p_m": pm.copy(),
             "bounds": bounds.copy(), "job_ends": job_ends.copy(), "sp_b": sp_b.copy(), "sp_e": sp_e.copy(),
             "sp_n": sp_n.copy()}
        this_pass[int(ns["CUR"][0])] = {"args": a, "rec": rec, "start": start, "nodes": nodes.copy(),
                                        "groups": _groups(pe, pn, pc, pm, first_piece, job_ends)}
        return start, nodes

    ns = python_pass(on_search)
    digest = hashlib.sha256()
    prev: dict = {}
    reasons: Counter = Counter()  # the first reason each search failed on
    touched: Counter = Counter()  # searches failing on each kind of difference (among others)
    only: Counter = Counter()  # searches failing on that kind alone
    wrong_if_ignored: Counter = Counter()  # of those, answers that differ from the previous pass's
    per_pass = []
    n_searches = n_cert = n_cert_wrong = n_equal = n_plans = n_tries = n_tries_cert = 0
    sizes = []
    n_explained = 0
    n_tries_after = 0
    copies: dict = {}  # pass -> the certified searches' (job id, start, nodes): what a planner would copy
    copies_equal: dict = {}  # pass -> the searches whose answer is the previous pass's (an oracle's copies)
    copies_all: dict = {}  # pass -> every search's answer
    for p, a in enumerate(calls):
        this_pass.clear()
        out = ns["_pass"](*[x.copy() if isinstance(x, np.ndarray) else x for x in a],
                          fit_cache.FitCache(len(a[9]), slots=0).arrays)
        for arr in out:
            digest.update(np.ascontiguousarray(arr).tobytes())
        cert_here = 0
        for jid, s in this_pass.items():
            n_searches += 1
            n_plans += s["start"] != -INF
            n_tries += len(s["rec"]["tries"])
            n_tries_after += len(s["rec"]["tries"]) if p > 0 else 0
            copies_all.setdefault(p, []).append((jid, s["start"], s["nodes"]))
            o = prev.get(jid)
            if o is None:
                reasons["not searched in the previous pass"] += 1
                continue
            same = o["start"] == s["start"] and np.array_equal(o["nodes"], s["nodes"])
            n_equal += same
            if same:
                copies_equal.setdefault(p, []).append((jid, s["start"], s["nodes"]))
            why = [w for w in certify(o, s) if w.split(":")[0] not in args.weaken]
            kinds = {w.split(":")[0] for w in why}
            if p == args.explain and n_explained < 25:
                n_explained += 1
                print(f"pass {p} job {jid}: same answer {same}; start {s['start'] - s['args']['now']:.0f} s"
                      f" from now; {len(s['rec']['tries'])} tries; {why or 'certified'}", file=sys.stderr)
            for kind in kinds:
                touched[kind] += 1
            if len(kinds) == 1:
                only[next(iter(kinds))] += 1
                if not same:  # the mutation "ignore this kind" would have copied a wrong answer
                    wrong_if_ignored[next(iter(kinds))] += 1
            if why:
                reasons[why[0]] += 1
                continue
            n_cert += 1
            copies.setdefault(p, []).append((jid, s["start"], s["nodes"]))
            sizes.append(s["check_size"])
            cert_here += 1
            n_tries_cert += len(s["rec"]["tries"])
            if not same:
                n_cert_wrong += 1
                print(f"UNSOUND: pass {p} job {jid}: copied {o['start']} {o['nodes']}, search {s['start']} {s['nodes']}")
        per_pass.append((len(this_pass), cert_here))
        prev = dict(this_pass)
        print(f"pass {p}: {len(this_pass)} searches, {cert_here} certified", file=sys.stderr)
    later = [c / max(s, 1) for s, c in per_pass[1:]]
    whole = len(calls) == len(recorded["calls"]) and not args.start  # (the recorded digest is of every pass)
    fig = {
        "passes": len(calls), "weakened": args.weaken,
        "digest_is_recorded": digest.hexdigest()[:16] == recorded["digest"] if whole else "not checked (--passes)",
        "searches": n_searches, "plans": n_plans, "tries_per_search": round(n_tries / max(n_searches, 1), 2),
        "searches_in_passes_after_the_first": sum(s for s, _ in per_pass[1:]),
        "answer_equal_to_previous": n_equal, "certified": n_cert,
        "certified_share_of_searches_after_first_pass": round(n_cert / max(sum(s for s, _ in per_pass[1:]), 1), 4),
        "certified_share_per_pass_median": round(float(np.median(later)), 4) if later else None,
        "certified_share_per_pass_mean": round(float(np.mean(later)), 4) if later else None,
        "certified_but_different": n_cert_wrong, "compiled_vs_recording_search_mismatches": len(mismatches),
        "why_not_first_reason": dict(reasons.most_common()),
        "searches_failing_on_each_kind": dict(touched.most_common()),
        "searches_failing_on_that_kind_alone": dict(only.most_common()),
        "added_job_beside_which_read": dict(BESIDE.most_common()),
        "wrong_copies_if_that_kind_were_ignored": dict(wrong_if_ignored.most_common()),
        "certified_check_sizes_mean": dict(zip(
            ("tries", "plan_intervals_differing", "nodes_differing", "running_jobs_differing",
             "spans_in_the_new_first_window", "spans"),
            [round(float(x), 1) for x in np.mean(sizes, axis=0)])) if sizes else None,
        "tries_per_search_certified": round(n_tries_cert / max(n_cert, 1), 2),
        "certified_share_of_tries_after_first_pass": round(n_tries_cert / max(n_tries_after, 1), 4),
        "certified_by_pass": [c for _, c in per_pass],
        "searches_by_pass": [s for s, _ in per_pass],
    }
    print(json.dumps(fig, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(fig, indent=1))
    for path, what in ((args.copies, copies), (args.copies_equal, copies_equal), (args.copies_all, copies_all)):
        if path:
            with open(path, "wb") as fh:
                pickle.dump(what, fh)
    ok = fig["digest_is_recorded"] is not False and not mismatches and not n_cert_wrong
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
