"""``asad bench real-strategies``: a short chain of stages under each strategy on a real Slurm.

What a user sees, end to end: a daemon (``asad daemon --backend slurm``, its own state folder per
strategy) and ``asad submit``; the clock starts just before ``submit`` and stops when ``asad
history`` says the workflow ended. Each strategy runs the workflow ``--runs`` times on
its own store (the first run teaches it the stages' run times and waits); every run is reported.
The runs go round-robin (run 1 of every strategy, then run 2 of every strategy, ...), so a queue
that drifts over the bench weighs on every strategy alike.

With ``--load N`` a generator keeps about N background jobs pending the whole time (random sizes
and lengths, ``-A bg``, the same unix user), so stages wait in a real queue. The local cluster
enforces no associations, so Slurm files those jobs under the user's default account, the
workflow's: fair-share is the same for both (``sprio -l``), and age and job size order them. Start
the cluster with ``--priority multifactor`` to measure under an age weight (``--max-age 10:00
--priority-calc-period 1`` lets age matter within a few-minute run); the bench prints the rules
it found.

Printed per run: makespan as the user sees it, the critical path's work, the perceived wait
(stage start minus the later of its predecessors' end and the submission), the delay from
``submit`` to the first ``sbatch``, the delay from the last stage's end to ``history`` saying so,
and core-hours (every allocation, idle time included).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from asad.bench.strategies import SHARE_JOBS_OF
from asad.common.arg_types import non_negative_int, positive_float, positive_int


def register(subparsers) -> None:  # noqa: ANN001
    p = subparsers.add_parser("real-strategies", help="a short workflow under each strategy on the local real Slurm")
    p.add_argument("--strategies", default="auto,chain,per-stage,asa",
                   help="strategies, and auto-shared / auto-shared-learned / auto-merged: auto with share_jobs on / "
                        "learned / cost")
    p.add_argument("--stages", type=positive_int, default=5)
    p.add_argument("--stage-s", type=positive_int, default=60, help="seconds of work per stage")
    p.add_argument("--cpus", type=positive_int, default=4)
    p.add_argument("--pipeline", default="",
                   help="stages as SECONDS:CPUS,... (e.g. issue 35's 20:8,30:28,15:4,30:28,10:2); "
                        "overrides --stages, --stage-s and --cpus")
    p.add_argument("--load-cpus", default="",
                   help="the background jobs' sizes in CPUs, e.g. 14,28 (whole and half nodes); "
                        "default: a mix from 1 CPU to a node")
    p.add_argument("--load-runtime", default="30:240", metavar="MIN:MAX",
                   help="the background jobs' run times, uniform between MIN and MAX seconds")
    p.add_argument("--runs", type=positive_int, default=2, help="runs per strategy on one store (the first one learns)")
    p.add_argument("--load", type=non_negative_int, default=0, help="background jobs kept pending (0 = an idle cluster)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--poll", type=positive_float, default=30.0, help="the daemon's poll interval (its default: 30 s)")
    p.add_argument("--out", type=Path, default=Path("out/real-strategies"))
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=main)


def workflow_text(stages: int, stage_s: int, cpus: int, pipeline: list[tuple[int, int]] | None = None) -> str:
    """A chain of sleeps: ``stages`` alike, or one per (seconds, CPUs) of ``pipeline``."""
    pipeline = pipeline or [(stage_s, cpus)] * stages
    lines = ["name: real-chain", "strategy: auto", "sizing: off", "stages:"]
    for i, (secs, n) in enumerate(pipeline):
        after = f", after: [s{i - 1}]" if i else ""
        lines.append(f"  - {{name: s{i}, cpus: {n}, mem: 1G, time: {max(3, 3 * secs // 60)}m, "
                     f"run: 'sleep {secs}'{after}}}")
    return "\n".join(lines) + "\n"


def parse_pipeline(text: str) -> list[tuple[int, int]]:
    """``20:8,30:28`` -> [(20, 8), (30, 28)]; a clear message on anything else."""
    out = []
    for part in text.split(","):
        secs, _, cpus = part.partition(":")
        if not (secs.strip().isdigit() and cpus.strip().isdigit() and int(secs) > 0 and int(cpus) > 0):
            raise ValueError(f"--pipeline: '{part}' is not SECONDS:CPUS (e.g. 20:8,30:28)")
        out.append((int(secs), int(cpus)))
    return out


class PendingBackgroundJobs:
    """Keeps about ``target`` jobs pending: one ``squeue`` and at most a few ``sbatch`` every 5 s."""

    def __init__(self, target: int, seed: int, max_cpus: int, sizes: list[int] | None = None,
                 runtime_s: tuple[int, int] = (30, 240)):
        self.target = target
        self.runtime_s = runtime_s
        self.sizes = sizes or [1, 2, 4, 8, 14, 28, max_cpus]
        self.rng = random.Random(seed)
        self.max_cpus = max_cpus
        self.stop = threading.Event()
        self.submitted = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            out = subprocess.run(["squeue", "-h", "--name=bg", "-t", "PD", "-o", "%i"], capture_output=True,
                                 text=True, check=False).stdout
            for _ in range(min(4, self.target - len(out.split()))):
                cpus = self.rng.choice(self.sizes)
                run_s = int(self.rng.uniform(*self.runtime_s))
                subprocess.run(["sbatch", "-A", "bg", "-J", "bg", "-c", str(min(cpus, self.max_cpus)),
                                "--mem=500M", f"--time={run_s // 60 + 2}", "-o", "/dev/null",
                                "--wrap", f"sleep {run_s}"], capture_output=True, check=False)
                self.submitted += 1
            self.stop.wait(5)

    def __enter__(self) -> PendingBackgroundJobs:
        if self.target > 0:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        subprocess.run(["scancel", "--name=bg"], capture_output=True, check=False)


def _asad(env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "asad", *args], env=env, capture_output=True, text=True,
                          check=check, timeout=120)


def _daemon_env(variant: str) -> dict[str, str]:
    """The daemon setting a variant adds to its strategy (``auto-shared``: share_jobs on)."""
    return {"ASAD_SHARE_JOBS": SHARE_JOBS_OF[variant]} if variant in SHARE_JOBS_OF else {}


def start_daemon(strategy: str, args: argparse.Namespace, root: Path) -> tuple[subprocess.Popen, dict]:
    """One daemon and store per strategy, so each learns only from its own runs."""
    state = root / strategy
    env = {**os.environ, "XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(root / "config"),
           "ASAD_POLL_INTERVAL": str(args.poll), **_daemon_env(strategy)}
    env.pop("ASAD_DB_URL", None)
    daemon = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "slurm"], env=env,
                              stdout=subprocess.DEVNULL, stderr=(root / f"{strategy}.log").open("w"))
    return daemon, env


def one_run(strategy: str, run: int, env: dict, args: argparse.Namespace, wf_path: Path) -> dict:
    """Submit the workflow, wait until ``asad history`` says it ended, measure it from the store."""
    from asad.core.model import JobPhase
    from asad.store.repo import Store

    t0 = time.time()
    submitted_as = "auto" if strategy in SHARE_JOBS_OF else strategy
    wf_id = int(_asad(env, "submit", str(wf_path), "--strategy", submitted_as).stdout.split()[0])
    while True:
        hist = {h["id"]: h for h in json.loads(_asad(env, "history", "--json").stdout)}
        if hist[wf_id]["state"] != "ACTIVE":
            break
        time.sleep(0.5)
    t_done = time.time()
    store = Store(f"sqlite:///{Path(env['XDG_STATE_HOME']) / 'asad' / 'asad.db'}")
    try:
        wf = next(w for w in store.load_workflows(active_only=False) if w.id == wf_id)
    finally:
        store.close()
    ends = {n: r.end_time for n, r in wf.stages.items()}
    perceived, interstage = perceived_waits(wf, t0)
    jobs = [j for j in wf.jobs if j.phase is not JobPhase.ABANDONED]
    core_h = sum((j.end_time - j.start_time) * j.request.cpus for j in jobs if j.start_time and j.end_time) / 3600
    last_end = max(e for e in ends.values() if e)
    return {"strategy": strategy, "run": run, "state": wf.state.value,
            "makespan_s": round(t_done - t0, 1), "slurm_makespan_s": round(last_end - t0, 1),
            "critical_path_work_s": args.critical_path_s, "perceived_wait_s": round(perceived, 1),
            "interstage_wait_s": round(interstage, 1),
            "first_sbatch_s": round(min(j.submitted_at for j in jobs if j.submitted_at) - t0, 1),
            "noticed_end_s": round(t_done - last_end, 1), "core_hours": round(core_h, 3), "jobs": len(jobs)}


def perceived_waits(wf, t0: float) -> tuple[float, float]:  # noqa: ANN001 -- asad.core.model.WorkflowRun
    """(every stage's perceived wait, that of the stages after another): a stage's start minus the
    later of its predecessors' end and the submission at ``t0``. The second is what submitting
    ahead can hide; the first stage's wait no strategy but big-job can touch."""
    ends = {n: r.end_time for n, r in wf.stages.items()}
    total = interstage = 0.0
    for name, stage in wf.stages.items():
        preds = wf.spec.predecessors(name)
        ready = max([t0, *[ends[p] for p in preds if ends[p]]])
        if stage.start_time:
            wait = max(0.0, stage.start_time - ready)
            total += wait
            interstage += wait if preds else 0.0
    return total, interstage


def run_rounds(strategies: list[str], args: argparse.Namespace, wf_path: Path, root: Path) -> list[dict]:
    """Round-robin: run k of every strategy, then run k+1 of every strategy, so a queue that drifts
    over the bench (the background load is random) weighs on every strategy alike."""
    daemons = {s: start_daemon(s, args, root) for s in strategies}
    rows = []
    try:
        time.sleep(2)
        for run in range(args.runs):
            for strategy in strategies:
                rows.append(one_run(strategy, run, daemons[strategy][1], args, wf_path))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        for daemon, _ in daemons.values():
            daemon.send_signal(signal.SIGTERM)
        for daemon, _ in daemons.values():
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
    return sorted(rows, key=lambda r: (strategies.index(r["strategy"]), r["run"]))


def markdown(rows: list[dict], rules: str, load: int) -> str:
    out = [f"Priority rules: {rules}; background load: {load or 'none'} pending jobs.", "",
           "| strategy | run | makespan (s) | vs chain | work on critical path (s) | perceived wait (s) "
           "| of it after stage 1 (s) | submit → first sbatch (s) | last end → noticed (s) | core-h | jobs |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    chain = {r["run"]: r["makespan_s"] for r in rows if r["strategy"] == "chain"}
    for r in rows:
        ratio = f"{r['makespan_s'] / chain[r['run']]:.2f}×" if r["run"] in chain else "-"
        out.append(f"| {r['strategy']} | {r['run']} | {r['makespan_s']:.1f} | {ratio} | {r['critical_path_work_s']} "
                   f"| {r['perceived_wait_s']:.1f} | {r['interstage_wait_s']:.1f} | {r['first_sbatch_s']:.1f} "
                   f"| {r['noticed_end_s']:.1f} | {r['core_hours']:.3f} | {r['jobs']} |")
    out += ["", "| strategy | runs | mean makespan (s) | mean perceived wait after stage 1 (s) | mean core-h |",
            "|---|---:|---:|---:|---:|"]
    for strategy in dict.fromkeys(r["strategy"] for r in rows):
        mine = [r for r in rows if r["strategy"] == strategy]
        out.append(f"| {strategy} | {len(mine)} | {sum(r['makespan_s'] for r in mine) / len(mine):.1f} "
                   f"| {sum(r['interstage_wait_s'] for r in mine) / len(mine):.1f} "
                   f"| {sum(r['core_hours'] for r in mine) / len(mine):.3f} |")
    return "\n".join(out)


def main(args: argparse.Namespace) -> int:
    from asad.slurm.select import make_slurm_backend

    try:
        pipeline = parse_pipeline(args.pipeline) if args.pipeline else None
        if args.load_cpus and not all(c.strip().isdigit() and int(c) > 0 for c in args.load_cpus.split(",")):
            raise ValueError(f"--load-cpus: '{args.load_cpus}' is not a list of CPU counts (e.g. 14,28)")
        low, _, high = args.load_runtime.partition(":")
        if not (low.isdigit() and high.isdigit() and 0 < int(low) <= int(high)):
            raise ValueError(f"--load-runtime: '{args.load_runtime}' is not MIN:MAX seconds (e.g. 30:240)")
    except ValueError as exc:
        print(f"asad: error: {exc}", file=sys.stderr)
        return 2
    backend = make_slurm_backend()
    rules = backend.priority_rules().describe()
    max_cpus = max(p.cpus_per_node for p in backend.partitions())
    args.out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="asad-real-", dir=args.out)).resolve()
    wf_path = root / "workflow.yaml"
    args.critical_path_s = sum(s for s, _ in pipeline) if pipeline else args.stages * args.stage_s
    wf_path.write_text(workflow_text(args.stages, args.stage_s, args.cpus, pipeline))
    sizes = [int(c) for c in args.load_cpus.split(",")] if args.load_cpus else None
    rows: list[dict] = []
    low, _, high = args.load_runtime.partition(":")
    with PendingBackgroundJobs(args.load, args.seed, max_cpus, sizes, (int(low), int(high))):
        if args.load:
            time.sleep(60)  # let the queue fill before the first measurement
        rows = run_rounds(args.strategies.split(","), args, wf_path, root)
    text = markdown(rows, rules, args.load)
    (args.out / "real-strategies.json").write_text(json.dumps({"rules": rules, "load": args.load, "rows": rows},
                                                               indent=1))
    (args.out / "real-strategies.md").write_text(text + "\n")
    print(json.dumps(rows, indent=1) if args.json else text)
    return 0
