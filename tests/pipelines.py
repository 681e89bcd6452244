"""Small workflows in a given state, for the engine's rule tests (issue 35's quantile rule,
expected starts, held starts, early release): a run of a YAML pipeline, the waits and run times
its geometries have learned, and the Slurm jobs it has live. Tests build the state they name
instead of driving a simulator to it."""

from __future__ import annotations

from collections.abc import Sequence

from asad.core.model import JobPhase, JobRecord, StageRun, StageState, WorkflowRun
from asad.slurm.backend import JobState


def new_run(yaml_text: str) -> WorkflowRun:
    """Workflow 1 of the YAML text, under ``auto`` with dependencies, every stage not submitted."""
    from asad.spec.load import parse_workflow

    wf = WorkflowRun(id=1, spec=parse_workflow(yaml_text), strategy="auto", mode="dependency")
    wf.stages = {s.name: StageRun(1, s.name) for s in wf.spec.stages}
    return wf


def learn_waits(ctx, waits_by_key: Sequence[tuple[str, Sequence[float]]], *, first_s: float,  # noqa: ANN001
                step_s: float = 1.0) -> None:
    """Tell the learner the waits, round by round: round i's wait of the j-th key at
    ``first_s + i * step_s + j`` (keys interleaved, as jobs of several geometries end)."""
    columns = [waits for _key, waits in waits_by_key]
    for i, row in enumerate(zip(*columns, strict=True)):
        for j, ((key, _waits), wait_s) in enumerate(zip(waits_by_key, row, strict=True)):
            ctx.learned.observe_wait(key, wait_s, at_s=first_s + i * step_s + j)


def learn_runtimes(ctx, wf: WorkflowRun, runtime_by_stage: dict[str, float], *, times: int = 1) -> None:  # noqa: ANN001
    """Each stage's learned run time, seen ``times`` times."""
    for stage, runtime_s in runtime_by_stage.items():
        for _ in range(times):
            ctx.learned.observe_runtime(ctx.runtime_key(wf, stage), runtime_s)


def live_job(ctx, wf: WorkflowRun, stage: str, *, row: int, job_id: int, state: JobState,  # noqa: ANN001
             attempt: int = 1, dep_ids: tuple[int, ...] = (), **fields) -> JobRecord:  # noqa: ANN003
    """A live Slurm job of the stage (its request as the engine builds it), added to the run; the
    other fields (times, ``cancelled_by_asad``) as given."""
    req = ctx.request_for(wf, stage, dep_ids=dep_ids)
    job = JobRecord(row_id=row, workflow_id=wf.id, stage=stage, attempt=attempt, tag=f"t{row}",
                    phase=JobPhase.LIVE, request=req, geometry_key=ctx.geometry_key(req), job_id=job_id,
                    state=state, **fields)
    wf.jobs.append(job)
    return job


def mark_submitted(wf: WorkflowRun, job: JobRecord, state: StageState = StageState.SUBMITTED) -> None:
    """The stage's state as the engine keeps it once ``job`` is its current attempt."""
    stage = wf.stages[job.stage]
    stage.state, stage.job_row, stage.attempt = state, job.row_id, job.attempt
    stage.start_time, stage.end_time = job.start_time, job.end_time
