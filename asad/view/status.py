"""What ``asad status``, ``show`` and ``history`` print (``learners``: learners.py; ``explain``: explain.py).

``asad status`` speaks squeue: the same column names where squeue has them, and the same
``-o`` format letters (``%i`` JOBID, ``%P`` PARTITION, ``%j`` NAME, ``%t`` ST, ``%M`` TIME,
``%D`` NODES, ``%C`` CPUS, ``%R`` NODELIST(REASON)), plus asad's own: ``%W`` WORKFLOW,
``%S`` STAGE, ``%p`` PLANNED, ``%e`` EST.WAIT, ``%T`` STATE (the stage's, spelled out).
More of squeue's letters mean what they mean there: ``%A`` JOBID, ``%r`` REASON, ``%N`` NODELIST,
``%l`` TIME_LIMIT, ``%L`` TIME_LEFT, ``%V`` SUBMIT_TIME, ``%a`` ACCOUNT, ``%q`` QOS, ``%k`` COMMENT
(asad's tag), ``%m`` MIN_MEMORY. Four letters are asad's where squeue has another meaning: ``%S``
(squeue: start time), ``%p`` (priority), ``%e`` (end time), ``%W`` (licenses); ``%X`` TRY is the
stage's try (squeue: cores per socket; asad's own resubmissions are not tries: asad.core.attempts.tries), and a stage on its second or later attempt
adds a ``#`` line saying why it was retried and with what. ``%b`` GPUS is what the stage asks of
GPUs (squeue's ``%b``: its generic resources), a column of the default format when a stage asks for some.
A width works as in squeue: ``%.10i`` right-aligns in 10 columns, ``%-10i`` or ``%10i`` left.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from asad.core import markers
from asad.core.array_view import ArrayProgress, array_progress, format_tasks
from asad.core.attempts import attempts_by_stage, retry_note, sized_below
from asad.core.attempts import tries as count_tries
from asad.core.model import JobPhase, JobRecord, StageRun, StageState, WorkflowRun
from asad.slurm.backend import JobState
from asad.common.units import format_duration, format_mem

DEFAULT_FORMAT = "%.8W %.12S %.8i %.9P %.18j %.3t %.10M %.5D %.5C %.11p %.8e %.3X %R"
# ... with a GPUS column after CPUS when a stage shown asks for GPUs (a CPU-only cluster's users never see it)
DEFAULT_FORMAT_GPUS = DEFAULT_FORMAT.replace("%.5C ", "%.5C %.6b ")

_FIELDS = {
    "W": ("WORKFLOW", "workflow"), "S": ("STAGE", "stage"), "i": ("JOBID", "job_id"),
    "P": ("PARTITION", "partition"), "j": ("NAME", "name"), "t": ("ST", "st"), "T": ("STATE", "state_long"),
    "M": ("TIME", "time"), "D": ("NODES", "nodes"), "C": ("CPUS", "cpus"), "R": ("NODELIST(REASON)", "where"),
    "p": ("PLANNED", "planned"), "e": ("EST.WAIT", "est_wait"), "m": ("MIN_MEMORY", "mem"),
    "A": ("JOBID", "job_id"), "r": ("REASON", "reason_only"), "N": ("NODELIST", "nodelist"),
    "l": ("TIME_LIMIT", "time_limit"), "L": ("TIME_LEFT", "time_left"), "V": ("SUBMIT_TIME", "submitted"),
    "a": ("ACCOUNT", "account"), "q": ("QOS", "qos"), "k": ("COMMENT", "tag"), "X": ("TRY", "attempts"),
    "b": ("GPUS", "gpus"),
}
_FINAL_STAGE = {StageState.COMPLETED.value, StageState.FAILED.value, StageState.CANCELLED.value}
STALE_AFTER_S = 60.0  # past this, asad status says how old the daemon's last poll is
# A workflow that failed this recently is named in the notes of the default view (which lists active
# workflows only): one Slurm refused at once (a partition, account or GRES it does not have) was
# accepted by `asad submit` and then simply gone from `asad status`.
RECENT_FAILURE_S = 600.0
_STAGE_ST = {StageState.WAITING: "WT", StageState.PLANNED: "PL", StageState.COMPLETED: "CD",
             StageState.FAILED: "F", StageState.CANCELLED: "CA"}


def status_rows(store, workflow_id: int | None = None, include_finished: bool = False,  # noqa: ANN001
                run_dir=None) -> tuple[list[dict], list[str]]:  # noqa: ANN001
    """The rows and ``#`` notes of ``asad status``. ``run_dir``: the store's run folder, whose disk
    is looked at (full: stages fail there, asad.daemon.disk)."""
    notes = []
    if run_dir is not None:
        from asad.daemon.disk import full_disk_note

        full = full_disk_note(run_dir)
        if full:
            notes.append(full)
    backend = store.get_status("backend")
    if backend and not backend.get("ok", True):
        notes.append(f"Slurm unavailable since {_clock(backend.get('since'))}: {backend.get('error')} "
                     "(plans are kept; asad retries with growing pauses)")
    clock = store.get_status("clock") or {}
    daemon = store.get_status("daemon") or {}
    now = clock.get("now")
    if now is not None and clock.get("wall") is not None:
        now += (time.time() - clock["wall"]) * clock.get("speed", 1.0)
    if now is None:
        now = time.time()
    age_s = time.time() - clock["wall"] if clock.get("wall") is not None else None
    if age_s is not None and age_s > STALE_AFTER_S and daemon.get("backend") not in (None, "sim"):
        notes.append(f"states as of the daemon's last poll of Slurm, {format_duration(age_s)} ago "
                     "(a stage whose job has started shows R from its wrapper's marker)")
    if daemon.get("paused"):
        notes.append(f"daemon paused after repeated Slurm failures; it retries every {daemon.get('retry_s')} s")
    if workflow_id is not None:
        wfs = store.load_workflows([workflow_id])
        if not wfs:
            notes.append(f"no workflow {workflow_id} in the store")
    else:
        wfs = store.load_workflows(active_only=not include_finished)
        if not include_finished:
            notes += _recent_failures(store, now)
    rows = []
    simulated = store.simulated_workflow_ids([wf.id for wf in wfs])
    for wf in wfs:
        for row in _stage_rows(wf, now):
            row["simulated"] = wf.id in simulated or (daemon.get("backend") == "sim" and not wf.jobs)
            rows.append(row)
            if row["state"] == StageState.FAILED.value and row.get("log"):
                if glob.glob(row["log"]):  # an array's: one log per task (<stage>.*.log)
                    notes.append(f"workflow {wf.id} stage {row['stage']} failed: its output is in {row['log']}"
                                 + (f" (Slurm's: {row['slurm_output']})" if row.get("slurm_output") else ""))
                else:  # refused by Slurm, or killed before its command ran: there is no output to read
                    notes.append(f"workflow {wf.id} stage {row['stage']} failed before its command wrote any "
                                 f"output: {row['message'] or 'see asad show ' + str(wf.id)}")
    if daemon.get("backend") == "sim" or any(r["simulated"] for r in rows):
        notes.append(SIMULATED_NOTE)
    notes.extend(f"workflow {r['workflow']} stage {r['stage']}: {r['retry']}" for r in rows
                 if r.get("retry") and r["state"] not in _FINAL_STAGE)
    notes.extend(f"workflow {r['workflow']} stage {r['stage']}: {r['sized_below']} by its sizing agent "
                 f"(asad explain {r['workflow']} {r['stage']} says why)" for r in rows
                 if r.get("sized_below") and r["state"] not in _FINAL_STAGE)
    return rows, notes


def _recent_failures(store, now: float) -> list[str]:  # noqa: ANN001
    out = []
    for row in reversed(store.workflow_rows(states=["FAILED"], limit=20)):  # the 20 latest, oldest first
        if row.ended_at is not None and now - row.ended_at <= RECENT_FAILURE_S:
            out.append(f"workflow {row.id} ({row.name}) FAILED {format_duration(max(0.0, now - row.ended_at))} ago: "
                       f"{row.message or 'see asad show ' + str(row.id)} ('asad show {row.id}' tells more; "
                       "'asad status --all' lists ended workflows)")
    return out


SIMULATED_NOTE = ("SIMULATED: these jobs are asad's simulator's (virtual time, simulated nodes), not Slurm's; "
                  "squeue does not show them")


def output_paths(wf: WorkflowRun, stage: str) -> dict[str, str]:
    """Where a stage's output is on a real cluster: ``log``, the command's stdout and stderr (the
    stage wrapper's ``<run dir>/<workflow id>/<stage>.log``), and ``slurm_output``, the job's own
    ``--output`` (``<stage>-<job id>.out``: the wrapper's messages, Slurm's errors). None on the simulator."""
    job = wf.current_job(stage) if wf.strategy != "big-job" else (wf.jobs[-1] if wf.jobs else None)
    if job is None or not job.request.output:
        return {}
    if wf.strategy != "big-job" and wf.spec.stage(stage).slurm.output:
        # the user named the log: the command's output goes to that Slurm output file itself
        return {"log": _slurm_output_path(job, wf.spec.workdir)} if job.job_id is not None else {}
    if job.request.array:  # one log per task: <stage>.<task id>.log, <stage>-<array job id>_<index>.out
        out = {"log": f"{os.path.dirname(job.request.output)}/{stage}.*.log"}
        if job.job_id is not None:
            out["slurm_output"] = job.request.output.replace("%A", str(job.job_id)).replace("%a", "*")
        return out
    out = {"log": f"{os.path.dirname(job.request.output)}/{stage}.log"}
    if job.job_id is not None:
        out["slurm_output"] = markers.job_output(job.request.output, job.job_id)
    return out


_PATTERN_RE = re.compile(r"%(%|[A-Za-z])")


def _slurm_output_path(job: JobRecord, workdir: str) -> str:
    """The file Slurm writes for ``--output`` (relative to the job's workdir), its patterns filled in
    as sbatch does (``%x`` job name, ``%j`` job id, ``%A``/``%a`` array job and task, ``%u`` user);
    a part known per task or per node only is ``*``."""
    req, array = job.request, bool(job.request.array)
    known = {"%": "%", "x": req.name, "j": "*" if array else str(job.job_id), "A": str(job.job_id),
             "a": "*", "u": pwd.getpwuid(os.getuid()).pw_name}
    path = _PATTERN_RE.sub(lambda m: known.get(m.group(1), "*"), req.output)
    return os.path.normpath(os.path.join(req.workdir or workdir or ".", path))


def _per_node(total_mb: int | None, nodes: int) -> int | None:
    return None if total_mb is None else -(-total_mb // max(1, nodes))


def _run_folder(job) -> str | None:  # noqa: ANN001
    """The folder the stage wrapper of this submitted job writes its markers to (None: no such job)."""
    return os.path.dirname(job.request.output) if job.request.output and job.job_id is not None else None


def _alloc_marker(job, stage: str) -> tuple[float, str] | None:  # noqa: ANN001
    """(start epoch, host) from the stage wrapper's allocation marker of this very job, if written."""
    folder = _run_folder(job)
    return markers.began(folder, stage, job.job_id, "alloc") if folder is not None else None


def _turn_markers(job, stage: str) -> tuple[tuple[float, str] | None, tuple[int, float] | None]:  # noqa: ANN001
    """A stage's turn in a shared job, from its wrapper's markers of this very job."""
    folder = _run_folder(job)
    return markers.turn(folder, stage, job.job_id) if folder is not None else (None, None)


@dataclass(frozen=True)
class _Live:
    """A stage as squeue would show it now: the last poll corrected by its wrapper's markers, which
    say sooner (the daemon's polls may be minutes apart)."""

    st: str | None  # squeue's state code
    start: float | None  # what TIME counts from
    end: float | None  # ... and to; None: it still counts, or there is nothing to count
    host: str | None = None  # a marker says the stage runs there, whatever the last poll said
    turn: str = ""  # a stage of a shared job: "over" (its turn ended) or "waiting" (not yet its turn)


def _live(wf: WorkflowRun, name: str, run: StageRun, job: JobRecord | None) -> _Live:
    if job is None:
        return _Live(_STAGE_ST.get(run.state), None, None)
    st = _STAGE_ST.get(run.state) if run.state in (StageState.WAITING, StageState.PLANNED) else job.state.short
    if run.state.is_final and not job.state.is_final:
        st = _STAGE_ST[run.state]
    if job.rides and not run.state.is_final and not job.state.is_final:
        # a shared job runs its stages in turn: each stage's own markers say where it is
        began, ended = _turn_markers(job, name)
        if ended is not None:
            return _Live("CD" if ended[0] == 0 else "F", began[0] if began else None, ended[1], turn="over")
        if began is not None:
            return _Live("R", began[0], None, host=began[1])
        if name != job.stage:
            return _Live("PD", None, None, turn="waiting")
    elif job.rides and run.start_time is not None:  # its turn ended: asad knows when it ran
        return _Live(st, run.start_time, run.end_time)
    elif not job.state.is_final and not run.state.is_final and not job.request.array:
        # the wrapper's end marker says the command ended; Slurm's end reaches asad at its next poll
        # (or, with no daemon running, never): show the end rather than a clock still counting
        began, ended = _turn_markers(job, name)
        if began is not None and ended is not None:
            return _Live("CD" if ended[0] == 0 else "F", began[0], ended[1], turn="over")
    # ``<stage>.alloc`` ("<epoch> <host> <job id>"): the allocation exists, so the job runs
    allocated = _alloc_marker(job, name) if job.state.value == "PENDING" and not run.state.is_final else None
    if allocated is not None:
        st = "R"
    start = job.start_time if job.start_time is not None else (allocated or (None,))[0]
    end = job.end_time or run.end_time or (wf.ended_at if run.state.is_final else None)
    return _Live(st, start, end, host=allocated[1] if allocated else None)


def _array_live(live: _Live, progress: ArrayProgress, job: JobRecord) -> _Live:
    """An array the daemon last polled before its tasks started or ended: its tasks' markers say
    what squeue would (as ``asad.slurm.array_status`` folds it: running while a task runs, or while
    some ended and some wait; ended once none runs or waits)."""
    counts = progress.counts
    waiting, running = counts.get("PD", 0), counts.get("R", 0)
    done = sum(counts.values()) - waiting - running
    if running or (done and waiting):
        st, end = "R", None
    elif done:
        st, end = ("CD" if set(counts) == {"CD"} else "F"), progress.ended
    else:
        return live
    start = job.start_time if job.start_time is not None else progress.started
    return _Live(st, start, end if start is not None else None)


def _elapsed(live: _Live, run: StageRun, job: JobRecord | None, now: float) -> float | None:
    """squeue's TIME: how long the job (or a shared job's stage) has run; none while it pends,
    frozen once it ended."""
    if live.start is None:
        return None
    if live.end is not None:
        return max(0.0, live.end - live.start)
    if job is None or job.state.is_final or run.state.is_final:
        return None
    return max(0.0, now - live.start)


def _reason(wf: WorkflowRun, name: str, run: StageRun, job: JobRecord | None, live: _Live) -> str:
    """squeue's NODELIST(REASON): where it runs, or why it does not yet."""
    if live.turn == "over":
        return ""
    if live.host is not None:
        return job.nodelist if job.state.value == "RUNNING" and job.nodelist else live.host
    if live.turn == "waiting":
        return f"(SharedJob:{job.stage})"
    if job is not None and job.job_id is None and not run.state.is_final:
        return "(Submitting)"  # sbatch is under way (or a restart will find whether it reached Slurm)
    if job is not None and job.state.value == "PENDING" and not run.state.is_final:
        return f"({_pending_reason(job)})"
    if job is not None and job.state.value == "RUNNING" and not run.state.is_final:
        return job.nodelist or "-"
    if run.state is StageState.PLANNED:
        return "(PlannedSubmission)"
    if run.state is StageState.WAITING:
        if wf.state.value != "ACTIVE":
            return f"({wf.state.value.title()})"
        if all(wf.stages[p].state is StageState.COMPLETED for p in wf.spec.predecessors(name)):
            return "(NotYetSubmitted)"  # free to go: the daemon submits it at its next wake
        return "(Predecessors)"
    if run.state is StageState.COMPLETED:  # squeue names a finished job's nodes, not a reason
        return job.nodelist if job is not None and job.nodelist else ""
    return f"({run.message})" if run.message else ""


def _stage_rows(wf: WorkflowRun, now: float) -> list[dict]:
    out = []
    tries = attempts_by_stage(wf)
    for name, run in wf.stages.items():
        job = wf.current_job(name) if wf.strategy != "big-job" else (wf.jobs[-1] if wf.jobs else None)
        if job is not None and job.phase is JobPhase.ABANDONED:
            job = None
        live = _live(wf, name, run, job)
        progress = array_progress(wf, name) if job is not None else None
        if progress is not None and not run.state.is_final and job.phase is not JobPhase.DONE:
            live = _array_live(live, progress, job)
        st, elapsed, reason = live.st, _elapsed(live, run, job, now), _reason(wf, name, run, job, live)
        tasks = progress.counts if progress is not None else None
        if tasks and not run.state.is_final:
            reason = format_tasks(tasks)  # one row for the whole array: its tasks per state
            if set(tasks) == {"PD"} and job.state.value == "PENDING":
                reason = f"({_pending_reason(job)}) {reason}"  # no task started: why, as squeue says it
        req = job.request if job else None
        spec = wf.spec.stage(name)
        limit = req.time_limit_s if req else (run.time_s or spec.time_s)
        running = st == "R"
        out.append({
            "workflow": wf.id, "workflow_name": wf.spec.name, "stage": name, "state": run.state.value,
            "job_id": job.job_id if job and job.job_id is not None else None,
            "partition": (job.partition or req.partition) if job else wf.spec.stage(name).partition,
            "name": req.name if req else f"asad.{wf.id}.{name}",
            "st": st, "time_s": elapsed, "nodes": (job.alloc_nodes or req.nodes) if job else wf.spec.stage(name).nodes,
            "cpus": (job.alloc_cpus or req.cpus) if job else (run.cpus or wf.spec.stage(name).cpus),
            "mem_mb": req.total_mem_mb() if req else wf.spec.stage(name).total_mem_mb(),
            "mem_per_node_mb": _per_node(req.total_mem_mb(), req.nodes) if req
            else wf.spec.stage(name).mem_per_node_mb(),
            "planned_at": run.planned_submit_at, "est_wait_s": run.est_wait_s, "reason": reason,
            "message": run.message,
            "state_long": _LONG_STATE.get(st, run.state.value) if st else run.state.value,
            "reason_only": _pending_reason(job) if job is not None and job.state.value == "PENDING" else "",
            "nodelist": (job.nodelist if job is not None and job.start_time is not None and job.nodelist
                         else live.host or ""),
            "time_limit_s": limit,
            # squeue's TIME_LEFT: the whole limit while the job pends
            "time_left_s": (max(0.0, limit - elapsed) if running and elapsed is not None
                            else limit if st == "PD" and job is not None else None),
            "submitted_at": job.submitted_at if job is not None else None,
            "account": (job.account if job is not None else "") or (req.account if req else spec.account) or "",
            "qos": (job.qos if job is not None else "") or (req.qos if req else spec.qos) or "",
            "tag": job.tag if job is not None else "",
            **output_paths(wf, name),
            "attempts": count_tries(tries[name]) if name in tries else run.attempt,
            "retry": retry_note(tries.get(name, [])), "array_tasks": tasks,
            "gpus": gpus_asked(req.gpus, req.gres) if req else gpus_asked(spec.slurm.gpus, spec.slurm.gres),
            "sized_below": sized_below(wf, name) if wf.strategy != "big-job" else "",
        })
    return out


# squeue's %T for its %t codes; a stage with no job yet has asad's own (WAITING, PLANNED)
_LONG_STATE = {state.short: state.value for state in JobState} | {"WT": "WAITING", "PL": "PLANNED"}


def _pending_reason(job: JobRecord) -> str:
    """squeue's reason for a pending job; before asad's first poll of it, what squeue would say of
    a job held by a dependency (else Slurm's own ``None``: not yet looked at)."""
    return job.reason or ("Dependency" if job.request.dependency is not None else "None")


def _cell(row: dict, key: str) -> str:
    if key == "job_id":
        return str(row["job_id"]) if row["job_id"] is not None else "-"
    if key == "time":
        return format_duration(row["time_s"]) if row["time_s"] is not None else "0:00"
    if key == "planned":
        return _clock(row["planned_at"]) if row["planned_at"] else "-"
    if key == "est_wait":
        return format_duration(row["est_wait_s"]) if row["est_wait_s"] is not None else "-"
    if key == "where":
        return row["reason"]
    if key == "mem":  # squeue's MIN_MEMORY: per node, as --mem asks
        return format_mem(row["mem_per_node_mb"])
    if key == "partition":
        return row["partition"] or "-"
    if key == "time_limit":
        return format_duration(row["time_limit_s"]) if row["time_limit_s"] else "-"
    if key == "time_left":
        return format_duration(row["time_left_s"]) if row["time_left_s"] is not None else "-"
    if key == "submitted":
        return _clock(row["submitted_at"])
    if key in ("reason_only", "nodelist", "account", "qos", "tag", "gpus"):
        return row[key] or "-"
    value = row[key]
    return "-" if value is None else str(value)


_SPEC_RE = re.compile(r"%(-|\.)?(\d+)?([A-Za-z%])")


def check_format(fmt: str) -> None:
    """Refuse a ``-o`` format with a letter asad does not know, listing the ones it does."""
    unknown = sorted({m.group(3) for m in _SPEC_RE.finditer(fmt) if m.group(3) != "%" and m.group(3) not in _FIELDS})
    if unknown:
        known = ", ".join(f"%{k} {h}" for k, (h, _) in _FIELDS.items())
        raise ValueError(f"unknown format field{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join('%' + u for u in unknown)} in -o {fmt!r}; valid fields: {known}")


def gpus_asked(gpus: int | None, gres: str | None) -> str:
    """What a stage asks of GPUs, as it asked: ``2`` (``--gpus``, for the job), ``gpu:a100:1``
    (``--gres``, per node); empty when it asks for none."""
    return str(gpus) if gpus else (gres or "")


def render_status(rows: list[dict], fmt: str | None = None, notes: list[str] | None = None) -> str:
    fmt = fmt or (DEFAULT_FORMAT_GPUS if any(r.get("gpus") for r in rows) else DEFAULT_FORMAT)

    def render(values: dict | None) -> str:
        def sub(m: re.Match) -> str:
            align, width, letter = m.group(1), m.group(2), m.group(3)
            if letter == "%":
                return "%"
            if letter not in _FIELDS:
                return m.group(0)
            header, key = _FIELDS[letter]
            text = header if values is None else _cell(values, key)
            if width:
                w = int(width)
                text = text[:w]
                text = text.rjust(w) if align == "." else text.ljust(w)
            return text
        return _SPEC_RE.sub(sub, fmt).rstrip()

    lines = [f"# {n}" for n in notes or []]
    lines.append(render(None))
    lines.extend(render(r) for r in rows)
    return "\n".join(lines)


def _clock(t: float | None) -> str:
    if t is None:
        return "-"
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%m-%dT%H:%M")


def render_summary(s: dict) -> str:
    def d(x: float | None) -> str:
        return format_duration(x) if x is not None else "-"

    t0 = s.get("created_at") or 0.0

    def rel(t: float | None) -> str:
        return "-" if t is None else "+" + format_duration(t - t0)

    def not_before(t: float | None, earlier: float | None) -> float | None:
        # Slurm's times are whole seconds (truncated), asad's own a fraction later: a job that started
        # in the second it was submitted read START before SUBMIT
        return earlier if t is not None and earlier is not None and earlier - 1.0 < t < earlier else t

    gpus = any(st.get("gpus") for st in s["stages"])  # a GPUS column only where a stage asks for GPUs
    head = (f"workflow {s['id']} {s['workflow']}  strategy={s['strategy']}"
            + (f" mode={s['mode']}" if s["strategy"] == "asa" else "") + f"  state={s['state']}")
    if s.get("message"):
        head += f"\n  {s['message']}"
    if s.get("simulated"):
        head += f"\n  {SIMULATED_NOTE}"
    lines = [head,
             f"  makespan {d(s['makespan_s'])}   total perceived wait {d(s['total_wait_s'])}   "
             f"queue wait {d(s['queue_wait_s'])}",
             f"  core-hours {s['core_hours']:.2f}   overhead {s['overhead_core_hours']:.2f}   jobs {s['jobs']}"
             + (f"   hit ratio {s['hit_ratio']:.0%}" if s.get("hit_ratio") is not None else ""),
             "",
             f"  {'STAGE':<16} {'JOBID':>8} {'STATE':<10} {'TRY':>3} {'CPUS':>5} "
             + (f"{'GPUS':>6} " if gpus else "") + f"{'SUBMIT':>10} {'START':>10} "
             f"{'END':>10} "
             f"{'WAIT':>9} {'PERCEIVED':>9} {'EST.WAIT':>9} {'IDLE':>7}"]
    for st in s["stages"]:
        lines.append(
            f"  {st['name'][:16]:<16} {str(st['job_id'] or '-'):>8} {st['state'][:10]:<10} "
            f"{st.get('attempts', 1):>3} {st['cpus']:>5} " + (f"{st.get('gpus') or '-':>6} " if gpus else "")
            + f"{rel(st['submit']):>10} {rel(not_before(st['start'], st['submit'])):>10} {rel(st['end']):>10} "
            f"{d(st['wait_s']):>9} "
            f"{d(st['perceived_wait_s']):>9} {d(st['est_wait_s']):>9} {d(st['idle_s']):>7}")
        if st.get("message") and st["state"] != "COMPLETED":
            lines.append(f"      {st['message']}")
        if st.get("array_tasks"):
            lines.append(f"      array {st['array']}: tasks {format_tasks(st['array_tasks'])}")
        if st.get("sized_below"):
            lines.append(f"      {st['sized_below']} (asad explain {s['id']} {st['name']} says why)")
        if st.get("log") and st.get("job_id") and st.get("job_start"):  # a job that never ran wrote no log
            lines.append(f"      log {st['log']}" + (f"   Slurm output {st['slurm_output']}"
                                                     if st.get("slurm_output") else ""))
        tries = st.get("attempt_list") or []
        if len(tries) > 1:  # every attempt, why it was made, and with what (and an earlier one's log)
            lines.extend(f"      {t['text']}" + _earlier_log(st.get("log"), t, last=i == len(tries) - 1)
                         for i, t in enumerate(tries))
    return "\n".join(lines)


def _earlier_log(log: str | None, attempt: dict, *, last: bool) -> str:
    """The stage wrapper keeps an earlier attempt's log as ``<stage>.log.<its job id>``."""
    if last or not log or "*" in log or attempt.get("job_id") is None:
        return ""
    path = f"{log}.{attempt['job_id']}"
    return f"   log {path}" if os.path.exists(path) else ""


def render_history(items: list[dict]) -> str:
    lines = [f"{'ID':>5} {'WORKFLOW':<16} {'STRATEGY':<10} {'STATE':<10} {'SUBMITTED':>12} {'MAKESPAN':>10} "
             f"{'WAIT':>9} {'CORE-H':>8} {'OVERHEAD':>8} BACKEND"]
    for it in items:
        def d(x: float | None) -> str:
            return format_duration(x) if x is not None else "-"
        ch = f"{it['core_hours']:.2f}" if it["core_hours"] is not None else "-"
        oh = f"{it['overhead_core_hours']:.2f}" if it["overhead_core_hours"] is not None else "-"
        lines.append(f"{it['id']:>5} {it['workflow'][:16]:<16} {it['strategy']:<10} {it['state']:<10} "
                     f"{_clock(it['created_at']):>12} {d(it['makespan_s']):>10} {d(it['total_wait_s']):>9} "
                     f"{ch:>8} {oh:>8} {'SIMULATED' if it.get('simulated') else it.get('backend') or '-'}")
    return "\n".join(lines)
