"""Configuration of a simulated cluster: partitions, scheduler knobs, background load."""

from __future__ import annotations

from dataclasses import dataclass, field

# 2021-05-03T00:00:00Z, a Monday: the daily and weekly load cycles line up with real dates.
DEFAULT_START_TIME = 1620000000.0


@dataclass(frozen=True)
class PartitionSpec:
    """One partition of identical nodes. Nodes belong to exactly one partition."""

    name: str
    nodes: int
    cores_per_node: int
    mem_per_node_mb: int
    max_time_s: int | None = 7 * 86400  # None = UNLIMITED
    max_nodes: int | None = None  # per job; None = all nodes of the partition
    default: bool = False
    # True run time is divided by this (2.0 = nodes twice as fast); time limits are not scaled.
    speed: float = 1.0
    load: float = 0.0  # this partition's default offered background load (0 = none)

    @property
    def def_mem_per_cpu_mb(self) -> int:
        """Slurm's DefMemPerCPU, taken as an even share of a node's memory."""
        return max(1, self.mem_per_node_mb // self.cores_per_node)

    @property
    def total_cpus(self) -> int:
        return self.nodes * self.cores_per_node


@dataclass(frozen=True)
class SimConfig:
    partitions: tuple[PartitionSpec, ...]
    start_time: float = DEFAULT_START_TIME
    max_array_size: int = 1001  # Slurm's MaxArraySize (array indices stay below it)
    seed: int = 0
    priority: str = "fifo"  # "fifo" (priority/basic) or "multifactor"
    # "slurm": sched/backfill as Slurm 22.05 runs it (a planned start for every job it tests);
    # "easy": reservations for the first ``bf_reservations`` blocked jobs only; "none".
    backfill: str = "slurm"
    # EASY only: reservations for the first K blocked jobs in each partition (1 = EASY).
    bf_reservations: int = 1
    bf_interval_s: float = 30.0  # slurm.conf SchedulerParameters=bf_interval
    bf_max_job_test: int = 500  # bf_max_job_test: backfill looks at most this deep into the queue
    bf_resolution_s: float = 60.0  # bf_resolution: planned starts/ends are rounded down to this
    bf_window_s: float = 86400.0  # bf_window: no plans for starts later than this ahead
    # How a blocked job's planned start is found. "slurm": as select/cons_tres's will-run test
    # does it: running jobs are taken away in batches by end time (windows of 30 s, aligned to
    # 30 s, then doubling), and the start is the last end of the batch after which the job fits;
    # the plan is retried from the next instant a planned node comes free. "exact": the earliest
    # instant at which enough nodes are free of running jobs and plans.
    will_run: str = "slurm"
    # Plan every tested job, as slurmctld does (and logs with DebugFlags=Backfill), instead of
    # only those a later start depends on: slower, and it changes no start (for comparisons).
    bf_plan_all: bool = False
    sched_interval_s: float = 60.0  # full main pass (sched_interval)
    default_queue_depth: int = 100  # jobs tested by an event-triggered main pass
    # Node choice: "consec" = select/cons_tres's default (runs of consecutive nodes, tightest run);
    # "bestfit" = the nodes with the fewest free cores.
    node_select: str = "consec"
    # A submission asks for a main pass that slurmctld's background loop (a tick every second)
    # runs once batch_sched_delay has passed since its last one; None = a main pass at once.
    batch_sched_delay_s: float | None = None
    # SchedulerParameters=sched_min_interval (microseconds in slurm.conf; seconds here): every main
    # pass, the loop's and the epilog message's alike, goes through _sched_agent (job_scheduler.c),
    # which runs _schedule() only once more than this has passed since the last one ended; the
    # requests meanwhile merge into one pass then. Slurm's default is 2 us: 0 leaves it out.
    sched_min_interval_s: float = 0.0
    # slurmctld's first _schedule() after its start, as a tick of its background loop counted from
    # timer_origin_s (None: the loop has long been running). Until that first pass reads
    # SchedulerParameters, the loop tests its full passes against the compiled-in sched_interval
    # (60 s); the pass itself is asked for by the nodes' registrations, which answer the loop's
    # ping at tick 3 a second later: tick 5 (slurmctld.log of the local cluster). See
    # controller_loop.py, ``FullPasses``.
    first_sched_tick: int | None = None
    # A job that waited for a dependency or a --begin keeps the priority of its submission (or of
    # the last recalculation since) when it becomes eligible, as in Slurm (Scheduler.held_priority);
    # False: recomputed then, with its age.
    held_priority: bool = True
    # slurmctld's periodic timers (backfill, main pass, priority recalculation, time-limit check)
    # tick at timer_origin_s + k * interval: the daemon's boot time sets their phase.
    timer_origin_s: float = 0.0
    # The real length of slurmctld's timer periods: its background loop sleeps 10 x 100 ms
    # between ticks (a little over a second: the sleeps overshoot), so the loop's timers (main
    # passes, time-limit checks) drift against the clock; the backfill thread sleeps bf_interval
    # after a pass, which takes time too. None: the nominal 1 s and bf_interval.
    loop_tick_s: float = 1.0
    bf_tick_s: float | None = None
    # The backfill pass's own length, (base, per pending job) seconds. backfill_agent sleeps
    # bf_interval after a pass *ends* (last_backfill_time = time(NULL) after _attempt_backfill,
    # backfill.c), so a pass's length moves every later pass: with this set, the thread's next
    # pass comes bf_tick_s (or bf_interval) + base + per_job x the jobs eligible at this pass after
    # it, instead of on the fixed grid bf_origin_s + k x bf_tick_s. A pass skipped because nothing
    # changed stands for one that would find the same answer and costs the same. None: the grid.
    bf_pass_cost_s: tuple[float, float] | None = None
    # The backfill thread as slurmctld runs it (_backfill_agent): after a pass it sleeps
    # bf_interval, then runs a pass if anything changed in or after the second the last pass
    # ended (_more_work), else looks again a second later: the passes' phase moves by a second
    # after a quiet spell. What counts as a change: a submission (dependent jobs too), a start,
    # an end, a node's return, the decay thread's run, a main pass that passes over jobs behind
    # a blocked partition, a backfill pass that planned a job on a node running none (PLANNED,
    # also at the next pass, which clears it: every plan is known only with bf_plan_all, as in
    # slurmctld), and the nodes' registrations after slurmctld's start (node_registration_s).
    # False: passes on a fixed bf_interval grid, skipped when nothing changed (cheaper: no event
    # every second).
    bf_poll: bool = False
    # bf_poll only: when the nodes' first registrations reach a freshly started slurmctld (they
    # answer the background loop's ping; validate_node_specs sets last_node_update, node_mgr.c).
    # It is the idle thread's first update after its start-up pass, so the first look after it
    # runs a pass and the next second has none (backfill_agent sleeps bf_interval after a pass).
    # None: a daemon long up (no such update).
    node_registration_s: float | None = None
    bf_origin_s: float | None = None  # the backfill thread's own phase (None: timer_origin_s)
    prio_origin_s: float | None = None  # the priority recalculation's phase (None: timer_origin_s)
    time_limit_check_s: float = 30.0  # PERIODIC_TIMEOUT: how often slurmctld checks time limits
    over_time_limit_s: float = 0.0  # OverTimeLimit (in seconds here; minutes in slurm.conf)
    kill_wait_s: float = 30.0  # KillWait: backfill's guess of when a job past its limit is gone
    priority_calc_period_s: float = 300.0  # PriorityCalcPeriod (multifactor only)
    weight_age: float = 1000.0  # PriorityWeightAge
    weight_size: float = 100.0  # PriorityWeightJobSize
    max_age_s: float = 7 * 86400.0  # PriorityMaxAge
    priority_favor_small: bool = False  # PriorityFavorSmall
    priority_flags: tuple[str, ...] = ()  # PriorityFlags: ACCRUE_ALWAYS, SMALL_RELATIVE_TO_TIME
    # AccountingStorageEnforce includes ``limits`` (or ``safe``, ``all``): a dependency then resets
    # a job's accrue time (priority.py), and a job's end charges its fair-share usage since the
    # decay thread's last run (fairshare.py). Slurm's default (no enforcement) does neither.
    accounting_enforce_limits: bool = False
    # Fair-share (Fair Tree, see fairshare.py): PriorityWeightFairshare (0 = off) and
    # PriorityDecayHalfLife. Shares are equal (FairShare=1) unless ``fairshare_shares`` names an
    # account ("a017") or a user association ("a017/u0042") with other raw shares.
    weight_fairshare: float = 0.0
    decay_half_life_s: float = 7 * 86400.0
    fairshare_shares: dict[str, int] | None = None
    # Jobs submitted through ``submit`` belong to this user, in JobRequest.account or this account.
    fairshare_user: str = "asad"
    fairshare_account: str = "asad"
    # Between the start slurmctld records and the job's program running (launch, prolog); the
    # local cluster's recorded runs show it is under a second.
    launch_delay_s: float = 0.0
    # Between a job's recorded end and its nodes coming back: slurmd's epilog and its
    # epilog-complete message, which also triggers a main pass. Until then the nodes are
    # completing: nothing starts on them.
    epilog_s: float = 0.0
    # The other way an ended job's nodes come back (issue 37). With no Epilog configured, slurmd
    # answers slurmctld's REQUEST_TERMINATE_JOB with ESLURMD_KILL_JOB_ALREADY_COMPLETE when none of
    # the job's steps is left (_rpc_terminate_job, slurmd/req.c: the batch step's slurmstepd
    # already gone); slurmctld's agent then marks the nodes idle on that reply and only queues a
    # main pass (queue_job_scheduler, agent.c): the background loop's next batch pass, not the
    # immediate schedule() of an epilog-complete message (_slurm_rpc_epilog_complete). Which of
    # the two happens is a race between slurmstepd's exit and slurmctld's kill request. The share
    # of ends that take the reply: with per-job draws (epilog_dist_s) each end takes it with this
    # probability; without them, the ends take it in an evenly spread sequence (end k when
    # floor((k + 1) * share) > floor(k * share); 1.0 = every end). 0.0 = every end by the
    # epilog message (the presets). The replays of recorded runs (asad/bench/sim_vs_real.py) set
    # 1.0 for the fixed replay (each racing end by its most likely path) and draw at the share
    # read from slurmd's logs (407 of 424 racing ends, 0.960) in the 20-seed figure.
    # ``reply_release_s``: end to reply (slurmctld.log: the backfill thread started jobs on such
    # nodes 0.04 s after the "_job_complete" line).
    already_complete_share: float = 0.0
    reply_release_s: float = 0.03
    # A job killed at its time limit takes no part in that race (issue 37, ninth session): slurmctld
    # sends REQUEST_KILL_TIMELIMIT, whose handler in slurmd (_rpc_timelimit, slurmd/req.c) signals
    # the running step and then runs _rpc_terminate_job with the connection already closed, so
    # the nodes always come back by the epilog-complete message (a schedule() at once), after the
    # step is gone. Seconds from the time-limit end to that message; None: such ends race like
    # the others (the presets).
    timeout_epilog_s: float | None = None
    # Per-job latencies instead of the fixed values above (issue 37): each job's launch delay and
    # epilog drawn from (min, median, max): half the draws uniform in [min, median], half in
    # [median, max], so the measured range and median hold. A fixed latency makes the simulator
    # agree with itself at tau ~1 where Slurm does not; ``latency_seed`` picks the draws (its own
    # generator: the background load's draws stay as they were).
    launch_delay_dist_s: tuple[float, float, float] | None = None
    epilog_dist_s: tuple[float, float, float] | None = None
    latency_seed: int = 0
    oom_time_fraction: float = 0.5  # an OOM kill happens at this fraction of the true run time
    # The OOM kill's lag after the program passes its memory limit, drawn per job from (min,
    # median, max) like the latencies above (its own generator, seeded by latency_seed: the
    # other draws stay as they were). jobacct_gather/linux with OverMemoryKill samples the
    # step's RSS every JobAcctGatherFrequency and kills the step at the first sample over the
    # limit (slurmstepd), so the lag is the allocation's time plus the wait for the next sample
    # and the kill's report: it varies from job to job and run to run (the machine's load).
    # None: no lag beyond runtime x oom_time_fraction.
    oom_kill_lag_dist_s: tuple[float, float, float] | None = None
    # The over-memory check's own clock (issue 37, f37m), where the kill is slurmstepd's check and
    # not the kernel's (JobAcctGatherParams=OverMemoryKill, jobacct_gather/linux, no cgroup).
    # Slurm 22.05.8's _timer_thread (common/slurm_acct_gather_profile.c) takes gettimeofday()
    # once when the step starts and then wakes every whole second on that sub-second phase
    # (abs.tv_sec += 1), each wake an RSS sample (_watch_tasks -> jag_common_poll_data ->
    # jobacct_gather_handle_mem_limit, which asks slurmctld to SIGKILL the step). So the kill
    # falls at the first sample, start + mem_sample_phase_s + k * mem_sample_s, at or after the
    # memory passes the limit, and the job's end oom_kill_end_s after it. None: the kill at the
    # passing plus the lag above (the presets; the 20-seed draws, whose lag is measured whole).
    mem_sample_s: float | None = None
    mem_sample_phase_s: float = 0.0
    oom_kill_end_s: float = 0.0
    # A job submitted without SimTruth runs for this fraction of its time limit and completes.
    untruthed_runtime_fraction: float = 0.5
    # Background load: per-partition base loads (None = each partition's spec.load).
    load: dict[str, float] | None = None
    # Steps in load over time: (seconds after start_time, multiplier of the base load).
    load_steps: tuple[tuple[float, float], ...] = ()
    daily_cycle: bool = True
    # Background jobs start this long before start_time so that t0 meets a busy cluster.
    warmup_s: float = 86400.0
    load_table: str | None = None
    swf: str | None = None  # an SWF trace to replay from start_time (on top of any load)  # path to a load table CSV; None = the packaged one
    first_job_id: int = 1
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def fairshare(self) -> bool:
        """Fair-share counts: multifactor with a non-zero PriorityWeightFairshare."""
        return self.priority == "multifactor" and self.weight_fairshare > 0

    def base_load(self, spec: PartitionSpec) -> float:
        if self.load is not None and spec.name in self.load:
            return float(self.load[spec.name])
        return spec.load

    def validate(self) -> None:
        if not self.partitions:
            raise ValueError("a simulated cluster needs at least one partition")
        names = [p.name for p in self.partitions]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate partition names: {names}")
        if self.priority not in ("fifo", "multifactor"):
            raise ValueError(f"priority must be 'fifo' or 'multifactor', got {self.priority!r} "
                             "(make_simulator(priority='fairshare') is multifactor with fair-share)")
        if self.backfill not in ("slurm", "easy", "none"):
            raise ValueError(f"backfill must be 'slurm', 'easy' or 'none', got {self.backfill!r}")
        if self.will_run not in ("slurm", "exact"):
            raise ValueError(f"will_run must be 'slurm' or 'exact', got {self.will_run!r}")
        if self.node_select not in ("consec", "bestfit"):
            raise ValueError(f"node_select must be 'consec' or 'bestfit', got {self.node_select!r}")
        if self.bf_resolution_s <= 0 or self.bf_interval_s <= 0 or self.sched_interval_s <= 0:
            raise ValueError("bf_resolution_s, bf_interval_s and sched_interval_s must be positive")
        if self.bf_pass_cost_s is not None and (len(self.bf_pass_cost_s) != 2 or min(self.bf_pass_cost_s) < 0):
            raise ValueError(f"bf_pass_cost_s must be (base seconds, seconds per pending job), neither negative; "
                             f"got {self.bf_pass_cost_s!r}")
        unknown_flags = set(self.priority_flags) - {"ACCRUE_ALWAYS", "SMALL_RELATIVE_TO_TIME"}
        if unknown_flags:
            raise ValueError(f"unknown priority_flags {sorted(unknown_flags)}; known: ACCRUE_ALWAYS, "
                             "SMALL_RELATIVE_TO_TIME")
        if self.weight_fairshare < 0 or self.decay_half_life_s < 0:
            raise ValueError("weight_fairshare and decay_half_life_s must not be negative")
        if any(int(v) < 0 for v in (self.fairshare_shares or {}).values()):
            raise ValueError("fairshare_shares must not be negative")
        if self.bf_reservations < 1:
            raise ValueError("bf_reservations must be at least 1")
        for name in ("launch_delay_dist_s", "epilog_dist_s", "oom_kill_lag_dist_s"):
            dist = getattr(self, name)
            if dist is not None and (len(dist) != 3 or not 0 <= dist[0] <= dist[1] <= dist[2]):
                raise ValueError(f"{name} must be (min, median, max) with 0 <= min <= median <= max, got {dist!r}")
        if not 0.0 <= self.already_complete_share <= 1.0 or self.reply_release_s < 0:
            raise ValueError("already_complete_share must be in [0, 1] and reply_release_s not negative")
        if self.timeout_epilog_s is not None and self.timeout_epilog_s < 0:
            raise ValueError("timeout_epilog_s must not be negative")
        if self.mem_sample_s is not None and (self.mem_sample_s <= 0 or self.mem_sample_phase_s < 0
                                              or self.oom_kill_end_s < 0):
            raise ValueError("mem_sample_s must be positive, mem_sample_phase_s and oom_kill_end_s not negative")
        if not 0.0 < self.oom_time_fraction <= 1.0:
            raise ValueError("oom_time_fraction must be in (0, 1]")
        for spec in self.partitions:
            if spec.nodes < 1 or spec.cores_per_node < 1 or spec.mem_per_node_mb < 1:
                raise ValueError(f"partition {spec.name!r}: nodes, cores and memory must be positive")
            if spec.speed <= 0:
                raise ValueError(f"partition {spec.name!r}: speed must be positive")
            if self.base_load(spec) < 0:
                raise ValueError(f"partition {spec.name!r}: load must not be negative")
        if self.load is not None:
            unknown = set(self.load) - set(names)
            if unknown:
                raise ValueError(f"load given for unknown partitions {sorted(unknown)}; have {names}")
