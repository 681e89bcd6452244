"""The runner: the edge where the engine's decisions meet the store and the backend.

One ``tick``: reconcile unfinished submission intents, poll every live job with one
batched call, fetch accounting for the jobs that just ended with one more, let the engine
decide, and carry the decisions out in write-ahead order (store first, then Slurm, then
store again), so that a crash at any instant leaves nothing lost and nothing doubled.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field

import structlog
from sqlalchemy.exc import SQLAlchemyError

from asad.common.arrays import DEFAULT_MAX_ARRAY_SIZE
from asad.core.context import BIG_JOB_STAGE, Context
from asad.core.engine import Decisions, Engine
from asad.slurm.refusals import refusal_text
from asad.daemon.intents import HOST, Intents
from asad.daemon.slurm_probe import SlurmProbes, make_probes
from asad.core.learned import Learned
from asad.core.metrics import summarize
from asad.core.model import JobPhase, JobRecord, StageState, WorkflowRun, WorkflowState
from asad.slurm.backend import Backend, JobState, SlurmError, SlurmUnavailable, SubmitDeferred, SubmitRejected
from asad.store.db import StoreError, explain_failure
from asad.store.repo import Store

log = structlog.get_logger("asad.daemon.runner")

MAX_WAVES = 64  # chain submits a DAG level by level inside one tick
RULES_TTL_S = 600.0  # the site's priority rules are read again, for new workflows, at most this often
SUBMIT_LIMIT_RETRY_S = 120.0  # after a site's submit limit, try that stage again this much later
# A job asad cancelled with its workflow is polled on, this long at most, until Slurm reports its end
SETTLE_S = 600.0
CANCEL_LOOK_S = 0.5  # during a submission burst, a cancel request is looked for this often (wall time)


@dataclass
class TickReport:
    now: float
    wake_at: float
    submitted: int = 0
    cancelled: int = 0
    cancelled_ids: list[int] = field(default_factory=list)  # the Slurm job ids scancel was given
    changed: int = 0  # jobs whose status changed
    slurm_calls: dict[str, int] = field(default_factory=dict)
    backend_error: str | None = None


class Runner:
    def __init__(self, store: Store, backend: Backend, ctx: Context, *, only: frozenset[int] | None = None):
        self.store = store
        # None: every active workflow of the store (a daemon). Else only these (``asad cancel``
        # with no daemon carries out one workflow's cancel and must drive no other workflow).
        self.only = only
        self.backend = backend
        self.ctx = ctx
        self.engine = Engine(ctx)
        self.active: dict[int, WorkflowRun] = {}
        self._last_id = 0
        self.backend_error: str | None = None
        self._down_since = 0.0  # when the current outage began
        self._ok_recorded = False  # "backend ok" written to the store by this runner
        # Incremental decisions: a workflow is decided again only when one of its jobs changed, it
        # was touched from outside (new, cancel), its own wake time came, or a learner it consulted
        # moved. ``decide_all`` restores deciding every workflow at every tick (the reference).
        self.decide_all = False
        self._touched: set[int] = set()
        self._due: dict[int, float] = {}
        self._consulted: dict[int, tuple[tuple[tuple[str, str], int], ...]] = {}
        self._fresh: list[int] = []  # adopted since the last learner prefetch
        self._settling: dict[int, tuple[JobRecord, float]] = {}  # an ended workflow's job -> poll until
        self.lease = None  # asad.daemon.lease.Lease: renewed every tick when this runner drives a store
        self.intents = Intents(store, backend, store.store_id)
        # Slurm's start estimates for the wait learner's ``slurm`` expert (asad.daemon.slurm_probe;
        # None: off, or the learner or backend cannot take them)
        self.probes: SlurmProbes | None = None
        self._rules_read_at = time.monotonic()  # the Context was given the site's rules just now
        self.load()

    @classmethod
    def create(cls, store: Store, backend: Backend, *, predictor: str, seed: int = 0, asa_timing: str = "daemon",
               predictor_params: dict | None = None, build_command=None, run_dir: str = "",
               idle_price: float | None = None, placement: str | None = None,
               share_jobs: str = "off", wait_pressure: int = 0, wait_pressure_step: float = 0.5,
               slurm_expert: bool = False, probe_interval_s: float = 30.0,
               only: frozenset[int] | None = None) -> Runner:  # noqa: ANN001
        from asad.common.config import DEFAULT_IDLE_PRICE, DEFAULT_PLACEMENT
        from asad.core.context import EngineConfig
        from asad.slurm.priority_rules import rules_of

        cluster = getattr(backend, "cluster_name", backend.name)
        parts = backend.partitions()
        default = next((p.name for p in parts if p.default), parts[0].name if parts else "")
        config = EngineConfig(cluster=cluster, store_id=store.store_id, asa_timing=asa_timing,
                              default_partition=default, run_dir=run_dir,
                              idle_price=DEFAULT_IDLE_PRICE if idle_price is None else idle_price,
                              max_array_size=getattr(backend, "max_array_size", DEFAULT_MAX_ARRAY_SIZE),
                              placement=placement or DEFAULT_PLACEMENT, share_jobs=share_jobs)
        learned = Learned(store.load_learner, predictor, seed=seed, predictor_params=predictor_params,
                          pressure_neighbours=wait_pressure, pressure_step=wait_pressure_step)
        if wait_pressure and getattr(backend, "pending_load", None) is None:
            # said once here, not per poll: the setting cannot take effect on this backend at all
            log.warning("wait_pressure is set but this backend cannot tell the queue's pending load, so "
                        "learned waits are not conditioned on it", backend=backend.name,
                        fix="use Slurm's commands (ASAD_SLURM_API=cli) or set wait_pressure = 0")
        runner = cls(store, backend, Context(config, learned, parts, build_command, rules_of(backend)), only=only)
        runner.probes = make_probes(backend, learned, on=slurm_expert, interval_s=probe_interval_s)
        return runner

    # -- loading ------------------------------------------------------------------------------
    def load(self) -> None:
        for wf in self.store.load_workflows(active_only=True, after_id=self._last_id):
            self._adopt(wf)
        self._last_id = max(self._last_id, self.store.max_workflow_id())
        self._prepare_fresh()

    def _prepare_fresh(self) -> None:
        """What the workflows adopted since the last call need before they are planned."""
        if self._fresh:
            self._reread_rules()
        self._prefetch_learners()

    def _reread_rules(self) -> None:
        """A new workflow is planned with the site's priority rules as they are now: a site may
        change its PriorityType or weights while a daemon runs for weeks. One ``scontrol show
        config`` at most every ``RULES_TTL_S``, only when workflows arrive."""
        from asad.slurm.priority_rules import rules_of

        if time.monotonic() - self._rules_read_at < RULES_TTL_S:
            return
        self._rules_read_at = time.monotonic()
        try:
            rules = rules_of(self.backend)
        except SlurmError as exc:  # keep the rules known; the next workflow tries again
            log.warning("cannot read the site's priority rules; keeping the last ones", error=str(exc))
            return
        if rules != self.ctx.priority_rules:
            log.info("the site's priority rules changed", was=self.ctx.priority_rules.rule, now=rules.rule)
            self.ctx.priority_rules = rules

    def _prefetch_learners(self) -> None:
        """The per-stage learners the engine will consult for newly tracked workflows, in one read."""
        from asad.core.learned import RUNTIME_KIND, SIZING_KIND

        keys = [self.ctx.runtime_key(self.active[i], name) for i in self._fresh for name in self.active[i].stages]
        self._fresh.clear()
        if keys:
            self.store.prefetch_learners(RUNTIME_KIND, keys)
            self.store.prefetch_learners(SIZING_KIND, keys)

    def _adopt(self, wf: WorkflowRun) -> None:
        """Track a workflow read from the store. A stage that claims a submission but has no intent
        row cannot have reached Slurm (the intent is always committed before sbatch): plan it again."""
        if self.only is not None and wf.id not in self.only:
            return
        self.active[wf.id] = wf
        self._touched.add(wf.id)
        self._fresh.append(wf.id)
        self.intents.track(wf, self.backend.now())
        for run in wf.stages.values():
            if run.state in (StageState.SUBMITTED, StageState.RUNNING) and run.job_row is None:
                run.wait_again()
                self.store.save_stage(run)
                log.info("stage had no submission intent; replanning", workflow=wf.id, stage=run.name)

    def refresh(self) -> None:
        """Pick up what other processes wrote: new workflows, cancel requests."""
        self.store.session.expire_all()
        for wf in self.store.load_workflows(active_only=True, after_id=self._last_id):
            self._adopt(wf)
        self._last_id = max(self._last_id, self.store.max_workflow_id())
        resumed = self.store.active_workflow_ids() - set(self.active)
        resumed = {i for i in resumed if i <= self._last_id}
        if resumed:  # ``asad resume``: an ended workflow made active again, under its old id
            for wf in self.store.load_workflows(resumed, active_only=True):
                self._adopt(wf)
        self._prepare_fresh()
        for wf_id in self.store.cancel_requested_ids():
            if wf_id in self.active:
                self.active[wf_id].cancel_requested = True
                self._touched.add(wf_id)

    def live_job_ids(self) -> list[int]:
        return [j.job_id for wf in self.active.values() for j in wf.jobs
                if j.phase is JobPhase.LIVE and j.job_id is not None]

    def next_expected_end(self) -> float:
        """The soonest a running stage is expected to end (the daemon polls more often near it)."""
        ends = [self.ctx.expected_end(wf, name) for wf in self.active.values()
                for name, run in wf.stages.items() if run.state is StageState.RUNNING and run.start_time]
        return min(ends, default=math.inf)

    # -- one tick ------------------------------------------------------------------------------
    def tick(self) -> TickReport:
        if self.lease is not None and not self.lease.renew():
            from asad.daemon.lease import LeaseLost

            raise LeaseLost("another host's asad took this store over (this driver's lease had lapsed); "
                            "stopping here so that no stage is submitted twice")
        try:
            return self._tick()
        except (StoreError, SQLAlchemyError) as exc:
            # The transaction is gone (disk full, locked): what is in memory may be ahead of the
            # store. Forget it and read the store again; the write-ahead intents reconcile the rest.
            self.store.session.rollback()
            self.reload()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(explain_failure(self.store.url, exc)) from exc

    def reload(self) -> None:
        self.active.clear()
        self._due.clear()
        self._consulted.clear()
        self._touched.clear()
        self._last_id = 0
        self.store.session.expire_all()
        self.load()

    def _tick(self) -> TickReport:
        now = self.backend.now()
        self.refresh()
        report = TickReport(now=now, wake_at=math.inf)
        try:
            intents_wake = self.intents.reconcile(list(self.active.values()), now, self._touched)
            report.changed = self._poll(now)
            self._cancel_strays()
        except SlurmUnavailable as exc:
            self._backend_down(str(exc), now)
            report.backend_error = str(exc)
            return report
        if self.probes is not None:
            self.probes.refresh(now)  # before the engine decides: it sees the answers it may use
        workflows = list(self.active.values())
        for _ in range(MAX_WAVES):
            decisions = self.engine.decide(workflows, now) if self.decide_all else self._decide(workflows, now)
            report.wake_at = decisions.wake_at
            try:
                self._apply(decisions, now, report)
            except SlurmUnavailable as exc:
                self._persist(decisions, now)
                self._backend_down(str(exc), now)
                report.backend_error = str(exc)
                return report
            self._persist(decisions, now)
            if not decisions.submit and not decisions.cancel:
                break
        report.wake_at = min(report.wake_at, intents_wake)
        # a stand-in that asks no Slurm (asad cancel's, for a workflow with no job in one) says
        # nothing of Slurm's health: the store keeps what it said
        if getattr(self.backend, "asks_slurm", True) and (self.backend_error is not None or not self._ok_recorded):
            # also after a restart: an outage recorded by an earlier daemon is over now
            if self.backend_error is not None:
                log.info("slurm answers again; carrying on")
            self.backend_error = None
            self._ok_recorded = True
            self.store.set_status("backend", {"ok": True, "since": now})
            self.store.commit()
        for wf_id in [w.id for w in workflows if w.state is not WorkflowState.ACTIVE]:
            self._settle(self.active[wf_id], now)
            del self.active[wf_id]
            self._due.pop(wf_id, None)
            self._consulted.pop(wf_id, None)
        return report

    def _needs_decision(self, wf: WorkflowRun, now: float) -> bool:
        if wf.id in self._touched or wf.cancel_requested:
            return True
        due = self._due.get(wf.id)
        if due is None or due <= now:
            return True
        versions = self.ctx.learned.versions
        return any(versions.get(key, 0) != seen for key, seen in self._consulted.get(wf.id, ()))

    def _decide(self, workflows: list[WorkflowRun], now: float) -> Decisions:
        """``Engine.decide`` for the workflows that may decide differently than last time; the
        others' earlier answer (nothing to do until their wake time) still holds."""
        out = Decisions()
        learned = self.ctx.learned
        for wf in workflows:
            if wf.state is not WorkflowState.ACTIVE:
                continue
            if not self._needs_decision(wf, now):
                out.wake_at = min(out.wake_at, self._due[wf.id])
                continue
            learned.consulted = set()
            try:
                d = self.engine.decide([wf], now)
            finally:
                consulted, learned.consulted = learned.consulted, None
            out.submit += d.submit
            out.cancel += d.cancel
            out.dirty_stages += d.dirty_stages
            out.dirty_jobs += d.dirty_jobs
            out.finished += d.finished
            out.observed += d.observed
            out.wake_at = min(out.wake_at, d.wake_at)
            self._touched.discard(wf.id)
            if d.submit or d.cancel or d.dirty_stages or d.dirty_jobs or d.finished or d.observed:
                self._due[wf.id] = -math.inf  # it acted: look again at once (e.g. chain's next level)
            else:
                self._due[wf.id] = min(d.wake_at, _time_sensitive_until(wf, now))
            self._consulted[wf.id] = tuple((key, learned.versions.get(key, 0)) for key in consulted)
        return out

    def _backend_down(self, message: str, now: float) -> None:
        if self.backend_error is None:
            log.warning("slurm unavailable; plans kept, will retry", error=message)
            self._down_since = now  # what status shows: when the outage began, not the latest failure
        self.backend_error = message
        self._ok_recorded = False
        self.store.set_status("backend", {"ok": False, "error": message, "since": self._down_since})
        self.store.commit()

    def _cancel_strays(self) -> None:
        """Jobs asad decided to cancel that still live: the daemon died between recording that
        decision and scancel. Cancel them again (one call for all)."""
        ids = [j.job_id for wf in self.active.values() for j in wf.jobs
               if j.phase is JobPhase.LIVE and j.cancelled_by_asad and not j.state.is_final and j.job_id is not None]
        if ids:
            log.info("cancelling jobs asad had decided to cancel before a restart", job_ids=ids)
            self.backend.cancel(ids)

    def _settle(self, wf: WorkflowRun, now: float) -> None:
        """An ended workflow's jobs whose end Slurm has not reported yet (asad cancelled them with
        it): polled on until it does, so that their records (an array's tasks per state, the end,
        the usage) say what Slurm recorded, not what the last poll before the cancel saw."""
        for job in wf.jobs:
            if job.phase is JobPhase.LIVE and job.job_id is not None:
                self._settling[job.job_id] = (job, now + SETTLE_S)

    def _settled(self, statuses: dict) -> list[JobRecord]:  # noqa: ANN001
        """The settling jobs' records from this poll; those Slurm reports ended are done with."""
        ended = []
        for job_id, (job, _until) in list(self._settling.items()):
            st = statuses.get(job_id)
            if st is not None and job.apply_status(st):
                self.store.save_job(job)
            if st is not None and st.state.is_final:
                ended.append(job)
                del self._settling[job_id]
        return ended

    def _poll(self, now: float) -> int:
        live = {j.job_id: j for wf in self.active.values() for j in wf.jobs
                if j.phase is JobPhase.LIVE and j.job_id is not None}
        self._settling = {jid: (job, until) for jid, (job, until) in self._settling.items()
                          if until > now and jid not in live}  # given up on; or resumed and live again
        if self.active and self.ctx.learned.pressure_on:
            self._note_queue()
        if not live and not self._settling:
            self.ctx.learned.note_pending(now, ())
            return 0
        statuses = self.backend.poll([*live, *self._settling])  # one batched call for both
        ended = self._settled(statuses)
        changed = 0
        for job_id, job in live.items():
            st = statuses.get(job_id)
            if st is None:
                continue  # not visible this time (e.g. purged from squeue before sacct has it)
            if job.apply_status(st):
                changed += 1
                self._touched.add(job.workflow_id)
                self.store.save_job(job)
            if job.state.is_final:
                ended.append(job)
                self._touched.add(job.workflow_id)
        if ended:  # their usage, in one sacct call
            usage = self.backend.usage([j.job_id for j in ended])
            for job in ended:
                u = usage.get(job.job_id)
                if u is not None:
                    job.peak_rss_mb, job.cpu_s = u.peak_rss_mb, u.total_cpu_s
                job.phase = JobPhase.DONE
                self.store.save_job(job)
        self.store.commit()
        # the wait learner's pending floor: how long asad's own jobs still pending have waited
        self.ctx.learned.note_pending(now, ((job.geometry_key, job.eligible_time) for job in live.values()
                                            if job.queued))
        return changed

    def _note_queue(self) -> None:
        """The queue's pending load, once a poll (one all-users ``squeue`` on a real cluster), for
        the wait conditioned on it (asad.learn.pressure). A backend that cannot tell, or a failed
        call, leaves the last one seen (and with none the learner's unconditioned wait)."""
        pending_load = getattr(self.backend, "pending_load", None)
        if pending_load is None:
            return
        try:
            self.ctx.learned.note_queue(pending_load())
        except SlurmUnavailable as exc:
            log.warning("the queue's pending load is unknown this poll", error=str(exc)[:300])

    def _apply(self, d: Decisions, now: float, report: TickReport) -> None:
        if d.cancel:
            own = [j for j in d.cancel if j.cancelled_by_asad and j.row_id is not None]
            if own:
                # Write-ahead, as for submissions: that asad itself cancels these jobs (an early
                # allocation, a dead dependency) is durable before scancel runs, else a restart
                # would read their CANCELLED state as a failure of the stage.
                ending = {wf.id for wf in d.finished}
                for job in own:
                    self.store.save_job(job)
                for run in d.dirty_stages:
                    unsubmitted = run.state is StageState.SUBMITTED and run.job_row is None
                    if run.workflow_id not in ending and not unsubmitted:
                        self.store.save_stage(run)
                self.store.commit()
            ids = [j.job_id for j in d.cancel if j.job_id is not None]
            if ids:
                self.backend.cancel(ids)
                report.cancelled_ids += ids
            for job in d.cancel:
                if job.phase is JobPhase.LIVE:
                    job.state = JobState.CANCELLED if job.state is JobState.PENDING else job.state
                self.store.save_job(job)
            report.cancelled += len(d.cancel)
        first = True
        deferred_until: float | None = None
        halted: set[int] = set()  # workflows cancelled while this burst was being submitted
        look_at = time.monotonic() + CANCEL_LOOK_S
        for job in d.submit:
            if time.monotonic() >= look_at:
                # A burst of thousands of sbatch calls takes minutes: an ``asad cancel`` meanwhile
                # stops the cancelled workflows' submissions here, not after the burst (one cheap read).
                look_at = time.monotonic() + CANCEL_LOOK_S
                halted |= self._cancelled_meanwhile()
            if job.workflow_id in halted:
                self._unplan(self.active[job.workflow_id], job)
                continue
            wf = self.active[job.workflow_id]
            job.intent_at, job.submit_host = self.backend.now(), HOST
            self.store.insert_job(job)
            linked = []
            for run in wf.stages.values():
                if run.state is StageState.SUBMITTED and run.job_row is None and \
                        (job.stage in (run.name, "*") or run.name in job.rides):
                    run.job_row = job.row_id
                    linked.append(run)
            if first:
                # Once, not per job (that was quadratic in the number of submissions). A stage that
                # is SUBMITTED but has no intent row yet is written with its own intent below, never
                # before: a crash in between must not leave a stage that claims a job nobody wrote.
                for run in d.dirty_stages:
                    if not (run.state is StageState.SUBMITTED and run.job_row is None):
                        self.store.save_stage(run)
                self._persist_learning(d, now)
                first = False
            for run in linked:
                self.store.save_stage(run)
            self.store.commit()  # the intent is durable before Slurm hears of it
            try:
                if deferred_until is not None:
                    raise SubmitDeferred("the site's submit limit was reached earlier in this tick")
                job.job_id = self.backend.submit(job.request)
            except SubmitDeferred as exc:
                deferred_until = now + SUBMIT_LIMIT_RETRY_S
                self._defer(wf, job, exc, deferred_until, d)
                continue
            except SubmitRejected as exc:
                job.phase, job.state = JobPhase.DONE, JobState.FAILED
                self.store.save_job(job)
                self._reject(wf, job, exc, now, d)
                continue
            job.phase = JobPhase.LIVE
            job.submitted_at = now
            self.store.save_job(job)
            self.store.commit()
            report.submitted += 1
            log.info("submitted", workflow=wf.id, stage=job.stage, job_id=job.job_id, attempt=job.attempt)

    def _cancelled_meanwhile(self) -> set[int]:
        """Active workflows whose cancel was requested since this tick read the store."""
        ids = {i for i in self.store.cancel_requested_ids() if i in self.active}
        for wf_id in ids:
            if not self.active[wf_id].cancel_requested:
                log.info("cancel requested during a submission burst; submitting no more of its stages",
                         workflow=wf_id)
            self.active[wf_id].cancel_requested = True
            self._touched.add(wf_id)
        return ids

    def _unplan(self, wf: WorkflowRun, job: JobRecord) -> None:
        """A decided submission not carried out (its workflow was cancelled meanwhile): its stages
        wait again and its record is dropped, as if it had never been decided (nothing was written)."""
        with contextlib.suppress(ValueError):
            wf.jobs.remove(job)
        for run in wf.stages.values():
            if run.state is StageState.SUBMITTED and run.job_row is None and \
                    (job.stage in (run.name, BIG_JOB_STAGE) or run.name in job.rides):
                run.attempt = max(0, run.attempt - 1)
                run.wait_again()

    def _defer(self, wf: WorkflowRun, job: JobRecord, exc: SubmitDeferred, until: float, d: Decisions) -> None:
        """A site limit on queued jobs: this attempt never reached Slurm; plan the stage again once
        ``until`` has passed (the engine does not submit a waiting stage before its
        ``planned_submit_at``)."""
        log.warning("slurm's submit limit reached; will submit again later", workflow=wf.id, stage=job.stage,
                    slurm=exc.slurm_message, retry_at=until)
        job.phase = JobPhase.ABANDONED
        self.store.save_job(job)
        # an array stage's chunks submitted before this one: the stage is submitted again whole later
        siblings = [j for j in wf.jobs if j.stage == job.stage and j.attempt == job.attempt and j is not job
                    and j.phase is JobPhase.LIVE and not j.state.is_final]
        for j in siblings:
            j.cancelled_by_asad = True
            self.store.save_job(j)
        if siblings:
            self.store.commit()
            self.backend.cancel([j.job_id for j in siblings if j.job_id is not None])
        for stage in (wf.stages.get(name) for name in job.stages):  # a shared job's riders too
            if stage is None:
                continue
            stage.wait_again(f"the site's limit on queued jobs was reached ({exc.slurm_message.strip()}); "
                             "submitting again later")
            stage.planned_submit_at = until
            self.store.save_stage(stage)
            d.dirty_stages.append(stage)
        self._touched.add(wf.id)
        self._due[wf.id] = until
        self.store.commit()

    def _reject(self, wf: WorkflowRun, job: JobRecord, exc: SubmitRejected, now: float, d: Decisions) -> None:
        log.error("slurm refused a job", workflow=wf.id, stage=job.stage, slurm=exc.slurm_message)
        stage = wf.stages.get(job.stage)
        if stage is not None:
            stage.state, stage.message = StageState.FAILED, refusal_text(exc.slurm_message, job.request)
            d.dirty_stages.append(stage)
        tail = Decisions()
        self.engine._end_workflow(wf, WorkflowState.FAILED, now, tail,
                                  f"stage {job.stage}: {refusal_text(exc.slurm_message, job.request)}")
        if tail.cancel:
            ids = [j.job_id for j in tail.cancel if j.job_id is not None]
            if ids:
                self.backend.cancel(ids)
        d.dirty_stages.extend(tail.dirty_stages)
        d.finished.extend(tail.finished)

    def _persist_learning(self, d: Decisions, now: float) -> None:
        """What the decisions learned (waits observed, learners changed, jobs marked as learned
        from). Written with the first submission's intent too: a crash during that ``sbatch`` must
        not lose it, for nothing revisits a stage that already completed."""
        for job in d.dirty_jobs:
            if job.row_id is not None:
                self.store.save_job(job)
        for job in d.observed:
            self.store.add_observation(job.geometry_key, job.wait_s or 0.0, job.est_wait_s, now, job.job_id,
                                       job.queue_pressure)
        d.observed.clear()  # once
        for kind, key, state, n in self.ctx.learned.drain_dirty():
            self.store.save_learner(kind, key, state, n, now)

    def _persist(self, d: Decisions, now: float) -> None:
        for run in d.dirty_stages:
            self.store.save_stage(run)
        self._persist_learning(d, now)
        for wf in d.finished:
            self.store.save_workflow(wf, summary=summarize(wf))
            log.info("workflow finished", workflow=wf.id, state=wf.state.value, message=wf.message)
        self.store.commit()


def _time_sensitive_until(wf: WorkflowRun, now: float) -> float:
    """The engine also looks at ``now`` for start times still ahead (a wait is learned, a stage's
    work start is fixed once they pass): decide again when the first of them comes."""
    until = math.inf
    for job in wf.jobs:
        if job.start_time is not None and job.start_time > now and not job.wait_learned:
            until = min(until, job.start_time)
    for run in wf.stages.values():
        if run.start_time is not None and run.start_time > now:
            until = min(until, run.start_time)
    return until
