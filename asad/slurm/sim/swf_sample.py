"""`python -m asad.slurm.sim.swf_sample OUT.swf`: write the small synthetic SWF shipped for tests
(asad/data/sample-small.swf), drawn from the simulator's packaged load table."""

from __future__ import annotations

import argparse
from pathlib import Path

from asad.slurm.sim import make_simulator
from asad.slurm.sim.swf import format_swf


def generate_sample(path: Path, preset: str = "small", days: float = 2.0, seed: int = 7,
                    load: float = 0.8) -> int:
    """Write a small SWF of synthetic jobs drawn from the packaged load table (for tests)."""
    from asad.slurm.sim import make_simulator

    sim = make_simulator(preset, load=load, seed=seed, warmup_s=0.0)
    arrivals = sim.workload.arrivals(sim.now(), sim.now() + days * 86400)
    rows = []
    for n, job in enumerate(arrivals, start=1):
        cpn = -(-job.cpus // job.nodes)
        status = 1 if job.runtime_s < job.time_limit_s else 0
        rows.append((n, job.time - sim.now(), job.runtime_s, job.cpus, int(job.mem_per_node_mb / cpn * 1024),
                     job.time_limit_s, status))
    header = {"Version": "2.2", "Computer": f"asad simulator preset {preset}",
              "Note": f"synthetic: {days:g} days at load {load} drawn from asad/data/load_table.csv (seed {seed})",
              "UnixStartTime": str(int(sim.now())), "MaxJobs": str(len(rows)),
              "MaxProcs": str(sum(p.spec.total_cpus for p in sim.parts))}
    path.write_text(format_swf(rows, header))
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the sample SWF shipped for tests.")
    parser.add_argument("out", type=Path)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--days", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    print(generate_sample(args.out, args.preset, args.days, args.seed), "jobs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
