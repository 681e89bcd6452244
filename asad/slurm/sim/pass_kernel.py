"""One whole sched/backfill pass compiled with numba: ``backfill.backfill_pass`` (the readable
reference, still used for several partitions, ``will_run="exact"``, best-fit node selection or
without numba) as one loop on arrays.

Why: on a saturated ``hpc2n`` queue the plan search (``plan_kernel.planned_start``) was only
~28 % of a pass; the rest was Python around it, per tested job and per plan: fit times per shape
and their sort, the start-now tests, the reservation records. Here the pass keeps its backfill
map (plans as node intervals, the earliest plan per node, running pieces by end, fit times per
job shape) in arrays and calls the plan search directly. It does not touch the simulator: it
returns what the Python pass would have done, in order (each start with its nodes, each plan
with its start and nodes), and ``backfill.compiled_pass`` applies those, so starts reach the
simulator in the same order as before. Every rule is the reference's, line for line; comments
name the reference function each block mirrors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from asad.slurm.sim import fit_cache, pass_shapes, plan_kernel, plan_maps, will_run
from asad.slurm.sim.numba_cache import LEAF, drop_stale_cache  # noqa: F401 (tests read it here)

INF = np.inf

EV_START, EV_PLAN = 0, 1


# Rows of the pass's arenas (``_pass`` makes them, ``_pass_core`` names them again): the running
# pieces with room for the pass's starts (I_CAP, F_CAP), the plans' intervals, spans and the
# nodes of the events (I_TOT, F_TOT), per node (I_N), per tested job (I_JOBS, F_JOBS).
P_N, P_C, P_M, P_J, P_FIRST, P_LST = range(6)  # I_CAP; F_CAP: pe, job_ends
T_IV_NODE, T_IV_NEXT, T_SP_N, T_SE_N, T_EV_NODES = range(5)  # I_TOT
T_IV_B, T_IV_E, T_SP_B, T_SP_E, T_SE_B, T_SE_E = range(6)  # F_TOT
N_NODE_IV, N_FRESH, N_HELD, N_CUR_C, N_CUR_M = range(5)  # I_N
(J_SHAPE, J_SH_C, J_SH_M, J_F_N, J_F_C, J_F_M, J_FF_N, J_FF_C, J_FF_M, J_EV_KIND, J_EV_JOB,
 J_EV_OFF, J_EV_LEN, J_UNPLANNED) = range(14)  # I_JOBS
JF_F_E, JF_EV_T, JF_BOUNDS = range(3)  # F_JOBS
SH_SLOT, SH_N_FIT = range(2)  # per shape, int; bool: s_ok, n_fit_ok, s_fits_ok, s_rank_ok
SB_OK, SB_N_FIT_OK, SB_FITS_OK, SB_RANK_OK = range(4)


def _pass(now, horizon, res, guess_s, part_n, part_cores, part_mem, max_free, free_total,
          free_c, free_m, completing, j_nodes, j_cpn, j_cpus, j_mem, j_limit, j_id,
          pe0, pn0, pc0, pm0, pj0, plan_all, fc):  # noqa: ANN001, ANN202
    """backfill.backfill_pass on one partition, on arrays. ``fc``: a ``fit_cache.FitCache``'s
    arrays (its shapes' fit times kept from pass to pass; no slots: swept every pass). ``j_*``: the tested jobs in priority
    order (at most bf_max_job_test); ``p*0``: the running pieces sorted by (end, job);
    ``free_c``/``free_m``: the pass's own copies (changed here). Returns the events in order:
    kind (EV_START / EV_PLAN), the job's index, the plan's start, and the nodes (``ev_off``,
    ``ev_len`` into ``ev_nodes``).

    This makes every array the pass needs, in a few arenas (rows named above), and calls
    ``_pass_core``, which allocates nothing and so counts no references (``numba_cache.LEAF``:
    the calls of a pass with ~100 arrays in reach counted ~50 a plan search)."""
    n = len(free_c)
    n_jobs = len(j_nodes)
    total_nodes = 0
    for i in range(n_jobs):
        total_nodes += j_nodes[i]
    n_p = len(pe0)
    cap_p = n_p + total_nodes
    tot = max(total_nodes, 1)
    jobs = max(n_jobs, 1) + 1
    i_cap = np.empty((6, cap_p), dtype=np.int64)
    f_cap = np.empty((2, cap_p))
    i_tot = np.empty((5, tot), dtype=np.int64)
    f_tot = np.empty((6, tot))
    bnd = np.empty(max(2 * total_nodes, 1))
    i_n = np.empty((5, n), dtype=np.int64)
    i_n[N_NODE_IV] = -1
    min_b = np.full(n, INF)
    head = np.empty(n + 1, dtype=np.int64)
    i_jobs = np.empty((14, jobs), dtype=np.int64)
    f_jobs = np.empty((3, jobs))
    np_kcml = np.empty((4, 64), dtype=np.int64)
    n_sh = pass_shapes._job_shapes(j_cpn, j_mem, i_jobs[J_SHAPE], i_jobs[J_SH_C], i_jobs[J_SH_M])
    shapes = max(n_sh, 1)
    sh_i = np.zeros((2, shapes), dtype=np.int64)
    sh_i[SH_SLOT] = -1
    sh_b = np.zeros((4, shapes), dtype=np.bool_)
    if shapes <= len(fc[11]):  # the partition's (fit_cache.FitCache: no pages to fault in)
        s_times, s_order, s_sort, s_fits, s_rank = fc[11], fc[12], fc[13], fc[14], fc[15]
    else:
        s_times = np.empty((shapes, n))
        s_order = np.empty((shapes, n), dtype=np.int64)
        s_sort = np.empty((shapes, n))
        s_fits = np.empty((shapes, n), dtype=np.bool_)
        s_rank = np.empty((shapes, n), dtype=np.int64)
    flags = np.zeros(1, dtype=np.bool_)  # csr_ok
    cur_g = np.full(1, -1, dtype=np.int64)
    no_block = np.empty(0, dtype=np.int64)
    yes_block = np.zeros(1, dtype=np.int64)
    iwork, bwork, sbits = plan_kernel.new_scratch(n)  # the plan search's
    iwork2, bwork2, _ = plan_kernel.new_scratch(n)  # the start-now pick's
    fit_work = np.empty((4, n + 1), dtype=np.int64)  # the fit cache's
    n_ev, n_evn = _pass_core(
        now, horizon, res, guess_s, part_n, part_cores, part_mem, max_free, free_total, free_c, free_m,
        completing, j_nodes, j_cpn, j_cpus, j_mem, j_limit, j_id, pe0, pn0, pc0, pm0, pj0, plan_all, fc,
        n_sh, i_cap, f_cap, i_tot, f_tot, bnd, i_n, min_b, head, i_jobs, f_jobs, np_kcml, sh_i, sh_b,
        s_times, s_order, s_sort, s_fits, s_rank, flags, cur_g, no_block, yes_block, iwork, bwork,
        sbits, iwork2, bwork2, fit_work)
    return (i_jobs[J_EV_KIND, :n_ev].copy(), i_jobs[J_EV_JOB, :n_ev].copy(), f_jobs[JF_EV_T, :n_ev].copy(),
            i_jobs[J_EV_OFF, :n_ev].copy(), i_jobs[J_EV_LEN, :n_ev].copy(), i_tot[T_EV_NODES, :n_evn].copy())


def _pass_core(now, horizon, res, guess_s, part_n, part_cores, part_mem, max_free, free_total,
               free_c, free_m, completing, j_nodes, j_cpn, j_cpus, j_mem, j_limit, j_id,
               pe0, pn0, pc0, pm0, pj0, plan_all, fc, n_sh, i_cap, f_cap, i_tot, f_tot, bnd, i_n,
               min_b, head, i_jobs, f_jobs, np_kcml, sh_i, sh_b, s_times, s_order, s_sort, s_fits,
               s_rank, flags, cur_g, no_block, yes_block, iwork, bwork, sbits, iwork2, bwork2,
               fit_work):  # noqa: ANN001, ANN202
    """``_pass``'s work in the arrays it made: (events, event nodes)."""
    n = len(free_c)
    n_jobs = len(j_nodes)
    # running pieces by (end, job), with room for the pass's starts (BackfillMap.running_ends)
    n_p = len(pe0)
    pe, job_ends = f_cap[0], f_cap[1]
    pn, pc, pm, pj, first_piece, lst = (i_cap[P_N], i_cap[P_C], i_cap[P_M], i_cap[P_J], i_cap[P_FIRST],
                                        i_cap[P_LST])
    for p in range(n_p):
        pe[p] = pe0[p]
        pn[p] = pn0[p]
        pc[p] = pc0[p]
        pm[p] = pm0[p]
        pj[p] = pj0[p]
    n_groups = pass_shapes._job_groups(pe, pj, n_p, first_piece, job_ends)
    # plans as node intervals (BackfillMap.reserve) and each node's earliest plan begin (min_b),
    # per node as a list (plan_kernel.node_intervals) for the plan search's clash test, their
    # boundaries sorted and distinct (plan_kernel._cap_sorted, ``bnd``), and merged per node
    # (plan_kernel._free_spans) in begin order (sp_*) and in end order (se_*: the search lets
    # them leave its window in that order), all kept as plans are added
    iv_node, iv_next, sp_n, se_n, ev_nodes = (i_tot[T_IV_NODE], i_tot[T_IV_NEXT], i_tot[T_SP_N],
                                              i_tot[T_SE_N], i_tot[T_EV_NODES])
    iv_b, iv_e, sp_b, sp_e, se_b, se_e = (f_tot[T_IV_B], f_tot[T_IV_E], f_tot[T_SP_B], f_tot[T_SP_E],
                                          f_tot[T_SE_B], f_tot[T_SE_E])
    n_iv = 0
    n_bnd = 0
    n_sp = 0
    node_iv, fresh, held, cur_c, cur_m = (i_n[N_NODE_IV], i_n[N_FRESH], i_n[N_HELD], i_n[N_CUR_C],
                                          i_n[N_CUR_M])
    # job shapes (cores, mem per node): each job's index into the fit-time cache, and each
    # shape's slot in it (-1: none free, swept as before); a start gives its nodes new versions,
    # and the per-node lists of pieces the cache reads are then rebuilt
    j_shape, sh_c, sh_m = i_jobs[J_SHAPE], i_jobs[J_SH_C], i_jobs[J_SH_M]
    sh_slot, n_fit = sh_i[SH_SLOT], sh_i[SH_N_FIT]
    pass_no = fc[10][0]
    if len(fc[0]):
        for t in range(n_sh):
            sh_slot[t] = fit_cache.slot_for(fc[0], fc[1], fc[2], fc[3], pass_no, sh_c[t], sh_m[t])
    node_ver = fc[9]
    csr_ok = flags[0:1]
    # per shape: fit times (s_ok: a start makes every shape's stale, recomputed when next
    # needed); how many nodes hold it now (count_fitting); what every plan search of it reads
    # and only a start changes (tenth session): the nodes it fits on now (with n_fit) and each
    # node's position in its fit-time order
    s_ok, n_fit_ok, s_fits_ok, s_rank_ok = sh_b[SB_OK], sh_b[SB_N_FIT_OK], sh_b[SB_FITS_OK], sh_b[SB_RANK_OK]
    # shapes known to fail: BackfillMap.failed (start now, with plans), failed_free (start now,
    # ignoring plans), no_plan
    f_n, f_c, f_m, f_e = i_jobs[J_F_N], i_jobs[J_F_C], i_jobs[J_F_M], f_jobs[JF_F_E]
    n_f = 0
    ff_n, ff_c, ff_m = i_jobs[J_FF_N], i_jobs[J_FF_C], i_jobs[J_FF_M]
    n_ff = 0
    np_k, np_c, np_m, np_l = np_kcml[0], np_kcml[1], np_kcml[2], np_kcml[3]
    n_np = 0
    # what the pass did, in order
    ev_kind, ev_job, ev_off, ev_len = i_jobs[J_EV_KIND], i_jobs[J_EV_JOB], i_jobs[J_EV_OFF], i_jobs[J_EV_LEN]
    ev_t = f_jobs[JF_EV_T]
    n_ev = 0
    n_evn = 0
    # unplanned jobs in priority order, [u_head, n_u), with lower bounds of their plans' begins
    unplanned, bounds = i_jobs[J_UNPLANNED], f_jobs[JF_BOUNDS]
    u_head = 0
    n_u = 0
    unplanned_min = INF
    any_plan = False
    # free cores and memory once some running pieces have gone, kept by the plan searches
    # (plan_kernel._free_after) from plan to plan; a start moves both, so it resets the cursor
    floor_now = np.floor(now)

    # One step per tested job (then, with bf_plan_all, one step for the plans still owed). A step
    # may first owe plans to earlier unplanned jobs; they are made by the one block below that
    # makes plans (numba has no nested functions over these arrays), then the job is started.
    for step in range(2 * n_jobs + 1):
        if step < n_jobs:
            ji = step
        elif plan_all and u_head < n_u:
            ji = -1
        else:
            break
        plan_from = 0
        plan_to = 0  # plan unplanned[plan_from:plan_to] before going on with ji
        action = 0  # after the plans: 1 = the job fits ignoring plans (start it, or try to)
        free_nodes = no_block
        if ji < 0:
            plan_from, plan_to = u_head, n_u
            u_head = n_u
        else:
            nn = j_nodes[ji]
            cpn = j_cpn[ji]
            mem = j_mem[ji]
            # _fits_now_ignoring_plans
            fits = False
            if not (cpn > max_free or free_total < j_cpus[ji]):
                hit = False
                for t in range(n_ff):
                    if nn >= ff_n[t] and cpn >= ff_c[t] and mem >= ff_m[t]:
                        hit = True
                        break
                if not hit:
                    got = no_block
                    if nn * cpn > free_total:
                        pass
                    elif any_plan:
                        # Its nodes would go unused (with a plan made, the start-now test picks
                        # again past the held nodes): only whether it fits, which find_consec
                        # says by a non-empty pick exactly when nn nodes hold the shape now.
                        si = j_shape[ji]
                        if not n_fit_ok[si]:
                            n_fit[si] = pass_shapes.count_fitting(free_c, free_m, cpn, mem)
                            n_fit_ok[si] = True
                        if n_fit[si] >= nn:
                            got = yes_block
                    else:
                        n_got = plan_kernel.find_consec_into(free_c, free_m, no_block, nn, cpn, mem,
                                                             iwork2, bwork2)
                        got = iwork2[plan_kernel.W_OUT, :n_got]
                    if len(got):
                        free_nodes = got
                        fits = True
                    else:
                        ff_n[n_ff] = nn
                        ff_c[n_ff] = cpn
                        ff_m[n_ff] = mem
                        n_ff += 1
            if not fits:
                # _earliest_bound, rounded down to bf_resolution
                best = INF
                if nn <= part_n and cpn <= part_cores and mem <= part_mem:
                    si = j_shape[ji]
                    if not s_ok[si]:  # (tested here: the call alone counts ~30 references)
                        pass_shapes._ensure_sorted(si, s_ok, s_times, s_order, s_sort, sh_c, sh_m,
                                       free_c, free_m, pe, pn, pc, pm, n_p, now, sh_slot, fc, head,
                                       lst, csr_ok, fit_work)
                    kth = s_times[si, s_order[si, nn - 1]]  # (s_sort[si, nn - 1]: not kept by the cache)
                    if kth < INF:
                        best = max(now, kth)
                bound = np.nan if best == INF else plan_maps._floor_to(best, res)  # Python: inf // x is nan
                unplanned[n_u] = ji
                bounds[n_u] = bound
                n_u += 1
                if bound < unplanned_min:
                    unplanned_min = bound
                continue
            end = now + j_limit[ji]
            if n_u > u_head and unplanned_min <= end:
                last = n_u - 1
                while bounds[last] > end:
                    last -= 1
                plan_from, plan_to = u_head, last + 1
                u_head = last + 1
                unplanned_min = pass_shapes._py_min(bounds, u_head, n_u) if n_u > u_head else INF
            action = 1
        # ---- the plans (backfill._plan, planner.fit_times / planned_start_slurm, _plan_at) --
        for u in range(plan_from, plan_to):
            pj_i = unplanned[u]
            k = j_nodes[pj_i]
            c = j_cpn[pj_i]
            m = j_mem[pj_i]
            lim = j_limit[pj_i]
            if not (k <= part_n and c <= part_cores and m <= part_mem):
                continue
            skip = False
            for t in range(n_np):
                if k >= np_k[t] and c >= np_c[t] and m >= np_m[t] and lim >= np_l[t]:
                    skip = True
                    break
            if skip:
                continue
            si = j_shape[pj_i]
            if not s_ok[si]:
                pass_shapes._ensure_sorted(si, s_ok, s_times, s_order, s_sort, sh_c, sh_m,
                               free_c, free_m, pe, pn, pc, pm, n_p, now, sh_slot, fc, head, lst, csr_ok,
                               fit_work)
            t_min = max(now, s_times[si, s_order[si, k - 1]])
            if t_min > horizon:
                if n_np < 64:
                    np_k[n_np] = k
                    np_c[n_np] = c
                    np_m[n_np] = m
                    np_l[n_np] = lim
                    n_np += 1
                continue
            if not s_fits_ok[si]:
                n_fit[si] = plan_kernel.shape_fits(s_fits[si], free_c, free_m, c, m)
                n_fit_ok[si] = True
                s_fits_ok[si] = True
            if not s_rank_ok[si]:
                plan_kernel.shape_rank(s_order[si], s_rank[si])
                s_rank_ok[si] = True
            start, n_nodes = plan_kernel.search_in_pass(
                s_times, s_order, si, free_c, free_m, k, c, m, float(lim), now, horizon, guess_s,
                iv_node, iv_b, iv_e, n_iv, pe, pn, pc, pm, n_p, first_piece, job_ends, n_groups,
                bnd, n_bnd, res, sp_b, sp_e, sp_n, cur_c, cur_m, cur_g, se_b, se_e, se_n, n_sp,
                s_fits, n_fit[si], s_rank, iv_next, node_iv, iwork, bwork, sbits)
            nodes = iwork[plan_kernel.W_OUT, :n_nodes]
            if start == -INF:
                if n_np < 64:
                    np_k[n_np] = k
                    np_c[n_np] = c
                    np_m[n_np] = m
                    np_l[n_np] = lim
                    n_np += 1
                continue
            if start > horizon:  # _plan: too far ahead to plan for
                continue
            # _plan_at
            b, e = plan_maps.plan_span(start, lim, res)
            ev_kind[n_ev] = EV_PLAN
            ev_job[n_ev] = pj_i
            ev_t[n_ev] = start
            ev_off[n_ev] = n_evn
            ev_len[n_ev] = len(nodes)
            n_ev += 1
            if len(nodes):
                n_bnd = plan_kernel.insert_bound(bnd, n_bnd, b)
                n_bnd = plan_kernel.insert_bound(bnd, n_bnd, e)
            for node in nodes:
                ev_nodes[n_evn] = node
                n_evn += 1
            n_iv, n_sp = plan_maps.add_plan(iv_node, iv_b, iv_e, iv_next, node_iv, n_iv, sp_b, sp_e,
                                            sp_n, se_b, se_e, se_n, n_sp, min_b, nodes, b, e, fresh)
            any_plan = True
        if action == 0:
            continue
        # ---- start now, or plan a second later on completing nodes -------------------------
        nn = j_nodes[ji]
        cpn = j_cpn[ji]
        mem = j_mem[ji]
        lim = j_limit[ji]
        end = now + lim
        nodes = no_block
        if not any_plan:
            nodes = free_nodes
        else:
            # _try_start_now
            if not (cpn > max_free or free_total < j_cpus[ji]):
                hit = False
                for t in range(n_f):
                    if nn >= f_n[t] and cpn >= f_c[t] and mem >= f_m[t] and end >= f_e[t]:
                        hit = True
                        break
                if not hit:
                    n_held = 0
                    for node in range(n):
                        if min_b[node] <= end:
                            held[n_held] = node
                            n_held += 1
                    if nn * cpn <= free_total:
                        n_got = plan_kernel.find_consec_into(free_c, free_m, held[:n_held], nn, cpn,
                                                             mem, iwork2, bwork2)
                        nodes = iwork2[plan_kernel.W_OUT, :n_got]
                    if not len(nodes):
                        f_n[n_f] = nn
                        f_c[n_f] = cpn
                        f_m[n_f] = mem
                        f_e[n_f] = end
                        n_f += 1
            if not len(nodes):
                # held off by a plan: it needs one of its own, made in priority order
                bound = plan_maps._floor_to(now, res)
                unplanned[n_u] = ji
                bounds[n_u] = bound
                n_u += 1
                if bound < unplanned_min:
                    unplanned_min = bound
                continue
        on_completing = False
        for node in nodes:
            if completing[node]:
                on_completing = True
        ev_job[n_ev] = ji
        ev_off[n_ev] = n_evn
        ev_len[n_ev] = len(nodes)
        for node in nodes:
            ev_nodes[n_evn] = node
            n_evn += 1
        if on_completing:  # its nodes are still completing: planned for a second later
            start = now + 1.0
            b, e = plan_maps.plan_span(start, lim, res)
            ev_kind[n_ev] = EV_PLAN
            ev_t[n_ev] = start
            n_ev += 1
            n_bnd = plan_kernel.insert_bound(bnd, n_bnd, b)
            n_bnd = plan_kernel.insert_bound(bnd, n_bnd, e)
            n_iv, n_sp = plan_maps.add_plan(iv_node, iv_b, iv_e, iv_next, node_iv, n_iv, sp_b, sp_e,
                                            sp_n, se_b, se_e, se_n, n_sp, min_b, nodes, b, e, fresh)
            any_plan = True
            continue
        # the start (Simulator._start_job's allocation, BackfillMap.started)
        ev_kind[n_ev] = EV_START
        ev_t[n_ev] = now
        n_ev += 1
        for node in nodes:
            free_c[node] -= cpn
            free_m[node] -= mem
            node_ver[node] += 1
        csr_ok[0] = False
        free_total -= cpn * nn
        max_free = 0
        for node in range(n):
            if free_c[node] > max_free:
                max_free = free_c[node]
        p_end = floor_now + lim
        jid = j_id[ji]
        at = n_p
        while at > 0 and (pe[at - 1] > p_end or (pe[at - 1] == p_end and pj[at - 1] > jid)):
            at -= 1
        k = len(nodes)
        for p in range(n_p - 1, at - 1, -1):
            pe[p + k] = pe[p]
            pn[p + k] = pn[p]
            pc[p + k] = pc[p]
            pm[p + k] = pm[p]
            pj[p + k] = pj[p]
        for t in range(k):
            pe[at + t] = p_end
            pn[at + t] = nodes[t]
            pc[at + t] = cpn
            pm[at + t] = mem
            pj[at + t] = jid
        n_p += k
        n_groups = pass_shapes._job_groups(pe, pj, n_p, first_piece, job_ends)
        for s in range(n_sh):
            s_ok[s] = False
            n_fit_ok[s] = False
            s_fits_ok[s] = False
            s_rank_ok[s] = False
        cur_g[0] = -1
    # the started nodes' slots were moved by this pass's own start; the next pass's inputs say
    # what the simulator made of it, so they are computed again then
    for e in range(n_ev):
        if ev_kind[e] == EV_START:
            for t in range(ev_off[e], ev_off[e] + ev_len[e]):
                node_ver[ev_nodes[t]] += 1
    return n_ev, n_evn


def run_pass(cache, *args):  # noqa: ANN001, ANN002, ANN201
    """``backfill_pass`` with ``cache`` (a ``fit_cache.FitCache`` kept by the partition, or None:
    no cache) told first which nodes changed since its last pass. ``args``: ``_pass``'s, without
    ``fc``."""
    if cache is None:
        return backfill_pass(*args, fit_cache.FitCache(len(args[9]), slots=0).arrays)
    cache.note_pass(args[9], args[10], args[18:23])
    return backfill_pass(*args, cache.arrays)


if plan_kernel.njit is not None:
    for _dependency in (plan_kernel, plan_maps, will_run, fit_cache, pass_shapes):  # compiled into the pass
        drop_stale_cache(Path(__file__).with_name("__pycache__"), Path(__file__).stem, Path(_dependency.__file__))
    _pass_core = plan_kernel.njit(**LEAF)(_pass_core)
    backfill_pass = plan_kernel.njit(cache=True)(_pass)
else:  # pragma: no cover
    backfill_pass = None
