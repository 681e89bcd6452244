"""The real-Slurm backend through pyslurm (optional extra ``asad[pyslurm]``).

Written against pyslurm's documented API (23.x and later): ``pyslurm.JobSubmitDescription(...)
.submit()``, ``pyslurm.Jobs.load()``, ``pyslurm.Job(id).cancel()``, ``pyslurm.db.Jobs.load(
pyslurm.db.JobFilter(ids=..., start_time=...))`` with ``db.Job.stats.max_resident_memory``
(bytes) and ``total_cpu_time`` (seconds), and ``pyslurm.RPCError`` for failed calls.

pyslurm has no counterpart of ``sbatch --test-only`` nor a simple partition summary in the API
asad relies on, so ``estimate_start`` and ``partitions`` go through the CLI backend.

Not verified against a real Slurm: PyPI has no pyslurm for Slurm 22.05 (the version here), so
tests run it against a stand-in module that follows the documented API
(``tests/test_pyslurm_standin.py``); see docs/slurm-backend.md.
"""

from __future__ import annotations

import getpass
import importlib
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from types import ModuleType
from typing import Any

from asad.slurm.backend import (
    JobRequest,
    JobState,
    JobStatus,
    PartitionInfo,
    SlurmError,
    SlurmUnavailable,
    SubmitRejected,
    UnknownJob,
    Usage,
)
from asad.slurm.cli import DEFAULT_SACCT_WINDOW_S, SlurmCLI, batch_script, format_begin, is_oom
from asad.slurm.runner import is_transient
from asad.slurm.slurm_text import map_state

_BYTES_PER_MB = 1024.0 * 1024.0


def _time(value: Any) -> float | None:
    """pyslurm gives unix seconds, or None/0 for unset."""
    if value in (None, 0, "", "Unknown"):
        return None
    return float(value)


class PySlurmBackend:
    """:class:`~asad.slurm.backend.Backend` over pyslurm's RPC bindings."""

    name = "slurm"
    # After a crash, how long an intent with no job in Slurm and no sbatch still running for it is
    # given before it is declared abandoned: a request slurmctld received just before its sender
    # died is still processed (Slurm's default MessageTimeout, 10 s). See asad.daemon.intents.
    submit_settle_s = 10.0

    def __init__(self, module: ModuleType | None = None, *, accounting: bool = True,
                 sacct_window_s: float = DEFAULT_SACCT_WINDOW_S, clock: Callable[[], float] = time.time,
                 cli: SlurmCLI | None = None, user: str | None = None, **cli_opts: Any):
        self.ps = module if module is not None else importlib.import_module("pyslurm")
        self.accounting = accounting
        self.sacct_window_s = sacct_window_s
        self.clock = clock
        self.user = user or getpass.getuser()
        self.cli = cli or SlurmCLI(clock=clock, **cli_opts)
        self.calls: Counter[str] = Counter()
        self._submit_times: dict[int, float] = {}

    def now(self) -> float:
        return self.clock()

    @property
    def cluster_name(self) -> str:
        return self.cli.cluster_name

    def priority_rules(self):  # noqa: ANN201
        return self.cli.priority_rules()

    # ---------------------------------------------------------------- errors ------------------
    def _rpc(self, what: str, fn: Callable[[], Any]) -> Any:
        self.calls[what] += 1
        rpc_error = getattr(self.ps, "RPCError", None)
        try:
            return fn()
        except Exception as exc:  # pyslurm raises RPCError (and ValueError for bad descriptions)
            if rpc_error is not None and isinstance(exc, rpc_error) and is_transient(str(exc)):
                raise SlurmUnavailable(f"pyslurm {what}: {exc}") from exc
            if isinstance(exc, SlurmError):
                raise
            raise _Permanent(what, exc) from exc

    # ---------------------------------------------------------------- submit / cancel ---------
    def describe(self, req: JobRequest) -> Any:
        """The ``pyslurm.JobSubmitDescription`` of a request (same meaning as the CLI's arguments)."""
        if req.mem_mb is not None and req.mem_per_cpu_mb is not None:
            raise SubmitRejected(f"job {req.name!r} gives both mem_mb and mem_per_cpu_mb; Slurm takes only one")
        fields: dict[str, Any] = {
            "name": req.name,
            "script": batch_script(req),
            "nodes": req.nodes,
            "ntasks": req.ntasks,
            "cpus_per_task": req.cpus_per_task,
            "time_limit": max(1, -(-req.time_limit_s // 60)),  # minutes, rounded up like sbatch
            "working_directory": req.workdir or os.getcwd(),
            "environment": dict(req.env),
        }
        optional = {
            "comment": req.comment or None,
            "partitions": req.partition or None,
            "account": req.account,
            "qos": req.qos,
            "memory_per_node": req.mem_mb,
            "memory_per_cpu": req.mem_per_cpu_mb,
            "dependencies": req.dependency.to_slurm() if req.dependency else None,
            "begin_time": format_begin(req.begin) if req.begin is not None else None,
            "standard_output": req.output,
            "standard_error": req.error,
        }
        fields.update({k: v for k, v in optional.items() if v is not None})
        return self.ps.JobSubmitDescription(**fields)

    def submit(self, req: JobRequest) -> int:
        desc = self.describe(req)
        submitted = self.clock()
        try:
            job_id = int(self._rpc("submit", desc.submit))
        except _Permanent as exc:
            text = str(exc.cause)
            if "dependency" in text.lower():
                raise UnknownJob(f"Slurm refused job {req.name!r}: {text}") from None
            raise SubmitRejected(f"Slurm refused job {req.name!r}: {text}", slurm_message=text) from None
        self._submit_times[job_id] = submitted
        return job_id

    def cancel(self, job_ids: list[int]) -> None:
        # pyslurm cancels one job per RPC (scancel takes many); ids already gone are not errors.
        for jid in sorted(set(job_ids)):
            try:
                self._rpc("cancel", self.ps.Job(jid).cancel)
            except _Permanent as exc:
                text = str(exc.cause).lower()
                if "invalid job id" in text or "already completing or completed" in text:
                    continue
                raise SlurmError(f"cancelling job {jid} failed: {exc.cause}") from None

    # ---------------------------------------------------------------- queries -----------------
    def _status(self, job: Any) -> JobStatus:
        state = map_state(str(job.state))
        reason = str(getattr(job, "state_reason", None) or "None")
        nodelist = str(getattr(job, "allocated_nodes", None) or getattr(job, "nodelist", None) or "")
        start = _time(job.start_time)
        if state is JobState.PENDING or (state.is_final and not nodelist):
            start = None
        eligible = _time(job.eligible_time)
        if state is JobState.PENDING and reason.startswith("Dependency"):
            eligible = None
        limit = getattr(job, "time_limit", None)
        return JobStatus(
            job_id=int(job.id), state=state, reason=reason, name=str(job.name or ""),
            comment=str(getattr(job, "comment", None) or ""), partition=str(job.partition or ""),
            submit_time=_time(job.submit_time), eligible_time=eligible, start_time=start,
            end_time=_time(job.end_time) if state.is_final else None,
            alloc_cpus=int(job.cpus or 0) if start is not None else 0,
            alloc_nodes=int(job.num_nodes or 0) if start is not None else 0, nodelist=nodelist,
            time_limit_s=int(limit) * 60 if isinstance(limit, int) else None,
            exit_code=job.exit_code if state.is_final else None,
            signal=(job.exit_code_signal or None) if state.is_final else None,
            account=str(getattr(job, "account", None) or ""), qos=str(getattr(job, "qos", None) or ""))

    def _usage(self, job: Any) -> Usage:
        stats = getattr(job, "stats", None)
        rss = getattr(stats, "max_resident_memory", None) if stats is not None else None
        cpu = getattr(stats, "total_cpu_time", None) if stats is not None else None
        return Usage(job_id=int(job.id), peak_rss_mb=None if rss is None else rss / _BYTES_PER_MB,
                     total_cpu_s=None if cpu is None else float(cpu),
                     elapsed_s=None if job.elapsed_time is None else float(job.elapsed_time),
                     req_mem_mb=None if job.memory is None else float(job.memory),
                     alloc_cpus=int(job.cpus) if job.cpus else None)

    def _live(self) -> dict[int, Any]:
        jobs = self._rpc("Jobs.load", self.ps.Jobs.load)
        return {int(j.id): j for j in jobs.values()}

    def _db(self, **filter_fields: Any) -> dict[int, Any]:
        flt = self.ps.db.JobFilter(**filter_fields)
        jobs = self._rpc("db.Jobs.load", lambda: self.ps.db.Jobs.load(flt))
        return {int(j.id): j for j in jobs.values()}

    def _starttime(self, job_ids: list[int]) -> int:
        known = [self._submit_times.get(j) for j in job_ids]
        if not known or any(t is None for t in known):
            return int(self.clock() - self.sacct_window_s)
        return int(min(t for t in known if t is not None) - 300)

    def _final_status(self, job: Any) -> JobStatus:
        status = self._status(job)
        usage = self._usage(job)
        nodes = max(1, int(getattr(job, "num_nodes", 1) or 1))
        per_node = None if usage.req_mem_mb is None else usage.req_mem_mb / nodes
        if status.state is JobState.FAILED and is_oom(status, usage, per_node):
            return replace(status, state=JobState.OUT_OF_MEMORY, reason="OutOfMemory")
        return status

    def poll(self, job_ids: list[int]) -> dict[int, JobStatus]:
        ids = sorted(set(job_ids))
        if not ids:
            return {}
        try:
            live = {j: self._status(job) for j, job in self._live().items() if j in ids}
        except ValueError as exc:
            raise SlurmUnavailable(f"pyslurm Jobs.load: unreadable job: {exc}") from None
        ended = [j for j in ids if j not in live or live[j].state.is_final]
        if not ended or not self.accounting:
            return live
        out = dict(live)
        for jid, job in self._db(ids=ended, start_time=self._starttime(ended)).items():
            status = self._final_status(job)
            if status.state.is_final or jid not in live:
                out[jid] = status
        return out

    def find(self, tag: str) -> dict[int, JobStatus]:
        found: dict[int, JobStatus] = {}
        if self.accounting:
            for jid, job in self._db(users=[self.user], start_time=int(self.clock() - self.sacct_window_s)).items():
                if tag in str(job.name or "") or tag in str(getattr(job, "comment", "") or ""):
                    found[jid] = self._final_status(job)
        for jid, job in self._live().items():
            status = self._status(job)
            if tag in status.name or tag in status.comment:
                if not status.state.is_final or jid not in found:
                    found[jid] = status
        return found

    def usage(self, job_ids: list[int]) -> dict[int, Usage]:
        ids = sorted(set(job_ids))
        if not ids or not self.accounting:
            return {}
        return {jid: self._usage(job) for jid, job in self._db(ids=ids, start_time=self._starttime(ids)).items()
                if jid in ids}

    def estimate_start(self, req: JobRequest) -> float | None:
        return self.cli.estimate_start(req)

    def partitions(self) -> list[PartitionInfo]:
        return self.cli.partitions()


class _Permanent(Exception):
    def __init__(self, what: str, cause: BaseException):
        super().__init__(f"{what}: {cause}")
        self.cause = cause
