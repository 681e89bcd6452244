"""The simulator against a real Slurm 22.05: scenarios recorded on the local cluster, replayed in
``asad.slurm.sim`` with the same nodes, scheduler settings and timer phases.

Record (needs root and the Debian Slurm packages; takes ~20 minutes, one scenario after another)::

    export ASAD_CLUSTER_DIR=/tmp/asad-cluster-simsched ASAD_CLUSTER_PORT_BASE=16900
    asad bench sim-vs-real --record            # all scenarios; or --record --scenario NAME
    asad bench sim-vs-real --record --run 2    # again, as NAME.run2.json: Slurm's noise floor
    asad bench sim-vs-real --record --run 3 --debug-flags Backfill   # slurmctld logs every plan

Recording brings up ``slurm-scripts/local-cluster.sh up --accounting --nodes 5 --cpus 16
--mem 24000`` (``--priority`` as the scenario needs), restarts slurmctld right before each
scenario (so its timers start at a known boot time) with the scenario's priority settings, submits
the jobs at their offsets, follows them to the end, and writes ``tests/data/sim_vs_real/NAME.json``:
the requests, Slurm's configuration (``scontrol show config``) and what Slurm recorded for each job.

Replay (seconds, no cluster)::

    asad bench sim-vs-real                     # every recorded run: tau, same position, start diffs
    asad bench sim-vs-real --ablation          # the same with each part of the model switched back

The replay submits each job at its real submit instant into a simulator whose clock is the real epoch
clock, so that the periodic timers (backfill, main pass, priority recalculation, time-limit check)
have the phase they had in slurmctld.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from asad.bench.sim_vs_real_logs import launch_latencies
from asad.slurm.backend import Dependency, DependencyType, JobRequest, SimTruth

DATA_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "sim_vs_real"
TARGET_TAU = 0.95
TARGET_MEDIAN_S = 2.0


# ====================================================================== replay ================
def _seconds(text: str | None, default: float) -> float:
    if not text:
        return default
    text = text.strip().split()[0]
    if text.isdigit():
        return float(text)
    return default


def _sched_param(params: str, key: str, default: float) -> float:
    for item in (params or "").split(","):
        if item.startswith(key + "="):
            return float(item.split("=", 1)[1])
    return default


# The backfill pass's own length, (base, per eligible pending job) seconds: backfill_agent sleeps
# bf_interval after a pass ends, so the passes' phase moves by each pass's length. Fitted to the
# ten slurmctld.logs kept (tests/data/sim_vs_real/logs, no DebugFlags): between two backfill
# passes that start a job, the phase moved by n x bf_interval + drift over n passes; 222 such
# spans (1,037 passes), least squares of the drift per pass on the mean eligible pending count
# (scripts/sim_bf_drift.py): 0.793 ms + 0.137 ms a pending job (the six logs before the four
# recorded on 2026-11-28: 0.567 + 0.158).
BF_PASS_COST_S = (0.000793, 0.000137)


def bf_thread_timing(params: str, conf: dict) -> dict:
    """The backfill thread's timing for a recording's slurm.conf: bf_interval plus each pass's
    length (BF_PASS_COST_S). Runs with DebugFlags=Backfill (perturbed: logging every plan
    lengthens each pass, set no target) keep the mean drift fitted over their "beginning" lines."""
    interval = _sched_param(params, "bf_interval", 30)
    if "Backfill" in (conf.get("DebugFlags") or ""):
        return {"bf_tick_s": interval + 0.0069}
    return {"bf_tick_s": float(interval), "bf_pass_cost_s": BF_PASS_COST_S}


def scheduler_settings(params: str) -> dict:
    """The simulator's backfill and main-pass settings from a ``SchedulerParameters`` string
    (Slurm's defaults for what it does not name)."""
    return dict(
        bf_interval_s=_sched_param(params, "bf_interval", 30),
        bf_resolution_s=_sched_param(params, "bf_resolution", 60),
        bf_window_s=_sched_param(params, "bf_window", 1440) * 60,
        bf_max_job_test=int(_sched_param(params, "bf_max_job_test", 500)),
        sched_interval_s=_sched_param(params, "sched_interval", 60),
        default_queue_depth=int(_sched_param(params, "default_queue_depth", 100)),
    )


def sim_settings(rec: dict) -> dict:
    """The simulator settings that mirror the recorded slurm.conf (and the timer phases)."""
    conf = rec["slurm_config"]
    params = conf.get("SchedulerParameters") or ""
    multifactor = "multifactor" in (conf.get("PriorityType") or "")
    own = launch_latencies(rec)
    out = dict(
        priority="multifactor" if multifactor else "fifo",
        backfill="slurm",
        **scheduler_settings(params),
        batch_sched_delay_s=_sched_param(params, "batch_sched_delay", 3),
        # microseconds in slurm.conf (Slurm's default 2 us: left out)
        sched_min_interval_s=_sched_param(params, "sched_min_interval", 0) / 1e6,
        node_select="consec",
        # Measured in slurmctld's log of the recorded runs (not fitted to the comparison): from
        # "sched: Allocate"/"Started" to "_job_complete" takes the sleep plus 0.03-0.13 s (median
        # 0.05). A recording with its own slurmctld.log takes the median measured there (0.16-0.23 s
        # in the logs kept: sim_vs_real_logs.py).
        launch_delay_s=LAUNCH_DELAY_S if own is None else own[1],
        # A racing end's nodes come back by slurmd's ALREADY_COMPLETE reply or by the epilog
        # message (config.py, already_complete_share). The fixed replay is the simulator's point
        # estimate: every racing end takes the path slurmd's logs show for most of them, the
        # reply (FIXED_REPLY_SHARE; the lead's decision, docs/results/sim.md "f37m"). The
        # 20-seed draws race at the measured share instead (sim_vs_real_pairs.latency_draws).
        # epilog_s is the measured message delay's median: no racing end of the fixed replay
        # takes it, only a replay that lowers the share (the ablation, scripts' --set).
        epilog_s=EPILOG_MESSAGE_DIST_S[1],
        already_complete_share=FIXED_REPLY_SHARE,
        # A time-limit kill never races (slurmd's _rpc_timelimit finds the step running: the
        # epilog message, config.py timeout_epilog_s), measured in the slurmd.logs kept with the
        # ninth session's recordings (scripts/end_path_direct.py).
        timeout_epilog_s=TIMEOUT_EPILOG_S,
        # The same logs: the background loop's "sched: Allocate" ticks drift 2.2 ms a second,
        # the backfill thread's passes 2.2 ms a pass (bf_interval=2, no DebugFlags; 7 ms with
        # DebugFlags=Backfill, whose logging lengthens each pass: a fit over its "beginning" lines).
        loop_tick_s=LOOP_TICK_S,
        **bf_thread_timing(params, conf),
        oom_time_fraction=0.5,
        # the OOM kill on slurmstepd's sample clock (config.py mem_sample_s; MEM_SAMPLE_S below)
        mem_sample_s=MEM_SAMPLE_S,
        mem_sample_phase_s=MEM_SAMPLE_PHASE_S,
        oom_kill_end_s=OOM_KILL_END_S,
        timer_origin_s=rec["timers"]["loop_start"],
        bf_origin_s=rec["timers"]["backfill_start"],
        # The decay thread starts in priority_g_init() (controller.c), just before slurm_mcs_init()
        # logs the "mcs:" line of loop_start, recalculates at once and then every
        # PriorityCalcPeriod from its start (abs.tv_sec += calc_period, priority_multifactor.c);
        # "slurmctld version ... started" (daemon_start) is 0.7-2.4 s earlier.
        prio_origin_s=rec["timers"]["loop_start"],
        # The loop tick of the first _schedule() (its "SchedulerParameters=" line); recordings
        # without it: tick 5, as measured (the registrations answer the ping of tick 3 ~1 s later)
        first_sched_tick=first_sched_tick(rec["timers"]),
        node_registration_s=node_registration(rec["timers"]),
        # "limits", "safe" or "all" set ACCOUNTING_ENFORCE_LIMITS (read_config.c). Recordings
        # before 2026-11-27 lack the key: the recorder never passed local-cluster.sh --enforce, so
        # their slurm.conf had no AccountingStorageEnforce ("none").
        accounting_enforce_limits=enforce_limits(conf.get("AccountingStorageEnforce")),
        over_time_limit_s=60.0 * _seconds(conf.get("OverTimeLimit"), 0),
        kill_wait_s=_seconds(conf.get("KillWait"), 30),
        warmup_s=0.0,
    )
    if multifactor:
        out.update(weight_age=float(conf.get("PriorityWeightAge") or 0),
                   weight_size=float(conf.get("PriorityWeightJobSize") or 0),
                   max_age_s=_duration_s(conf.get("PriorityMaxAge") or "7-0"),
                   priority_calc_period_s=_duration_s(conf.get("PriorityCalcPeriod") or "00:05:00"),
                   # `scontrol show config` spells it FairShare; recordings before 2026-11-25 kept
                   # the other spelling, which it never prints (None: their scenarios set 0)
                   weight_fairshare=float(conf.get("PriorityWeightFairShare") or 0),
                   decay_half_life_s=_duration_s(conf.get("PriorityDecayHalfLife") or "7-00:00:00"),
                   fairshare_user="root")  # the recorder submits as root (or --uid), in the jobs' accounts
    return out


def enforce_limits(text: str | None) -> bool:
    """Whether an ``AccountingStorageEnforce`` value (``scontrol show config`` lists it
    comma-separated) includes limits: ``limits``, ``safe`` or ``all`` (read_config.c)."""
    words = {w.strip().lower() for w in (text or "").split(",")}
    return bool(words & {"limits", "safe", "all", "2"})


LAUNCH_DELAY_S = 0.05  # start to the program's end beyond its sleep, median, where no log says
# Without the sample clock (MEM_SAMPLE_S None): the OOM kill this long after the program's
# oom_after_s (and launch); 0.46-0.74 s off slurmctld's logged kill instants either side
# (scripts/sim_oom_kill_instants.py), as it sits between two of slurmstepd's samples.
OOM_KILL_LAG_S = 1.5
# slurmstepd's RSS samples, one a second on the step's own clock (config.py mem_sample_s;
# JobAcctGatherFrequency=task=1 in local-cluster.sh's slurm.conf). Read from the slurmd.logs of
# the four runs with OOM kills (scripts/oom_sample_clock.py: ends-deps 4-5, timeouts-oom 4-5,
# 22 kills): the killing sample ("exceeded memory limit") falls 0.017-0.057 s (median 0.037)
# past a whole number of seconds after slurmctld's allocation, and slurmctld's "_job_complete"
# comes 0.019-0.115 s (median 0.049) after it. The recorded program sleeps oom_after_s and then
# fills 2 x --mem: the sample at oom_after_s + 0.04 s found it under the limit in 22 of 22 kills,
# the next over it in 17 (the other 5 one sample later, the fill slower than a second on the
# loaded machine). The replay has the memory pass the limit as the sleep ends (work start +
# oom_after_s), so the kill comes at the first sample after it, as in the 17.
MEM_SAMPLE_S = 1.0
MEM_SAMPLE_PHASE_S = 0.037
OOM_KILL_END_S = 0.049
LOOP_TICK_S = 1.0022
# Each job end's path read from the nodes' slurmd.logs (scripts/end_path_direct.py, the eight
# recordings kept with them: aged-deps 7, ends-deps 4-5, fairshare-users 4, multifactor 8-9,
# timeouts-oom 4-5): of the 424 ends that race (a clean exit, an OOM kill, a clean exit past the
# limit; not a time-limit kill) 407 took slurmd's ALREADY_COMPLETE reply; the other 17 the epilog
# message, 4-33 ms after slurmctld's "_job_complete" (median 9). Per end the race reads no job
# attribute (s37f, r37e), so the 20-seed draws take each end's path independently at this share.
# They replace the indirect 12/18, 0.4 s and 0.08-0.54 s (a main pass on the freed nodes within
# 0.75 s read as the message: that measured the loop's tick, not the path).
REPLY_SHARE = 407 / 424
EPILOG_MESSAGE_DIST_S = (0.004, 0.009, 0.033)
# The fixed replay: every racing end by its most likely path, the reply (REPLY_SHARE > 1/2).
FIXED_REPLY_SHARE = 1.0
# "Time limit exhausted" (slurmctld.log) to the last node's "sent epilog complete msg" (slurmd.log),
# median over the time-limit kills in the recordings kept with slurmd.logs (end_path_direct.py)
TIMEOUT_EPILOG_S = 0.0375
FIRST_SCHED_TICK = 5  # slurmctld.log of aged-deps.run4 (tests/data/sim_vs_real/logs/)


def first_sched_tick(timers: dict) -> int:
    """The background loop's tick of slurmctld's first ``_schedule()`` after its start: from the
    recorded "SchedulerParameters=" line where the recording has it, else ``FIRST_SCHED_TICK``.

    The nearest tick, not the one below: the line is logged at its tick, 5.008-5.046 s after the
    loop's start in the ten kept logs, while ``LOOP_TICK_S`` (a fit of the drift over whole runs)
    puts tick 5 at 5.011 s, so the fifth tick of aged-deps 6 and ties-fifo 3 (5.008 s) fell to 4.
    The first full pass then came a tick early (before the SchedulerParameters line that sets
    sched_interval=5 could be read) and the one Slurm ran at tick 6 was missing from the replay."""
    first = timers.get("first_sched")
    if first is None:
        return FIRST_SCHED_TICK
    return max(1, round((first - timers["loop_start"]) / LOOP_TICK_S))


# The nodes' first registrations after slurmctld's start ("appears to have a different
# slurm.conf" lines, one per node, in seven of the ten kept slurmctld.logs: the answers to the
# background loop's ping) came 0.989-1.001 s (median 0.994) before its first _schedule() (the
# "SchedulerParameters=" line) and 4.010-4.045 s (median 4.024) after the loop's start.
REGISTRATION_BEFORE_FIRST_SCHED_S = 0.994
REGISTRATION_AFTER_LOOP_START_S = 4.024


def node_registration(timers: dict) -> float:
    """When the nodes' registrations reached the recorded slurmctld after its start
    (config.node_registration_s; read by the backfill thread's one-second looks only): a second
    before the first ``_schedule()`` where the recording has it, else after the loop's start."""
    first = timers.get("first_sched")
    if first is not None:
        return first - REGISTRATION_BEFORE_FIRST_SCHED_S
    return timers["loop_start"] + REGISTRATION_AFTER_LOOP_START_S


def _duration_s(text: str) -> float:
    """Slurm's [days-]hh:mm:ss."""
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [int(p) for p in text.split(":")] if text else [0]
    while len(parts) < 3:
        parts.insert(0, 0)
    h, m, s = parts[-3:]
    return days * 86400.0 + h * 3600 + m * 60 + s


def submit_instants(rec: dict) -> dict[str, float]:
    """When each job reached slurmctld, to the sub-second: Slurm records whole seconds, but the
    recorder submitted at ``t0 + submit_s`` and sbatch adds a latency that is nearly constant
    within a run; it is the midpoint of the latencies that agree with every recorded second.
    The sub-second phase matters: slurmctld's timers tick at fixed fractions of a second."""
    t0 = rec.get("t0")
    if t0 is None:
        return {j["label"]: float(j["submit"]) for j in rec["jobs"]}
    lo = max(j["submit"] - t0 - j["submit_s"] for j in rec["jobs"])
    hi = min(j["submit"] + 1 - t0 - j["submit_s"] for j in rec["jobs"])
    latency = (lo + hi) / 2
    return {j["label"]: min(max(t0 + j["submit_s"] + latency, j["submit"]), j["submit"] + 0.999)
            for j in rec["jobs"]}


def _begin(job: dict, submitted: float) -> float | None:
    """The recorded job's ``--begin`` (sbatch takes whole seconds)."""
    after = job.get("begin_after_s")
    return None if after is None else float(math.floor(submitted + after))


def replay(rec: dict, submit_at: dict[str, float] | None = None, *, with_nodes: bool = False,
           **overrides) -> dict[str, dict]:
    """Run the recorded requests through the simulator; per label: start/end/state (and with
    ``with_nodes`` the simulator's node list, "main-0,main-2")."""
    from asad.slurm.sim import PartitionSpec, SimConfig, Simulator

    c = rec["cluster"]
    settings = sim_settings(rec)
    if rec.get("associations"):
        # raw shares as recorded: an account's own row ("" user) and its users' rows
        settings["fairshare_shares"] = {(f"{account}/{user}" if user else account): int(shares)
                                        for account, user, shares in rec["associations"]}
    settings.update(overrides)
    first_submit = min(j["submit"] for j in rec["jobs"])
    sim = Simulator(SimConfig(
        partitions=(PartitionSpec("main", nodes=c["nodes"], cores_per_node=c["cpus"], mem_per_node_mb=c["mem_mb"],
                                  max_time_s=None, default=True),),
        start_time=float(int(first_submit)) - 1.0, **settings))
    if sim.fairtree is not None:
        # root's associations in Slurm's tree order (ties keep it). Root's own association
        # ("root" under the root account) becomes an account "root" with one user here.
        for account, user, _ in rec.get("associations", ()):
            if user:
                sim.fairtree.assoc(user, account)
    ids: dict[str, int] = {}
    at = submit_at or submit_instants(rec)
    for job in sorted(rec["jobs"], key=lambda j: (at[j["label"]], j["job_id"])):
        sim.run_until(at[job["label"]])
        dep = None
        if job["dep_type"]:
            dep = Dependency(DependencyType(job["dep_type"]), tuple(ids[d] for d in job["dep_on"]))
        if job["oom_after_s"] is not None:
            # the program exceeds --mem as its sleep ends; the kill at slurmstepd's next sample
            # (mem_sample_s, sim_settings), or a lag drawn per job (oom_kill_lag_dist_s, the
            # 20-seed figure), or without either OOM_KILL_LAG_S after it
            sampled = settings.get("mem_sample_s") is not None
            lag = 0.0 if sampled or settings.get("oom_kill_lag_dist_s") is not None else OOM_KILL_LAG_S
            oom_at = job["oom_after_s"] + lag
            truth = SimTruth(runtime_s=oom_at / 0.5, peak_mem_mb=2.0 * job["mem_mb"] * job["nodes"])
        else:
            truth = SimTruth(runtime_s=float(job["runtime_s"]), exit_code=int(job["exit_code"] or 0))
        ids[job["label"]] = sim.submit(JobRequest(
            name=job["label"], command="true", partition="main", nodes=job["nodes"], ntasks=job["nodes"],
            cpus_per_task=job["cpus_per_node"], mem_mb=job["mem_mb"], time_limit_s=job["limit_s"],
            dependency=dep, truth=truth, begin=_begin(job, at[job["label"]]), account=job.get("account")),
            user=job.get("user"))  # None: root, as the recorder submitted it
    sim.run_until(first_submit + 3 * 3600)
    out = {}
    for label, jid in ids.items():
        st = sim.poll([jid])[jid]
        # Slurm records whole seconds (time(NULL))
        out[label] = {"start": None if st.start_time is None else float(math.floor(st.start_time)),
                      "end": None if st.end_time is None else float(math.floor(st.end_time)),
                      "state": st.state.value}
        if with_nodes:
            out[label]["nodelist"] = st.nodelist
    return out


# ====================================================================== comparison ============
def kendall_tau(a: list[float], b: list[float]) -> float:
    """Kendall's tau-b of two paired lists (ties allowed)."""
    n = len(a)
    conc = disc = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                conc += 1
            else:
                disc += 1
    denom = ((conc + disc + ties_a) * (conc + disc + ties_b)) ** 0.5
    return (conc - disc) / denom if denom else 1.0


def compare(rec: dict, sim: dict[str, dict]) -> dict:
    real = {j["label"]: j for j in rec["jobs"]}
    both = [lab for lab in real if real[lab]["start"] is not None and sim[lab]["start"] is not None]
    rs = [real[lab]["start"] for lab in both]
    ss = [sim[lab]["start"] for lab in both]
    diffs = sorted(abs(s - r) for r, s in zip(rs, ss))
    rank_r = {lab: i for i, lab in enumerate(sorted(both, key=lambda x: (real[x]["start"], real[x]["job_id"])))}
    rank_s = {lab: i for i, lab in enumerate(sorted(both, key=lambda x: (sim[x]["start"], real[x]["job_id"])))}
    same_pos = sum(rank_r[x] == rank_s[x] for x in both) / len(both) if both else 0.0
    states_same = sum(real[lab]["state"] == sim[lab]["state"] for lab in real) / len(real)
    end_diffs = sorted(abs(sim[lab]["end"] - real[lab]["end"]) for lab in real
                       if real[lab]["end"] is not None and sim[lab]["end"] is not None
                       and real[lab]["start"] is not None)
    median = diffs[len(diffs) // 2] if len(diffs) % 2 else (diffs[len(diffs) // 2 - 1] + diffs[len(diffs) // 2]) / 2
    return {"scenario": rec["scenario"], "jobs": len(real), "started_both": len(both),
            "kendall_tau": round(kendall_tau(rs, ss), 4), "same_position": round(same_pos, 3),
            "median_abs_start_diff_s": round(median, 2), "max_abs_start_diff_s": round(diffs[-1], 2),
            "median_abs_end_diff_s": round(end_diffs[len(end_diffs) // 2], 2) if end_diffs else None,
            "same_final_state": round(states_same, 3),
            "met": kendall_tau(rs, ss) >= TARGET_TAU and median <= TARGET_MEDIAN_S}


def recording_path(name: str, run: int) -> Path:
    """Run 1 of a scenario is ``NAME.json``; further recordings of it are ``NAME.runN.json``."""
    return DATA_DIR / (f"{name}.json" if run == 1 else f"{name}.run{run}.json")


def compare_runs(first: dict, second: dict) -> dict:
    """Two real runs of one scenario against each other (Slurm's own noise floor): the second
    run's starts, shifted to the first run's clock, in place of the simulator's."""
    shift = min(j["submit"] for j in first["jobs"]) - min(j["submit"] for j in second["jobs"])
    other = {j["label"]: {"start": None if j["start"] is None else j["start"] + shift,
                          "end": None if j["end"] is None else j["end"] + shift, "state": j["state"]}
             for j in second["jobs"]}
    return compare(first, other)


def load_recordings(names: list[str] | None = None) -> list[dict]:
    """Every recorded run, each with ``run`` (1 for ``NAME.json``) and ``id`` (the file's stem)."""
    out = []
    for path in sorted(DATA_DIR.glob("*.json")):
        rec = json.loads(path.read_text())
        if names and rec["scenario"] not in names:
            continue
        rec.setdefault("run", 1)
        rec["id"] = path.stem
        out.append(rec)
    return out


def table(results: list[dict]) -> str:
    lines = ["| scenario | run | against | jobs | Kendall tau | same position | median / max abs start diff (s) | "
             "median abs end diff (s) | same final state | target met |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        lines.append(f"| {r['scenario']} | {r.get('run', 1)} | {r.get('against', 'simulator')} | {r['jobs']} | "
                     f"{r['kendall_tau']:.3f} | {r['same_position']:.2f} | "
                     f"{r['median_abs_start_diff_s']:.1f} / {r['max_abs_start_diff_s']:.0f} | "
                     f"{r['median_abs_end_diff_s']} | {r['same_final_state']:.2f} | "
                     f"{'met' if r['met'] else 'not met'} |")
    return "\n".join(lines)


def noise_floor(recs: list[dict]) -> list[dict]:
    """Every later run of a scenario against its first run: how far Slurm is from itself."""
    first: dict[str, dict] = {}
    out = []
    for rec in sorted(recs, key=lambda r: (r["scenario"], r["run"])):
        if rec["scenario"] not in first:
            first[rec["scenario"]] = rec
            continue
        got = compare_runs(first[rec["scenario"]], rec)
        got.update(run=rec["run"], against=f"real run {first[rec['scenario']]['run']}")
        out.append(got)
    return out


# What each part of the model is worth: the replay with one part switched back at a time.
ABLATIONS: dict[str, dict] = {
    "full model": {},
    "will_run=exact (earliest instant, no batches)": {"will_run": "exact"},
    # every end frees its nodes at once with a pass (no reply, no message delay, no kill's message)
    "no completing phase (epilog_s=0, no reply)": {"epilog_s": 0.0, "already_complete_share": 0.0,
                                                   "timeout_epilog_s": None},
    "launch_delay_s=0.5 (the earlier guess)": {"launch_delay_s": 0.5},
    "no timer drift (1 s loop, bf_interval)": {"loop_tick_s": 1.0, "bf_tick_s": None, "bf_pass_cost_s": None},
    "bf_poll (one-second looks when nothing changed)": {"bf_poll": True, "bf_plan_all": True},
    "submissions at the recorded whole second": {"_stamps": True},
    "EASY backfill, best fit, main pass at submission": {"backfill": "easy", "node_select": "bestfit",
                                                          "batch_sched_delay_s": None},
    "no fair-share (PriorityWeightFairShare=0)": {"weight_fairshare": 0.0},
    "every end by the epilog message (no ALREADY_COMPLETE reply)": {"already_complete_share": 0.0},
}


def ablation(recs: list[dict]) -> str:
    lines = ["| variant | " + " | ".join(r["id"] for r in recs) + " | mean tau |",
             "|---|" + "---:|" * (len(recs) + 1)]
    for name, over in ABLATIONS.items():
        over = dict(over)
        stamps = over.pop("_stamps", False)
        cells, taus = [], []
        for rec in recs:
            at = {j["label"]: float(j["submit"]) for j in rec["jobs"]} if stamps else None
            got = compare(rec, replay(rec, submit_at=at, **over))
            taus.append(got["kendall_tau"])
            cells.append(f"{got['kendall_tau']:.3f} / {got['median_abs_start_diff_s']:.0f} s")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {sum(taus) / len(taus):.3f} |")
    return "\n".join(lines)
