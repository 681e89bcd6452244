"""The engine: pure decisions. Given the workflows' state (with the backend's fresh job
statuses already applied) and ``now``, it decides what to submit and cancel, updates the
stages' lifecycle, and says when it next wants to be called.

It never reads the clock, never sleeps and never calls Slurm: the runner does that with
what the engine returns, so the same engine runs on virtual time in the simulator. What it
consults (its configuration, the learners, a stage's Slurm request) is ``asad.core.context``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from asad.core.context import BIG_JOB_STAGE, Context, EngineConfig
from asad.core.model import JobPhase, JobRecord, StageRun, StageState, WorkflowRun, WorkflowState
from asad.sizing.base import SizingError
from asad.sizing.retry import retry_memory_mb, retry_time_s
from asad.slurm.backend import JobRequest, JobState
from asad.strategies import STRATEGIES
from asad.strategies.asa import too_early
from asad.strategies.release import release_early
from asad.strategies.base import SubmitAt, SubmitNow
from asad.strategies.share import finished_stages, riders, shared_request

__all__ = ["BIG_JOB_STAGE", "Context", "Decisions", "Engine", "EngineConfig"]

FAILED_STATES = (JobState.FAILED, JobState.TIMEOUT, JobState.OUT_OF_MEMORY, JobState.NODE_FAIL,
                 JobState.CANCELLED)
# The chunk whose ending speaks for a failed array stage (an OOM makes the retry ask for more memory).
FAILED_STATES_WORST = (JobState.OUT_OF_MEMORY, JobState.TIMEOUT, JobState.FAILED, JobState.NODE_FAIL,
                       JobState.CANCELLED)
FAILURES = FAILED_STATES_WORST[:-1]  # the job itself failed (not cancelled)


@dataclass
class Decisions:
    submit: list[JobRecord] = field(default_factory=list)
    cancel: list[JobRecord] = field(default_factory=list)
    dirty_stages: list[StageRun] = field(default_factory=list)
    dirty_jobs: list[JobRecord] = field(default_factory=list)
    finished: list[WorkflowRun] = field(default_factory=list)
    observed: list[JobRecord] = field(default_factory=list)  # jobs whose wait was just learned
    wake_at: float = math.inf


class Engine:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def decide(self, workflows: list[WorkflowRun], now: float) -> Decisions:
        out = Decisions()
        for wf in workflows:
            if wf.state is WorkflowState.ACTIVE:
                self._decide_workflow(wf, now, out)
        return out

    # ---------------------------------------------------------------------------------------
    def _decide_workflow(self, wf: WorkflowRun, now: float, out: Decisions) -> None:
        if wf.cancel_requested:
            self._keep_ends_before_cancel(wf, now, out)
            if all(r.state is StageState.COMPLETED for r in wf.stages.values()):  # nothing was left to cancel
                self._end_workflow(wf, WorkflowState.COMPLETED, now, out, "completed before the cancel was carried out")
            else:
                self._end_workflow(wf, WorkflowState.CANCELLED, now, out, "cancelled by the user")
            return
        if wf.strategy == "big-job":
            self._decide_big_job(wf, now, out)
            return
        for name, run in wf.stages.items():
            if not run.state.is_final:
                self._follow_stage(wf, name, run, now, out)
                if wf.state is not WorkflowState.ACTIVE:
                    return
        self.ctx.learned.settle_sharing(wf)  # the share choices whose stages have all ended
        if all(r.state is StageState.COMPLETED for r in wf.stages.values()):
            self._end_workflow(wf, WorkflowState.COMPLETED, now, out)
            return
        strategy = STRATEGIES[wf.strategy]
        for name, run in wf.stages.items():
            if run.state not in (StageState.WAITING, StageState.PLANNED):
                continue
            if run.state is StageState.WAITING and run.planned_submit_at is not None and run.planned_submit_at > now:
                out.wake_at = min(out.wake_at, run.planned_submit_at)  # held back (a site's submit limit)
                continue
            plan = strategy.plan(wf, name, now, self.ctx)
            if isinstance(plan, SubmitAt):
                if run.state is not StageState.PLANNED or run.planned_submit_at != plan.at:
                    run.state, run.planned_submit_at, run.est_wait_s = StageState.PLANNED, plan.at, plan.est_wait_s
                    run.plan_why = plan.why
                    out.dirty_stages.append(run)
                out.wake_at = min(out.wake_at, plan.at)
            elif isinstance(plan, SubmitNow):
                self._submit_stage(wf, name, run, plan, now, out)
            elif run.state is StageState.PLANNED:  # the plan no longer holds (e.g. a retry)
                run.state, run.planned_submit_at = StageState.WAITING, None
                out.dirty_stages.append(run)

    def _follow_stage(self, wf: WorkflowRun, name: str, run: StageRun, now: float, out: Decisions) -> None:
        """Move a stage along with its current job's state."""
        job = wf.job(run.job_row)
        if job is None or job.phase is JobPhase.SUBMITTING or name != job.stage:
            return  # a stage that rides in a shared job follows it with the job's first stage
        array = wf.spec.stage(name).array_spec
        if array is not None:
            chunks = wf.current_jobs(name)
            expected = len(array.chunks(self.ctx.config.max_array_size))
            if len(chunks) < expected and not any(j.phase is JobPhase.SUBMITTING for j in chunks):
                # a crash between the chunks' submissions: some never reached Slurm. Run it again whole.
                for j in chunks:
                    if not j.state.is_final:
                        out.cancel.append(j)
                        j.cancelled_by_asad = True
                run.wait_again("not every array chunk reached Slurm; resubmitted")
                out.dirty_stages.append(run)
                return None
            if expected > 1:
                return self._follow_chunks(wf, name, run, chunks, now, out)
        self._learn_wait(job, now, out)
        if job.state is JobState.PENDING:
            begin = job.request.begin
            if begin is not None and begin > now + 60 and self._preds_done(wf, name):
                # Slurm holds a --begin time that the predecessors' early end made too late:
                # resubmit now rather than idle the workflow until then.
                out.cancel.append(job)
                job.cancelled_by_asad = True
                self._release(wf, job, out, "predecessors ended before the planned --begin; resubmitted")
                return
            if job.reason == "DependencyNeverSatisfied" and not self._predecessor_ending(wf, name, [job]):
                # A predecessor failed; if it is being retried, resubmit against the new attempt.
                out.cancel.append(job)
                job.cancelled_by_asad = True
                self._release(wf, job, out)
            return
        if job.state is JobState.RUNNING:
            if run.state is not StageState.RUNNING:
                run.state = StageState.RUNNING
                run.start_time = self._work_start(wf, name, job)
                out.dirty_stages.append(run)
            elif run.start_time is None or run.start_time > now:
                run.start_time = self._work_start(wf, name, job)
            if self.ctx.holds_at_barrier(wf) and not self._preds_done(wf, name):
                if wf.strategy == "auto":  # the quantile rule: released on the wait it just took
                    release, why = release_early(wf, name, job, now, self.ctx)
                else:
                    release = too_early(wf, name, now, self.ctx, self.ctx.barrier_lead(wf, name, now))
                    why = "allocation arrived too early; cancelled and replanned"
                if release:
                    out.cancel.append(job)
                    job.cancelled_by_asad = True
                    run.wait_again(why)
                    out.dirty_stages.append(run)
            return
        # final
        run.end_time = job.end_time
        if job.rides:
            return self._shared_job_ended(wf, job, now, out)
        if not job.cancelled_by_asad and job.state is not JobState.CANCELLED:
            agent = self.ctx.sizing_agent(wf, name)
            if agent is not None:
                self.ctx.learned.observe_size(self.ctx.runtime_key(wf, name), agent,
                                              self.ctx.outcome_of(wf, name, job))
        placer = self.ctx.placement_agent(wf, name)
        if placer is not None and job.start_time is not None and job.end_time is not None and job.wait_s is not None:
            placer.observe(job.tag, job.wait_s, job.end_time - job.start_time)
            self.ctx.learned.placement_changed(self.ctx.runtime_key(wf, name))
        if job.state is JobState.COMPLETED:
            run.state = StageState.COMPLETED
            run.start_time = self._work_start(wf, name, job)
            if run.start_time is not None and run.end_time is not None:
                self.ctx.learned.observe_runtime(self.ctx.runtime_key(wf, name), run.end_time - run.start_time)
            out.dirty_stages.append(run)
            return
        if job.cancelled_by_asad:
            return
        self._stage_failed(wf, name, run, job, now, out)

    def _release(self, wf: WorkflowRun, job: JobRecord, out: Decisions, message: str | None = None) -> None:
        """Every stage of ``job`` (one, or a shared job's) waits again, for a job of its own."""
        for name in job.stages:
            run = wf.stages[name]
            if run.job_row == job.row_id:
                run.wait_again(message)
                out.dirty_stages.append(run)

    def _shared_job_ended(self, wf: WorkflowRun, job: JobRecord, now: float, out: Decisions) -> None:
        """A shared job's end: the stages it finished complete; the first it did not finish is
        charged with the job's end (its retry rules apply), and the rest wait for jobs of their own."""
        if job.cancelled_by_asad and job.state is not JobState.COMPLETED:
            return
        times, measured = finished_stages(wf, job, self.ctx)
        self._completed_at(wf, job.stages, times, measured, out)
        if len(times) == len(job.stages):
            return
        failed = job.stages[len(times)]
        for name in job.stages[len(times) + 1:]:
            run = wf.stages[name]
            run.wait_again(f"{failed} ended its shared job ({job.state.value}); runs in a job of its own")
            out.dirty_stages.append(run)
        run = wf.stages[failed]
        run.start_time, run.end_time = (times[-1][1] if times else job.start_time), job.end_time
        self._stage_failed(wf, failed, run, job, now, out)

    def _follow_chunks(self, wf: WorkflowRun, name: str, run: StageRun, chunks: list[JobRecord], now: float,
                       out: Decisions) -> None:
        """An array stage submitted as several array jobs (more tasks than MaxArraySize): it runs while
        any chunk runs, completes when all completed, and fails (all chunks again) when one failed."""
        if any(j.phase is JobPhase.SUBMITTING for j in chunks):
            return
        for job in chunks:
            self._learn_wait(job, now, out)
        states = [j.state for j in chunks]
        if all(s is JobState.PENDING for s in states):
            if (any(j.reason == "DependencyNeverSatisfied" for j in chunks)
                    and not self._predecessor_ending(wf, name, chunks)):
                for job in chunks:  # a predecessor failed: resubmit against its retry
                    out.cancel.append(job)
                    job.cancelled_by_asad = True
                run.wait_again()
                out.dirty_stages.append(run)
            return
        starts = [j.start_time for j in chunks if j.start_time is not None]
        if not all(s.is_final for s in states):
            if run.state is not StageState.RUNNING:
                run.state, run.start_time = StageState.RUNNING, min(starts) if starts else None
                out.dirty_stages.append(run)
            return
        run.start_time = min(starts) if starts else None
        run.end_time = max((j.end_time for j in chunks if j.end_time is not None), default=None)
        if all(s is JobState.COMPLETED for s in states):
            run.state = StageState.COMPLETED
            if run.start_time is not None and run.end_time is not None:
                self.ctx.learned.observe_runtime(self.ctx.runtime_key(wf, name), run.end_time - run.start_time)
            out.dirty_stages.append(run)
            return
        worst = next(j for w in FAILED_STATES_WORST for j in chunks if j.state is w)
        if worst.cancelled_by_asad:
            return
        for job in chunks:  # the stage runs again whole: nothing of this attempt stays queued
            if not job.state.is_final:
                out.cancel.append(job)
        self._stage_failed(wf, name, run, worst, now, out)

    def _stage_failed(self, wf: WorkflowRun, name: str, run: StageRun, job: JobRecord, now: float,
                      out: Decisions) -> None:
        spec = wf.spec.stage(name)
        part = self.ctx.partitions.get(job.partition or spec.partition.split(",")[0] or "")
        # Attempts before an ``asad resume`` (numbered up to ``retry_from``) used up their own budget.
        since = [j for j in wf.jobs if name in j.stages and j.attempt > run.retry_from]
        # per attempt, not per job: an array stage's attempt may be several array jobs
        attempts_of = list({j.attempt: j for j in since if j.state is job.state and not j.cancelled_by_asad}.values())
        if job.state is JobState.OUT_OF_MEMORY and len(attempts_of) <= spec.max_oom_retries:
            failed_mem = int(job.request.total_mem_mb() or self.ctx.user_request(wf, name).mem_mb)
            seen = max((j.peak_rss_mb or 0.0) for j in wf.jobs if j.stage == name and j.state is JobState.COMPLETED) \
                if any(j.state is JobState.COMPLETED for j in wf.jobs if j.stage == name) else None
            cap = part.mem_per_node_mb * spec.nodes if part else 10**9
            try:
                run.mem_mb = retry_memory_mb(failed_mem, job.peak_rss_mb, seen, cap)
            except SizingError as exc:
                return self._fail(wf, name, run, now, out, str(exc))
            run.message = f"OUT_OF_MEMORY at {failed_mem} MB; retrying with {run.mem_mb} MB"
            run.size_why = _retried(run.size_why, f"OUT_OF_MEMORY at {failed_mem} MB, so {run.mem_mb} MB")
        elif job.state is JobState.TIMEOUT and len(attempts_of) <= spec.max_oom_retries:
            limit = job.request.time_limit_s
            try:
                run.time_s = retry_time_s(limit, None, part.max_time_s if part else None)
            except SizingError as exc:
                return self._fail(wf, name, run, now, out, str(exc))
            run.message = f"TIMEOUT at {limit} s; retrying with {run.time_s} s"
            run.size_why = _retried(run.size_why, f"TIMEOUT at {limit} s, so {run.time_s} s")
        elif job.state not in (JobState.OUT_OF_MEMORY, JobState.TIMEOUT) and \
                len({j.attempt for j in since if not j.cancelled_by_asad and j.phase is not JobPhase.ABANDONED}) \
                <= spec.retries:
            run.message = f"{job.state.value} (exit {job.exit_code}); retrying"
        elif job.state is JobState.OUT_OF_MEMORY:
            return self._fail(wf, name, run, now, out,
                              f"OUT_OF_MEMORY in {len(attempts_of)} attempts, the last with "
                              f"{job.request.total_mem_mb()} MB; raise the stage's mem or max_oom_retries")
        elif job.state is JobState.TIMEOUT:
            return self._fail(wf, name, run, now, out,
                              f"TIMEOUT in {len(attempts_of)} attempts, the last with a {job.request.time_limit_s} s "
                              "limit; raise the stage's time or max_oom_retries")
        else:
            return self._fail(wf, name, run, now, out, f"{job.state.value} (exit code {job.exit_code})")
        run.wait_again()
        out.dirty_stages.append(run)

    def _fail(self, wf: WorkflowRun, name: str, run: StageRun, now: float, out: Decisions, why: str) -> None:
        run.state = StageState.FAILED
        run.message = why
        out.dirty_stages.append(run)
        self._end_workflow(wf, WorkflowState.FAILED, now, out, f"stage {name} failed: {why}")

    def _keep_ends_before_cancel(self, wf: WorkflowRun, now: float, out: Decisions) -> None:
        """Ends that happened before asad acted on a cancel (a stage that completed while Slurm was
        down, or while no daemon ran) are recorded as what they were, not as cancelled: a job Slurm
        saw complete, and a job whose wrapper's markers say every stage in it ended with exit 0
        while Slurm has not recorded its end yet (slurmd reports it once slurmctld is back; a
        scancel then would make Slurm call it CANCELLED, so ``_end_workflow`` leaves it alone)."""
        for name, run in wf.stages.items():
            jobs = wf.current_jobs(name)
            if run.state.is_final or not jobs:
                continue
            if all(j.state is JobState.COMPLETED for j in jobs):
                self._follow_stage(wf, name, run, now, out)
                continue
            job = jobs[0]
            if len(jobs) > 1 or name != job.stage or job.state.is_final or job.phase is not JobPhase.LIVE:
                continue
            marks = self.ctx.stage_marks(wf, job)  # None on the simulator
            if marks is None or len(marks) != len(job.stages):
                continue
            self._completed_at(wf, job.stages, marks, True, out)

    def _completed_at(self, wf: WorkflowRun, stages: tuple[str, ...], times: list[tuple[float, float]],
                      measured: bool, out: Decisions) -> None:
        """Stages that finished in one job, at these (start, end) times, in order (``zip`` stops at
        the last one that finished)."""
        for name, (start, end) in zip(stages, times):
            run = wf.stages[name]
            run.state, run.start_time, run.end_time = StageState.COMPLETED, start, end
            if measured:  # an estimated split would only teach the run-time learner its own guess
                self.ctx.learned.observe_runtime(self.ctx.runtime_key(wf, name), end - start)
            out.dirty_stages.append(run)

    def _end_workflow(self, wf: WorkflowRun, state: WorkflowState, now: float, out: Decisions,
                      message: str = "") -> None:
        for run in wf.stages.values():
            if run.state.is_final:
                continue
            job = wf.job(run.job_row)
            if job is not None and job.phase is not JobPhase.DONE and not job.state.is_final and job not in out.cancel:
                out.cancel.append(job)
            failed = self._failed_last(wf, run, job)
            if failed is not None:  # it failed (and waited for a retry): say so, not "never ran"
                run.job_row, run.state = failed.row_id, StageState.FAILED
                run.start_time, run.end_time = failed.start_time, failed.end_time
                ended = "was cancelled" if state is WorkflowState.CANCELLED else "ended"
                what = failed.state.value + (f" (exit {failed.exit_code})" if failed.state is JobState.FAILED else "")
                run.message = f"{what}; not retried: the workflow {ended}"
            else:
                run.state = StageState.CANCELLED
            out.dirty_stages.append(run)
        for job in wf.jobs:  # big-job, or anything else still live
            finished = (job.stage in wf.stages and wf.current_job(job.stage) is job
                        and all(wf.stages[s].state is StageState.COMPLETED for s in job.stages))
            if job.phase is JobPhase.LIVE and not job.state.is_final and job not in out.cancel and not finished:
                out.cancel.append(job)
        wf.state = state
        ends = [r.end_time for r in wf.stages.values() if r.end_time is not None]
        wf.ended_at = max(ends) if state is WorkflowState.COMPLETED and ends else now
        wf.message = message
        self.ctx.learned.settle_sharing(wf)  # and forgets the rest: their stages will not run
        out.finished.append(wf)

    @staticmethod
    def _failed_last(wf: WorkflowRun, run: StageRun, job: JobRecord | None) -> JobRecord | None:
        """The stage's last attempt, if it ended in a failure that the end of its workflow leaves
        unretried: its current job, or (a retry was due, so it has none) the attempt before."""
        if job is None:
            done = [j for j in wf.jobs if run.name in j.stages and j.attempt > run.retry_from
                    and j.state.is_final and not j.cancelled_by_asad]
            job = max(done, key=lambda j: j.attempt, default=None)
        if job is None or job.cancelled_by_asad or job.state not in FAILURES:
            return None  # never ran, or cancelled: CANCELLED says it
        return job

    def _unbuildable(self, wf: WorkflowRun, name: str, run: StageRun, exc: OSError, now: float,
                     out: Decisions) -> None:
        """A stage whose job cannot be prepared (a folder it writes to cannot be made: a file of that
        name, no permission) fails its workflow, with the path and the fix; nothing of the workflow
        is submitted in this pass."""
        why = (f"cannot create the folder {exc.filename or '?'} that its job writes to ({exc.strerror or exc}). "
               f"Fix: remove what is in the way or make it writable (or change 'output:'), then asad resume {wf.id}")
        undone = [j for j in out.submit if j.workflow_id == wf.id]  # its stages decided earlier this pass
        for job in undone:
            out.submit.remove(job)
            wf.jobs.remove(job)
        for stage in {j.stage for j in undone}:
            wf.stages[stage].state = StageState.WAITING
            wf.stages[stage].attempt -= 1
        run.state, run.message = StageState.FAILED, why
        out.dirty_stages.append(run)
        self._end_workflow(wf, WorkflowState.FAILED, now, out, f"stage {name}: {why}")

    # -- helpers ---------------------------------------------------------------------------
    def _predecessor_ending(self, wf: WorkflowRun, name: str, jobs: list[JobRecord]) -> bool:
        """Do these jobs depend on a predecessor's job that asad has not yet seen end? Slurm marks
        a dependant DependencyNeverSatisfied the moment a predecessor fails, a poll or more before
        that predecessor's own end is final to asad (an array's accounting lags): resubmitting
        then would only queue another job against the same failed one."""
        depends_on = {j for job in jobs if job.request.dependency is not None for j in job.request.dependency.job_ids}
        return any(pred.job_id in depends_on and not pred.state.is_final
                   for p in wf.spec.predecessors(name) for pred in wf.current_jobs(p))

    def _preds_done(self, wf: WorkflowRun, name: str) -> bool:
        return all(wf.stages[p].state is StageState.COMPLETED for p in wf.spec.predecessors(name))

    def _work_start(self, wf: WorkflowRun, name: str, job: JobRecord) -> float | None:
        """When the stage's work began: its job's start, or later if it idled at a barrier."""
        if job.start_time is None:
            return None
        if not self.ctx.holds_at_barrier(wf):
            return job.start_time
        ends = [wf.stages[p].end_time for p in wf.spec.predecessors(name)]
        if any(e is None for e in ends):
            return None
        # the wrapper sees the predecessors' end markers only at its next look (every 2 s): the
        # allocation idles until its command starts, which its start marker says
        began = self.ctx.command_start(wf, name, job)
        start = max([job.start_time, *ends, *([began] if began is not None else [])])
        # not after the job's end: that comes from Slurm in whole seconds, the markers in fractions
        return min(start, job.end_time) if job.end_time is not None else start

    def _learn_wait(self, job: JobRecord, now: float, out: Decisions) -> None:
        if job.wait_learned:
            return
        if job.start_time is None or job.start_time > now:
            self._hear_misses(job, now, out)
            self._note_pressure(job, now, out)
            return
        if job.eligible_time is None:
            return
        job.wait_learned = True
        if job.queue_pressure is None:  # started before a poll saw it eligible: the nearest poll's view
            job.queue_pressure = self.ctx.learned.pressure_now(job.geometry_key)
        self.ctx.learned.observe_wait(job.geometry_key, job.wait_s, at_s=job.start_time, told=job.wait_told,
                                      pressure=job.queue_pressure)
        out.observed.append(job)
        out.dirty_jobs.append(job)

    def _eligible_pressure(self, req: JobRequest, now: float) -> float | None:
        """The pending load a job eligible at its submission meets (None for a later eligibility:
        :meth:`_note_pressure` takes it then)."""
        if req.dependency is not None or (req.begin is not None and req.begin > now):
            return None
        return self.ctx.learned.pressure_now(self.ctx.geometry_key(req))

    def _note_pressure(self, job: JobRecord, now: float, out: Decisions) -> None:
        """The queue's pending load a job met when it became eligible (asad.learn.pressure): taken
        at the first poll that sees it pending and eligible, kept with the job until its wait is learned."""
        if (job.queue_pressure is not None or job.state is not JobState.PENDING or job.eligible_time is None
                or job.eligible_time > now):
            return
        pressure = self.ctx.learned.pressure_now(job.geometry_key)
        if pressure is not None:
            # the poll saw the job itself queued; a plan made before its submission did not
            job.queue_pressure = max(0.0, pressure - job.request.cpus)
            out.dirty_jobs.append(job)

    def _hear_misses(self, job: JobRecord, now: float, out: Decisions) -> None:
        """A pending job that has waited past a quantile it was told is not covered there: the
        learner hears so now (``Learned.hear_misses``), not when the job starts."""
        if (job.wait_told is None or job.state is not JobState.PENDING or job.eligible_time is None
                or job.eligible_time > now):
            return
        told = self.ctx.learned.hear_misses(job.geometry_key, job.wait_told, now - job.eligible_time)
        if told is not None:
            job.wait_told = told
            out.dirty_jobs.append(job)

    def _submit_stage(self, wf: WorkflowRun, name: str, run: StageRun, plan: SubmitNow, now: float,
                      out: Decisions) -> None:
        if run.attempt == 0:
            self.ctx.size_first_attempt(wf, name, run)
        dep_ids = tuple(j.job_id for p in plan.dependency_on for j in wf.current_jobs(p) if j.job_id is not None)
        barrier_ids = tuple(wf.current_job(p).job_id for p in plan.barrier_on)
        req = self.ctx.request_for(wf, name, plan, dep_ids, barrier_ids)
        req = self.ctx.place(wf, name, run, req)
        rides, share_why = riders(wf, name, req, self.ctx, at_barrier=bool(plan.barrier_on))
        own_cpus = {name: req.cpus}
        if rides:
            rider_reqs = [self.ctx.request_for(wf, r) for r in rides]
            own_cpus.update({r: rr.cpus for r, rr in zip(rides, rider_reqs)})
            req = shared_request(req, rider_reqs)
        try:
            command = self.ctx.build_command(wf, name, req, barrier=plan.barrier_on,
                                             **({"rides": rides} if rides else {}))
        except OSError as exc:  # a folder its job writes to cannot be made: this workflow fails, not the tick
            self._unbuildable(wf, name, run, exc, now, out)
            return
        req = _with_command(req, command)
        # Set only when the stage was planned against running predecessors; a plan overtaken by an
        # early end keeps the estimate it was made with (and is scored by it).
        est = plan.est_wait_s if plan.est_wait_s is not None else (
            run.est_wait_s if run.state is StageState.PLANNED else None)
        run.attempt += 1
        array = wf.spec.stage(name).array_spec
        chunks = array.chunks(self.ctx.config.max_array_size) if array is not None else [None]
        for k, chunk in enumerate(chunks):
            # chunk 0 keeps the stage's tag (crash recovery finds it as any job); the others add ".c<k>"
            creq = req if chunk is None else replace(req, array=chunk.text, array_offset=chunk.offset,
                                                     comment=req.comment + (f".c{k}" if k else ""))
            job = JobRecord(row_id=None, workflow_id=wf.id, stage=name, attempt=run.attempt, tag=creq.comment,
                            phase=JobPhase.SUBMITTING, request=creq, geometry_key=self.ctx.geometry_key(req),
                            est_wait_s=est, planned_start=plan.planned_start,
                            wait_told=self.ctx.learned.wait_told(self.ctx.geometry_key(req)), rides=rides,
                            queue_pressure=self._eligible_pressure(creq, now),
                            partition=creq.partition or self.ctx.config.default_partition)  # until squeue says
            wf.jobs.append(job)
            out.submit.append(job)
        run.state = StageState.SUBMITTED
        run.planned_submit_at = None
        run.est_wait_s = est
        one_shape = len(set(own_cpus.values())) == 1
        shape_why = ("one shape: no queue wait between them, no idle core" if one_shape else
                     f"merged, sized to the largest: {req.cpus} CPUs; no queue wait between them")
        run.plan_why = plan.why + (f"; {', '.join(rides)} run in the same job after it ({shape_why})"
                                   if rides else "") + (f"; {share_why}" if share_why else "")
        out.dirty_stages.append(run)
        for prev, rider in zip((name, *rides), rides):
            rrun = wf.stages[rider]
            rrun.attempt += 1
            rrun.state, rrun.planned_submit_at, rrun.est_wait_s = StageState.SUBMITTED, None, None
            rrun.plan_why = (f"runs in {name}'s job right after {prev}: " + (
                "the same shape, so it waits in no queue of its own" if one_shape else
                f"a merged job of {req.cpus} CPUs (this stage asks for {own_cpus[rider]}), so it waits in "
                "no queue of its own") + (f"; {share_why}" if share_why else ""))
            out.dirty_stages.append(rrun)

    def _decide_big_job(self, wf: WorkflowRun, now: float, out: Decisions) -> None:
        job = wf.jobs[-1] if wf.jobs else None
        if job is None or all(run.state is StageState.WAITING for run in wf.stages.values()):
            # the first job, or a resumed workflow (``asad resume``): the whole job again
            attempt = sum(1 for j in wf.jobs if j.stage == BIG_JOB_STAGE) + 1
            req = self.ctx.big_job_request(wf, attempt)
            req = _with_command(req, self.ctx.build_command(wf, BIG_JOB_STAGE, req))
            job = JobRecord(row_id=None, workflow_id=wf.id, stage=BIG_JOB_STAGE, attempt=attempt, tag=req.comment,
                            phase=JobPhase.SUBMITTING, request=req, geometry_key=self.ctx.geometry_key(req),
                            partition=req.partition or self.ctx.config.default_partition)
            wf.jobs.append(job)
            out.submit.append(job)
            for run in wf.stages.values():
                run.state, run.attempt = StageState.SUBMITTED, attempt
                out.dirty_stages.append(run)
            return
        if job.phase is JobPhase.SUBMITTING:
            return
        self._learn_wait(job, now, out)
        if job.state is JobState.RUNNING:
            for run in wf.stages.values():
                if run.state is StageState.SUBMITTED:
                    run.state = StageState.RUNNING
                    out.dirty_stages.append(run)
        elif job.state is JobState.COMPLETED:
            self._big_job_timeline(wf, job)
            for run in wf.stages.values():
                run.state = StageState.COMPLETED
                out.dirty_stages.append(run)
            self._end_workflow(wf, WorkflowState.COMPLETED, now, out)
        elif job.state.is_final:
            for run in wf.stages.values():
                run.state = StageState.FAILED
                out.dirty_stages.append(run)
            self._end_workflow(wf, WorkflowState.FAILED, now, out, f"the big job ended {job.state.value}")

    def _big_job_timeline(self, wf: WorkflowRun, job: JobRecord) -> None:
        """Stage times inside the allocation: on a real cluster each stage's own, from the markers
        its wrapper wrote in this job; else (the simulator) the stages ran in turn, in file order,
        for their simulated run times. Without markers, lengths are apportioned by time limit."""
        start, end = job.start_time or 0.0, job.end_time or 0.0
        stages = wf.spec.stages
        marked = self.ctx.stage_turns(wf, job, [s.name for s in stages])
        if marked is not None:
            for s, (began, ended) in zip(stages, marked, strict=True):
                wf.stages[s.name].start_time, wf.stages[s.name].end_time = began, ended
            return
        if all(s.simulate is not None for s in stages):
            lengths = [s.simulate.runtime_s for s in stages]
        else:
            total_limit = sum(s.time_s for s in stages)
            lengths = [(end - start) * s.time_s / total_limit for s in stages]
        t = start
        for s, length in zip(stages, lengths, strict=True):
            run = wf.stages[s.name]
            run.start_time, run.end_time = t, min(end, t + length)
            t += length


def _with_command(req: JobRequest, command: str) -> JobRequest:
    return replace(req, command=command)


def _retried(why: str, note: str) -> str:
    """The stage's size reasons with a retry's change after them (``asad explain`` showed the
    first attempt's reasons beside the retry's larger size)."""
    why = (why or "the workflow file's values").rstrip(".")
    return f"{why}; retried after {note}."
