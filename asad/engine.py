"""The engine: pure decisions. Given the workflows' state (with the backend's fresh job
statuses already applied) and ``now``, it decides what to submit and cancel, updates the
stages' lifecycle, and says when it next wants to be called.

It never reads the clock, never sleeps and never calls Slurm: the runner does that with
what the engine returns, so the same engine runs on virtual time in the simulator.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from asad.arrays import DEFAULT_MAX_ARRAY_SIZE
from asad.config import DEFAULT_IDLE_PRICE
from asad.learn.geometry import GeometryKeyConfig, request_key
from asad.learned import Learned
from asad.model import JobPhase, JobRecord, StageRun, StageState, WorkflowRun, WorkflowState
from asad.sizing.base import Caps, Outcome, SizingError
from asad.sizing.base import Request as SizeRequest
from asad.sizing.cpus import keep_user_cpus
from asad.sizing.retry import retry_memory_mb, retry_time_s
from asad.slurm.backend import Dependency, DependencyType, JobRequest, JobState, PartitionInfo, SimTruth
from asad.slurm.priority_rules import PriorityRules
from asad.strategies import STRATEGIES
from asad.strategies.asa import too_early
from asad.strategies.auto import begin_offset, quantile_level
from asad.strategies.base import SubmitAt, SubmitNow
from asad.strategies.big_job import big_job_shape

BIG_JOB_STAGE = "*"
FAILED_STATES = (JobState.FAILED, JobState.TIMEOUT, JobState.OUT_OF_MEMORY, JobState.NODE_FAIL,
                 JobState.CANCELLED)
# The chunk whose ending speaks for a failed array stage (an OOM makes the retry ask for more memory).
FAILED_STATES_WORST = (JobState.OUT_OF_MEMORY, JobState.TIMEOUT, JobState.FAILED, JobState.NODE_FAIL,
                       JobState.CANCELLED)


@dataclass
class EngineConfig:
    cluster: str = "sim"
    store_id: str = "local"
    asa_timing: str = "daemon"  # daemon | begin
    naive_resubmit_margin_s: float = 300.0
    geometry: GeometryKeyConfig = field(default_factory=GeometryKeyConfig)
    max_timeout_retries: int = 2
    default_partition: str = ""
    run_dir: str = ""  # real clusters: jobs' output files go to <run_dir>/<workflow id>/, not the workdir
    default_sizing: str = "sizey-like"
    placement: str = "turnaround"  # a stage with several partitions: ReASSIGN variant, or "slurm" (-p a,b)
    # The default strategy's price of idling: makespan seconds one idle core-second costs (see
    # asad.strategies.auto). Chosen on training seeds to keep idle overhead near 2% of core-hours.
    idle_price: float = DEFAULT_IDLE_PRICE
    max_array_size: int = DEFAULT_MAX_ARRAY_SIZE  # Slurm's MaxArraySize: larger arrays go as several jobs


@dataclass
class Decisions:
    submit: list[JobRecord] = field(default_factory=list)
    cancel: list[JobRecord] = field(default_factory=list)
    dirty_stages: list[StageRun] = field(default_factory=list)
    dirty_jobs: list[JobRecord] = field(default_factory=list)
    finished: list[WorkflowRun] = field(default_factory=list)
    observed: list[JobRecord] = field(default_factory=list)  # jobs whose wait was just learned
    wake_at: float = math.inf


# The wait quantiles auto's instant is computed from: fine enough for a 112-core stage's 4% level.
WAIT_GRID = tuple(round(0.01 + 0.02 * i, 2) for i in range(50))


class Context:
    """What strategies may consult: learned estimates, the config, the cluster's partitions."""

    def __init__(self, config: EngineConfig, learned: Learned, partitions: list[PartitionInfo],
                 build_command=None, priority_rules: PriorityRules | None = None):  # noqa: ANN001
        self.config = config
        self.learned = learned
        self.partitions = {p.name: p for p in partitions}
        self.priority_rules = priority_rules or PriorityRules()
        self.build_command = build_command or (lambda wf, stage, req, barrier=(): wf.spec.stage(stage).run
                                               if stage != BIG_JOB_STAGE else "true")

    # -- estimates -----------------------------------------------------------------------
    def runtime_key(self, wf: WorkflowRun, stage: str) -> str:
        return f"{wf.spec.name}/{stage}"

    def expected_end(self, wf: WorkflowRun, stage: str) -> float:
        """Start of the stage's work plus its learned run time (its time limit until learned)."""
        run = wf.stages[stage]
        job = wf.current_job(stage)
        start = run.start_time or (job.start_time if job else None)
        limit = float(run.time_s or wf.spec.stage(stage).time_s)
        run.est_runtime_s = self.learned.runtime(self.runtime_key(wf, stage)).estimate(limit)
        return (start or 0.0) + run.est_runtime_s

    def geometry_key(self, req: JobRequest) -> str:
        if not req.partition and self.config.default_partition:
            req = replace(req, partition=self.config.default_partition)
        return request_key(req, self.config.cluster, self.config.geometry)

    def estimate_wait(self, wf: WorkflowRun, stage: str) -> float:
        req = self.request_for(wf, stage)
        return self.learned.estimate_wait(self.geometry_key(req))

    def idle_price(self, wf: WorkflowRun) -> float:
        """The workflow's own ``idle_price`` when its file sets one, else the daemon's setting."""
        return wf.spec.idle_price if wf.spec.idle_price is not None else self.config.idle_price

    def quantile_lead(self, wf: WorkflowRun, stage: str) -> tuple[float, float, int]:
        """(lead in s, quantile level, waits seen): the learned wait quantile that minimises the
        expected cost of a submission without a dependency (``asad.strategies.auto``). A geometry
        with no wait seen yet gets no lead: a prior's guess would only buy idle cores."""
        tau, key, seen = self._wait_level(wf, stage)
        return (self.learned.wait_quantiles(key, [tau])[0] if seen else 0.0), tau, seen

    def _wait_level(self, wf: WorkflowRun, stage: str) -> tuple[float, str, int]:
        """(quantile level tau, geometry key, waits seen) of a stage's submission without a dependency."""
        req = self.request_for(wf, stage)
        key = self.geometry_key(req)
        return quantile_level(self.idle_price(wf), req.cpus), key, self.learned.wait_observations(key)

    def quantile_begin(self, wf: WorkflowRun, stage: str, running: list[str]) -> tuple[float, float, int]:
        """(eligible instant, quantile level, waits seen) for a submission of ``stage`` without a
        dependency while its predecessors ``running`` run: the latest of their starts plus the
        ``1 - tau`` quantile of run time minus wait (``asad.strategies.auto.begin_offset``)."""
        tau, key, seen = self._wait_level(wf, stage)
        waits = self.learned.wait_quantiles(key, list(WAIT_GRID)) if seen else [0.0]
        instants = []
        for p in running:
            runs = self.learned.runtime(self.runtime_key(wf, p)).recent
            start = wf.stages[p].start_time or 0.0
            instants.append(start + begin_offset(runs or [self.expected_end(wf, p) - start], waits, tau))
        return max(instants), tau, seen

    def holds_at_barrier(self, wf: WorkflowRun) -> bool:
        """The workflow's early jobs carry no Slurm dependency and hold their allocation at a
        barrier until the predecessors end (asa's naive mode, auto's quantile rule)."""
        if any(s.array is not None for s in wf.spec.stages):
            return False  # an array's tasks write no stage-wide end marker to hold a barrier on
        if wf.strategy == "asa":
            return wf.mode == "naive"
        return wf.strategy == "auto" and self.priority_rules.rule == "quantile"

    def barrier_lead(self, wf: WorkflowRun, stage: str) -> float:
        """How far ahead of the predecessors' end a fresh submission of ``stage`` would be made
        (for auto: the lead its rule would take now, run-time spread included)."""
        if wf.strategy != "auto":
            return self.estimate_wait(wf, stage)
        preds = [p for p in wf.spec.predecessors(stage) if wf.stages[p].state is not StageState.COMPLETED]
        if not preds or any(wf.stages[p].state is not StageState.RUNNING or wf.stages[p].start_time is None
                            for p in preds):
            return self.quantile_lead(wf, stage)[0]
        at, _, _ = self.quantile_begin(wf, stage, preds)
        return max(self.expected_end(wf, p) for p in preds) - at

    # -- requests ------------------------------------------------------------------------
    def request_for(self, wf: WorkflowRun, stage: str, plan: SubmitNow | None = None,
                    dep_ids: tuple[int, ...] = (), barrier_ids: tuple[int, ...] = ()) -> JobRequest:
        run = wf.stages[stage]
        s = wf.spec.stage(stage)
        cpus = run.cpus or s.cpus
        cpus_per_task = s.cpus_per_task if cpus == s.cpus else max(1, cpus // s.ntasks)
        mem_mb = s.mem_mb
        mem_per_cpu = s.mem_per_cpu_mb
        if run.mem_mb is not None:  # sized or retried: always per node
            mem_mb, mem_per_cpu = -(-run.mem_mb // s.nodes), None
        truth = None
        if s.simulate is not None:
            # Work-conserving: the stage keeps `cpus x efficiency` cores busy; fewer CPUs stretch it.
            busy = s.cpus * s.simulate.cpu_efficiency
            runtime = s.simulate.runtime_s * max(1.0, busy / cpus)
            truth = SimTruth(runtime, s.sim_peak_total_mb(), min(1.0, busy / cpus), wait_for=barrier_ids)
        dependency = Dependency(DependencyType.AFTEROK, dep_ids) if dep_ids else None
        return JobRequest(
            name=f"asad.{wf.id}.{stage}", command="", partition=s.partition,
            account=s.account, qos=s.qos, nodes=s.nodes, ntasks=s.ntasks, cpus_per_task=cpus_per_task,
            mem_mb=mem_mb, mem_per_cpu_mb=mem_per_cpu, time_limit_s=int(run.time_s or s.time_s),
            dependency=dependency, begin=plan.begin if plan else None,
            comment=self.tag(wf, stage, run.attempt + 1), workdir=wf.spec.workdir, env=s.env_dict(), truth=truth,
            output=s.slurm.output or self._output(wf, stage), constraint=s.slurm.constraint,
            exclusive=s.slurm.exclusive, gpus=s.slurm.gpus, gres=s.slurm.gres, mail_type=s.slurm.mail_type,
            mail_user=s.slurm.mail_user, array=s.array,
        )

    def big_job_request(self, wf: WorkflowRun, attempt: int = 1) -> JobRequest:
        shape = big_job_shape(wf.spec)
        stages = wf.spec.stages
        truth = None
        if all(s.simulate is not None for s in stages):
            total = sum(s.simulate.runtime_s for s in stages)
            peaks = [s.sim_peak_total_mb() for s in stages if s.simulate.peak_mem_mb is not None]
            used_core_s = sum(s.simulate.runtime_s * s.cpus * s.simulate.cpu_efficiency for s in stages)
            alloc = shape["ntasks"] * shape["cpus_per_task"]
            truth = SimTruth(total, max(peaks) if peaks else None,
                             used_core_s / (total * alloc) if total else 1.0)
        first = stages[0]
        return JobRequest(
            name=f"asad.{wf.id}.all", command="", partition=first.partition, account=first.account,
            qos=first.qos, nodes=shape["nodes"], ntasks=shape["ntasks"], cpus_per_task=shape["cpus_per_task"],
            mem_mb=shape["mem_mb"], time_limit_s=shape["time_s"], comment=self.tag(wf, BIG_JOB_STAGE, attempt),
            workdir=wf.spec.workdir, truth=truth, output=self._output(wf, "all"),
        )

    def _output(self, wf: WorkflowRun, stage: str) -> str | None:
        if not self.config.run_dir:
            return None
        # an array's tasks: one file each, by array job id and (per array job) task index
        pattern = "%A_%a" if stage != BIG_JOB_STAGE and stage in wf.stages and wf.spec.stage(stage).array else "%j"
        return f"{self.config.run_dir}/{wf.id}/{stage}-{pattern}.out"

    # -- sizing ------------------------------------------------------------------------------
    def sizing_name(self, wf: WorkflowRun, stage: str) -> str | None:
        """The stage's sizing agent, or None: sizing is off. A stage that spans several nodes
        has one too, but only its time limit is learned (:meth:`size_first_attempt`)."""
        s = wf.spec.stage(stage)
        name = s.sizing or wf.spec.sizing or self.config.default_sizing
        return None if name in (None, "", "off") else name

    def partition_of(self, wf: WorkflowRun, stage: str) -> PartitionInfo | None:
        names = wf.spec.stage(stage).partition.split(",")
        return self.partitions.get(names[0] or self.config.default_partition)

    def sizing_agent(self, wf: WorkflowRun, stage: str):  # noqa: ANN201
        name = self.sizing_name(wf, stage)
        if name is None:
            return None
        part = self.partition_of(wf, stage)
        caps = Caps.from_partition(part) if part else None
        return self.learned.sizing_agent(self.runtime_key(wf, stage), name, caps)

    def user_request(self, wf: WorkflowRun, stage: str) -> SizeRequest:
        s = wf.spec.stage(stage)
        mem = s.total_mem_mb()
        if mem is None:  # Slurm's DefMemPerCPU-like share of the node
            part = self.partition_of(wf, stage)
            mem = (part.mem_per_node_mb // max(1, part.cpus_per_node)) * s.cpus if part else 1024 * s.cpus
        return SizeRequest(cpus=s.cpus, mem_mb=int(mem), time_s=int(s.time_s))

    def input_bytes(self, wf: WorkflowRun, stage: str) -> float | None:
        patterns = wf.spec.stage(stage).inputs
        if not patterns:
            return None
        base = Path(wf.spec.workdir or ".")
        total, found = 0, False
        for pattern in patterns:
            for path in (base.glob(pattern) if not Path(pattern).is_absolute() else Path("/").glob(pattern[1:])):
                with contextlib.suppress(OSError):
                    total += path.stat().st_size
                    found = True
        return float(total) if found else None

    def size_first_attempt(self, wf: WorkflowRun, stage: str, run: StageRun) -> None:
        agent = self.sizing_agent(wf, stage)
        if agent is None:
            return
        decision = agent.propose(self.user_request(wf, stage), self.input_bytes(wf, stage))
        s = wf.spec.stage(stage)
        if s.nodes > 1:
            # Memory and CPUs per node are the user's for a multi-node stage (the agents size one
            # node); the time limit is learned like any other's, and a short one backfills sooner.
            run.time_s = decision.request.time_s
            run.size_why = (f"{decision.agent}: {decision.time_why}; {s.nodes} nodes, so CPUs and "
                            f"memory stay the user's.")
            return
        req, cpu_why = keep_user_cpus(decision.request, s.cpus, s.sizing_cpus)
        run.cpus, run.mem_mb, run.time_s = req.cpus, req.mem_mb, req.time_s
        run.size_why = f"{decision.agent}: {decision.why}" + (f" {cpu_why}." if cpu_why else "")

    def outcome_of(self, wf: WorkflowRun, stage: str, job: JobRecord) -> Outcome:
        elapsed = (job.end_time - job.start_time) if job.end_time and job.start_time else None
        req = job.request
        return Outcome(request=SizeRequest(cpus=req.cpus, mem_mb=int(req.total_mem_mb() or 0),
                                           time_s=int(req.time_limit_s)),
                       peak_mem_mb=job.peak_rss_mb, cpu_s=job.cpu_s, elapsed_s=elapsed,
                       input_bytes=self.input_bytes(wf, stage), state=job.state.value)

    # -- placement -------------------------------------------------------------------------------
    def placement_agent(self, wf: WorkflowRun, stage: str):  # noqa: ANN201
        parts = wf.spec.stage(stage).partitions
        if len(parts) < 2 or self.config.placement == "slurm":
            return None
        return self.learned.placement_agent(self.runtime_key(wf, stage), parts, self.config.placement)

    def place(self, wf: WorkflowRun, stage: str, run: StageRun, req: JobRequest) -> JobRequest:
        """Pick one of the stage's partitions (or keep them all, as ``-p a,b``) by what paid off before."""
        agent = self.placement_agent(wf, stage)
        if agent is None:
            return req
        decision = agent.choose(req.comment, {p: None for p in req.partitions})
        self.learned.placement_changed(self.runtime_key(wf, stage))
        run.size_why = (run.size_why + "; " if run.size_why else "") + decision.why
        return replace(req, partition=decision.partition)

    def tag(self, wf: WorkflowRun, stage: str, attempt: int) -> str:
        """The job's identity in Slurm (``--comment``): found again after a crash by ``find``."""
        return f"asad:{self.config.store_id}:{wf.id}:{stage}:{attempt}"


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
        if job is None or job.phase is JobPhase.SUBMITTING:
            return
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
                run.state, run.job_row = StageState.WAITING, None
                run.message = "not every array chunk reached Slurm; resubmitted"
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
                run.state, run.job_row = StageState.WAITING, None
                run.message = "predecessors ended before the planned --begin; resubmitted"
                out.dirty_stages.append(run)
                return
            if job.reason == "DependencyNeverSatisfied" and not self._predecessor_ending(wf, name, [job]):
                # A predecessor failed; if it is being retried, resubmit against the new attempt.
                out.cancel.append(job)
                job.cancelled_by_asad = True
                run.state, run.job_row = StageState.WAITING, None
                out.dirty_stages.append(run)
            return
        if job.state is JobState.RUNNING:
            if run.state is not StageState.RUNNING:
                run.state = StageState.RUNNING
                run.start_time = self._work_start(wf, name, job)
                out.dirty_stages.append(run)
            elif run.start_time is None or run.start_time > now:
                run.start_time = self._work_start(wf, name, job)
            if self.ctx.holds_at_barrier(wf) and not self._preds_done(wf, name):
                if too_early(wf, name, now, self.ctx, self.ctx.barrier_lead(wf, name)):
                    out.cancel.append(job)
                    job.cancelled_by_asad = True
                    run.state, run.job_row, run.start_time = StageState.WAITING, None, None
                    run.message = "allocation arrived too early; cancelled and replanned"
                    out.dirty_stages.append(run)
            return
        # final
        run.end_time = job.end_time
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
                run.state, run.job_row = StageState.WAITING, None
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
        since = [j for j in wf.jobs if j.stage == name and j.attempt > run.retry_from]
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
        elif job.state is JobState.TIMEOUT and len(attempts_of) <= self.ctx.config.max_timeout_retries:
            limit = job.request.time_limit_s
            try:
                run.time_s = retry_time_s(limit, None, part.max_time_s if part else None)
            except SizingError as exc:
                return self._fail(wf, name, run, now, out, str(exc))
            run.message = f"TIMEOUT at {limit} s; retrying with {run.time_s} s"
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
                              "limit; raise the stage's time")
        else:
            return self._fail(wf, name, run, now, out, f"{job.state.value} (exit code {job.exit_code})")
        run.state, run.job_row, run.start_time, run.end_time = StageState.WAITING, None, None, None
        out.dirty_stages.append(run)

    def _fail(self, wf: WorkflowRun, name: str, run: StageRun, now: float, out: Decisions, why: str) -> None:
        run.state = StageState.FAILED
        run.message = why
        out.dirty_stages.append(run)
        self._end_workflow(wf, WorkflowState.FAILED, now, out, f"stage {name} failed: {why}")

    def _end_workflow(self, wf: WorkflowRun, state: WorkflowState, now: float, out: Decisions,
                      message: str = "") -> None:
        for run in wf.stages.values():
            if run.state.is_final:
                continue
            job = wf.job(run.job_row)
            if job is not None and job.phase is not JobPhase.DONE and not job.state.is_final:
                out.cancel.append(job)
            run.state = StageState.CANCELLED
            out.dirty_stages.append(run)
        for job in wf.jobs:  # big-job, or anything else still live
            if job.phase is JobPhase.LIVE and not job.state.is_final and job not in out.cancel:
                out.cancel.append(job)
        wf.state = state
        ends = [r.end_time for r in wf.stages.values() if r.end_time is not None]
        wf.ended_at = max(ends) if state is WorkflowState.COMPLETED and ends else now
        wf.message = message
        out.finished.append(wf)

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
        return max([job.start_time, *ends])

    def _learn_wait(self, job: JobRecord, now: float, out: Decisions) -> None:
        if job.wait_learned:
            return
        if job.start_time is None or job.start_time > now:
            self._hear_misses(job, now, out)
            return
        if job.eligible_time is None:
            return
        job.wait_learned = True
        self.ctx.learned.observe_wait(job.geometry_key, job.wait_s, at_s=job.start_time, told=job.wait_told)
        out.observed.append(job)
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
        req = _with_command(req, self.ctx.build_command(wf, name, req, barrier=plan.barrier_on))
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
                            wait_told=self.ctx.learned.wait_told(self.ctx.geometry_key(req)))
            wf.jobs.append(job)
            out.submit.append(job)
        run.state = StageState.SUBMITTED
        run.planned_submit_at = None
        run.est_wait_s = est
        run.plan_why = plan.why
        out.dirty_stages.append(run)

    def _decide_big_job(self, wf: WorkflowRun, now: float, out: Decisions) -> None:
        job = wf.jobs[-1] if wf.jobs else None
        if job is None or all(run.state is StageState.WAITING for run in wf.stages.values()):
            # the first job, or a resumed workflow (``asad resume``): the whole job again
            attempt = sum(1 for j in wf.jobs if j.stage == BIG_JOB_STAGE) + 1
            req = self.ctx.big_job_request(wf, attempt)
            req = _with_command(req, self.ctx.build_command(wf, BIG_JOB_STAGE, req))
            job = JobRecord(row_id=None, workflow_id=wf.id, stage=BIG_JOB_STAGE, attempt=attempt, tag=req.comment,
                            phase=JobPhase.SUBMITTING, request=req, geometry_key=self.ctx.geometry_key(req))
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
        """Stage times inside the allocation: stages ran in turn, in file order. Their own
        lengths come from the simulator's truth or, on a real cluster, are apportioned by time limit
        (the stage wrapper's markers refine this; see asad.runner)."""
        start, end = job.start_time or 0.0, job.end_time or 0.0
        stages = wf.spec.stages
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
