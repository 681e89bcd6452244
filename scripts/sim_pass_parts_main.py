"""The saturated span with CPU clocks around each part of `backfill.compiled_pass`: an instrumented
copy of its body (main's, e9e0e93), per pass averaged over the 277 passes of 0.1 day from the snapshot.
Ninth session's measurement (docs/results/sim.md); the snapshot is the first argument (default /tmp/s37c/snap-main.pkl, where it was made:
`sim_schedule_equal.py run --preset hpc2n --days 4 --then 0.1 --snapshot`).
Run with PYTHONPATH at main's tree.
"""
import pickle, time, numpy as np, sys
from asad.slurm.sim import backfill, pass_kernel, fit_cache
blob=open(sys.argv[1] if len(sys.argv) > 1 else '/tmp/s37c/snap-main.pkl','rb').read()
w=pickle.loads(blob); w.run_until(w.now()+0.01*86400); del w
sim=pickle.loads(blob)
T={}
clock=time.process_time
def lap(name, t0):
    t=clock(); T[name]=T.get(name,0)+t-t0; return t
def compiled_pass(sched, now):
    t=clock()
    cfg = sched.config
    part = sched.parts[0]
    part.reservations = []
    queue = sched.queues[0]
    jobs = queue.jobs
    tested = []
    max_test = cfg.bf_max_job_test
    for i in range(queue.first_live(), len(jobs)):
        job = jobs[i]
        if job.queued:
            tested.append(job)
            if len(tested) == max_test:
                break
    if not tested:
        return 0
    a=(np.array([j.nodes for j in tested], dtype=np.int64),
        np.array([j.cpus_per_node for j in tested], dtype=np.int64),
        np.array([j.cpus for j in tested], dtype=np.int64),
        np.array([j.mem_per_node_mb for j in tested], dtype=np.int64),
        np.array([j.time_limit_s for j in tested], dtype=np.float64),
        np.array([j.job_id for j in tested], dtype=np.int64))
    t=lap("1_tested_jobs_and_arrays",t)
    hi = part.p_hi
    act = part.p_active[:hi]
    p_end, p_job = part.p_end[:hi][act], part.p_job[:hi][act]
    order = np.lexsort((p_job, p_end))
    pcs=(p_end[order], part.p_node[:hi][act][order], part.p_c[:hi][act][order], part.p_m[:hi][act][order], p_job[order])
    t=lap("2_running_pieces",t)
    completing = np.zeros(part.n, dtype=np.bool_)
    if part.completing:
        completing[list(part.completing)] = True
    args=(float(now), float(now + cfg.bf_window_s), float(cfg.bf_resolution_s),
        float(cfg.kill_wait_s + cfg.over_time_limit_s), part.n, part.cores, part.mem,
        part.max_free_cores(), part.free_cores_total, part.np_free_c.copy(), part.np_free_m.copy(),
        completing, *a, *pcs, bool(cfg.bf_plan_all))
    t=lap("3_other_args",t)
    part.fit_cache.note_pass(args[9], args[10], args[18:23])
    t=lap("4_note_pass",t)
    kinds, which, ts, offs, lens, flat = pass_kernel.backfill_pass(*args, part.fit_cache.arrays)
    t=lap("5_kernel",t)
    flat_l = flat.tolist()
    started = 0
    made = []
    tst=0.0
    for kind, w, tt, off, n in zip(kinds.tolist(), which.tolist(), ts.tolist(), offs.tolist(), lens.tolist()):
        job = tested[w]
        nodes = flat_l[off: off + n]
        if kind == pass_kernel.EV_START:
            s0=clock(); sched.start_fn(job, part, nodes); tst+=clock()-s0
            started += 1
        else:
            made.append((job, nodes, tt))
            if job.res_time_min is None or tt < job.res_time_min:
                job.res_time_min = tt
    part.set_plans(made)
    T["7_starts"]=T.get("7_starts",0)+tst
    t=lap("6_plans",t+tst)
    return started
backfill.compiled_pass=compiled_pass
t0=clock(); sim.run_until(sim.now()+0.1*86400); span=clock()-t0
print("main span", round(span,3), {k: f"{1e6*v/277:.0f}us/pass" for k,v in sorted(T.items())})
