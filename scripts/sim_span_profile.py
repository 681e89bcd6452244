"""Where a saturated span's CPU goes: load a snapshot pickled by ``sim_schedule_equal.py run
--snapshot`` (in the tree that wrote it), play ``--then`` days and report the process CPU s of
the span and of its parts, measured with CPU clocks around them (not cProfile, whose per-call
cost inflates the Python parts): the compiled pass kernel (``pass_kernel.backfill_pass``), the
fit-time cache's ``note_pass``, the whole ``backfill.compiled_pass`` (the kernel, note_pass and
the Python around them), the rest is the simulator. ``--cprofile FILE`` instead dumps a cProfile
of the span (for the order of the Python parts, not their shares).

    python scripts/sim_span_profile.py /tmp/snap.pkl --then 0.1
    python scripts/sim_span_profile.py --fresh hpc2n --then 30    # the issue's 30 days, from empty

``--fresh PRESET`` plays ``--then`` days from an empty cluster as ``sim_days_cpu.py`` does
(``make_simulator(PRESET, warmup_s=0)``, fifo, seed 0), so the shares are those of the issue's
whole 30-day measure, not only of a saturated span.
"""

from __future__ import annotations

import argparse
import json
import pickle
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("snapshot", nargs="?")
    ap.add_argument("--fresh", metavar="PRESET", help="play from an empty PRESET instead of a snapshot")
    ap.add_argument("--then", type=float, default=0.1)
    ap.add_argument("--cprofile")
    args = ap.parse_args()
    from asad.slurm.sim import backfill, fit_cache, pass_kernel

    if args.fresh:
        from asad.slurm.sim import make_simulator

        warm = make_simulator("small", seed=1, warmup_s=0)  # as sim_days_cpu.py warms the kernels
        warm.run_until(warm.now() + 0.3 * 86400)
        sim = make_simulator(args.fresh, warmup_s=0)
    else:
        with open(args.snapshot, "rb") as fh:
            blob = fh.read()
        # numba loads (or compiles) its functions at their first call: a throw-away copy of the
        # simulator plays a little first, so that the timed span holds none of it
        warm = pickle.loads(blob)
        warm.run_until(warm.now() + 0.01 * 86400)
        sim = pickle.loads(blob)
    clocks = {"kernel": 0.0, "note_pass": 0.0, "compiled_pass": 0.0, "main_pass": 0.0,
              "backfill_starts": 0.0}
    calls = {"passes": 0}
    clock = time.process_time

    def timed(name, fn):  # noqa: ANN001, ANN202
        def wrapper(*a, **k):  # noqa: ANN002, ANN003, ANN202
            t0 = clock()
            try:
                return fn(*a, **k)
            finally:
                clocks[name] += clock() - t0
        return wrapper

    if not args.cprofile:
        pass_kernel.backfill_pass = timed("kernel", pass_kernel.backfill_pass)
        fit_cache.FitCache.note_pass = timed("note_pass", fit_cache.FitCache.note_pass)
        inner = backfill.compiled_pass

        def counted(*a):  # noqa: ANN002, ANN202
            calls["passes"] += 1
            return inner(*a)
        backfill.compiled_pass = timed("compiled_pass", counted)
        sim.sched.main_pass = timed("main_pass", sim.sched.main_pass)
        # the starts a backfill pass makes (Simulator._start_job, called from compiled_pass)
        sim.sched.start_fn = timed("backfill_starts", sim.sched.start_fn)
    t0 = clock()
    if args.cprofile:
        import cProfile
        cProfile.runctx("sim.run_until(sim.now() + args.then * 86400)", globals(), locals(), args.cprofile)
    else:
        sim.run_until(sim.now() + args.then * 86400)
    span = clock() - t0
    out = {"span_cpu_s": round(span, 3), "jobs": len(sim.jobs), **{k: round(v, 3) for k, v in clocks.items()}, **calls}
    if not args.cprofile and span > 0:
        around = (clocks["compiled_pass"] - clocks["kernel"] - clocks["note_pass"]
                  - clocks["backfill_starts"])
        out["shares_%"] = {"kernel": round(100 * clocks["kernel"] / span, 1),
                           "note_pass": round(100 * clocks["note_pass"] / span, 1),
                           "python_around_kernel": round(100 * around / span, 1),
                           "backfill_starts": round(100 * clocks["backfill_starts"] / span, 1),
                           "main_pass": round(100 * clocks["main_pass"] / span, 1),
                           "rest_of_simulator": round(100 * (span - clocks["compiled_pass"] - clocks["main_pass"]) / span, 1)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
