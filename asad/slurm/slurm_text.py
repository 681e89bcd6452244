"""Parsers for what Slurm's commands print (22.05 and later), kept apart from running them so
that captured outputs can be tested without a cluster.

Fields are separated by ASCII unit separators (``\\x1f``), which no job name or comment contains
in practice, so a ``|`` or a space in a name never shifts a column. Times are POSIX seconds when
``SLURM_TIME_FORMAT=%s`` (what :class:`~asad.slurm.runner.SlurmCommands` sets); ISO local times
are accepted too.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, replace

from asad.common.arrays import task_count
from asad.slurm.gres import gpus_in
from asad.slurm.array_status import fold, fold_usage, split_array_id
from asad.slurm.backend import JobState, JobStatus, PartitionInfo, SlurmUnavailable, Usage

SEP = "\x1f"


class SlurmParseError(SlurmUnavailable):
    """A command answered something asad cannot read; names the command and shows its output."""

    def __init__(self, command: str, output: str, detail: str):
        shown = output if len(output) <= 2000 else output[:2000] + f"... ({len(output)} chars)"
        super().__init__(f"cannot parse the output of `{command}`: {detail}; output was: {shown!r}")
        self.command = command
        self.output = output


# ------------------------------------------------------------------ scalar fields --------------
_NO_TIME = {"", "unknown", "none", "n/a", "(null)", "0", "invalid"}


def parse_time(value: str) -> float | None:
    """A Slurm time field: POSIX seconds, ``YYYY-MM-DDTHH:MM:SS`` (local time) or unknown."""
    text = value.strip()
    if text.lower() in _NO_TIME:
        return None
    if text.isdigit():
        return float(text)
    try:
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()
    except ValueError:
        raise ValueError(f"not a Slurm time: {value!r}") from None


_CLOCK_RE = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")


def parse_clock_s(value: str) -> float | None:
    """``[D-][HH:]MM:SS[.mmm]`` as sacct prints TotalCPU/Elapsed and squeue TimeLimit; None for
    ``UNLIMITED``/``INFINITE``/``Partition_Limit``."""
    text = value.strip()
    low = text.lower()
    if low in ("", "unlimited", "infinite", "partition_limit", "n/a", "none", "invalid"):
        return None
    m = _CLOCK_RE.match(text)
    if not m:
        if re.fullmatch(r"\d+-\d+", text):  # D-HH
            d, h = text.split("-")
            return int(d) * 86400 + int(h) * 3600.0
        if text.isdigit():  # bare minutes
            return int(text) * 60.0
        raise ValueError(f"not a Slurm duration: {value!r}")
    days, hours, minutes, seconds = m.groups()
    return (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds))


_MEM_FIELD_RE = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)([nc]?)$", re.IGNORECASE)
_MEM_TO_MB = {"": 1 / (1024 * 1024), "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


def parse_mem_mb(value: str) -> float | None:
    """``MaxRSS``/``ReqMem`` (``262380K``, ``1.5G``, ``500M``, ``0``) in MB. A bare number is
    bytes (sacct prints one only for zero). Old ``n``/``c`` suffixes of ReqMem are ignored."""
    text = value.strip()
    if not text:
        return None
    m = _MEM_FIELD_RE.match(text)
    if not m:
        raise ValueError(f"not a Slurm memory size: {value!r}")
    return float(m.group(1)) * _MEM_TO_MB[m.group(2).upper()]


def _mem_or_none(value: str) -> float | None:
    """A memory field that slurmdbd may leave half-filled (``16?`` in the placeholder record it
    makes when a step's report arrives before the job's start record): unknown, not an error."""
    try:
        return parse_mem_mb(value)
    except ValueError:
        return None


def parse_exit_code(value: str) -> tuple[int | None, int | None]:
    """``"1:0"`` -> (1, None); ``"0:9"`` -> (0, 9): exit status and the signal that ended it."""
    text = value.strip()
    if not text or ":" not in text:
        return (int(text), None) if text.isdigit() else (None, None)
    code, _, sig = text.partition(":")
    exit_code = int(code) if code.isdigit() else None
    signal = int(sig) if sig.isdigit() and int(sig) != 0 else None
    return exit_code, signal


_STATE_MAP = {
    "PENDING": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "RESV_DEL_HOLD": JobState.PENDING,
    "SPECIAL_EXIT": JobState.PENDING,
    "CONFIGURING": JobState.RUNNING,
    "RUNNING": JobState.RUNNING,
    "COMPLETING": JobState.RUNNING,  # still cleaning up: not final until COMPLETED
    "SUSPENDED": JobState.RUNNING,
    "STOPPED": JobState.RUNNING,
    "SIGNALING": JobState.RUNNING,
    "STAGE_OUT": JobState.RUNNING,
    "RESIZING": JobState.RUNNING,
    "COMPLETED": JobState.COMPLETED,
    "FAILED": JobState.FAILED,
    "BOOT_FAIL": JobState.FAILED,
    "CANCELLED": JobState.CANCELLED,
    "PREEMPTED": JobState.CANCELLED,
    "REVOKED": JobState.CANCELLED,
    "DEADLINE": JobState.TIMEOUT,
    "TIMEOUT": JobState.TIMEOUT,
    "OUT_OF_MEMORY": JobState.OUT_OF_MEMORY,
    "NODE_FAIL": JobState.NODE_FAIL,
}


def map_state(value: str) -> JobState:
    """Slurm's state names (``CANCELLED by 0``, ``CANCELLED+``, ``OUT_OF_ME+``) to :class:`JobState`."""
    word = value.strip().split(" ")[0].rstrip("+").upper()
    if word in _STATE_MAP:
        return _STATE_MAP[word]
    if word == "OUT_OF_ME":  # sacct's truncated form
        return JobState.OUT_OF_MEMORY
    raise ValueError(f"unknown Slurm job state: {value!r}")


def _null(value: str) -> str:
    text = value.strip()
    return "" if text in ("(null)", "None assigned", "N/A") else text


def _int_or(value: str, default: int = 0) -> int:
    text = value.strip()
    return int(text) if text.isdigit() else default


def _rows(text: str, n_fields: int, command: str, optional: int = 0) -> list[list[str]]:
    """Split a separator-delimited output into rows of ``n_fields`` (plus up to ``optional`` trailing
    fields that outputs recorded before asad asked for them lack; missing ones come back as "")."""
    rows = []
    allowed = range(n_fields, n_fields + optional + 1)
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split(SEP)
        if len(parts) - 1 in allowed and parts[-1].strip() == "":
            parts = parts[:-1]  # squeue -O leaves the separator after the last field too
        if len(parts) not in allowed:
            raise SlurmParseError(command, text, f"expected {n_fields} fields per line, got {len(parts)} in {line!r}")
        rows.append(parts + [""] * (n_fields + optional - len(parts)))
    return rows


# ------------------------------------------------------------------ squeue ---------------------
SQUEUE_FIELDS = ("JobID", "State", "Reason", "Name", "Comment", "Partition", "SubmitTime", "EligibleTime",
                 "StartTime", "EndTime", "NumCPUs", "NumNodes", "NodeList", "TimeLimit")
# Asked for after the fields above: an array task's ``<array id>_<index>`` (``16_3``; the pending
# rest as ``16_[4-9%2]``), or the plain id. Outputs recorded without it still parse.
SQUEUE_ARRAY_FIELD = "JobArrayID"
# Asked for after that, for ``asad status``'s %a and %q (outputs recorded before lack them too).
CHARGED_FIELDS = ("Account", "QOS")


def squeue_format() -> str:
    """The ``squeue -O`` value: every field unpadded and followed by the separator."""
    return ",".join(f"{f}:0{SEP}" for f in (*SQUEUE_FIELDS, SQUEUE_ARRAY_FIELD, *CHARGED_FIELDS))


def _status_times(state: JobState, reason: str, nodelist: str, submit: float | None, eligible: float | None,
                  start: float | None, end: float | None) -> tuple[float | None, float | None, float | None]:
    """Drop the times Slurm prints as forecasts: a pending job's StartTime is the expected start,
    a running job's EndTime its time limit, and a dependency-pending job has no eligible time."""
    never_started = state is JobState.PENDING or (state.is_final and not nodelist)
    if never_started:
        start = None
    if not state.is_final:
        end = None
    if state is JobState.PENDING and reason.startswith("Dependency"):
        eligible = None
    return eligible, start, end


def parse_squeue(text: str, command: str = "squeue") -> dict[int, JobStatus]:
    """Statuses by job id; an array job's tasks are folded into one status under the array's id."""
    out: dict[int, JobStatus] = {}
    tasks: dict[int, list[tuple[JobStatus, int]]] = {}
    for row in _rows(text, len(SQUEUE_FIELDS), command, optional=1 + len(CHARGED_FIELDS)):
        f = dict(zip((*SQUEUE_FIELDS, SQUEUE_ARRAY_FIELD, *CHARGED_FIELDS), row))
        array = split_array_id(f[SQUEUE_ARRAY_FIELD])
        if not f["JobID"].strip().isdigit():
            continue  # array or het job components: never asad's
        try:
            state = map_state(f["State"])
            reason = f["Reason"].strip() or "None"
            nodelist = _null(f["NodeList"])
            eligible, start, end = _status_times(state, reason, nodelist, parse_time(f["SubmitTime"]),
                                                 parse_time(f["EligibleTime"]), parse_time(f["StartTime"]),
                                                 parse_time(f["EndTime"]))
            limit = parse_clock_s(f["TimeLimit"])
            status = JobStatus(
                job_id=int(f["JobID"]), state=state, reason=reason, name=_null(f["Name"]),
                comment=_null(f["Comment"]), partition=_null(f["Partition"]),
                submit_time=parse_time(f["SubmitTime"]), eligible_time=eligible, start_time=start, end_time=end,
                alloc_cpus=_int_or(f["NumCPUs"]) if start is not None else 0,
                alloc_nodes=_int_or(f["NumNodes"]) if start is not None else 0,
                nodelist=nodelist, time_limit_s=None if limit is None else int(limit),
                account=_null(f["Account"]), qos=_null(f["QOS"]))
        except ValueError as exc:
            raise SlurmParseError(command, text, str(exc)) from None
        if array is not None:
            tasks.setdefault(array[0], []).append((status, task_count(array[1])))
        else:
            out[status.job_id] = status
    for array_id, members in tasks.items():
        out[array_id] = fold(array_id, members)
    return out


# ------------------------------------------------------------------ sacct ----------------------
SACCT_FIELDS = ("JobIDRaw", "JobName", "State", "ExitCode", "MaxRSS", "ReqMem", "ElapsedRaw", "TotalCPU",
                "Submit", "Eligible", "Start", "End", "Comment", "Partition", "AllocCPUS", "NNodes",
                "NodeList", "TimelimitRaw", "Reason")
SACCT_ARRAY_FIELD = "JobID"  # ``16_3`` for an array task (its JobIDRaw is the task's own id); optional


def sacct_format() -> str:
    return ",".join((*SACCT_FIELDS, SACCT_ARRAY_FIELD, *CHARGED_FIELDS))


@dataclass(frozen=True)
class SacctRecord:
    status: JobStatus
    usage: Usage
    req_mem_per_node_mb: float | None


def parse_sacct(text: str, command: str = "sacct") -> dict[int, SacctRecord]:
    """Job lines give the state and times, step lines (``.batch``, ``.0``, ``.extern``) the peak
    RSS; the job's MaxRSS is the largest of its steps'. When an id appears twice (a reused id
    with ``--duplicates``), the latest submission wins."""
    jobs: dict[int, dict[str, str]] = {}
    step_rss: dict[int, float] = {}
    array_of: dict[int, tuple[int, str]] = {}  # a task's own id -> (array id, index text)
    pending_tasks: list[tuple[int, dict[str, str]]] = []  # ``16_[4-9]``: not started, no id of their own
    rows = _rows(text, len(SACCT_FIELDS), command, optional=1 + len(CHARGED_FIELDS))
    try:
        for row in rows:
            f = dict(zip((*SACCT_FIELDS, SACCT_ARRAY_FIELD, *CHARGED_FIELDS), row))
            raw = f["JobIDRaw"].strip()
            base, dot, _step = raw.partition(".")
            if not base.isdigit():
                continue
            jid = int(base)
            array = split_array_id(f[SACCT_ARRAY_FIELD].partition(".")[0])
            if array is not None and not dot:
                if array[1].startswith("["):
                    pending_tasks.append((array[0], f))
                    continue
                array_of[jid] = array
            if dot:
                rss = _mem_or_none(f["MaxRSS"])
                if rss is not None:
                    step_rss[jid] = max(step_rss.get(jid, 0.0), rss)
                continue
            previous = jobs.get(jid)
            if previous is None or (parse_time(f["Submit"]) or 0) >= (parse_time(previous["Submit"]) or 0):
                jobs[jid] = f
        out: dict[int, SacctRecord] = {}
        for jid, f in jobs.items():
            state = map_state(f["State"])
            reason = f["Reason"].strip() or "None"
            nodelist = _null(f["NodeList"])
            eligible, start, end = _status_times(state, reason, nodelist, parse_time(f["Submit"]),
                                                 parse_time(f["Eligible"]), parse_time(f["Start"]),
                                                 parse_time(f["End"]))
            exit_code, signal = parse_exit_code(f["ExitCode"])
            limit_min = f["TimelimitRaw"].strip()
            nnodes = _int_or(f["NNodes"], 1) or 1
            req_total = _mem_or_none(f["ReqMem"])
            alloc_cpus = _int_or(f["AllocCPUS"])
            status = JobStatus(
                job_id=jid, state=state, reason=reason, name=_null(f["JobName"]), comment=_null(f["Comment"]),
                partition=_null(f["Partition"]), submit_time=parse_time(f["Submit"]), eligible_time=eligible,
                start_time=start, end_time=end, alloc_cpus=alloc_cpus if start is not None else 0,
                alloc_nodes=nnodes if start is not None else 0, nodelist=nodelist,
                time_limit_s=int(limit_min) * 60 if limit_min.isdigit() else None,
                exit_code=exit_code if state.is_final else None, signal=signal if state.is_final else None,
                account=_null(f["Account"]), qos=_null(f["QOS"]))
            elapsed = f["ElapsedRaw"].strip()
            usage = Usage(job_id=jid, peak_rss_mb=step_rss.get(jid), total_cpu_s=parse_clock_s(f["TotalCPU"]),
                          elapsed_s=float(elapsed) if elapsed.isdigit() else None, req_mem_mb=req_total,
                          alloc_cpus=alloc_cpus or None)
            per_node = None if req_total is None else req_total / nnodes
            out[jid] = SacctRecord(status, usage, per_node)
        return _fold_arrays(out, array_of, pending_tasks)
    except ValueError as exc:
        raise SlurmParseError(command, text, str(exc)) from None


def _fold_arrays(records: dict[int, SacctRecord], array_of: dict[int, tuple[int, str]],
                 pending_tasks: list[tuple[int, dict[str, str]]]) -> dict[int, SacctRecord]:
    """Array tasks' records folded into one per array id (see ``asad.slurm.array_status``)."""
    if not array_of and not pending_tasks:
        return records
    members: dict[int, list[SacctRecord]] = {}
    out = {}
    for jid, rec in records.items():
        if jid in array_of:
            members.setdefault(array_of[jid][0], []).append(rec)
        else:
            out[jid] = rec
    own: dict[int, set[str]] = {}  # an array's task indices with records of their own
    for array_id, index in array_of.values():
        own.setdefault(array_id, set()).add(index)
    waiting: dict[int, list[tuple[JobStatus, int]]] = {}
    for array_id, f in pending_tasks:
        # tasks that never started: pending, or ended so (CANCELLED with their array). A cancelled
        # array's record can still name tasks that started and have their own records (16_[2-9%2]
        # beside 16_2 and 16_3): those are counted once, by their own records.
        n = _never_started(f[SACCT_ARRAY_FIELD].split("_", 1)[1], own.get(array_id, set()))
        state = map_state(f["State"])
        if n:
            waiting.setdefault(array_id, []).append(
                (JobStatus(job_id=array_id, state=state if state.is_final else JobState.PENDING), n))
    for array_id in set(members) | set(waiting):
        recs = members.get(array_id, [])
        tasks = [(r.status, 1) for r in recs] + waiting.get(array_id, [])
        status = fold(array_id, tasks)
        usage = fold_usage(array_id, [r.usage for r in recs]) if recs else Usage(array_id, None, None, None)
        out[array_id] = SacctRecord(status, usage, recs[0].req_mem_per_node_mb if recs else None)
    return out


def _never_started(expr: str, started: set[str]) -> int:
    """How many tasks of a pending-range record (``[2-9%2]``) have no record of their own."""
    from asad.common.arrays import ArrayError, parse_array

    try:
        indices = parse_array(expr.strip("[]")).indices
    except ArrayError:
        return task_count(expr)
    return sum(1 for i in indices if str(i) not in started)


# ------------------------------------------------------------------ scontrol -------------------
_KEY_RE = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=")


def parse_key_values(line: str) -> dict[str, str]:
    """One line of ``scontrol -o show ...``: ``Key=value`` pairs, values may hold spaces."""
    matches = list(_KEY_RE.finditer(line))
    out = {}
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        out[m.group(1)] = line[m.end():end].strip()
    return out


def parse_scontrol_jobs(text: str, command: str = "scontrol -o show job") -> dict[int, JobStatus]:
    out: dict[int, JobStatus] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("No jobs in the system"):
            continue
        kv = parse_key_values(line)
        if "JobId" not in kv or "JobState" not in kv:
            raise SlurmParseError(command, text, f"a line without JobId/JobState: {line[:200]!r}")
        if not kv["JobId"].isdigit():
            continue
        try:
            state = map_state(kv["JobState"])
            reason = kv.get("Reason", "None") or "None"
            nodelist = _null(kv.get("NodeList", ""))
            eligible, start, end = _status_times(state, reason, nodelist, parse_time(kv.get("SubmitTime", "")),
                                                 parse_time(kv.get("EligibleTime", "")),
                                                 parse_time(kv.get("StartTime", "")), parse_time(kv.get("EndTime", "")))
            exit_code, signal = parse_exit_code(kv.get("ExitCode", ""))
            limit = parse_clock_s(kv.get("TimeLimit", ""))
            status = JobStatus(
                job_id=int(kv["JobId"]), state=state, reason=reason, name=_null(kv.get("JobName", "")),
                comment=_null(kv.get("Comment", "")), partition=_null(kv.get("Partition", "")),
                submit_time=parse_time(kv.get("SubmitTime", "")), eligible_time=eligible, start_time=start,
                end_time=end, alloc_cpus=_int_or(kv.get("NumCPUs", "")) if start is not None else 0,
                alloc_nodes=_int_or(kv.get("NumNodes", "")) if start is not None else 0, nodelist=nodelist,
                time_limit_s=None if limit is None else int(limit),
                exit_code=exit_code if state.is_final else None, signal=signal if state.is_final else None,
                account=_null(kv.get("Account", "")), qos=_null(kv.get("QOS", "")))
        except ValueError as exc:
            raise SlurmParseError(command, text, str(exc)) from None
        out[status.job_id] = status
    return out


# ------------------------------------------------------------------ sinfo / sbatch -------------
SINFO_FORMAT = SEP.join(["%P", "%c", "%m", "%D", "%l", "%G"])


def parse_sinfo_partitions(text: str, command: str = "sinfo") -> list[PartitionInfo]:
    """``sinfo -h -o '%P|%c|%m|%D|%l|%G'`` (one line per partition and node state); ``*`` marks the
    default partition. CPUs and memory per node are the smallest node's (``28+`` -> 28); GPUs per
    node the most any node has (a job asking for more can never start: Slurm refuses it at once).
    Output without the ``%G`` column (recorded before asad asked for it) leaves GPUs unknown."""
    acc: dict[str, dict] = {}
    for parts in _rows(text, 5, command, optional=1):
        raw_name, cpus, mem, nodes, limit, gres = (p.strip() for p in parts)
        name = raw_name.rstrip("*")
        try:
            cpu_n = int(cpus.rstrip("+"))
            mem_n = int(mem.rstrip("+"))
            node_n = int(nodes)
            limit_s = None if limit.lower() in ("infinite", "unlimited") else parse_clock_s(limit)
        except ValueError as exc:
            raise SlurmParseError(command, text, str(exc)) from None
        gpus = gpus_in(gres) if gres else None
        entry = acc.setdefault(name, {"nodes": 0, "cpus": cpu_n, "mem": mem_n, "limit": limit_s,
                                      "default": raw_name.endswith("*"), "gpus": gpus})
        entry["nodes"] += node_n
        entry["cpus"] = min(entry["cpus"], cpu_n)
        entry["mem"] = min(entry["mem"], mem_n)
        if entry["gpus"] is not None:  # one row it cannot read: not known (never a refusal on a guess)
            entry["gpus"] = None if gpus is None else max(entry["gpus"], gpus)
    return [PartitionInfo(name=n, nodes=e["nodes"], cpus_per_node=e["cpus"], mem_per_node_mb=e["mem"],
                          max_time_s=None if e["limit"] is None else int(e["limit"]), default=e["default"],
                          gpus_per_node=e["gpus"])
            for n, e in acc.items()]


def parse_sbatch_parsable(text: str, command: str = "sbatch --parsable") -> int:
    """``1234`` or ``1234;cluster`` (the last non-empty line: warnings may come first)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines:
        first = lines[-1].split(";")[0]
        if first.isdigit():
            return int(first)
    raise SlurmParseError(command, text, "expected a job id")


_TEST_ONLY_RE = re.compile(r"to start at (\S+)")


def parse_test_only(text: str, command: str = "sbatch --test-only") -> float:
    """``sbatch: Job 5 to start at 1795262234 using 2 processors on nodes n1 in partition main``."""
    m = _TEST_ONLY_RE.search(text)
    if not m:
        raise SlurmParseError(command, text, "no 'to start at <time>'")
    try:
        when = parse_time(m.group(1))
    except ValueError as exc:
        raise SlurmParseError(command, text, str(exc)) from None
    if when is None:
        raise SlurmParseError(command, text, "start time is unknown")
    return when


def with_state(status: JobStatus, state: JobState) -> JobStatus:
    return replace(status, state=state)
