"""Where the inter-stage wait goes under multifactor: behind other jobs, or first in line.

    .venv/bin/python scripts/interstage_rank.py [--seeds 1001,1002] [--variants per-stage,auto]

Runs `asad bench strategies`' cells (`hpc2n`, multifactor, Slurm-like backfill, 1-day warm-up;
montage, blast and statistics at 28, 56 and 112 cores) under each variant. At every scheduling
pass it looks at each eligible pending stage job and notes its rank in its partition's queue,
where rank 0 means first in line. Each later stage's wait, from the moment it could run (its
predecessors ended and it was eligible) to its start, is then split in two:
- time at rank 0: waiting for nodes to come free. Only an allocation made before the predecessor
  ends could hide this, and it idles until then.
- time behind higher-priority jobs: age earns this back, so an earlier submission can.

A diagnosis of issue 11's "hide >= 50 %" target, not a benchmark; docs/results/strategies.md
cites what it printed. Seeds 1001-1003 were measured seeds of the report there, not tuning seeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import pickle
import tempfile
from bisect import bisect_left
from pathlib import Path

from asad.daemon.wiring import run_in_process
from asad.bench.strategies import (CORES_PER_NODE, EXAMPLES, SERIAL_FRACTION, VARIANTS, learned_limits, scale_spec,
                                   variant_setup)
from asad.common.config import Settings
from asad.slurm.backend import JobState
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow
from asad.store.repo import Store


def rank_in_queue(sim, job) -> int:  # noqa: ANN001 -- a Simulator and one of its SimJobs
    """Live eligible jobs ahead of ``job`` in the queue of its first partition."""
    queue = sim.sched.queues[job.parts[0].index]
    i = bisect_left(queue.keys, job.sort_key)
    return int(queue.a_live[:i].sum())


def run_cell(snapshot: bytes, spec, variant: str, store: Store, seed: int) -> list[dict]:  # noqa: ANN001
    sim = pickle.loads(snapshot)
    samples: dict[int, list[tuple[float, int]]] = {}
    passes = sim._run_passes

    def sampled(now: float) -> None:
        passes(now)
        for job in sim.jobs.values():
            if job.user and job.queued and job.state == JobState.PENDING:
                samples.setdefault(job.job_id, []).append((now, rank_in_queue(sim, job)))

    sim._run_passes = sampled  # type: ignore[method-assign]
    strategy, mode, timing, _ = variant_setup(variant)
    run_in_process(store, sim, [spec], settings=Settings(asa_timing=timing, seed=seed), strategy=strategy, mode=mode)
    roots = {s.name for s in spec.stages if not s.after}
    mine = [job for job in sim.jobs.values() if job.user and job.start_time is not None]
    out = []
    for job in mine:
        stage = job.name.split(".", 2)[-1]  # asad.<workflow id>.<stage>
        if stage in roots or job.eligible_time is None:
            continue
        ready = job.eligible_time
        points = [(t, r) for t, r in samples.get(job.job_id, []) if ready <= t < job.start_time]
        at_top = behind = 0.0
        for k, (t, r) in enumerate(points):
            begin = ready if k == 0 else t
            end = points[k + 1][0] if k + 1 < len(points) else job.start_time
            if r == 0:
                at_top += end - begin
            else:
                behind += end - begin
        ranks = [r for _, r in points] or [0]
        out.append({"stage": stage, "wait_s": job.start_time - ready, "at_top_s": at_top, "behind_s": behind,
                    "rank_first": ranks[0], "rank_last": ranks[-1]})
    return out


def tightened(spec, factor: float):  # noqa: ANN001, ANN201 -- a WorkflowSpec
    """The spec with each stage's time limit at ``factor`` x its true run time, in whole minutes."""
    stages = tuple(dataclasses.replace(s, time_s=max(60, 60 * math.ceil(factor * s.simulate.runtime_s / 60)))
                   for s in spec.stages)
    return dataclasses.replace(spec, stages=stages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="1001,1002")
    parser.add_argument("--variants", default="per-stage,auto")
    parser.add_argument("--cores", default="28,56,112")
    parser.add_argument("--tight-limits", type=float, default=None, metavar="FACTOR",
                        help="what-if: every stage asks for FACTOR x its true run time (at least a minute) "
                             "instead of its time limit, as a learned time limit would")
    parser.add_argument("--learned-limits", default=None, metavar="MARGIN:SLACK_S",
                        help="every stage asks for the limit asad's TimeLimitLearner proposes after runs of "
                             "its true run time, with this margin and slack (asad's defaults: 2:600)")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v in VARIANTS]
    totals = {v: {"stages": 0, "wait_s": 0.0, "at_top_s": 0.0, "behind_s": 0.0} for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        stores = {v: Store(f"sqlite:///{Path(tmp) / f'{v}.db'}") for v in variants}
        for seed in (int(s) for s in args.seeds.split(",")):
            base = make_simulator("hpc2n", seed=seed, priority="multifactor", backfill="slurm")
            base.run_until(base.now() + 86400)
            snapshot = pickle.dumps(base)
            for wf_name in SERIAL_FRACTION:
                spec0 = load_workflow(EXAMPLES / f"{wf_name}.yaml")
                for cores in (int(c) for c in args.cores.split(",")):
                    spec = scale_spec(spec0, cores, CORES_PER_NODE["hpc2n"], SERIAL_FRACTION[wf_name])
                    if args.tight_limits:
                        spec = tightened(spec, args.tight_limits)
                    if args.learned_limits:
                        margin, slack = (float(v) for v in args.learned_limits.split(":"))
                        spec = learned_limits(spec, margin=margin, slack_s=slack, min_samples=1)
                    for variant in variants:
                        rows = run_cell(snapshot, spec, variant, stores[variant], seed)
                        for row in rows:
                            for k in ("wait_s", "at_top_s", "behind_s"):
                                totals[variant][k] += row[k]
                        totals[variant]["stages"] += len(rows)
                        print(f"seed {seed} {wf_name} {cores} {variant}: " + ", ".join(
                            f"{r['stage']} {r['wait_s']:.0f} s (rank {r['rank_first']} → {r['rank_last']}, "
                            f"{r['at_top_s']:.0f} s first in line)" for r in rows),
                            flush=True)
        for store in stores.values():
            store.close()
    print("\nvariant | later stages | their wait from ready to start (s) | of it first in line | behind higher-priority jobs")
    for variant, t in totals.items():
        wait = t["wait_s"] or 1.0
        print(f"{variant} | {t['stages']} | {t['wait_s']:.0f} | {t['at_top_s']:.0f} ({t['at_top_s'] / wait:.0%}) "
              f"| {t['behind_s']:.0f} ({t['behind_s'] / wait:.0%})")


if __name__ == "__main__":
    main()
