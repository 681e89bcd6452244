"""The simulated Slurm: the Backend protocol on an event-driven virtual clock.

Events live in one heap of ``(time, seq, kind, payload...)``; ``seq`` makes ties deterministic.
All events of one timestamp are processed together, then the schedulers run once (like
slurmctld batching the ``schedule()`` calls that submits and job ends request).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable

import numpy as np

from asad.slurm.backend import (
    JobRequest,
    JobState,
    JobStatus,
    PartitionInfo,
    Usage,
)
from asad.slurm.pending_load import PendingLoad
from asad.slurm.sim import errors
from asad.slurm.sim.arrays import SimArrays
from asad.slurm.sim.cluster import PartitionState
from asad.slurm.sim.config import SimConfig
from asad.slurm.sim.dependencies import BARRIER_KIND, DependencyEvents
from asad.slurm.sim.job_end import FAIL_SIGNAL, draw_latency, kill_time, takes_reply, work_end
from asad.slurm.sim.job_end import status as job_status
from asad.slurm.sim.job_end import usage as job_usage
from asad.slurm.sim.jobs import WAIT_NEVER, SimJob
from asad.slurm.sim.scheduler import Scheduler

from asad.slurm.sim.controller_loop import (EV_ARRIVAL, EV_BF, EV_ELIGIBLE, EV_END, EV_GEN, EV_LOOP_PASS,
                                           EV_MAIN, EV_PASS, EV_PRIO, EV_RELEASE, ControllerLoop)


class Simulator(DependencyEvents, ControllerLoop):
    """A busy Slurm cluster on virtual time. Implements :class:`asad.slurm.backend.Backend`."""

    name = "sim"

    def __init__(self, config: SimConfig):
        config.validate()
        self.config = config
        self.parts = [PartitionState(spec, i) for i, spec in enumerate(config.partitions)]
        for part in self.parts:
            part.select = config.node_select
        self._last_loop_pass = -math.inf  # the background loop's last main pass
        self._full_grid = None  # the full passes' ticks (config.first_sched_tick; controller_loop)
        self._sched_req_t = -math.inf  # the last queue_job_scheduler() (a submission)
        self._armed_from: float | None = None  # the loop pass the armed batch pass counts from
        self._loop_pass_armed = False
        self._last_main_pass = -math.inf  # when _sched_agent's last pass ran (sched_min_interval)
        self._by_name = {p.name: p for p in self.parts}
        defaults = [p for p in self.parts if p.spec.default]
        self._default_part = defaults[0] if defaults else self.parts[0]
        self.sched = Scheduler(config, self.parts, self._start_job)
        self.rng = np.random.default_rng(config.seed)
        self._latency_rng = np.random.default_rng(config.latency_seed)  # per-job latency draws
        # the OOM kill's lag: a generator of its own, so the draws above stay as they were
        self._oom_rng = np.random.default_rng([config.latency_seed, 1])
        self._ends_seen = 0  # jobs ended so far (already_complete_share's sequence)
        self._heap: list[tuple] = []
        self._seq = 0
        self.jobs: dict[int, SimJob] = {}
        self._user_jobs: list[SimJob] = []
        self._running: dict[int, SimJob] = {}
        self._next_id = config.first_job_id
        self._watch: set[int] = set()
        self._hit = False
        self._pass_wanted = False
        self._full_pass_wanted = False
        self._bf_wanted = False
        self._prio_wanted = False
        self._armed = [False, False, False]  # main, backfill, priority ticks
        self._changes = 0
        self._bf_changes_seen = -1
        self._last_change_t = -math.inf  # when something last changed (slurmctld's last_*_update)
        self._last_bf_end = -math.inf  # when the last backfill pass ran (last_backfill_time)
        self._bf_planned = False  # bf_poll: the last pass planned a job on a node running none
        self._bf_next: float | None = None  # bf_poll: the backfill thread's next look
        self.counters = {"events": 0, "submitted": 0, "background_submitted": 0, "started": 0,
                         "finished": 0, "backfill_skipped_unchanged": 0, "swf_skipped": 0}
        self.final_states: dict[str, int] = {}
        self._busy_done = [0.0] * len(self.parts)
        self.workload = None
        self.trace_ids: dict[int, int] = {}  # SWF job number -> simulator job id
        self.arrays = SimArrays()
        self.max_array_size = config.max_array_size
        self._now = config.start_time
        self._t0 = config.start_time
        from asad.slurm.sim.workload import BackgroundLoad  # late: workload imports config only

        self.fairtree = self.sched.fairtree
        self._bg_assoc: list[int] = []  # background user index -> fair-share association
        if self.fairtree is not None:
            self.fairtree.assoc(config.fairshare_user, config.fairshare_account)
        if any(config.base_load(p.spec) > 0 for p in self.parts):
            self.workload = BackgroundLoad(config, self.parts, self.rng)
            self._now = config.start_time - config.warmup_s
            self._t0 = self._now
            if self.fairtree is not None:
                users = self.workload.users
                self._bg_assoc = self.fairtree.add_population(users.user_names, users.user_accounts)
                self.fairtree.last_ran = math.floor(self._now)  # time_t (fairshare.py)
            self._push(self._now, EV_GEN, None, 0)
            self.run_until(config.start_time)
        self._now = config.start_time
        if config.first_sched_tick is not None and config.batch_sched_delay_s is not None:
            # slurmctld's first _schedule(), asked for by the nodes' registrations after its start
            # (last_sched_time starts as the loop's start second)
            self._last_loop_pass = config.timer_origin_s
            first = config.timer_origin_s + config.first_sched_tick * config.loop_tick_s
            if first > self._now:
                self._push(first, EV_LOOP_PASS, None, 0)
            else:
                self._last_loop_pass = first
        if config.swf is not None:
            from asad.slurm.sim.swf import read_swf, replay

            self.swf_replay = replay(self, read_swf(config.swf), start=config.start_time)

    # ================================================================== Backend protocol ====
    def now(self) -> float:
        return self._now

    def partitions(self) -> list[PartitionInfo]:
        return [
            PartitionInfo(name=p.name, nodes=p.n, cpus_per_node=p.cores, mem_per_node_mb=p.mem,
                          max_time_s=p.spec.max_time_s, max_nodes=p.spec.max_nodes,
                          default=p is self._default_part)
            for p in self.parts
        ]

    def submit(self, req: JobRequest, *, user: str | None = None) -> int:
        """``user``: the fair-share user the job is filed under (default ``config.fairshare_user``;
        the sim-vs-real replay gives the user a recorded job was submitted as)."""
        if req.array:
            self._validate(req)  # refused whole, before any task exists
            return self.arrays.submit(self, req)
        parts, nodes, cpus, mem_per_node = self._validate(req)
        dep_targets: list[SimJob] = []
        if req.dependency is not None:
            for jid in self.arrays.expand(req.dependency.job_ids):
                target = self.jobs.get(int(jid))
                if target is None:
                    raise errors.DependencyRejected(errors.DEPENDENCY_PROBLEM, errors.DEPENDENCY_PROBLEM)
                dep_targets.append(target)
        truth = req.truth
        if truth is not None:
            for jid in truth.wait_for:
                if int(jid) not in self.jobs:
                    raise ValueError(f"SimTruth.wait_for names unknown job {jid}")
        if truth is not None:
            runtime = max(0.0, float(truth.runtime_s))
        else:
            runtime = req.time_limit_s * self.config.untruthed_runtime_fraction
        job = SimJob(self._new_id(), req.name, parts, nodes, cpus, mem_per_node, req.time_limit_s,
                     self._now, runtime, background=False)
        job.comment = req.comment
        job.user = True
        if self.fairtree is not None:
            job.assoc = self.fairtree.assoc(user or self.config.fairshare_user,
                                            req.account or self.config.fairshare_account)
        if truth is not None:
            job.peak_mem_mb = truth.peak_mem_mb
            job.cpu_efficiency = truth.cpu_efficiency
            job.wait_for = tuple(int(j) for j in truth.wait_for)
            job.fail_code = int(truth.exit_code)
            job.phases = tuple(truth.phases)
        job.begin = req.begin
        job.dependency = req.dependency
        if (req.begin is not None and req.begin > self._now and req.dependency is not None
                and not self.config.accounting_enforce_limits):
            job.begin_accrue = req.begin  # see priority.py: the age a dependency does not clear
        self.jobs[job.job_id] = job
        self._user_jobs.append(job)
        self.counters["submitted"] += 1
        # The new job record sets last_job_update (_create_job_record, job_mgr.c) whether or not it may
        # run yet (a dependency, --begin): work for the backfill thread's next look (bf_poll only
        # reads it; the grid's skip test counts changes that can alter a plan)
        self._last_change_t = self._now
        wanted = self._pass_wanted
        self._arrive(job, dep_targets)
        self._request_pass()
        if self.config.batch_sched_delay_s is not None:
            # A submission only queues a request for the background loop (queue_job_scheduler
            # in _slurm_rpc_submit_batch_job, proc_req.c; sbatch's job_allocate is test-only):
            # the pass comes at the loop tick _request_pass armed, not at whatever event
            # happens next (issue 37: a job submitted at 3.85 started at the next timer event).
            self._pass_wanted = wanted
            # the main pass it asked for may come after the next backfill tick: that tick must
            # be on the heap (an immediate pass arms the timers itself if the job still waits)
            self._arm_timers(self._now)
        return job.job_id

    def cancel(self, job_ids: list[int]) -> None:
        for jid in self.arrays.expand(tuple(job_ids)):
            job = self.jobs.get(int(jid))
            if job is None or job.state.is_final:
                continue
            if job.state is JobState.PENDING:
                self.sched.dequeue(job)
                job.token += 1
                self._record_end(job, JobState.CANCELLED, self._now)
            else:
                self._finish(job, JobState.CANCELLED, self._now)
        self._push(self._now, EV_PASS, None, 0)

    def poll(self, job_ids: list[int]) -> dict[int, JobStatus]:
        out = {}
        for jid in job_ids:
            if int(jid) in self.arrays.tasks:
                out[int(jid)] = self.arrays.status(self, int(jid))
                continue
            job = self.jobs.get(int(jid))
            if job is not None:
                out[job.job_id] = job_status(job, self.sched.blockers.values())
        return out

    def find(self, tag: str) -> dict[int, JobStatus]:
        """Jobs submitted through :meth:`submit` whose name or comment carries ``tag``.
        Background jobs (named ``bg``, no comment) never carry a caller's tag."""
        found = {j.job_id: job_status(j, self.sched.blockers.values()) for j in self._user_jobs
                 if (tag in j.name or tag in j.comment) and j.job_id not in self.arrays.array_of}
        arrays = {self.arrays.array_of[j.job_id] for j in self._user_jobs
                  if (tag in j.name or tag in j.comment) and j.job_id in self.arrays.array_of}
        found.update({a: self.arrays.status(self, a) for a in arrays})
        return found

    def usage(self, job_ids: list[int]) -> dict[int, Usage]:
        out = {}
        for jid in job_ids:
            if int(jid) in self.arrays.tasks:
                use = self.arrays.usage(self, int(jid))
                if use is not None:
                    out[int(jid)] = use
                continue
            job = self.jobs.get(int(jid))
            if job is None or not job.state.is_final:
                continue
            out[job.job_id] = job_usage(job)
        return out

    def pending_load(self) -> PendingLoad:
        """What every user's ``squeue`` shows of the jobs competing for resources: the scheduling
        queue as it stands now (eligible pending jobs only; held, dependent and future-``--begin``
        jobs are not in it, as squeue's reason tells them apart on a real cluster)."""
        out = {}
        for part, queue in zip(self.parts, self.sched.queues):
            n = len(queue.jobs)
            out[part.name] = tuple(int(c) for c in queue.a_cpus[:n][queue.a_live[:n]])
        return PendingLoad(out, self._now)

    def estimate_start(self, req: JobRequest) -> float | None:
        """What ``sbatch --test-only`` answers: the earliest start given the running jobs (to
        their time limits) and the backfill reservations of the last pass, not the rest of the
        queue (which is why Slurm's own estimate is optimistic on a busy cluster)."""
        parts, nodes, cpus, mem_per_node = self._validate(req)
        cpn = -(-cpus // nodes)
        best: float | None = None
        for part in parts:
            res = part.earliest_start(nodes, cpn, mem_per_node, req.time_limit_s, self._now,
                                      part.reservations)
            if res is not None and (best is None or res.start < best):
                best = res.start
        if best is not None and req.begin is not None:
            best = max(best, req.begin)
        return best

    def priority_rules(self):  # noqa: ANN201 -- asad.slurm.priority_rules.PriorityRules
        """This simulator's own priority rules (what ``scontrol show config`` tells of a real one)."""
        from asad.slurm.priority_rules import rules_from_sim

        return rules_from_sim(self.config)

    # ================================================================== virtual clock =======
    def next_event_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def advance(self) -> float | None:
        """Process every event of the next timestamp (and the scheduling passes they trigger)."""
        if not self._heap:
            return None
        self._step()
        return self._now

    def run_until(self, t: float, stop_on: Iterable[int] = ()) -> float:
        """Process events up to ``t``; return early, at the time reached, once any job in
        ``stop_on`` starts or ends (after finishing that timestamp's events and passes)."""
        self._watch = set(int(j) for j in stop_on)
        self._hit = False
        heap = self._heap
        try:
            while heap and heap[0][0] <= t:
                self._step()
                if self._hit:
                    return self._now
        finally:
            self._watch = set()
        if t > self._now:
            self._now = t
        return self._now

    def stats(self) -> dict[str, object]:
        elapsed = max(1e-9, self._now - self._t0)
        busy = sum(self._busy_done)
        for job in self._running.values():
            busy += job.cpus * (self._now - job.start_time)
        total_cpus = sum(p.spec.total_cpus for p in self.parts)
        pending = self.sched.eligible_count
        return {
            "jobs_submitted": self.counters["submitted"] + self.counters["background_submitted"],
            "user_jobs_submitted": self.counters["submitted"],
            "background_jobs_submitted": self.counters["background_submitted"],
            "jobs_started": self.counters["started"],
            "jobs_finished": self.counters["finished"],
            "jobs_running": len(self._running),
            "jobs_pending_eligible": pending,
            "final_states": dict(sorted(self.final_states.items())),
            "events": self.counters["events"],
            "main_passes": self.sched.main_passes,
            "backfill_passes": self.sched.backfill_passes,
            "backfill_skipped_unchanged": self.counters["backfill_skipped_unchanged"],
            "backfill_starts": self.sched.backfill_starts,
            "utilisation": busy / (total_cpus * elapsed),
            "sim_seconds": self._now - self._t0,
            "swf_skipped": self.counters["swf_skipped"],
        }

    # ================================================================== submission ==========
    def _new_id(self) -> int:
        jid = self._next_id
        self._next_id += 1
        return jid

    def _validate(self, req: JobRequest) -> tuple[list[PartitionState], int, int, int]:
        return errors.admit(req, [self._by_name.get(name) for name in req.partitions or [self._default_part.name]])

    # ================================================================== running jobs ========
    def _start_job(self, job: SimJob, part: PartitionState, nodes: list[int]) -> None:
        now = self._now
        self.sched.dequeue(job)
        # slurmctld's end_time (what its planners assume): start_time, a whole second, + limit
        job.slots = part.allocate(nodes, job.cpus_per_node, job.mem_per_node_mb,
                                  math.floor(now) + job.time_limit_s, owner=job.job_id)
        job.alloc_nodes = nodes
        job.part = part
        job.state = JobState.RUNNING
        job.start_time = now
        self._running[job.job_id] = job
        if self.fairtree is not None:
            self.fairtree.job_started(job, job.cpus)
        self.counters["started"] += 1
        self._changed()
        if job.job_id in self._watch:
            self._hit = True
        if job.dependents:
            self._on_target_event(job)
        if job.wait_for:
            failed = pending = 0
            for jid in job.wait_for:
                other = self.jobs[jid]
                if not other.state.is_final:
                    pending += 1
                    if other.dependents is None:
                        other.dependents = []
                    other.dependents.append([BARRIER_KIND, job, False])
                elif other.state is not JobState.COMPLETED:
                    failed += 1
            if failed:
                self._plan_end(job, now, JobState.FAILED)
                return
            if pending:
                job.barrier_left = pending
                self._plan_end(job, kill_time(job, self.config), JobState.TIMEOUT)
                return
        self._plan_work(job, now)

    def _plan_work(self, job: SimJob, work_start: float) -> None:
        """The job's real work begins: decide how and when it ends from its hidden truth."""
        job.work_start = work_start
        dist = self.config.launch_delay_dist_s
        delay = None if dist is None else draw_latency(self._latency_rng, dist)
        lag_dist = self.config.oom_kill_lag_dist_s
        lag = 0.0 if lag_dist is None else draw_latency(self._oom_rng, lag_dist)
        t, state = work_end(job, self.config, work_start, delay, lag)
        self._plan_end(job, t, state)

    def _plan_end(self, job: SimJob, t: float, state: JobState) -> None:
        job.token += 1
        self._push(t, EV_END, job, job.token, state)

    def _finish(self, job: SimJob, state: JobState, t: float) -> None:
        part = job.part
        part.release(job.alloc_nodes, job.cpus_per_node, job.mem_per_node_mb, job.slots)
        dist = self.config.epilog_dist_s
        # slurmd's ALREADY_COMPLETE reply (token 1: the pass is only queued) or the epilog message
        reply = self._reply_release(dist is not None)
        if reply:
            epilog = self.config.reply_release_s
        else:
            epilog = self.config.epilog_s if dist is None else draw_latency(self._latency_rng, dist)
        if (state is JobState.TIMEOUT and self.config.timeout_epilog_s is not None
                and t >= kill_time(job, self.config) - 1e-9):
            # killed at the time-limit check (not a clean exit recorded TIMEOUT for ending in a
            # second past its limit, which races as any end): slurmd's _rpc_timelimit finds the
            # step running, so never the reply. The race's draw above is still taken, so the
            # other ends' paths and latencies stay as they were.
            reply, epilog = False, self.config.timeout_epilog_s
        completing = epilog > 0 or reply
        if completing:
            # completing: the cores are free, the nodes are not until the epilog is done (its
            # completion message also runs a main pass)
            part.start_completing(job.alloc_nodes)
            self._push(t + epilog, EV_RELEASE, job, int(reply), (part, list(job.alloc_nodes)))
        job.slots = []
        self._busy_done[part.index] += job.cpus * (t - job.start_time)
        del self._running[job.job_id]
        if self.fairtree is not None:
            self.fairtree.job_ended(job, job.cpus, t)
        job.token += 1
        # No pass at the end itself (none in _slurm_rpc_complete_batch_script, job_complete()):
        # the nodes' return brings it, at once where nothing completes
        self._record_end(job, state, t, pass_now=not completing)

    def _reply_release(self, drawn: bool) -> bool:
        """Whether this end's nodes come back by slurmd's ALREADY_COMPLETE reply."""
        share = self.config.already_complete_share
        self._ends_seen += 1
        return share > 0.0 and takes_reply(share, self._latency_rng if drawn else None, self._ends_seen - 1)

    def _record_end(self, job: SimJob, state: JobState, t: float, pass_now: bool = True) -> None:
        job.state = state
        job.end_time = t
        job.exit_code = 0 if state is JobState.COMPLETED else (
            (job.fail_code or 1) if state is JobState.FAILED else 0)
        job.signal = FAIL_SIGNAL.get(state)
        self.counters["finished"] += 1
        self.final_states[state.value] = self.final_states.get(state.value, 0) + 1
        self._changed()
        if pass_now:
            self._pass_wanted = True
        if job.job_id in self._watch:
            self._hit = True
        if job.dependents:
            self._on_target_event(job)

    # ================================================================== event loop ==========
    def _push(self, t: float, kind: int, obj: object, token: int, extra: object = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, obj, token, extra))

    def _step(self) -> None:
        heap = self._heap
        t = heap[0][0]
        if t > self._now:
            self._now = t
        n = 0
        while heap and heap[0][0] <= t:
            _, _, kind, obj, token, extra = heapq.heappop(heap)
            n += 1
            if kind == EV_END:
                if obj.token == token and obj.state is JobState.RUNNING:
                    self._finish(obj, extra, t)
            elif kind == EV_RELEASE:
                part, nodes = extra
                part.end_completing(nodes)
                self._changed()
                if token:  # slurmd's ALREADY_COMPLETE reply: queue_job_scheduler()
                    self._request_pass()
                else:  # the epilog-complete message: schedule() at once
                    self._pass_wanted = True
            elif kind == EV_ARRIVAL:
                self._background_arrival(extra)
            elif kind == EV_BF:
                self._armed[1] = False
                self._bf_wanted = True
            elif kind == EV_MAIN:
                self._armed[0] = False
                self._full_pass_wanted = True
                self._last_loop_pass = t
            elif kind == EV_LOOP_PASS:
                self._loop_pass_armed = False
                if self._loop_pass_due(t):
                    self._pass_wanted = True
                    self._last_loop_pass = t
            elif kind == EV_PASS:
                self._pass_wanted = True
            elif kind == EV_ELIGIBLE:
                if obj.state is JobState.PENDING and not obj.queued and obj.wait_reason != WAIT_NEVER:
                    obj.wait_reason = None
                    self.sched.enqueue(obj, t)
                    self._changed()
                    self._pass_wanted = True
            elif kind == EV_PRIO:
                self._armed[2] = False
                self._prio_wanted = True
            elif kind == EV_GEN:
                self._generate(t)
        self.counters["events"] += n
        self._run_passes(t)

    # ================================================================== background load =====
    def _generate(self, t: float) -> None:
        chunk_s = 86400.0
        for arrival in self.workload.arrivals(t, t + chunk_s):
            self._push(arrival[0], EV_ARRIVAL, None, 0, arrival)
        self._push(t + chunk_s, EV_GEN, None, 0)

    def _background_arrival(self, arrival: tuple) -> None:
        part = self.parts[arrival[1]]
        nodes, cpus, mem_per_node, limit, runtime = arrival[2:7]
        job = SimJob(self._new_id(), "bg", [part], nodes, cpus, mem_per_node, limit, self._now,
                     runtime, background=True)
        if len(arrival) > 7 and arrival[7] is not None:
            self.trace_ids[arrival[7]] = job.job_id
        self.jobs[job.job_id] = job
        self.counters["background_submitted"] += 1
        if self.fairtree is not None:
            user = arrival[8] if len(arrival) > 8 else None
            job.assoc = self._bg_assoc[user] if user is not None else self.fairtree.assoc("bg", "bg")
        job.eligible_time = self._now
        self.sched.enqueue(job, self._now)
        self._changed()
        self._request_pass()

    def add_trace_job(self, submit_time: float, partition: str, nodes: int, cpus: int,
                      mem_per_node_mb: int, time_limit_s: int, runtime_s: float,
                      origin: int | None = None) -> int | None:
        """Schedule one replayed (SWF) job as background load; None if it cannot fit anywhere."""
        part = self._by_name[partition]
        cpn = -(-cpus // nodes)
        if not part.fits_empty(nodes, cpn, mem_per_node_mb):
            self.counters["swf_skipped"] += 1
            return None
        self._push(max(submit_time, self._now), EV_ARRIVAL, None, 0,
                   (submit_time, part.index, nodes, cpus, mem_per_node_mb, time_limit_s, runtime_s,
                    origin))
        return 1

    # ================================================================== checks ==============
    def check_invariants(self) -> None:
        for part in self.parts:
            part.check_invariants()
        for part in self.parts:
            used_c = [0] * part.n
            used_m = [0] * part.n
            for job in self._running.values():
                if job.part is part:
                    for node in job.alloc_nodes:
                        used_c[node] += job.cpus_per_node
                        used_m[node] += job.mem_per_node_mb
            for node in range(part.n):
                if used_c[node] + part.free_c[node] != part.cores:
                    raise AssertionError(f"{part.name} node {node}: core accounting mismatch")
                if used_m[node] + part.free_m[node] != part.mem:
                    raise AssertionError(f"{part.name} node {node}: memory accounting mismatch")

