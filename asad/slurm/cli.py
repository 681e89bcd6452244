"""The real-Slurm backend through Slurm's own commands (``sbatch``, ``squeue``, ``sacct``,
``scontrol``, ``scancel``, ``sinfo``).

One poll costs one ``squeue`` for every tracked job (live, or finished but still in slurmctld's
memory) plus, only when some of them have ended, one ``sacct`` for those (exit code, signal,
peak memory). Without accounting (no slurmdbd) the second call is ``scontrol -o show job``, and what
is then unavailable is listed in :attr:`SlurmCLI.limitations`.
"""

from __future__ import annotations

import getpass
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import structlog

from asad.common.arrays import DEFAULT_MAX_ARRAY_SIZE, offset_line, task_count
from asad.slurm.backend import (
    JobRequest,
    JobState,
    JobStatus,
    PartitionInfo,
    SlurmError,
    SlurmUnavailable,
    SubmitDeferred,
    SubmitRejected,
    UnknownJob,
    Usage,
)
from asad.slurm.pending_load import SQUEUE_ARGS as PENDING_ARGS
from asad.slurm.pending_load import PendingLoad, parse_pending_load
from asad.slurm.priority_rules import PriorityRules, rules_from_scontrol
from asad.slurm.runner import CommandFailed, CommandResult, RetryPolicy, Runner, SlurmCommands
from asad.slurm.slurm_text import (
    SEP,
    SINFO_FORMAT,
    SacctRecord,
    parse_sacct,
    parse_sbatch_parsable,
    parse_scontrol_jobs,
    parse_sinfo_partitions,
    parse_squeue,
    parse_test_only,
    sacct_format,
    squeue_format,
)

log = structlog.get_logger("asad.slurm")

# How far back sacct looks for a job whose submission time asad does not know (after a restart):
# old enough for any workflow, young enough that a reused job id from months ago never matches.
DEFAULT_SACCT_WINDOW_S = 14 * 86400.0
# Margin before a known submission time: clocks of the daemon and slurmdbd may differ a little.
_STARTTIME_MARGIN_S = 300.0
# How long a signal-9 death may wait for its MaxRSS in sacct before it is reported as FAILED.
_VERDICT_WAIT_S = 60.0
# usage() right after the poll that saw a job end reads the records that poll's sacct fetched,
# rather than asking sacct for the same rows again (one sacct per poll).
_RECORDS_FRESH_S = 5.0

LIMITATIONS_WITHOUT_ACCOUNTING = (
    "peak memory (MaxRSS) and CPU time of finished jobs: usage() returns only elapsed time",
    "out-of-memory detection by OverMemoryKill (signal 9 + MaxRSS above the request); only the "
    "OUT_OF_MEMORY state is seen",
    "jobs that left slurmctld's memory (MinJobAge after their end) are no longer found by poll/find",
)


def killed_by_slurmstepd(status: JobStatus) -> bool:
    """FAILED the way an OverMemoryKill ends: signal 9, or at times (22.05, seen in CI: a merged
    job's batch step killed "exceeded memory limit" by slurmstepd) reason JobLaunchFailure, 0:0."""
    return status.state is JobState.FAILED and (status.signal == 9 or status.reason == "JobLaunchFailure")


def is_oom(status: JobStatus, usage: Usage | None, req_mem_mb: float | None) -> bool:
    """Did the job die for lack of memory?

    Yes when Slurm says ``OUT_OF_MEMORY``, or when it ``FAILED`` from signal 9 (or with reason
    ``JobLaunchFailure``, how Slurm 22.05 sometimes ends a batch step it killed) while its peak RSS
    (``MaxRSS``) was above the request — what ``JobAcctGatherParams=OverMemoryKill`` does. Never
    from the exit code alone: a ``kill -9`` or an exit status 137 is not evidence of memory.
    ``req_mem_mb`` is the limit the peak is compared with (per node, as ``--mem``).
    """
    if status.state is JobState.OUT_OF_MEMORY:
        return True
    if not killed_by_slurmstepd(status):
        return False
    if usage is None or usage.peak_rss_mb is None or req_mem_mb is None:
        return False
    return usage.peak_rss_mb > req_mem_mb


def _tasks(status: JobStatus) -> int:
    return sum((status.array_tasks or {}).values())


def _still_ending(status: JobStatus) -> JobStatus:
    """An ended job reported as still running while its accounting catches up."""
    return replace(status, state=JobState.RUNNING, reason="AccountingPending", end_time=None,
                   exit_code=None, signal=None)


def format_time_limit(seconds: int) -> str:
    """``-t`` as ``D-HH:MM:SS`` (Slurm rounds up to whole minutes)."""
    s = max(60, int(seconds))
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"


def format_begin(posix_s: float) -> str:
    """``--begin`` in the local time Slurm expects."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(posix_s))


_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def batch_script(req: JobRequest) -> str:
    """The request's command as a batch script: a whole script (``#!...``) stays as it is. A chunk
    of a larger array gets the line that makes its task ids global right after the ``#!`` line."""
    if req.command.startswith("#!"):
        script = req.command if req.command.endswith("\n") else req.command + "\n"
    else:
        script = "#!/bin/bash\n" + req.command + ("\n" if not req.command.endswith("\n") else "")
    if req.array and req.array_offset:
        first, _, rest = script.partition("\n")
        script = f"{first}\n{offset_line(req.array_offset)}\n{rest}"
    return script


def parse_show_config(out: str) -> dict[str, str]:
    """``scontrol show config`` as key -> value. Blanks around ``=`` stay on their line: an empty
    value (``PriorityFlags = ``) must not swallow the next line's key."""
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^(\w+)[ \t]*=[ \t]*(.*)$", out, re.MULTILINE)}


def _flags(*pairs: tuple[str, object]) -> list[str]:
    """``--flag=value`` for each pair whose value is set (not None, not empty)."""
    return [f"{flag}={value}" for flag, value in pairs if value]


def sbatch_args(req: JobRequest) -> list[str]:
    """The ``sbatch`` argument list for a request (no script; that goes on stdin).

    The environment is passed by name (``--export=ALL,NAME,...``) with the values in sbatch's own
    process environment, so no value is ever split at a comma or quoted for a shell.
    """
    if req.mem_mb is not None and req.mem_per_cpu_mb is not None:
        raise SubmitRejected(f"job {req.name!r} gives both mem_mb and mem_per_cpu_mb; Slurm takes only one")
    args = [f"--job-name={req.name}"]
    args += _flags(("--comment", req.comment), ("--partition", req.partition), ("--account", req.account),
                   ("--qos", req.qos))
    args += [f"--nodes={req.nodes}", f"--ntasks={req.ntasks}", f"--cpus-per-task={req.cpus_per_task}"]
    if req.mem_mb is not None:
        args.append(f"--mem={int(req.mem_mb)}M")
    elif req.mem_per_cpu_mb is not None:
        args.append(f"--mem-per-cpu={int(req.mem_per_cpu_mb)}M")
    args.append(f"--time={format_time_limit(req.time_limit_s)}")
    args += _flags(("--dependency", req.dependency.to_slurm() if req.dependency is not None else None),
                   ("--begin", format_begin(req.begin) if req.begin is not None else None),
                   ("--chdir", req.workdir), ("--constraint", req.constraint))
    if req.exclusive:
        args.append("--exclusive")
    args += _flags(("--gpus", req.gpus), ("--gres", req.gres), ("--array", req.array),
                   ("--mail-type", req.mail_type), ("--mail-user", req.mail_user), ("--output", req.output),
                   ("--error", req.error))
    bad = [k for k in req.env if not _ENV_NAME_RE.match(k)]
    if bad:
        raise SubmitRejected(f"job {req.name!r}: not valid environment variable names: {bad}")
    args.append("--export=" + ",".join(["ALL", *sorted(req.env)]))
    return args


# Slurm's refusals that mean "this job can never run as asked" (shown verbatim to the user).
_DEPENDENCY_PROBLEM = "job dependency problem"
_SUBMIT_LIMIT = "job submit limit"  # ESLURM_ACCOUNTING_POLICY, slurm_errno.c


class SlurmCLI:
    """:class:`~asad.slurm.backend.Backend` over Slurm's command-line tools."""

    name = "slurm"
    # After a crash, how long an intent with no job in Slurm and no sbatch still running for it is
    # given before it is declared abandoned: a request slurmctld received just before its sender
    # died is still processed (Slurm's default MessageTimeout, 10 s). See asad.daemon.intents.
    submit_settle_s = 10.0

    def __init__(self, *, slurm_conf: str | None = None, timeout_s: float = 30.0, retries: int = 4,
                 backoff_s: float = 1.0, backoff_max_s: float = 16.0, retry_budget_s: float = 30.0,
                 accounting: bool | None = None,
                 sacct_window_s: float = DEFAULT_SACCT_WINDOW_S, runner: Runner | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.time,
                 bin_dir: str | None = None, user: str | None = None):
        self.cmd = SlurmCommands(slurm_conf=slurm_conf, runner=runner, sleep=sleep, bin_dir=bin_dir,
                                 policy=RetryPolicy(timeout_s=timeout_s, retries=retries, backoff_s=backoff_s,
                                                    backoff_max_s=backoff_max_s, budget_s=retry_budget_s))
        self._accounting = accounting
        self._config_cache: dict[str, str] | None = None
        self.sacct_window_s = sacct_window_s
        self.clock = clock
        self.user = user or getpass.getuser()
        self._submit_times: dict[int, float] = {}
        self._req_mem_per_node: dict[int, float] = {}
        self._array_size: dict[int, int] = {}  # an array job asad submitted: how many tasks it has
        self._polled_records: tuple[float, dict[int, SacctRecord]] = (-math.inf, {})  # (when, the last poll's sacct)
        self._accounting_down = False  # the last sacct failed while squeue answered
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- bookkeeping -------------
    @property
    def calls(self) -> Counter[str]:
        """Calls made so far, per command (``{"squeue": 12, "sacct": 3, ...}``)."""
        return self.cmd.calls

    def _config(self) -> dict[str, str]:
        """``scontrol show config`` as a dict (asked once)."""
        if self._config_cache is None:
            self._config_cache = parse_show_config(self.cmd.run("scontrol", ["show", "config"]).stdout)
        return self._config_cache

    @property
    def accounting(self) -> bool:
        """Whether ``sacct`` has a database behind it (from ``scontrol show config``)."""
        if self._accounting is None:
            storage = self._config().get("AccountingStorageType", "")
            self._accounting = storage not in ("", "accounting_storage/none", "(null)")
        return self._accounting

    @property
    def cluster_name(self) -> str:
        """Slurm's ClusterName: learned queue waits are kept per cluster."""
        return self._config().get("ClusterName") or "slurm"

    @property
    def max_array_size(self) -> int:
        """Slurm's MaxArraySize: array indices must stay below it (asad splits larger arrays)."""
        value = self._config().get("MaxArraySize", "")
        return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_MAX_ARRAY_SIZE

    def priority_rules(self) -> PriorityRules:
        """The site's priority plugin and weights (the default strategy's rule depends on them)."""
        return rules_from_scontrol(self._config())

    @property
    def limitations(self) -> tuple[str, ...]:
        return () if self.accounting else LIMITATIONS_WITHOUT_ACCOUNTING

    def now(self) -> float:
        return self.clock()

    # ---------------------------------------------------------------- submit / cancel ---------
    def submit(self, req: JobRequest) -> int:
        args = ["--parsable", *sbatch_args(req)]
        submitted_after = self.clock()

        def already_submitted() -> CommandResult | None:
            # A submission that timed out may have reached slurmctld: look for our tagged job
            # before sending it again, so a stage is never submitted twice.
            if not req.comment:
                return None
            try:
                found = self._squeue(["--name=" + req.name])
            except SlurmError:
                return None
            for status in found.values():
                if status.comment == req.comment and (status.submit_time or 0) >= submitted_after - 5:
                    return CommandResult(("sbatch",), 0, f"{status.job_id}\n", "")
            return None

        try:
            result = self.cmd.run("sbatch", args, stdin=batch_script(req), extra_env=req.env,
                                  before_retry=already_submitted)
        except CommandFailed as exc:
            raise self._refusal(exc.result, req) from None
        job_id = parse_sbatch_parsable(result.stdout, "sbatch --parsable")
        with self._lock:
            self._submit_times[job_id] = submitted_after
            total = req.total_mem_mb()
            if total is not None:
                self._req_mem_per_node[job_id] = total / max(1, req.nodes)
            if req.array:
                self._array_size[job_id] = task_count(req.array)
        return job_id

    def _refusal(self, result: CommandResult, req: JobRequest) -> SlurmError:
        message = result.output
        for line in message.splitlines():
            if "Batch job submission failed:" in line:
                message = line.split("Batch job submission failed:", 1)[1].strip()
                break
        if _DEPENDENCY_PROBLEM in result.output.lower():
            return UnknownJob(f"sbatch refused job {req.name!r}: {message}")
        if _SUBMIT_LIMIT in result.output.lower() and self._queued_jobs_of_user():
            # QOSMaxSubmitJobPerUserLimit / AssocMaxSubmitJobLimit at submission: Slurm says "job
            # submit limit" in the same words as a size or time limit; with jobs of the user still
            # queued, waiting can help, so it is a "later", not a "never".
            return SubmitDeferred(f"sbatch deferred job {req.name!r}: {message}", slurm_message=result.output)
        return SubmitRejected(f"sbatch refused job {req.name!r}: {message}", slurm_message=result.output)

    def _queued_jobs_of_user(self) -> int:
        try:
            out = self.cmd.run("squeue", ["--noheader", "--user=" + self.user, "--states=PD,R,CG", "-o", "%i"]).stdout
        except (SlurmError, CommandFailed):
            return 0
        return len(out.split())

    def cancel(self, job_ids: list[int]) -> None:
        """One ``scancel`` for all ids; ids Slurm no longer knows are not an error."""
        if not job_ids:
            return
        try:
            self.cmd.run("scancel", [str(j) for j in sorted(set(job_ids))])
        except CommandFailed as exc:
            text = exc.result.output.lower()
            if "invalid job id" in text or "already completing or completed" in text:
                return
            raise SlurmError(f"scancel failed: {exc.result.output}") from None

    # ---------------------------------------------------------------- queries -----------------
    def _squeue(self, selector: list[str]) -> dict[int, JobStatus]:
        args = ["--noheader", "--states=all", "-O", squeue_format(), *selector]
        try:
            result = self.cmd.run("squeue", args)
        except CommandFailed as exc:
            # squeue --jobs with only ids slurmctld has forgotten answers "Invalid job id".
            if "invalid job id" in exc.result.output.lower():
                return {}
            raise SlurmUnavailable(f"squeue failed: {exc.result.output}") from None
        return parse_squeue(result.stdout, "squeue " + " ".join(args))

    def _sacct_starttime(self, job_ids: list[int], seen: dict[int, JobStatus]) -> float:
        known = []
        for jid in job_ids:
            t = self._submit_times.get(jid)
            if t is None and jid in seen:
                t = seen[jid].submit_time
            if t is None:
                return self.clock() - self.sacct_window_s
            known.append(t)
        return min(known) - _STARTTIME_MARGIN_S

    def _sacct(self, selector: list[str], starttime: float) -> dict[int, SacctRecord]:
        args = ["--noheader", "--parsable2", f"--delimiter={SEP}", f"--format={sacct_format()}",
                f"--starttime={time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(starttime))}", *selector]
        try:
            # While slurmdbd is known down, one attempt a poll: the poll goes on without it.
            result = self.cmd.run("sacct", args, retries=0 if self._accounting_down else None)
        except CommandFailed as exc:
            raise SlurmUnavailable(f"sacct failed: {exc.result.output}") from None
        return parse_sacct(result.stdout, "sacct " + " ".join(args))

    def _scontrol_jobs(self) -> dict[int, JobStatus]:
        try:
            result = self.cmd.run("scontrol", ["-o", "show", "job"])
        except CommandFailed as exc:
            raise SlurmUnavailable(f"scontrol show job failed: {exc.result.output}") from None
        return parse_scontrol_jobs(result.stdout)

    def _with_oom(self, rec: SacctRecord) -> JobStatus:
        # The request asad sent is the surest limit; sacct's ReqMem may be missing for a while.
        limit = self._req_mem_per_node.get(rec.status.job_id, rec.req_mem_per_node_mb)
        if rec.status.state is JobState.FAILED and is_oom(rec.status, rec.usage, limit):
            return replace(rec.status, state=JobState.OUT_OF_MEMORY, reason="OutOfMemory")
        return rec.status

    def poll(self, job_ids: list[int]) -> dict[int, JobStatus]:
        """Statuses of the given jobs: one ``squeue``, plus one ``sacct`` (or ``scontrol``) when
        some have ended. A job Slurm no longer knows at all is left out of the answer."""
        ids = sorted(set(job_ids))
        if not ids:
            return {}
        live = self._squeue(["--jobs=" + ",".join(map(str, ids))])
        live = {j: s for j, s in live.items() if j in ids}
        ended = [j for j in ids if j not in live or live[j].state.is_final]
        if not ended:
            return live
        out = dict(live)
        records: dict[int, SacctRecord] = {}
        if self.accounting:
            try:
                records = self._sacct(["--jobs=" + ",".join(map(str, ended))], self._sacct_starttime(ended, live))
            except SlurmUnavailable as exc:
                # slurmdbd down while slurmctld answers: the ends slurmctld still knows come from
                # scontrol below, rather than every workflow waiting for the database.
                self._accounting_answers(False, str(exc))
            else:
                self._accounting_answers(True)
                self._polled_records = (self.clock(), records)
            for jid in ended:
                rec = records.get(jid)
                if jid in live and live[jid].array_tasks is not None:
                    out[jid] = self._array_from_both(live[jid], rec)
                elif rec is None:
                    continue
                elif jid not in live:
                    out[jid] = rec.status
                    if not self._all_tasks_seen(out[jid]):
                        out[jid] = _still_ending(out[jid])
                elif rec.status.state.is_final:
                    # slurmctld still knows the job: its record is complete, while slurmdbd's may be
                    # a placeholder (name "allocation", no eligible time) for a few seconds. Take
                    # only what squeue lacks: exit code and signal (the OOM verdict below).
                    out[jid] = replace(live[jid], exit_code=rec.status.exit_code, signal=rec.status.signal)
            missing = [j for j in ended if j in live and live[j].array_tasks is None
                       and (j not in records or not records[j].status.state.is_final)]
        else:
            # without accounting squeue's fold of an array's tasks it still knows is all there is
            missing = [j for j in ended if j in live and live[j].array_tasks is None]
        if missing:
            # Finished in slurmctld but not (yet) in the database: exit code and signal from scontrol.
            detail = self._scontrol_jobs()
            for jid in missing:
                if jid in detail:
                    out[jid] = detail[jid]
        if self.accounting:
            for jid in ended:
                if jid not in out:
                    continue
                rec = records.get(jid)
                if rec is not None:
                    # One OOM test for every end, whichever command told it: the job's own record
                    # in slurmdbd can lag its batch step's (seen in CI), so an end from squeue or
                    # scontrol is judged with the step's MaxRSS as soon as sacct has it.
                    out[jid] = self._with_oom(SacctRecord(out[jid], rec.usage, rec.req_mem_per_node_mb))
                if self._verdict_pending(out[jid], rec):
                    out[jid] = _still_ending(out[jid])
        return out

    def _array_from_both(self, queued: JobStatus, rec: SacctRecord | None) -> JobStatus:
        """An ended array job slurmctld still knows: final only once slurmdbd has a record of every
        task squeue shows. Slurm writes a task's record when the task starts under its own job id,
        a second or more after the array's first record; until then sacct shows a complete-looking
        array of fewer tasks (or a plain job), and taking it would end the stage too early. A minute
        after the end, slurmctld's view decides (``_VERDICT_WAIT_S``)."""
        if (rec is None or rec.status.array_tasks is None or not rec.status.state.is_final
                or _tasks(rec.status) < _tasks(queued)):
            if queued.end_time is not None and self.clock() - queued.end_time >= _VERDICT_WAIT_S:
                return queued  # slurmdbd never caught up: slurmctld's view of every task is the verdict
            return _still_ending(queued)
        return rec.status if self._all_tasks_seen(rec.status) else _still_ending(rec.status)

    def _all_tasks_seen(self, status: JobStatus) -> bool:
        """Does a final array status count every task asad submitted? (After a restart the count
        is not known here; squeue's view, or MinJobAge having passed, then stands for it.)"""
        expected = self._array_size.get(status.job_id)
        return status.array_tasks is None or expected is None or _tasks(status) >= expected

    def _accounting_answers(self, answers: bool, error: str = "") -> None:
        if answers and self._accounting_down:
            log.info("sacct answers again: memory use and OOM verdicts from slurmdbd again")
        elif not answers and not self._accounting_down:
            log.warning("sacct failed while squeue answers (slurmdbd down?): stage ends from slurmctld "
                        "(scontrol), no memory use recorded, a signal-9 death waits for sacct to tell OOM",
                        error=error.strip()[:300])
        self._accounting_down = not answers

    def _verdict_pending(self, status: JobStatus, rec: SacctRecord | None) -> bool:
        """A job killed by slurmstepd (``killed_by_slurmstepd``) whose peak memory slurmdbd has not
        recorded yet (its step records arrive a moment after the job's end): OOM or not cannot be
        told, so the job is reported as still ending, for at most ``_VERDICT_WAIT_S`` after its
        end, or for as long as sacct does not answer at all."""
        if not killed_by_slurmstepd(status):
            return False
        if self._accounting_down:
            return True
        # A zero peak is not a measurement: a step record closed before its usage report (the
        # report follows the job's end) reads MaxRSS 0 for a moment. Nor is a peak without the
        # limit to compare it with: a daemon restarted after a kill has not the request it sent,
        # and slurmdbd's placeholder record reads ReqMem ``16?`` for a moment (issue 36's bench:
        # an OOM kill read by the next daemon was taken for a plain failure, no retry).
        limit_known = status.job_id in self._req_mem_per_node or (rec is not None and rec.req_mem_per_node_mb)
        if rec is not None and rec.usage.peak_rss_mb and limit_known:
            return False
        return status.end_time is not None and self.clock() - status.end_time < _VERDICT_WAIT_S

    def find(self, tag: str) -> dict[int, JobStatus]:
        """Every job of this user, live or finished, whose name or comment contains ``tag``."""
        found: dict[int, JobStatus] = {}
        if self.accounting:
            for jid, rec in self._sacct([f"--user={self.user}"], self.clock() - self.sacct_window_s).items():
                if tag in rec.status.name or tag in rec.status.comment:
                    found[jid] = self._with_oom(rec)
        for jid, status in self._squeue([f"--user={self.user}"]).items():
            if tag in status.name or tag in status.comment:
                # squeue is fresher for live jobs; sacct knows more about finished ones.
                if not status.state.is_final or jid not in found:
                    found[jid] = status
        return found

    def usage(self, job_ids: list[int]) -> dict[int, Usage]:
        ids = sorted(set(job_ids))
        if not ids:
            return {}
        if self.accounting:
            polled_at, records = self._polled_records
            if (self.clock() - polled_at > _RECORDS_FRESH_S
                    or not all(j in records and records[j].status.state.is_final for j in ids)):
                try:
                    records = self._sacct(["--jobs=" + ",".join(map(str, ids))], self._sacct_starttime(ids, {}))
                except SlurmUnavailable as exc:
                    self._accounting_answers(False, str(exc))
                    return self._scontrol_usage(ids)  # the run time at least, from slurmctld
            out = {}
            for j in ids:
                if j not in records:
                    continue
                use, status = records[j].usage, records[j].status
                if use.req_mem_mb is None and j in self._req_mem_per_node:
                    # sacct's ReqMem can lag the job's end; the request asad sent is the same number
                    use = replace(use, req_mem_mb=self._req_mem_per_node[j] * max(1, status.alloc_nodes))
                out[j] = use
            return out
        return self._scontrol_usage(ids)

    def _scontrol_usage(self, ids: list[int]) -> dict[int, Usage]:
        detail = self._scontrol_jobs()
        out = {}
        for jid in ids:
            s = detail.get(jid)
            if s is None:
                continue
            elapsed = (s.end_time - s.start_time) if s.start_time is not None and s.end_time is not None else None
            out[jid] = Usage(job_id=jid, peak_rss_mb=None, total_cpu_s=None, elapsed_s=elapsed,
                             alloc_cpus=s.alloc_cpus or None)
        return out

    def pending_load(self) -> PendingLoad:
        """Every user's pending jobs that compete for resources, per partition (one ``squeue``;
        asad asks once per poll interval, and only with ``wait_pressure`` on)."""
        try:
            result = self.cmd.run("squeue", PENDING_ARGS)
        except CommandFailed as exc:
            raise SlurmUnavailable(f"squeue failed: {exc.result.output}") from None
        return parse_pending_load(result.stdout, self.clock(), "squeue " + " ".join(PENDING_ARGS))

    def estimate_start(self, req: JobRequest) -> float | None:
        """Slurm's own forecast: ``sbatch --test-only`` (nothing is submitted)."""
        args = ["--test-only", *sbatch_args(req)]
        try:
            result = self.cmd.run("sbatch", args, stdin=batch_script(req), extra_env=req.env)
        except CommandFailed as exc:
            raise self._refusal(exc.result, req) from None
        return parse_test_only(result.output, "sbatch --test-only")

    def partitions(self) -> list[PartitionInfo]:
        return query_partitions(self.cmd)


def query_partitions(cmd: SlurmCommands) -> list[PartitionInfo]:
    """The cluster's partitions as ``sinfo`` and ``scontrol show partition`` tell them (shared by
    :class:`SlurmCLI` and the check of a workflow before it is stored, ``asad.slurm.site``)."""
    try:
        result = cmd.run("sinfo", ["--noheader", "-o", SINFO_FORMAT])
    except CommandFailed as exc:
        raise SlurmUnavailable(f"sinfo failed: {exc.result.output}") from None
    parts = parse_sinfo_partitions(result.stdout)
    max_nodes = _partition_max_nodes(cmd)
    return [replace(p, max_nodes=max_nodes.get(p.name)) for p in parts]


def _partition_max_nodes(cmd: SlurmCommands) -> dict[str, int | None]:
    try:
        out = cmd.run("scontrol", ["-o", "show", "partition"]).stdout
    except CommandFailed:
        return {}
    limits: dict[str, int | None] = {}
    for m in re.finditer(r"PartitionName=(\S+).*?MaxNodes=(\S+)", out):
        limits[m.group(1)] = int(m.group(2)) if m.group(2).isdigit() else None
    return limits
