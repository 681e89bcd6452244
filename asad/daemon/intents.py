"""Submission intents after a crash: adopt, wait, abandon, and watch for a late landing.

The runner writes an intent (a job row in phase SUBMITTING) before every ``sbatch``. After a crash,
an intent with no job id is looked up in Slurm by its tag. Found: the job is adopted. Not found:
the ``sbatch`` may still be on its way. A daemon killed while ``sbatch`` waits on a busy slurmctld
leaves that ``sbatch`` running, and its job lands seconds later; declaring the intent abandoned at
once and submitting the stage again ran the stage twice (issue 36, item 1). So an intent is
abandoned only when no ``sbatch`` of an earlier daemon can still land it:

- written on this host: no process here still submits its tag (``asad.slurm.inflight``), and none
  has for ``submit_settle_s`` (a request slurmctld received just before its sender died is still
  processed; Slurm's default MessageTimeout is 10 s);
- written on another host (a takeover after the lease lapsed), or on a host without ``/proc``:
  ``CROSS_HOST_GRACE_S`` after the intent was written, longer than any ``sbatch`` lives (its own
  retries on a busy controller: 15 tries, about two minutes of pauses, plus each try's timeout).

An abandoned intent is then watched for ``WATCH_S``: a job that still shows up with its tag (a
controller slower than all of the above, an ``sbatch`` killed with the daemon after its request left)
is adopted when the stage has no later attempt, and cancelled when it has; either is logged.
"""

from __future__ import annotations

import math
import socket
from dataclasses import dataclass

import structlog

from asad.core.model import JobPhase, JobRecord, StageState, WorkflowRun, WorkflowState
from asad.slurm.backend import Backend, JobStatus
from asad.slurm.inflight import submitting

log = structlog.get_logger("asad.daemon.runner")

HOST = socket.gethostname()
CROSS_HOST_GRACE_S = 600.0
WATCH_S = 900.0  # an abandoned intent is looked for in Slurm this long after it was abandoned ...
WATCH_EVERY_S = 30.0  # ... this often (one find: sacct + squeue of the user), while there is one
PENDING_LOOK_S = 2.0  # an intent whose sbatch may still land is looked at again this soon
UNCONFIRMED = "asad:unconfirmed"  # the reason recorded on an intent abandoned after a crash


@dataclass
class _Watched:
    wf: WorkflowRun
    job: JobRecord
    until: float


class Intents:
    """The runner's reconciliation of submission intents with Slurm."""

    def __init__(self, store, backend: Backend, store_id: str):  # noqa: ANN001
        self.store = store
        self.backend = backend
        self.prefix = f"asad:{store_id}:"
        self._absent_since: dict[str, float] = {}  # tag -> when this runner first saw no sbatch for it
        self._told: set[str] = set()
        self._watched: dict[str, _Watched] = {}
        self._next_look = -math.inf

    @property
    def settle_s(self) -> float:
        return float(getattr(self.backend, "submit_settle_s", 0.0))

    def track(self, wf: WorkflowRun, now: float) -> None:
        """A workflow read from the store: its intents abandoned after a crash, recently enough that
        their job may still land, are watched (also across a restart of the daemon)."""
        for job in wf.jobs:
            if job.phase is JobPhase.ABANDONED and job.reason == UNCONFIRMED and job.job_id is None \
                    and job.intent_at is not None and job.intent_at + WATCH_S > now:
                self._watched.setdefault(job.tag, _Watched(wf, job, job.intent_at + WATCH_S))

    def reconcile(self, workflows: list[WorkflowRun], now: float, touched: set[int]) -> float:
        """Adopt, keep waiting for, or abandon every intent with no job id; adopt or cancel watched
        jobs that landed late. Returns when to look again (inf: nothing to look at)."""
        intents = [(wf, j) for wf in workflows for j in wf.jobs if j.phase is JobPhase.SUBMITTING]
        self._watched = {t: w for t, w in self._watched.items() if w.until > now}
        look_watched = bool(self._watched) and now >= self._next_look
        if not intents and not look_watched:
            return self._next_look if self._watched else math.inf
        by_tag = {st.comment: (jid, st) for jid, st in self.backend.find(self.prefix).items()}
        wake = math.inf
        if intents:
            in_flight = submitting([j.tag for _wf, j in intents if j.tag not in by_tag])
            for wf, job in intents:
                touched.add(wf.id)
                hit = by_tag.get(job.tag)
                if hit is not None:
                    self._adopt(job, *hit)
                elif self._may_still_land(job, now, in_flight):
                    wake = min(wake, now + PENDING_LOOK_S)
                    continue
                else:
                    self._abandon(wf, job, now)
                self.store.save_job(job)
        if look_watched:
            self._next_look = now + WATCH_EVERY_S
            for tag, w in list(self._watched.items()):
                hit = by_tag.get(tag)
                if hit is not None:
                    del self._watched[tag]
                    touched.add(w.wf.id)
                    self._landed_late(w.wf, w.job, *hit)
        self.store.commit()
        if self._watched:
            wake = min(wake, self._next_look)
        return wake

    def _may_still_land(self, job: JobRecord, now: float, in_flight: set[str] | None) -> bool:
        if job.submit_host not in ("", HOST) or in_flight is None:
            # another host's sbatch cannot be seen from here: wait out the longest an sbatch lives
            since = job.intent_at if job.intent_at is not None else self._absent_since.setdefault(job.tag, now)
            still = now < since + CROSS_HOST_GRACE_S
            self._tell(job, still, f"written on {job.submit_host or 'a host that cannot be seen'}; "
                       f"waiting {CROSS_HOST_GRACE_S:.0f} s after it before submitting the stage again")
            return still
        if job.tag in in_flight:
            self._absent_since.pop(job.tag, None)
            self._tell(job, True, "an earlier daemon's sbatch for it is still running; waiting for it to end")
            return True
        first = self._absent_since.setdefault(job.tag, now)
        return now - first < self.settle_s

    def _tell(self, job: JobRecord, still: bool, why: str) -> None:
        if still and job.tag not in self._told:
            self._told.add(job.tag)
            log.info("submission intent not in Slurm yet; not resubmitting while its sbatch may still land",
                     tag=job.tag, why=why)

    def _adopt(self, job: JobRecord, job_id: int, status: JobStatus) -> None:
        job.job_id = job_id
        job.phase = JobPhase.LIVE
        job.submitted_at = status.submit_time
        job.apply_status(status)
        self._forget(job.tag)
        # its sbatch never answered asad (a crash, or a timeout after Slurm took the job)
        log.info("adopted a job found in Slurm whose sbatch asad did not see answer", tag=job.tag, job_id=job_id)

    def _abandon(self, wf: WorkflowRun, job: JobRecord, now: float) -> None:
        job.phase = JobPhase.ABANDONED
        job.reason = UNCONFIRMED
        for run in wf.stages.values():
            if run.job_row == job.row_id:
                run.wait_again()
                self.store.save_stage(run)
        self._forget(job.tag)
        self._watched[job.tag] = _Watched(wf, job, now + WATCH_S)
        log.info("submission intent never reached Slurm and no sbatch for it runs; will resubmit", tag=job.tag)

    def _forget(self, tag: str) -> None:
        self._absent_since.pop(tag, None)
        self._told.discard(tag)

    def _landed_late(self, wf: WorkflowRun, job: JobRecord, job_id: int, status: JobStatus) -> None:
        """A job of an abandoned intent showed up: adopted when its stage has no later attempt (it is
        still waiting to be submitted again), cancelled otherwise."""
        stages = [wf.stages.get(name) for name in job.stages]
        leader = stages[0]
        free = (wf.state is WorkflowState.ACTIVE and not wf.cancel_requested and leader is not None
                and leader.attempt == job.attempt
                and all(s is not None and s.job_row is None and s.state in (StageState.WAITING, StageState.PLANNED)
                        for s in stages))
        job.job_id = job_id
        job.apply_status(status)
        if free:
            job.phase = JobPhase.LIVE
            job.submitted_at = status.submit_time
            job.reason = status.reason
            for s in stages:
                s.state, s.job_row, s.planned_submit_at = StageState.SUBMITTED, job.row_id, None
                self.store.save_stage(s)
            self.store.save_job(job)
            log.warning("a job of a submission thought lost landed late; adopted (no later attempt exists)",
                        workflow=wf.id, stage=job.stage, tag=job.tag, job_id=job_id)
            return
        job.cancelled_by_asad = True
        self.store.save_job(job)
        self.store.commit()  # write-ahead: that asad cancels it is durable before scancel
        if not status.state.is_final:
            self.backend.cancel([job_id])
        log.warning("a job of a submission thought lost landed late; cancelled (a later attempt exists or the "
                    "workflow ended)" if not status.state.is_final else
                    "a job of a submission thought lost landed late and has already ended; a later attempt exists",
                    workflow=wf.id, stage=job.stage, tag=job.tag, job_id=job_id, state=status.state.value)
