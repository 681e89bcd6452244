"""The schedule-equality harness for simulator speed-ups: run the simulator (this tree's, or an
older tree's given with PYTHONPATH) and dump every job's start, end, node list and time limit, or
compare two such dumps. A speed-up is exact when the compared dumps have 0 differing jobs.

    # a saturated hpc2n span: 2 days from empty fill the queue, the next 0.1 day is timed
    python scripts/sim_schedule_equal.py run --preset hpc2n --days 2 --then 0.1 --out new.json
    PYTHONPATH=/tmp/old python /tmp/old/scripts/... run ... --out old.json   (or this script)
    python scripts/sim_schedule_equal.py compare old.json new.json

``--snapshot FILE`` pickles the simulator after ``--days`` (or loads it if FILE exists) so that
repeated runs of one tree skip the fill; a pickle only loads into the tree that wrote it.
``cpu_s`` is the process CPU time of the timed span (``--then``) only.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time


def schedule(sim) -> dict[str, list]:  # noqa: ANN001
    """Every job: [start, end, nodes, time limit, state] (None while not started / not ended)."""
    out = {}
    for jid, job in sim.jobs.items():
        out[str(jid)] = [job.start_time, job.end_time, list(job.alloc_nodes), job.time_limit_s,
                         job.state.value]
    return out


def cmd_run(args: argparse.Namespace) -> int:
    from asad.slurm.sim import make_simulator

    if args.snapshot and os.path.exists(args.snapshot):
        with open(args.snapshot, "rb") as fh:
            sim = pickle.load(fh)
    else:
        sim = make_simulator(args.preset, load=args.load, seed=args.seed, priority=args.priority,
                             backfill="slurm", warmup_s=0.0)
        sim.run_until(sim.now() + args.days * 86400)
        if args.snapshot:
            with open(args.snapshot, "wb") as fh:
                pickle.dump(sim, fh, protocol=pickle.HIGHEST_PROTOCOL)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    sim.run_until(sim.now() + args.then * 86400)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    st = sim.stats()
    result = {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "jobs": len(sim.jobs),
              "backfill_passes": st["backfill_passes"], "backfill_starts": st["backfill_starts"],
              "pending": st["jobs_pending_eligible"], "schedule": schedule(sim)}
    with open(args.out, "w") as fh:
        json.dump(result, fh)
    print(json.dumps({k: v for k, v in result.items() if k != "schedule"}))
    return 0


def cmd_scenarios(args: argparse.Namespace) -> int:
    """Replay every recorded sim-vs-real scenario (tests/data/sim_vs_real/), as recorded and
    with each variant below, and dump every job's schedule per replay."""
    import asad.slurm.sim as sim_pkg
    from asad.bench import sim_vs_real

    made = []

    class Capturing(sim_pkg.Simulator):
        def __init__(self, config):  # noqa: ANN001
            super().__init__(config)
            made.append(self)

    sim_pkg.Simulator = Capturing
    variants = {"recorded": {}, "bf_poll": {"bf_poll": True}, "no_epilog": {"epilog_s": 0.0},
                "plan_all": {"bf_plan_all": True}}
    out = {}
    cpu0 = time.process_time()
    for rec in sim_vs_real.load_recordings():
        for name, overrides in variants.items():
            made.clear()
            sim_vs_real.replay(rec, **overrides)
            out[f"{rec['id']}/{name}"] = schedule(made[-1])
    result = {"cpu_s": round(time.process_time() - cpu0, 2), "schedule": {
        f"{key}/{jid}": v for key, sched in out.items() for jid, v in sched.items()}}
    with open(args.out, "w") as fh:
        json.dump(result, fh)
    print(json.dumps({"replays": len(out), "jobs": len(result["schedule"]), "cpu_s": result["cpu_s"]}))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    with open(args.a) as fh:
        a = json.load(fh)
    with open(args.b) as fh:
        b = json.load(fh)
    sa, sb = a["schedule"], b["schedule"]
    keys = sorted(set(sa) | set(sb))
    diff = [k for k in keys if sa.get(k) != sb.get(k)]
    print(json.dumps({"jobs_a": len(sa), "jobs_b": len(sb), "started_a": sum(v[0] is not None for v in sa.values()),
                      "differ": len(diff), "first_differing": diff[:5],
                      "cpu_s_a": a.get("cpu_s"), "cpu_s_b": b.get("cpu_s")}))
    for k in diff[:5]:
        print(k, sa.get(k), sb.get(k), file=sys.stderr)
    return 1 if diff else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(required=True)
    run = sub.add_parser("run")
    run.add_argument("--preset", default="hpc2n")
    run.add_argument("--load", type=float, default=None)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--priority", default="fifo")
    run.add_argument("--days", type=float, default=2.0)
    run.add_argument("--then", type=float, default=0.1)
    run.add_argument("--snapshot")
    run.add_argument("--out", required=True)
    run.set_defaults(func=cmd_run)
    scen = sub.add_parser("scenarios")
    scen.add_argument("--out", required=True)
    scen.set_defaults(func=cmd_scenarios)
    cmp = sub.add_parser("compare")
    cmp.add_argument("a")
    cmp.add_argument("b")
    cmp.set_defaults(func=cmd_compare)
    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
