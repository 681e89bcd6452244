"""The simulator against a real Slurm: one scripted scenario (background jobs of known sizes and run
times, then a 3-stage afterok chain) on the local cluster and in ``asad.slurm.sim``, FIFO priority
with EASY backfill on both; prints start order and start times side by side.

Run (needs the local cluster, started as root: ``slurm-scripts/local-cluster.sh up``, 4 nodes x 28 cores)::

    eval "$(slurm-scripts/local-cluster.sh env)"
    python -m asad.bench.sim_vs_real --out out/sim_vs_real

The real run takes about two minutes of wall time (the scenario's length).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from asad.slurm.backend import Backend, Dependency, DependencyType, JobRequest, JobState, SimTruth


@dataclass(frozen=True)
class ScenarioJob:
    label: str
    nodes: int
    cpus_per_task: int  # per task; one task per node
    runtime_s: int
    limit_s: int
    after: str | None = None  # afterok on this label


# Submitted in this order at t=0 on an empty 4 x 28-core partition. B4 wants the whole cluster and
# blocks FIFO; B5 and W1 can only start by backfill (they end before B4's reservation).
SCENARIO: tuple[ScenarioJob, ...] = (
    ScenarioJob("B1 2x28c 30s", 2, 28, 30, 120),
    ScenarioJob("B2 28c 20s", 1, 28, 20, 60),
    ScenarioJob("B3 14c 40s", 1, 14, 40, 60),
    ScenarioJob("B4 4x28c 10s", 4, 28, 10, 60),
    ScenarioJob("B5 14c 15s", 1, 14, 15, 60),
    ScenarioJob("W1 28c 10s", 1, 28, 10, 60),
    ScenarioJob("W2 28c 5s", 1, 28, 5, 60, after="W1 28c 10s"),
    ScenarioJob("W3 1c 5s", 1, 1, 5, 60, after="W2 28c 5s"),
)


@dataclass
class Outcome:
    label: str
    start_s: float | None  # after the first submission
    end_s: float | None
    state: str


def request(job: ScenarioJob, dep_id: int | None, tag: str) -> JobRequest:
    return JobRequest(
        name=f"{tag}-{job.label.split()[0]}", comment=tag, command=f"sleep {job.runtime_s}", partition="main",
        nodes=job.nodes, ntasks=job.nodes, cpus_per_task=job.cpus_per_task, mem_mb=1000,
        time_limit_s=job.limit_s, output="/dev/null",
        dependency=Dependency(DependencyType.AFTEROK, (dep_id,)) if dep_id is not None else None,
        truth=SimTruth(runtime_s=float(job.runtime_s)))


def play(backend: Backend, *, advance, tag: str, timeout_s: float = 600) -> list[Outcome]:
    """Submit the scenario and follow it to the end. ``advance(seconds)`` moves time on: a sleep
    on a real cluster, ``run_until`` in the simulator."""
    ids: dict[str, int] = {}
    t0 = backend.now()
    for job in SCENARIO:
        ids[job.label] = backend.submit(request(job, ids[job.after] if job.after else None, tag))
    deadline = backend.now() + timeout_s
    statuses = {}
    while backend.now() < deadline:
        statuses = backend.poll(list(ids.values()))
        if all(j in statuses and statuses[j].state.is_final for j in ids.values()):
            break
        advance(1.0)
    out = []
    for job in SCENARIO:
        st = statuses.get(ids[job.label])
        start = None if st is None or st.start_time is None else st.start_time - t0
        end = None if st is None or st.end_time is None else st.end_time - t0
        out.append(Outcome(job.label, start, end, st.state.value if st else "UNKNOWN"))
    return out


REAL_CALLS: dict[str, int] = {}


def run_real(slurm_conf: str | None = None) -> list[Outcome]:
    from asad.slurm.cli import SlurmCLI

    backend = SlurmCLI(slurm_conf=slurm_conf)
    outcomes = play(backend, advance=time.sleep, tag=f"simreal-{int(time.time())}")
    REAL_CALLS.update(backend.calls)  # Slurm commands the real run cost (one poll a second)
    return outcomes


def run_sim(**overrides) -> list[Outcome]:
    from asad.slurm.sim import make_simulator

    # The local cluster's scheduler settings: bf_interval=2, sched_interval=5 (slurm.conf).
    settings = dict(bf_interval_s=2.0, sched_interval_s=5.0, warmup_s=0.0)
    settings.update(overrides)
    sim = make_simulator("small", load=0, seed=0, priority="fifo", backfill="easy", **settings)
    return play(sim, advance=lambda s: sim.run_until(sim.now() + s), tag="simreal")


def order(outcomes: list[Outcome]) -> list[str]:
    started = [o for o in outcomes if o.start_s is not None]
    return [o.label.split()[0] for o in sorted(started, key=lambda o: (round(o.start_s), o.label))]


def table(real: list[Outcome], sim: list[Outcome]) -> str:
    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f}"

    lines = ["| job | real start (s) | sim start (s) | sim - real (s) | real end | sim end |",
             "|---|---:|---:|---:|---:|---:|"]
    for r, s in zip(real, sim, strict=True):
        diff = None if r.start_s is None or s.start_s is None else s.start_s - r.start_s
        lines.append(f"| {r.label} | {fmt(r.start_s)} | {fmt(s.start_s)} | {fmt(diff)} | {fmt(r.end_s)} | {fmt(s.end_s)} |")
    return "\n".join(lines)


def compare(real: list[Outcome], sim: list[Outcome]) -> dict:
    diffs = [abs(s.start_s - r.start_s) for r, s in zip(real, sim, strict=True)
             if r.start_s is not None and s.start_s is not None]
    return {"real_order": order(real), "sim_order": order(sim), "same_order": order(real) == order(sim),
            "max_abs_start_diff_s": max(diffs) if diffs else None,
            "mean_abs_start_diff_s": sum(diffs) / len(diffs) if diffs else None}


def main_with(args: argparse.Namespace) -> int:
    sim = run_sim()
    if args.sim_only:
        real = sim
    else:
        real = run_real(args.slurm_conf)
    summary = compare(real, sim)
    if REAL_CALLS:
        summary["real_slurm_calls"] = dict(REAL_CALLS)
    md = table(real, sim)
    print(md)
    print(json.dumps(summary, indent=2))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(
            {"real": [asdict(o) for o in real], "sim": [asdict(o) for o in sim], **summary}, indent=2))
        out.with_suffix(".md").write_text(md + "\n")
    ok = all(o.state == JobState.COMPLETED.value for o in real + sim)
    return 0 if ok else 1


def _add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="write <out>.json and <out>.md")
    p.add_argument("--slurm-conf", help="default: $SLURM_CONF")
    p.add_argument("--sim-only", action="store_true", help="skip the real cluster (checks the scenario only)")


def register(subparsers) -> None:  # noqa: ANN001
    p = subparsers.add_parser("sim-vs-real", help="the simulator against the local real Slurm")
    _add_args(p)
    p.set_defaults(func=main_with)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m asad.bench.sim_vs_real", description=__doc__)
    _add_args(parser)
    return main_with(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
