"""``asad submit --dry-run``: the exact ``sbatch`` calls asad would make now, as a shell script.

The real engine decides on a throw-away store (what the real store has learned is read, never
written) against a backend that records submissions instead of making them: nothing reaches Slurm
and nothing is stored. The output runs as it is: each job id is captured in a variable that the
later jobs' ``--dependency`` uses.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from asad.slurm.backend import Backend, JobRequest, JobState, JobStatus
from asad.slurm.priority_rules import rules_of

FIRST_FAKE_ID = 900_000_001


@dataclass
class RecordingBackend:
    """The real cluster's partitions, clock and rules; submissions are only written down."""

    real: Backend
    submitted: list[tuple[int, JobRequest]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.real.name

    @property
    def cluster_name(self) -> str:
        return getattr(self.real, "cluster_name", self.real.name)

    @property
    def max_array_size(self) -> int:
        from asad.common.arrays import DEFAULT_MAX_ARRAY_SIZE

        return getattr(self.real, "max_array_size", DEFAULT_MAX_ARRAY_SIZE)

    def priority_rules(self):  # noqa: ANN201
        return rules_of(self.real)

    def partitions(self):  # noqa: ANN201
        return self.real.partitions()

    def now(self) -> float:
        return self.real.now()

    def submit(self, req: JobRequest) -> int:
        job_id = FIRST_FAKE_ID + len(self.submitted)
        self.submitted.append((job_id, req))
        return job_id

    def poll(self, job_ids: list[int]) -> dict[int, JobStatus]:
        return {j: JobStatus(job_id=j, state=JobState.PENDING, reason="Dependency") for j in job_ids}

    def find(self, tag: str) -> dict[int, JobStatus]:
        return {}

    def usage(self, job_ids: list[int]) -> dict:
        return {}

    def cancel(self, job_ids: list[int]) -> None:
        pass

    def estimate_start(self, req: JobRequest) -> float | None:
        return None


def dry_run(spec, settings, backend: Backend, *, strategy: str, mode: str) -> str:  # noqa: ANN001
    from asad.daemon.wiring import CommandBuilder, engine_learned, predictor_choice
    from asad.daemon.runner import Runner
    from asad.slurm.cli import batch_script, sbatch_args
    from asad.store.repo import Store

    recorder = RecordingBackend(backend)
    real_store = _existing_store(settings)
    # The scratch workflow's run folder is a scratch one too: the printed script, run by hand, must
    # not write markers into a real workflow's folder of the same id.
    run_dir = dry_run_dir()
    # On the simulator too the script is what a real cluster would be given (the stage wrapper,
    # ``setup:``, asad's ``--output``): the simulator stands in for the cluster's partitions only.
    with tempfile.TemporaryDirectory(prefix="asad-dry-run-") as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'dry.db'}")
        try:
            kind, params = predictor_choice(settings)
            builder = CommandBuilder(run_dir, create=False)
            runner = Runner.create(store, recorder, predictor=kind, predictor_params=params, seed=settings.seed,
                                   asa_timing=settings.asa_timing, build_command=builder,
                                   idle_price=settings.idle_price, run_dir=str(run_dir),
                                   placement=settings.placement, share_jobs=settings.share_jobs)
            if real_store is not None:
                runner.ctx.learned = engine_learned(settings, real_store)
            store.add_workflow(spec, recorder.now(), strategy=strategy, mode=mode)
            runner.load()
            runner.tick()
            # a shared job runs several stages (asad/strategies/share.py): its tag names the first
            rides = {job.tag: job.rides for wf in runner.active.values() for job in wf.jobs if job.rides}
        finally:
            store.close()
            if real_store is not None:
                real_store.close()
    # an array stage split under MaxArraySize is several sbatch calls: chunk k is "<stage>.c<k>"
    names = {job_id: req.name.rsplit(".", 1)[-1] + _chunk_suffix(req.comment) for job_id, req in recorder.submitted}
    big = strategy == "big-job"
    stages_now = len(spec.stages) if big and recorder.submitted else (
        len({req.name for _, req in recorder.submitted}) + sum(len(r) for r in rides.values()))
    lines = ["#!/bin/bash", f"# asad submit --dry-run: workflow {spec.name}, strategy {strategy}; "
             f"{stages_now} of {len(spec.stages)} stages would be submitted now.",
             "# Nothing was submitted and nothing was stored. The workflow id, its run folder (under",
             f"# {run_dir}) and the --comment tag are those of a scratch store: the real submission gets its own.",
             "set -e"]
    folders = sorted({str((Path(req.workdir or ".") / req.output).parent) for _, req in recorder.submitted
                      if req.output})
    if folders:  # the daemon creates the run folder; Slurm cannot open an output file in a missing one
        lines.append("")
        if any(Path(f).is_relative_to(run_dir.parent) for f in folders):
            # /tmp may have been cleaned since, and the name taken by another user: use it only if ours
            q = shlex.quote(str(run_dir.parent))
            lines += [f"mkdir -p -m 700 {q}",
                      f"[ -O {q} ] && [ ! -L {q} ] || {{ echo \"asad: {q} is not this user's own folder; "
                      "run asad submit --dry-run again\" >&2; exit 1; }"]
        lines.append("mkdir -p -m 700 " + " ".join(shlex.quote(f) for f in folders))
    for job_id, req in recorder.submitted:
        args = [_name_ids(a, names) for a in sbatch_args(req)]
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(req.env.items()))
        var = _var(names[job_id])
        shared = rides.get(req.comment, ())
        head = (f"# big-job: one allocation; stages {', '.join(s.name for s in spec.stages)} run in it in turn (srun)"
                if big else f"# stages {', '.join((names[job_id], *shared))}: one job, each in turn" if shared
                else f"# stage {names[job_id]}")
        script = batch_script(req).rstrip("\n")
        end = heredoc_delimiter(script)
        lines += ["", head,
                  f"{var}=$({env + ' ' if env else ''}sbatch --parsable {' '.join(_quote(a) for a in args)} "
                  f"<<'{end}'", script, end, ")"]
    later = len(spec.stages) - stages_now
    if later:
        lines += ["", f"# The other {later} stage(s) are submitted by the daemon later: when their predecessors "
                  "start or end, as the strategy plans (asad explain shows why)."]
    return "\n".join(lines) + "\n"


def heredoc_delimiter(script: str) -> str:
    """The word that ends the here-document holding ``script``: named by the script's own hash, and
    checked not to be a line of it. A fixed word (``ASAD_SCRIPT``) let a ``run:`` holding that line
    end the here-document early: the rest of the stage's command then ran in the user's shell on the
    login node, as the printed script was run."""
    lines = set(script.splitlines())
    digest = hashlib.sha256(script.encode()).hexdigest()
    for n in range(len(lines) + 1):  # one of these is not a line of the script (pigeonhole)
        word = f"ASAD_SCRIPT_{digest[:16]}" + (f"_{n}" if n else "")
        if word not in lines:
            return word
    raise AssertionError("unreachable")


def dry_run_dir() -> Path:
    """Where a dry run's printed script keeps its run folders: a scratch place of this user's,
    ``<tmp>/asad-dry-run-<uid>``, made private (0700) and checked to be this user's own folder. A
    predictable name in a shared /tmp can be made first by another user (who could then read the
    logs, or swap the markers the stage wrapper waits for): a folder that is not this user's own, or
    is a link, is not used; a fresh private one (``mkdtemp``) is, in its stead."""
    base = Path(tempfile.gettempdir()) / f"asad-dry-run-{os.getuid()}"
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return Path(tempfile.mkdtemp(prefix=f"asad-dry-run-{os.getuid()}-")) / "runs"
    if not _private_folder(base):
        return Path(tempfile.mkdtemp(prefix=f"asad-dry-run-{os.getuid()}-")) / "runs"
    return base / "runs"


def _private_folder(path: Path) -> bool:
    """``path`` is a real folder (not a link) of this user's, which nobody else can write to or read;
    a folder of this user's that others could is made private first (through its open descriptor:
    what was checked is what is changed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid():
            return False
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o700)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _existing_store(settings):  # noqa: ANN001, ANN202
    """The user's store, to read what it learned; None when it does not exist yet (never created)."""
    from asad.common.config import sqlite_file
    from asad.store.repo import Store

    path = sqlite_file(settings.database_url)
    if path is not None and not path.exists():
        return None
    return Store(settings.database_url)


def _chunk_suffix(comment: str) -> str:
    last = comment.rsplit(":", 1)[-1]
    return "." + last.split(".", 1)[1] if "." in last else ""


def _var(stage: str) -> str:
    return "JOBID_" + "".join(c if c.isalnum() else "_" for c in stage)


def _name_ids(arg: str, names: dict[int, str]) -> str:
    """A recorded job id in ``--dependency`` becomes the shell variable holding the real id."""
    for job_id, stage in names.items():
        arg = arg.replace(str(job_id), "${" + _var(stage) + "}")
    return arg


def _quote(arg: str) -> str:
    # keep ${VAR} expandable: double quotes where a variable is inside, else shlex
    return f'"{arg}"' if "${JOBID_" in arg else shlex.quote(arg)
