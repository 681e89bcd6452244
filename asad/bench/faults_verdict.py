"""The verdict of the kill-and-fault bench on a real Slurm: the store's rows against Slurm's records.

Kept apart from the driver (``faults_real``) so the counting is tested without a cluster. Every
job asad submits carries its tag ``asad:<store>:<workflow>:<stage>:<attempt>`` as ``--comment``, so
Slurm's own records (sacct + squeue, found by the store's tag prefix) say what ran, whatever the
store believes:

- lost: a stage of a stored workflow with no COMPLETED Slurm job;
- doubled: a stage with more than one COMPLETED job, or an attempt (one tag) carried by more than
  one job that started (an sbatch that landed twice for one intent);
- stray: a Slurm job with this store's tag whose job id no store row holds (nobody tracks or
  cancels it), or one still pending/running after its workflow ended in the store.
- mismatched: a completed stage whose store row names another job id than the COMPLETED Slurm job
  (what ``asad show`` prints would then differ from sacct).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

FINAL_WORKFLOW_STATES = ("COMPLETED", "FAILED", "CANCELLED")
LIVE_SLURM_STATES = ("PENDING", "RUNNING", "REQUEUED", "SUSPENDED", "CONFIGURING", "COMPLETING", "RESIZING")


@dataclass(frozen=True)
class StoredWorkflow:
    id: int
    state: str
    stages: tuple[str, ...]


@dataclass(frozen=True)
class StoredJob:
    """A row of the store's ``jobs`` table (one submission attempt)."""

    workflow_id: int
    stage: str
    attempt: int
    tag: str
    phase: str
    job_id: int | None


@dataclass(frozen=True)
class StoredStage:
    workflow_id: int
    name: str
    job_id: int | None  # the job id of the stage's current job row, as ``asad show`` prints it


@dataclass(frozen=True)
class SlurmJob:
    """One job found in Slurm by the store's tag prefix."""

    job_id: int
    tag: str
    state: str  # JobState value: COMPLETED, FAILED, OUT_OF_MEMORY, PENDING, ...
    started: bool


@dataclass
class Verdict:
    stages: int = 0
    lost: int = 0
    doubled: int = 0
    stray: int = 0
    mismatched: int = 0
    workflows_not_completed: int = 0
    details: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.lost or self.doubled or self.stray or self.mismatched or self.workflows_not_completed)


def parse_tag(tag: str) -> tuple[int, str, int] | None:
    """``asad:<store>:<wf>:<stage>:<attempt>`` -> (wf, stage, attempt); a stage name may hold ':'."""
    parts = tag.split(":")
    if len(parts) < 5 or parts[0] != "asad":
        return None
    try:
        return int(parts[2]), ":".join(parts[3:-1]), int(parts[-1])
    except ValueError:
        return None


def judge(workflows: list[StoredWorkflow], jobs: list[StoredJob], stages: list[StoredStage],
          slurm: list[SlurmJob]) -> Verdict:
    v = Verdict()
    wf_state = {w.id: w.state for w in workflows}
    completed: dict[tuple[int, str], list[int]] = defaultdict(list)
    started_by_tag: dict[str, list[int]] = defaultdict(list)
    for s in slurm:
        key = parse_tag(s.tag)
        if key is None:
            v.stray += 1
            v.details.append(f"stray: job {s.job_id} carries a tag that is not asad's form: {s.tag!r}")
            continue
        wf_id, stage, _attempt = key
        if s.state == "COMPLETED":
            completed[(wf_id, stage)].append(s.job_id)
        if s.started:
            started_by_tag[s.tag].append(s.job_id)
    known_ids = {j.job_id for j in jobs if j.job_id is not None}
    for s in slurm:
        key = parse_tag(s.tag)
        if key is None:
            continue
        if s.job_id not in known_ids:
            v.stray += 1
            v.details.append(f"stray: job {s.job_id} ({s.tag}, {s.state}) is in no store row")
        elif s.state in LIVE_SLURM_STATES and wf_state.get(key[0]) in FINAL_WORKFLOW_STATES:
            v.stray += 1
            v.details.append(f"stray: job {s.job_id} ({s.tag}) is {s.state} after workflow {key[0]} "
                             f"ended {wf_state[key[0]]}")
    stage_job = {(s.workflow_id, s.name): s.job_id for s in stages}
    doubled_stages: set[tuple[int, str]] = set()
    for tag, ids in started_by_tag.items():
        if len(ids) > 1:
            key = parse_tag(tag)
            assert key is not None
            doubled_stages.add(key[:2])
            v.details.append(f"doubled: attempt {tag} started as jobs {sorted(ids)}")
    for w in workflows:
        if w.state != "COMPLETED":
            v.workflows_not_completed += 1
            v.details.append(f"workflow {w.id} ended {w.state}")
        for name in w.stages:
            v.stages += 1
            done = completed.get((w.id, name), [])
            if not done:
                v.lost += 1
                v.details.append(f"lost: workflow {w.id} stage {name}: no COMPLETED job in Slurm")
            elif len(done) > 1:
                doubled_stages.add((w.id, name))
                v.details.append(f"doubled: workflow {w.id} stage {name} COMPLETED as jobs {sorted(done)}")
            elif stage_job.get((w.id, name)) != done[0]:
                v.mismatched += 1
                v.details.append(f"mismatch: workflow {w.id} stage {name}: store says job "
                                 f"{stage_job.get((w.id, name))}, Slurm completed job {done[0]}")
    v.doubled = len(doubled_stages)
    return v
