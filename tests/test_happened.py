"""asad explain says what happened beside what was planned (issue 35)."""

from __future__ import annotations

import json

from asad.core.model import JobPhase, JobRecord, StageRun, StageState, WorkflowRun
from asad.slurm.backend import JobRequest, JobState
from asad.spec.load import parse_workflow
from asad.view.explain import render_explain

SPEC = ("name: two\nstages:\n  - {name: a, cpus: 8, time: 10m, run: 'true'}\n"
        "  - {name: b, cpus: 8, time: 10m, run: 'true', after: [a]}\n")


def _wf(*, b_alloc: float, b_work: float) -> WorkflowRun:
    wf = WorkflowRun(id=1, spec=parse_workflow(SPEC), strategy="auto", mode="dependency")
    t = 1_000_000.0
    wf.stages = {"a": StageRun(1, "a", state=StageState.COMPLETED, start_time=t + 100, end_time=t + 130, job_row=1),
                 "b": StageRun(1, "b", state=StageState.COMPLETED, start_time=b_work, end_time=b_work + 30,
                               job_row=2, est_wait_s=120.0, plan_why="rule quantile (...): eligible 120 s before")}
    for row, name, sub, elig, start, end in ((1, "a", t, t, t + 100, t + 130),
                                             (2, "b", t + 5, t + 10, b_alloc, b_work + 30)):
        wf.jobs.append(JobRecord(row_id=row, workflow_id=1, stage=name, attempt=1, tag=name, phase=JobPhase.DONE,
                                 request=JobRequest(name=name, command="true", cpus_per_task=8), geometry_key="k",
                                 job_id=40 + row, state=JobState.COMPLETED, submitted_at=sub, eligible_time=elig,
                                 start_time=start, end_time=end, planned_start=t + 125 if name == "b" else None))
    return wf


def test_explain_says_when_the_allocation_came_against_the_barrier():
    t = 1_000_000.0
    early = render_explain(_wf(b_alloc=t + 110, b_work=t + 132), "b")
    assert "planned lead 120 s" in early
    assert "submitted 125 s before it, eligible 120 s before it, allocated 20 s before it" in early
    assert "idled 22 s at the barrier (176 core-s)" in early
    late = render_explain(_wf(b_alloc=t + 190, b_work=t + 190), "b")
    assert "allocated 60 s after it" in late and "60 s of makespan went to the queue wait" in late
    item = json.loads(render_explain(_wf(b_alloc=t + 110, b_work=t + 132), "b", as_json=True))[0]
    assert item["happened"]["idle_core_s"] == 176.0 and item["happened"]["barrier"] == t + 130
    first = render_explain(_wf(b_alloc=t + 110, b_work=t + 132), "a")
    assert "waited 100 s in the queue" in first


def test_a_job_held_by_afterok_claims_no_planned_lead():
    from dataclasses import replace

    from asad.slurm.backend import Dependency, DependencyType

    t = 1_000_000.0
    wf = _wf(b_alloc=t + 190, b_work=t + 190)
    job = wf.jobs[1]
    job.request = replace(job.request, dependency=Dependency(DependencyType.AFTEROK, (41,)))
    text = render_explain(wf, "b")
    assert "planned lead" not in text and "submitted 125 s before it with afterok" in text
