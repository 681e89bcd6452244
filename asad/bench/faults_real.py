"""``asad bench faults --backend slurm``: SIGKILL a real ``asad daemon`` on a real Slurm, over and over.

Short sleep pipelines (3-5 stages of a few seconds; every third workflow begins with a stage that
is OOM-killed once and retried with more memory) are submitted a few at a time with ``asad submit``
while an ``asad daemon`` (a subprocess with its own state dir and store) runs them. The daemon is
SIGKILLed and restarted at once, ``--kills`` times, at three kinds of instant:

- ``random``: after it ran a random 1-6 s;
- ``submit``: a fraction of a second after an ``asad submit`` was started beside it;
- ``slow-sbatch``: while an ``sbatch`` it started is in flight: the daemon runs with a stand-in
  ``sbatch`` first in ``PATH`` that sleeps ``--sbatch-delay`` s, then runs the real one (the busy
  slurmctld of issue 36, item 1), and it is killed once a submission intent is SUBMITTING and its
  sbatch runs (the stand-in's process carries the tag). The orphaned sbatch lands its job later.

When all kills are done the last daemon runs every workflow to its end and stays up until no
sbatch of an earlier daemon is in flight and one more look for late-landing jobs has passed. Then
the store is read (read-only) and compared with Slurm's records by :mod:`faults_verdict`.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from asad.bench.faults_verdict import SlurmJob, StoredJob, StoredStage, StoredWorkflow, Verdict, judge
from asad.slurm.cli import SlurmCLI
from asad.slurm.inflight import submitting

KINDS = ("random", "submit", "slow-sbatch")
PARALLEL = 3  # workflows active at once
HOG = 'python3 -c "import time; x = bytearray(300 * 1024 * 1024); time.sleep(2)"'


@dataclass
class RealFaultsResult:
    workflows: int
    kills: int
    kills_by_kind: dict[str, int]
    slow_sbatch_orphans: int  # sbatch processes left running by a killed daemon
    submits_killed_beside: int
    stages: int
    lost: int
    doubled: int
    stray: int
    mismatched: int
    workflows_not_completed: int
    slurm_jobs: int
    oom_retries: int
    intents_adopted: int  # jobs the next daemon found in Slurm for an intent it had no job id for
    intents_abandoned: int  # intents that never reached Slurm: submitted again
    landed_late: int  # jobs of abandoned intents that showed up later (adopted or cancelled)
    daemons_started: int  # "daemon started" in the log: kills + 1 when every kill hit a started daemon
    wall_s: float
    seed: int
    details: list[str] = field(default_factory=list)


class BenchError(Exception):
    """A setup problem the user can fix (no Slurm, no sbatch): a message, not a traceback."""


def _workflow_yaml(i: int, rng: random.Random) -> str:
    strategy = ("per-stage", "asa")[i % 2]
    lines = [f"name: kill{i}", f"strategy: {strategy}", "defaults: {time: 5m, mem: 100M, cpus: 1}", "stages:"]
    if i % 3 == 0:
        lines.append(f"  - {{name: hog, run: '{HOG}'}}")
    for s in range(rng.randint(3, 5)):
        lines.append(f"  - {{name: s{s}, run: 'sleep {rng.randint(2, 4)}'}}")
    return "\n".join(lines) + "\n"


class Harness:
    def __init__(self, root: Path, slurm_conf: str, sbatch_delay: float):
        self.root = root
        self.state = root / "state"
        self.db = self.state / "asad.db"
        real = shutil.which("sbatch")
        if real is None:
            raise BenchError("no sbatch in PATH; start a cluster (slurm-scripts/local-cluster.sh up) and "
                             "eval \"$(slurm-scripts/local-cluster.sh env)\"")
        slow = root / "slow-bin"
        slow.mkdir()
        (slow / "sbatch").write_text(f"#!/bin/bash\nsleep {sbatch_delay}\nexec {real} \"$@\"\n")
        (slow / "sbatch").chmod(0o755)
        env = dict(os.environ, SLURM_CONF=slurm_conf)
        for var in ("ASAD_DB_URL", "ASAD_BACKEND", "ASAD_CONFIG", "ASAD_PREDICTOR"):
            env.pop(var, None)
        env.update(ASAD_STATE_DIR=str(self.state), ASAD_POLL_INTERVAL="1", XDG_CONFIG_HOME=str(root / "config"))
        self.env = env
        self.slow_env = {**env, "PATH": f"{slow}:{env['PATH']}"}
        self.daemon: subprocess.Popen | None = None
        self.log = open(root / "daemon.log", "ab")  # noqa: SIM115 - kept for the whole run

    def asad(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "asad", *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)

    def submit_async(self, path: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "asad", "submit", str(path), "--backend", "slurm"],
                                env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def start(self, slow: bool) -> None:
        """Start a daemon and wait until it says "daemon started" (up to 30 s): a kill while Python
        still imports asad tests nothing, so every kill's clock runs from there."""
        before = self._started()
        self.daemon = subprocess.Popen([sys.executable, "-m", "asad", "daemon"],
                                       env=self.slow_env if slow else self.env,
                                       stdout=self.log, stderr=self.log)
        _wait_for(lambda: self._started() > before or self.daemon.poll() is not None, 30, 0.05)

    def _started(self) -> int:
        self.log.flush()
        return (self.root / "daemon.log").read_bytes().count(b'"event": "daemon started"')

    def kill(self) -> None:
        assert self.daemon is not None
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait(30)

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()

    def query(self, sql: str) -> list[tuple]:
        if not self.db.exists():
            return []
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute(sql).fetchall()
        except sqlite3.OperationalError:  # not created yet
            return []
        finally:
            con.close()

    def in_flight_sbatch(self) -> bool:
        """An intent is SUBMITTING and an sbatch carrying its tag runs."""
        tags = [t for (t,) in self.query("select tag from jobs where phase='SUBMITTING'")]
        return bool(tags and submitting(tags))

    def any_sbatch_running(self) -> bool:
        tags = [t for (t,) in self.query("select tag from jobs")]
        return bool(tags and submitting(tags))

    def active(self) -> int:
        return self.query("select count(*) from workflows where state='ACTIVE'")[0][0] if self.db.exists() else 0

    def store_id(self) -> str:
        return self.query("select value from meta where key='store_id'")[0][0]


def _wait_for(cond, timeout_s: float, every_s: float = 0.1) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(every_s)
    return False


def run_real_faults(workflows: int, kills: int, seed: int, sbatch_delay: float, slurm_conf: str,
                    keep: Path | None = None) -> RealFaultsResult:
    rng = random.Random(seed)
    t0 = time.monotonic()
    tmp = None if keep else tempfile.TemporaryDirectory(prefix="asad-faults-")
    root = keep or Path(tmp.name)  # type: ignore[union-attr]
    root.mkdir(parents=True, exist_ok=True)
    h = Harness(root, slurm_conf, sbatch_delay)
    files = []
    for i in range(workflows):
        f = root / f"kill{i}.yaml"
        f.write_text(_workflow_yaml(i, rng))
        files.append(f)
    pending = list(files)
    # the kinds are dealt in turn, a third each, in a shuffled order
    plan = [KINDS[i % len(KINDS)] for i in range(kills)]
    rng.shuffle(plan)
    done: Counter[str] = Counter()
    orphans = submits_beside = 0
    submits: list[subprocess.Popen] = []

    def feed() -> None:
        while pending and h.active() + sum(p.poll() is None for p in submits) < PARALLEL:
            submits.append(h.submit_async(pending.pop(0)))

    h.start(slow=plan[0] == "slow-sbatch" if plan else False)
    try:
        for n, kind in enumerate(plan):
            feed()
            if kind == "random":
                time.sleep(rng.uniform(1.0, 6.0))
            elif kind == "submit":
                if pending:
                    submits.append(h.submit_async(pending.pop(0)))
                else:  # no workflow left to submit: submit one more copy of a short one
                    extra = root / f"extra{n}.yaml"
                    extra.write_text(_workflow_yaml(1000 + n, rng))
                    submits.append(h.submit_async(extra))
                submits_beside += 1
                time.sleep(rng.uniform(0.05, 1.5))
            else:
                # kill while an sbatch of this daemon is in flight; make work if none comes
                if not _wait_for(h.in_flight_sbatch, 20):
                    extra = root / f"extra{n}.yaml"
                    extra.write_text(_workflow_yaml(1000 + n, rng))
                    submits.append(h.submit_async(extra))
                    if not _wait_for(h.in_flight_sbatch, 40):
                        kind = "random"  # counted as what it was
                time.sleep(rng.uniform(0.0, 0.5) if kind == "slow-sbatch" else 0)
                if kind == "slow-sbatch" and h.in_flight_sbatch():
                    orphans += 1
            h.kill()
            done[kind] += 1
            nxt = plan[n + 1] if n + 1 < len(plan) else None
            h.start(slow=nxt == "slow-sbatch")
        # no more kills: submit what is left, run everything to its end
        while pending or any(p.poll() is None for p in submits) or h.active():
            feed()
            if time.monotonic() - t0 > 3600:
                break
            time.sleep(1)
        _wait_for(lambda: not h.any_sbatch_running(), 300, 1)
        # the daemon looks for late-landing jobs of abandoned intents every 30 s: let it look again
        time.sleep(35)
    finally:
        h.stop()
        for p in submits:
            if p.poll() is None:
                p.kill()
    verdict, slurm_jobs, oom = _verdict(h, slurm_conf)
    result = RealFaultsResult(
        workflows=len(h.query("select id from workflows")), kills=sum(done.values()),
        kills_by_kind={k: done[k] for k in KINDS}, slow_sbatch_orphans=orphans,
        submits_killed_beside=submits_beside, stages=verdict.stages, lost=verdict.lost, doubled=verdict.doubled,
        stray=verdict.stray, mismatched=verdict.mismatched, workflows_not_completed=verdict.workflows_not_completed,
        slurm_jobs=slurm_jobs, oom_retries=oom, **_intent_counts(h), wall_s=round(time.monotonic() - t0, 1),
        seed=seed,
        details=verdict.details)
    if tmp is not None:
        tmp.cleanup()
    return result


def _intent_counts(h: Harness) -> dict[str, int]:
    log = (h.root / "daemon.log").read_text(errors="replace")
    return {"intents_adopted": log.count("adopted a job found in Slurm whose sbatch asad did not see answer"),
            "intents_abandoned": h.query("select count(*) from jobs where phase='ABANDONED'")[0][0],
            "landed_late": log.count("a job of a submission thought lost landed late"),
            "daemons_started": log.count('"event": "daemon started"')}


def _verdict(h: Harness, slurm_conf: str) -> tuple[Verdict, int, int]:
    store_id = h.store_id()
    backend = SlurmCLI(slurm_conf=slurm_conf)
    # sacct may lag the end of the last jobs by a few seconds
    found = backend.find(f"asad:{store_id}:")
    deadline = time.monotonic() + 60
    while any(not st.state.is_final for st in found.values()) and time.monotonic() < deadline:
        time.sleep(2)
        found = backend.find(f"asad:{store_id}:")
    stage_names: dict[int, list[str]] = {}
    for wf_id, name in h.query("select workflow_id, name from stages order by id"):
        stage_names.setdefault(wf_id, []).append(name)
    wfs = [StoredWorkflow(wf_id, state, tuple(stage_names.get(wf_id, ())))
           for wf_id, state in h.query("select id, state from workflows")]
    jobs = [StoredJob(*row) for row in
            h.query("select workflow_id, stage, attempt, tag, phase, job_id from jobs")]
    stages = [StoredStage(*row) for row in h.query(
        "select s.workflow_id, s.name, j.job_id from stages s left join jobs j on j.id = s.job_row")]
    slurm = [SlurmJob(jid, st.comment, st.state.value, bool(st.start_time)) for jid, st in found.items()]
    oom = sum(1 for s in slurm if s.state == "OUT_OF_MEMORY")
    return judge(wfs, jobs, stages, slurm), len(slurm), oom


def render(r: RealFaultsResult) -> str:
    lines = ["| measure | value |", "|---|---|"]
    for key in ("workflows", "stages", "kills", "slow_sbatch_orphans", "submits_killed_beside", "lost", "doubled",
                "stray", "mismatched", "workflows_not_completed", "slurm_jobs", "oom_retries", "intents_adopted",
                "intents_abandoned", "landed_late", "daemons_started", "wall_s"):
        lines.append(f"| {key.replace('_', ' ')} | {getattr(r, key)} |")
    lines.append("| kills by instant | " + ", ".join(f"{k} {v}" for k, v in r.kills_by_kind.items()) + " |")
    return "\n".join(lines)


def main(args) -> int:  # noqa: ANN001
    slurm_conf = os.environ.get("SLURM_CONF")
    if not slurm_conf:
        print("asad bench faults --backend slurm: SLURM_CONF is not set; start a cluster with "
              "slurm-scripts/local-cluster.sh up --accounting and eval \"$(slurm-scripts/local-cluster.sh env)\"",
              file=sys.stderr)
        return 2
    try:
        r = run_real_faults(args.workflows, args.kills, args.seed, args.sbatch_delay, slurm_conf,
                            keep=Path(args.keep) if args.keep else None)
    except BenchError as exc:
        print(f"asad bench faults --backend slurm: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(asdict(r), indent=2))
    else:
        print(f"{r.workflows} sleep pipelines on the real Slurm ({slurm_conf}), {PARALLEL} at a time; "
              f"{r.kills} SIGKILLs of asad daemon (restarted at once), slow sbatch {args.sbatch_delay} s, "
              f"seed {r.seed}")
        print(render(r))
        for d in r.details:
            print(d, file=sys.stderr)
    ok = r.lost == 0 and r.doubled == 0 and r.stray == 0 and r.mismatched == 0 and r.workflows_not_completed == 0
    return 0 if ok else 1
