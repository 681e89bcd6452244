"""``asad bench faults``: kill asad at random instants and check that nothing is lost or doubled.

This module is the simulator's bench; ``--backend slurm`` runs :mod:`asad.bench.faults_real`
instead, which SIGKILLs a real ``asad daemon`` on a real Slurm.

Many workflows run on one simulated cluster. A crash is injected at ``--kills`` random instants
chosen among every point where a kill could hurt: right after a submission intent was committed
but before ``sbatch`` (``submit-before``), after ``sbatch`` took effect but before the job id was
committed (``submit-after``), just before a store commit (the transaction is lost, as SIGKILL
mid-commit loses an SQLite transaction: it is atomic), just after one, after a ``poll``
(statuses seen but not stored) and after a ``cancel``.

A crash is a ``BaseException`` that nothing catches, so no code after it runs (what SIGKILL
does); the open transaction is dropped. The simulated cluster lives on (it is Slurm, which a
dying daemon does not take along), and a restart is a new Store and a new Runner over the same
database, which reconciles its submission intents with the cluster by their tags.

Counted at the end, from the cluster's own records (``find`` by the store's tag prefix):
- stages lost: stages of a workflow that did not complete, or without a job that completed;
- stages submitted twice: tags (workflow, stage, attempt) carried by more than one Slurm job,
  plus stages with more than one job that ran to completion.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from asad.common.arg_types import non_negative_float, non_negative_int, positive_int
from asad.slurm.backend import JobState
from asad.slurm.sim.presets import PRESETS

WORKFLOW_FILES = ("montage.yaml", "statistics.yaml", "dag.yaml", "blast.yaml")
STRATEGIES = ("asa", "per-stage", "chain", "asa-naive")
CRASH_KINDS = ("submit-before", "submit-after", "commit-before", "commit-after", "poll-after", "cancel-after")


class Crash(BaseException):
    """Stands for SIGKILL: a BaseException, so no ``except Exception`` handler runs after it."""


class Killer:
    """Counts crash points of each kind across restarts; raises :class:`Crash` at the chosen
    ``(kind, n)``: the n-th time that kind of instant comes."""

    def __init__(self, kill_at: set[tuple[str, int]]):
        self.kill_at = kill_at
        self.seen: Counter[str] = Counter()
        self.kills: Counter[str] = Counter()

    @property
    def points(self) -> int:
        return sum(self.seen.values())

    def point(self, kind: str) -> None:
        self.seen[kind] += 1
        if (kind, self.seen[kind]) in self.kill_at:
            self.kills[kind] += 1
            raise Crash(kind)


class CrashingBackend:
    def __init__(self, inner, killer: Killer):  # noqa: ANN001
        self._inner, self._killer, self.name = inner, killer, inner.name

    def submit(self, req):  # noqa: ANN001, ANN201
        self._killer.point("submit-before")
        job_id = self._inner.submit(req)
        self._killer.point("submit-after")
        return job_id

    def poll(self, job_ids):  # noqa: ANN001, ANN201
        out = self._inner.poll(job_ids)
        self._killer.point("poll-after")
        return out

    def cancel(self, job_ids):  # noqa: ANN001, ANN201
        self._inner.cancel(job_ids)
        self._killer.point("cancel-after")

    def __getattr__(self, item):  # noqa: ANN001, ANN204
        return getattr(self._inner, item)


def _crashing_commits(store, killer: Killer) -> None:  # noqa: ANN001
    commit = store.commit

    def crashing_commit() -> None:
        killer.point("commit-before")
        commit()
        killer.point("commit-after")

    store.commit = crashing_commit


@dataclass
class FaultsResult:
    workflows: int
    kills_planned: int
    kills_done: int
    kills_by_kind: dict[str, int]
    restarts: int
    crash_points_seen: int
    completed: int
    stages: int
    stages_lost: int
    stages_submitted_twice: int
    tags_on_two_jobs: int
    intents_abandoned: int  # never reached Slurm; resubmitted
    slurm_jobs: int
    virtual_h: float
    wall_s: float
    seed: int
    problems: list[str] = field(default_factory=list)


def _specs(n: int):  # noqa: ANN202
    from asad.spec.load import load_workflow

    root = Path(__file__).resolve().parent.parent.parent / "examples"
    out = []
    for i in range(n):
        strategy = STRATEGIES[i % len(STRATEGIES)]
        spec = load_workflow(root / WORKFLOW_FILES[i % len(WORKFLOW_FILES)])
        mode = "naive" if strategy == "asa-naive" else "dependency"
        out.append((spec, strategy.removesuffix("-naive"), mode))
    return out


def _drive(runner, backend, ids, killer_budget_s: float) -> None:  # noqa: ANN001
    from asad.daemon.wiring import run_to_completion

    run_to_completion(runner, backend, ids, max_virtual_s=killer_budget_s)


def count_points(workflows: int, seed: int, preset: str, load: float) -> Counter[str]:
    """A run without kills, to know how many instants of each kind a run has."""
    return _run(workflows, seed, preset, load, kill_at=set())[1]


def plan_kills(points: Counter[str], kills: int, rng: np.random.Generator) -> set[tuple[str, int]]:
    """Spread the kills evenly over the kinds of instant (the rare ones, such as between sbatch
    and the id commit, matter most), each at a random occurrence of its kind."""
    kinds = [k for k in CRASH_KINDS if points[k] > 0]
    share = {k: 0 for k in kinds}
    left = kills
    while left > 0 and any(share[k] < points[k] for k in kinds):
        for k in kinds:
            if left > 0 and share[k] < points[k]:
                share[k] += 1
                left -= 1
    plan: set[tuple[str, int]] = set()
    for k in kinds:
        for n in rng.choice(points[k], size=share[k], replace=False):
            plan.add((k, int(n) + 1))
    return plan


def _run(workflows: int, seed: int, preset: str, load: float,
         kill_at: set[tuple[str, int]]) -> tuple[FaultsResult, Counter[str]]:
    from asad.daemon.wiring import make_runner
    from asad.common.config import Settings
    from asad.common.log import setup_logging
    from asad.core.model import JobPhase
    from asad.slurm.sim import make_simulator
    from asad.store.repo import Store

    setup_logging(-2)
    t_wall = time.perf_counter()
    sim = make_simulator(preset, load=load, seed=seed)
    start = sim.now()
    killer = Killer(kill_at)
    tmp = tempfile.TemporaryDirectory()
    url = f"sqlite:///{Path(tmp.name) / 'asad.db'}"
    settings = Settings(db_url=url, seed=seed)
    store = Store(url)
    ids = [store.add_workflow(spec, sim.now(), strategy=strategy, mode=mode).id
           for spec, strategy, mode in _specs(workflows)]
    store_id = store.store_id
    restarts = 0
    problems: list[str] = []
    while True:
        backend = CrashingBackend(sim, killer)
        _crashing_commits(store, killer)
        try:
            runner = make_runner(settings, store, backend)
            _drive(runner, backend, ids, killer_budget_s=120 * 86400)
            break
        except Crash:
            # SIGKILL: the open transaction is gone; the cluster keeps running meanwhile.
            store.session.rollback()
            store.close()
            sim.run_until(sim.now() + 60.0)
            restarts += 1
            store = Store(url)
        except TimeoutError as exc:
            problems.append(str(exc))
            break
    # -- the verdict, from the cluster's records and the store ------------------------------------
    rows = {r.id: r for r in store.workflow_rows(ids)}
    loaded = {wf.id: wf for wf in store.load_workflows(ids)}
    abandoned = 0
    for wf in loaded.values():
        abandoned += sum(1 for j in wf.jobs if j.phase is JobPhase.ABANDONED)
    store.close()
    tmp.cleanup()
    found = sim.find(f"asad:{store_id}:")
    by_tag = Counter(st.comment for st in found.values())
    tags_twice = sum(1 for n in by_tag.values() if n > 1)
    completed_jobs: Counter[tuple[str, str]] = Counter()
    for st in found.values():
        _, _, wf_id, stage, _attempt = st.comment.split(":")
        if st.state is JobState.COMPLETED:
            completed_jobs[(wf_id, stage)] += 1
    ran_twice = sum(1 for n in completed_jobs.values() if n > 1)
    stages = lost = 0
    for wf_id in ids:
        wf = loaded[wf_id]
        for name in wf.stages:
            stages += 1
            job_stage = "*" if wf.strategy == "big-job" else name
            if rows[wf_id].state != "COMPLETED" or completed_jobs[(str(wf_id), job_stage)] == 0:
                lost += 1
    result = FaultsResult(
        workflows=workflows, kills_planned=len(kill_at), kills_done=sum(killer.kills.values()),
        kills_by_kind={k: killer.kills[k] for k in CRASH_KINDS}, restarts=restarts,
        crash_points_seen=killer.points, completed=sum(1 for r in rows.values() if r.state == "COMPLETED"),
        stages=stages, stages_lost=lost, stages_submitted_twice=tags_twice + ran_twice, tags_on_two_jobs=tags_twice,
        intents_abandoned=abandoned, slurm_jobs=len(found),
        virtual_h=round((sim.now() - start) / 3600, 1), wall_s=round(time.perf_counter() - t_wall, 1), seed=seed,
        problems=problems)
    return result, killer.seen


def run_faults(workflows: int = 50, kills: int = 50, seed: int = 0, preset: str = "small",
               load: float = 0.5) -> FaultsResult:
    points = count_points(workflows, seed, preset, load)
    kill_at = plan_kills(points, kills, np.random.default_rng(seed))
    return _run(workflows, seed, preset, load, kill_at)[0]


def render(r: FaultsResult) -> str:
    lines = ["| measure | value |", "|---|---|"]
    for key in ("workflows", "kills_done", "restarts", "completed", "stages", "stages_lost",
                "stages_submitted_twice", "tags_on_two_jobs", "intents_abandoned",
                "slurm_jobs", "crash_points_seen", "virtual_h", "wall_s"):
        lines.append(f"| {key.replace('_', ' ')} | {getattr(r, key)} |")
    lines.append("| kills by instant | " + ", ".join(f"{k} {v}" for k, v in r.kills_by_kind.items()) + " |")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    if args.backend == "slurm":
        from asad.bench import faults_real

        args.workflows = args.workflows or 12
        args.kills = 40 if args.kills is None else args.kills
        return faults_real.main(args)
    args.workflows = args.workflows or 50
    args.kills = 50 if args.kills is None else args.kills
    result = run_faults(args.workflows, args.kills, args.seed, args.preset, args.load)
    if args.json:
        print(json.dumps(asdict(result), indent=2))
    else:
        print(f"{args.workflows} workflows ({', '.join(WORKFLOW_FILES)} x {', '.join(STRATEGIES)}) on the "
              f"simulator ({args.preset}, load {args.load}, seed {args.seed}); {args.kills} kills at random instants")
        print(render(result))
        for p in result.problems:
            print(f"problem: {p}", file=sys.stderr)
    ok = result.stages_lost == 0 and result.stages_submitted_twice == 0 and result.completed == result.workflows
    return 0 if ok else 1


def register(subparsers) -> None:  # noqa: ANN001
    p = subparsers.add_parser("faults", help="crash asad at random instants; count lost and doubled stages")
    p.add_argument("--backend", choices=("sim", "slurm"), default="sim",
                   help="sim: crash points injected on the simulator; slurm: SIGKILL a real asad daemon on the "
                        "cluster SLURM_CONF names (asad/bench/faults_real.py)")
    p.add_argument("--workflows", type=positive_int, default=None, help="default: 50 (sim), 12 (slurm)")
    p.add_argument("--kills", type=non_negative_int, default=None, help="default: 50 (sim), 40 (slurm)")
    p.add_argument("--sbatch-delay", type=non_negative_float, default=4.0,
                   help="slurm: seconds the slow sbatch stand-in sleeps before the real sbatch")
    p.add_argument("--keep", metavar="DIR", help="slurm: keep the state dir, store and daemon log in DIR")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--preset", default="small", choices=sorted(PRESETS))
    p.add_argument("--load", type=non_negative_float, default=0.5)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=main)
