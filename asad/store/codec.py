"""JSON forms of the backend dataclasses, for the store."""

from __future__ import annotations

import dataclasses

from asad.slurm.backend import Dependency, DependencyType, JobRequest, SimTruth


def request_to_dict(req: JobRequest) -> dict:
    d = dataclasses.asdict(req)
    if req.dependency is not None:
        d["dependency"] = {"type": req.dependency.type.value, "job_ids": list(req.dependency.job_ids),
                           "offset_min": req.dependency.offset_min}
    if req.truth is not None:
        d["truth"]["wait_for"] = list(req.truth.wait_for)
        d["truth"]["fail_tasks"] = list(req.truth.fail_tasks)
    return d


def request_from_dict(d: dict) -> JobRequest:
    d = dict(d)
    dep = d.get("dependency")
    if dep:
        d["dependency"] = Dependency(DependencyType(dep["type"]), tuple(dep["job_ids"]), dep.get("offset_min", 0))
    truth = d.get("truth")
    if truth:
        d["truth"] = SimTruth(truth["runtime_s"], truth.get("peak_mem_mb"), truth.get("cpu_efficiency", 1.0),
                              tuple(truth.get("wait_for", ())), int(truth.get("exit_code", 0)),
                              tuple(truth.get("fail_tasks", ())))
    d["env"] = dict(d.get("env") or {})
    return JobRequest(**d)
