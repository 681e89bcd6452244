"""The saturated span with CPU clocks around each part of `backfill.compiled_pass`: an instrumented
copy of its body (this branch's), per pass averaged over the 277 passes of 0.1 day from the snapshot.
Ninth session's measurement (docs/results/sim.md); the snapshot is the first argument (default /tmp/s37c/snap-main.pkl, where it was made:
`sim_schedule_equal.py run --preset hpc2n --days 4 --then 0.1 --snapshot`).
"""
import pickle, time, numpy as np, sys
from asad.slurm.sim import backfill, pass_kernel, pass_inputs, fit_cache
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
    live = pass_inputs.tested_positions(queue, cfg.bf_max_job_test)
    if not len(live):
        return 0
    a=(queue.a_nodes[live], queue.a_cpn[live], queue.a_cpus[live], queue.a_mem[live], queue.a_limit_f[live], queue.a_id[live])
    t=lap("1_tested_jobs_and_arrays",t)
    pe, pn, pc, pm, pj = pass_inputs.running_sorted(part)
    t=lap("2_running_pieces",t)
    completing = np.zeros(part.n, dtype=np.bool_)
    if part.completing:
        completing[list(part.completing)] = True
    args=(float(now), float(now + cfg.bf_window_s), float(cfg.bf_resolution_s),
        float(cfg.kill_wait_s + cfg.over_time_limit_s), part.n, part.cores, part.mem,
        part.max_free_cores(), part.free_cores_total, part.np_free_c.copy(), part.np_free_m.copy(),
        completing, *a, pe, pn, pc, pm, pj, bool(cfg.bf_plan_all))
    t=lap("3_other_args",t)
    part.fit_cache.note_pass(args[9], args[10], args[18:23])
    t=lap("4_note_pass",t)
    kinds, which, ts, offs, lens, flat = pass_kernel.backfill_pass(*args, part.fit_cache.arrays)
    t=lap("5_kernel",t)
    jobs = queue.jobs
    is_plan = kinds == pass_kernel.EV_PLAN
    pl = np.flatnonzero(is_plan)
    part.set_plans(pass_inputs.record_plans(queue, live, which[pl], ts[pl], offs[pl], lens[pl], flat))
    t=lap("6_plans",t)
    started = 0
    for e in np.flatnonzero(~is_plan).tolist():
        off = int(offs[e])
        sched.start_fn(jobs[int(live[which[e]])], part, flat[off: off + int(lens[e])].tolist())
        started += 1
    t=lap("7_starts",t)
    return started
backfill.compiled_pass=compiled_pass
t0=clock(); sim.run_until(sim.now()+0.1*86400); span=clock()-t0
print("new span", round(span,3), {k: f"{1e6*v/277:.0f}us/pass" for k,v in sorted(T.items())})
