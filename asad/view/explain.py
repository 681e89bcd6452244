"""What ``asad explain`` prints: why each stage has its size and its submit time, and its tries."""

from __future__ import annotations

import json

from asad.core.attempts import attempts_by_stage, describe
from asad.core.happened import describe as describe_happened
from asad.core.happened import happened
from asad.core.model import WorkflowRun
from asad.common.units import format_duration, format_mem


def render_explain(wf: WorkflowRun, stage: str | None, as_json: bool = False) -> str:
    items = []
    tries = attempts_by_stage(wf)
    for name, run in wf.stages.items():
        if stage and name != stage:
            continue
        spec = wf.spec.stage(name)
        job = wf.current_job(name)
        req = job.request if job else None
        shared = None
        if job is not None and job.rides:  # the job's request is the whole shared job's: show the stage's own
            shared = (f"one job ({job.job_id if job.job_id is not None else 'not yet submitted'}) runs "
                      f"{', '.join(job.stages)} in turn: {format_duration(req.time_limit_s)} in all, "
                      f"{format_mem(req.total_mem_mb())}")
            req = None
        items.append({"stage": name, "cpus": req.cpus if req else (run.cpus or spec.cpus),
                      "mem_mb": req.total_mem_mb() if req else (run.mem_mb or spec.total_mem_mb()),
                      "time_s": req.time_limit_s if req else (run.time_s or spec.time_s), "shared_job": shared,
                      "user_cpus": spec.cpus, "user_mem_mb": spec.total_mem_mb(), "user_time_s": spec.time_s,
                      "why": run.size_why or "the workflow file's values (no sizing agent has decided yet)",
                      "when": run.plan_why, "message": run.message,
                      "happened": (h.to_dict() if (h := happened(wf, name)) is not None else None),
                      "happened_line": describe_happened(h) if h is not None else None,
                      "attempts": [a.to_dict() for a in tries.get(name, [])],
                      "attempt_lines": [describe(a) for a in tries.get(name, [])]})
    if as_json:
        return json.dumps(items, indent=2)
    lines = []
    for it in items:
        lines.append(f"{it['stage']}: cpus {it['cpus']} (file {it['user_cpus']}), mem {format_mem(it['mem_mb'])} "
                     f"(file {format_mem(it['user_mem_mb'])}), time {format_duration(it['time_s'])} "
                     f"(file {format_duration(it['user_time_s'])})")
        lines.append(f"    {it['why']}")
        if it["when"]:
            lines.append(f"    when: {it['when']}")
        if it["happened_line"]:
            lines.append(f"    happened: {it['happened_line']}")
        if it["shared_job"]:
            lines.append(f"    shared job: {it['shared_job']}")
        if it["message"]:
            lines.append(f"    last event: {it['message']}")
        if len(it["attempts"]) > 1:
            lines.extend(f"    {line}" for line in it["attempt_lines"])
    return "\n".join(lines) or f"no stage {stage!r} in workflow {wf.id}"
