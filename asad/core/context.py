"""What the engine consults: its configuration, the learners, the partitions, and the rules that
turn a stage into a Slurm request (its size, its learned time limit, its partition, its tag).

The engine (``asad.core.engine``) decides with it; like the engine it never reads the clock or calls
Slurm, so it runs on virtual time too.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from asad.core import markers
from asad.common.arrays import DEFAULT_MAX_ARRAY_SIZE
from asad.common.config import DEFAULT_IDLE_PRICE, DEFAULT_PLACEMENT
from asad.learn.geometry import GeometryKeyConfig, request_key
from asad.core.job_env import big_job_env
from asad.core.learned import Learned
from asad.core.model import JobRecord, StageRun, StageState, WorkflowRun
from asad.sizing.base import Caps, Outcome
from asad.sizing.base import Request as SizeRequest
from asad.sizing.cpus import keep_user_cpus
from asad.slurm.backend import Dependency, DependencyType, JobRequest, JobState, PartitionInfo, SimTruth
from asad.slurm.priority_rules import PriorityRules
from asad.strategies.auto import quantile_level
from asad.strategies.expected_start import GRID as WAIT_GRID
from asad.strategies.expected_start import (eligible_instant, end_of, held_start, later_of, pending_start,
                                            with_unseen_tails)
from asad.strategies.base import SubmitNow
from asad.strategies.big_job import big_job_shape

BIG_JOB_STAGE = "*"


@dataclass
class EngineConfig:
    cluster: str = "sim"
    store_id: str = "local"
    asa_timing: str = "daemon"  # daemon | begin
    naive_resubmit_margin_s: float = 300.0
    geometry: GeometryKeyConfig = field(default_factory=GeometryKeyConfig)
    default_partition: str = ""
    run_dir: str = ""  # real clusters: jobs' output files go to <run_dir>/<workflow id>/, not the workdir
    default_sizing: str = "sizey-like"
    placement: str = DEFAULT_PLACEMENT  # several partitions: "slurm" (-p a,b), or a ReASSIGN variant
    # The default strategy's price of idling: makespan seconds one idle core-second costs (see
    # asad.strategies.auto). Chosen on training seeds to keep idle overhead near 2% of core-hours.
    idle_price: float = DEFAULT_IDLE_PRICE
    max_array_size: int = DEFAULT_MAX_ARRAY_SIZE  # Slurm's MaxArraySize: larger arrays go as several jobs
    # auto: adjacent stages in one job (asad.strategies.share): "off", "on" or "learned" (one shape,
    # chain rules), or "cost" (any CPUs, every rule, decided by asad.strategies.merge_cost)
    share_jobs: str = "off"




class Context:
    """What strategies may consult: learned estimates, the config, the cluster's partitions."""

    def __init__(self, config: EngineConfig, learned: Learned, partitions: list[PartitionInfo],
                 build_command=None, priority_rules: PriorityRules | None = None):  # noqa: ANN001
        self.config = config
        self.learned = learned
        self.partitions = {p.name: p for p in partitions}
        self.priority_rules = priority_rules or PriorityRules()
        self.build_command = build_command or (
            lambda wf, stage, req, barrier=(), rides=(): "\n".join(wf.spec.stage(s).run for s in (stage, *rides))
            if stage != BIG_JOB_STAGE else "true")

    # -- estimates -----------------------------------------------------------------------
    def runtime_key(self, wf: WorkflowRun, stage: str) -> str:
        return f"{wf.spec.name}/{stage}"

    def expected_end(self, wf: WorkflowRun, stage: str) -> float:
        """Start of the stage's work plus its learned run time (its time limit until learned)."""
        run = wf.stages[stage]
        job = wf.current_job(stage)
        start = run.start_time or (job.start_time if job else None)
        run.est_runtime_s = self.expected_runtime(wf, stage)
        return (start or 0.0) + run.est_runtime_s

    def expected_runtime(self, wf: WorkflowRun, stage: str) -> float:
        """The stage's learned run time (its time limit until learned)."""
        limit = float(wf.stages[stage].time_s or wf.spec.stage(stage).time_s)
        return self.learned.runtime(self.runtime_key(wf, stage)).estimate(limit)

    def geometry_key(self, req: JobRequest) -> str:
        if not req.partition and self.config.default_partition:
            req = replace(req, partition=self.config.default_partition)
        key = request_key(req, self.config.cluster, self.config.geometry)
        self.learned.want_probe(key, req)  # Slurm's estimate of it, when the learner takes one
        return key

    def estimate_wait(self, wf: WorkflowRun, stage: str) -> float:
        req = self.request_for(wf, stage)
        return self.learned.estimate_wait(self.geometry_key(req))

    def wait_source(self, wf: WorkflowRun, stage: str) -> str:
        """Which expert of the wait learner dominated ``estimate_wait`` (and its weight); "" if none."""
        return self.learned.wait_source(self.geometry_key(self.request_for(wf, stage)))

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

    def quantile_begin(self, wf: WorkflowRun, stage: str, preds: list[str], now: float = 0.0
                       ) -> tuple[float, float, int]:
        """(eligible instant, quantile level, waits seen) for a submission of ``stage`` without a
        dependency before its predecessors ``preds`` end: the latest over them of the ``1 - tau``
        quantile of work start plus run time minus wait (``asad.strategies.expected_start``). A
        running predecessor's start is known; a pending one's is its learned wait given the wait
        so far (:meth:`work_start_grid`; the caller checks it is not None)."""
        tau, key, seen = self._wait_level(wf, stage)
        waits = ([0.0] if not seen else  # a wait below the fewest seen idles it: the bottom unseen
                 with_unseen_tails(self.learned.wait_quantiles(key, list(WAIT_GRID)),
                                   self.learned.wait_quantile_basis(key), top=False, bottom=True))
        instants = []
        for p in preds:
            # a pending predecessor's start with what its waits leave unseen above them
            starts = self.work_start_grid(wf, p, now, unseen=True)
            if starts is None:  # a caller that checked nothing: the start it knows, else none
                starts = np.array([wf.stages[p].start_time or 0.0])
            runs = self.learned.runtime(self.runtime_key(wf, p)).recent
            runs = runs or [self.expected_runtime(wf, p)]
            instants.append(eligible_instant(starts, runs, waits, tau))
        return max(instants), tau, seen

    def work_start_grid(self, wf: WorkflowRun, stage: str, now: float, unseen: bool = False) -> np.ndarray | None:
        """When ``stage``'s work starts, as quantiles (``asad.strategies.expected_start``): a point
        once it began; its allocation (known, or a pending job's eligible instant plus the learned
        wait still to come) and, if it holds at a barrier, the later of that and its own
        predecessors' end. A job held by ``afterok`` becomes eligible when the jobs it depends on
        end (:meth:`_dependency_end_grid`), and its allocation comes its learned wait after that
        (``expected_start.held_start``). None where asad cannot say: a job not in Slurm yet, an
        array job, a geometry or a predecessor's run time not learned yet. A stage that rides in a shared job starts when the stage before it in the job
        ends. ``unseen``: a pending job's wait carries the mass its few samples leave beyond the
        largest (``expected_start.remaining_wait``), for pricing a barrier; else the learner's
        grid as it is (for a median)."""
        run = wf.stages[stage]
        if run.state is StageState.COMPLETED:
            return np.array([run.start_time or 0.0])
        if run.state is StageState.RUNNING and run.start_time is not None and run.start_time <= now:
            return np.array([run.start_time])
        job = wf.current_job(stage)
        if job is not None and stage in job.rides and run.state is StageState.SUBMITTED:
            # a rider of a shared (or merged) job starts its work the moment the stage before it ends
            return self.work_end_grid(wf, job.stages[job.stages.index(stage) - 1], now, unseen)
        if (job is None or job.job_id is None or job.request.array
                or run.state not in (StageState.SUBMITTED, StageState.RUNNING)):
            return None
        if job.start_time is not None and job.start_time <= now:
            alloc = np.array([job.start_time])
        elif job.state is JobState.PENDING:
            if self.learned.wait_observations(job.geometry_key) == 0:
                return None
            basis = self.learned.wait_quantile_basis(job.geometry_key) if unseen else None
            waits = self.learned.wait_quantiles(job.geometry_key, list(WAIT_GRID))
            if job.request.dependency is not None and job.eligible_time is None:
                # held by afterok: eligible when its dependencies end (Slurm says when, once they did)
                deps_end = self._dependency_end_grid(wf, job, now, unseen)
                if deps_end is None:
                    return None
                alloc = held_start(np.maximum(deps_end, job.request.begin or 0.0), waits, now, basis)
            else:
                eligible = job.eligible_time or job.request.begin or job.submitted_at
                if eligible is None:
                    return None
                alloc = pending_start(eligible, waits, now, basis)
        else:
            return None
        for p in wf.spec.predecessors(stage):  # held at its barrier until these end
            if wf.stages[p].state is StageState.COMPLETED:
                continue
            ends = self.work_end_grid(wf, p, now, unseen)
            if ends is None:
                return None
            alloc = later_of(alloc, ends)
        return alloc

    def _dependency_end_grid(self, wf: WorkflowRun, job, now: float, unseen: bool) -> np.ndarray | None:  # noqa: ANN001
        """When the last of the jobs ``job`` depends on (``afterok``) ends, as quantiles: a point
        for one that ended, its last stage's :meth:`work_end_grid` for one still to end. None when
        one is not this workflow's, failed (``afterok`` never comes), or its end is not known."""
        if job.request.dependency.type not in (DependencyType.AFTEROK, DependencyType.AFTERANY):
            return None  # eligible at their start, not their end: not a rule asad submits with
        ends = None
        for dep_id in job.request.dependency.job_ids:
            dep = next((j for j in reversed(wf.jobs) if j.job_id == dep_id), None)
            if dep is None or (dep.state.is_final and dep.state is not JobState.COMPLETED):
                return None
            if dep.state is JobState.COMPLETED:
                end = np.array([dep.end_time or wf.stages[dep.stages[-1]].end_time or now])
            else:
                end = self.work_end_grid(wf, dep.stages[-1], now, unseen)
                if end is None:
                    return None
            ends = end if ends is None else later_of(ends, end)
        return ends

    def work_end_grid(self, wf: WorkflowRun, stage: str, now: float, unseen: bool = False) -> np.ndarray | None:
        """When ``stage``'s work ends, as quantiles: its start's plus its recent run times; None
        when either is unknown."""
        run = wf.stages[stage]
        if run.state is StageState.COMPLETED:
            return np.array([run.end_time or now])
        runs = self.learned.runtime(self.runtime_key(wf, stage)).recent
        starts = self.work_start_grid(wf, stage, now, unseen)
        if starts is None or not runs:
            return None
        return np.maximum(end_of(starts, runs), now)

    def predicted_end(self, wf: WorkflowRun, stage: str, now: float) -> float:
        """The stage's expected end: :meth:`expected_end` once its work began, else the median of
        :meth:`work_end_grid` (a pending job's learned wait included), else its run time from now."""
        run = wf.stages[stage]
        if run.state is StageState.RUNNING and run.start_time is not None and run.start_time <= now:
            return self.expected_end(wf, stage)
        ends = self.work_end_grid(wf, stage, now)
        if ends is None:
            return now + self.expected_runtime(wf, stage)
        run.est_runtime_s = self.expected_runtime(wf, stage)
        return float(np.median(ends))

    def holds_at_barrier(self, wf: WorkflowRun) -> bool:
        """The workflow's early jobs carry no Slurm dependency and hold their allocation at a
        barrier until the predecessors end (asa's naive mode, auto's quantile rule)."""
        if any(s.array is not None for s in wf.spec.stages):
            return False  # an array's tasks write no stage-wide end marker to hold a barrier on
        if wf.strategy == "asa":
            return wf.mode == "naive"
        return wf.strategy == "auto" and self.priority_rules.rule == "quantile"

    def barrier_lead(self, wf: WorkflowRun, stage: str, now: float) -> float:
        """How far ahead of the predecessors' end a fresh submission of ``stage`` would be made
        (for auto: the lead its rule would take now, run-time spread included)."""
        if wf.strategy != "auto":
            return self.estimate_wait(wf, stage)
        preds = [p for p in wf.spec.predecessors(stage) if wf.stages[p].state is not StageState.COMPLETED]
        if not preds or any(wf.stages[p].state is not StageState.RUNNING or wf.stages[p].start_time is None
                            for p in preds):
            return self.quantile_lead(wf, stage)[0]
        at, _, _ = self.quantile_begin(wf, stage, preds, now)
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
            workdir=wf.spec.workdir, truth=truth, output=self._output(wf, "all"), env=big_job_env(wf.spec),
        )

    def _output(self, wf: WorkflowRun, stage: str) -> str | None:
        if not self.config.run_dir:
            return None
        # an array's tasks: one file each, by array job id and (per array job) task index
        pattern = "%A_%a" if stage != BIG_JOB_STAGE and stage in wf.stages and wf.spec.stage(stage).array else "%j"
        return f"{markers.folder(self.config.run_dir, wf.id)}/{stage}-{pattern}.out"

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

    def _marker_turns(self, wf: WorkflowRun, job: JobRecord, stages) -> list | None:  # noqa: ANN001
        """markers.turn of each stage in ``job`` (its wrapper's start and end markers); None where
        there are no markers (the simulator)."""
        if not self.config.run_dir or job.job_id is None:
            return None
        folder = markers.folder(self.config.run_dir, wf.id)
        return [markers.turn(folder, stage, job.job_id) for stage in stages]

    def command_start(self, wf: WorkflowRun, stage: str, job: JobRecord) -> float | None:
        """When the stage's command began in ``job``, from its start marker; None without one."""
        turns = self._marker_turns(wf, job, [stage])
        return turns[0][0][0] if turns and turns[0][0] is not None else None

    def stage_turns(self, wf: WorkflowRun, job: JobRecord, stages: list[str]) -> list[tuple[float, float]] | None:
        """(start, end) of each of ``stages`` in ``job`` (big-job: the stages of the one allocation);
        None unless every one of them has both markers."""
        turns = self._marker_turns(wf, job, stages)
        if turns is None or any(start is None or end is None for start, end in turns):
            return None
        return [(start[0], end[1]) for start, end in turns]

    def stage_marks(self, wf: WorkflowRun, job: JobRecord) -> list[tuple[float, float]] | None:
        """A shared job's stages that finished in it, from the stage wrappers' markers
        (``<stage>.start``: "<epoch> <host> <job id>", ``<stage>.end``: "<exit code> <epoch>"):
        (start, end) of each, in order, up to the first that did not end with exit 0 in this job.
        None where there are no markers (the simulator)."""
        turns = self._marker_turns(wf, job, job.stages)
        if turns is None:
            return None
        out: list[tuple[float, float]] = []
        for start, end in turns:
            if start is None or end is None or end[0] != 0:
                break
            out.append((start[0], end[1]))
        return out

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
