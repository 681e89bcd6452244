"""``asad resume N``: make a failed or cancelled workflow active again, keeping what completed.

The workflow keeps its id (``asad status N`` and ``show N`` follow it) and its history: every
earlier Slurm job stays in the store as an earlier attempt. Its COMPLETED stages stay completed;
every other stage (failed, cancelled, never submitted, and so every dependant of an unfinished
stage) goes back to WAITING with a fresh retry budget (``StageRun.retry_from``), and the daemon
(or ``asad resume N --run``) plans and submits them as for a new workflow.

One transaction, guarded by the workflow's state: a crash leaves the workflow either untouched or
fully resumed, and of two resumes racing (or one run twice) exactly one changes anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import update

from asad.core.model import StageState, WorkflowState
from asad.store.models import StageRow, WorkflowRow
from asad.store.repo import Store

RESUMABLE = (WorkflowState.FAILED.value, WorkflowState.CANCELLED.value)


class ResumeRefused(Exception):
    """The workflow cannot be resumed; the message says why and what to do."""


@dataclass(frozen=True)
class Resumed:
    workflow_id: int
    kept: tuple[str, ...]  # completed stages, not run again
    rerun: tuple[str, ...]  # stages that run again
    was: str  # the state it had (FAILED or CANCELLED)


def resume_workflow(store: Store, workflow_id: int) -> Resumed:
    rows = store.workflow_rows([workflow_id])
    if not rows:
        raise ResumeRefused(f"no workflow {workflow_id} in the store; 'asad status --all' lists them")
    row = rows[0]
    was = row.state  # the ORM row follows the update below
    if row.state == WorkflowState.ACTIVE.value:
        raise ResumeRefused(f"workflow {workflow_id} is active (running, or resumed already); nothing to resume. "
                            f"Fix: wait for it to end, or 'asad cancel {workflow_id}' first")
    if row.state == WorkflowState.COMPLETED.value:
        raise ResumeRefused(f"workflow {workflow_id} completed; nothing to resume. Fix: submit the workflow file "
                            "again ('asad submit FILE') to run it anew")
    wf = store.load_workflows([workflow_id])[0]
    kept = tuple(n for n, r in wf.stages.items() if r.state is StageState.COMPLETED)
    rerun = tuple(n for n, r in wf.stages.items() if r.state is not StageState.COMPLETED)
    session = store.session
    # The guard: only a workflow still FAILED/CANCELLED in the store is flipped (another resume, or
    # the same one run twice, finds it ACTIVE and changes nothing).
    res = session.execute(update(WorkflowRow).where(WorkflowRow.id == workflow_id, WorkflowRow.state.in_(RESUMABLE))
                          .values(state=WorkflowState.ACTIVE.value, ended_at=None, cancel_requested=False,
                                  message=f"resumed after {was}"))
    if res.rowcount != 1:
        session.rollback()
        raise ResumeRefused(f"workflow {workflow_id} was resumed or changed by another asad just now; "
                            f"'asad status {workflow_id}' shows it")
    for name in rerun:
        run = wf.stages[name]
        session.execute(update(StageRow).where(StageRow.workflow_id == workflow_id, StageRow.name == name).values(
            state=StageState.WAITING.value, job_row=None, planned_submit_at=None, est_wait_s=None, start_time=None,
            end_time=None, plan_why="", retry_from=run.attempt, message=f"resumed after {run.state.value}"))
    store.commit()
    return Resumed(workflow_id, kept, rerun, was)
