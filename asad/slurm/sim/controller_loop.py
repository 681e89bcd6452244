"""slurmctld's loops and timers, as the simulator keeps them: which pass (main, backfill, the
priority decay) runs when, on the grid of ticks slurmctld's threads keep (controller.c,
backfill.c, priority_multifactor.c). A mixin of :class:`asad.slurm.sim.simulator.Simulator`,
whose event loop (``_step``) sets the ``_*_wanted`` flags these methods read."""

from __future__ import annotations

import math

from asad.slurm.sim.limit_checks import LimitChecks, first_full_pass
from asad.slurm.sim.ticks import next_tick, tick_at_or_after

# the simulator's event kinds (its heap holds (time, kind, ...))
EV_END, EV_ELIGIBLE, EV_ARRIVAL, EV_GEN, EV_MAIN, EV_BF, EV_PRIO, EV_PASS, EV_LOOP_PASS, EV_RELEASE = range(10)


class ControllerLoop:
    """The passes and timers half of the simulator (its state lives on the simulator)."""

    def _run_passes(self, now: float) -> None:
        sched = self.sched
        if self._prio_wanted:
            self._prio_wanted = False
            if self.fairtree is not None:
                self.fairtree.run(now)  # the decay thread: usage, then Fair Tree, then priorities
            sched.recalc_priorities(now)
            self._changed()  # new priorities: backfill must look again
        if (self._full_pass_wanted or self._pass_wanted) and self._sched_agent_waits(now):
            pass  # the request stays: the pass runs at the EV_PASS _sched_agent_waits pushed
        elif self._full_pass_wanted:
            self._full_pass_wanted = self._pass_wanted = False
            self._last_main_pass = now
            sched.main_pass(None)
            self._note_failed_partitions(now)
        elif self._pass_wanted:
            self._pass_wanted = False
            self._last_main_pass = now
            sched.main_pass(self.config.default_queue_depth)
            self._note_failed_partitions(now)
        if self._bf_wanted:
            self._bf_wanted = False
            cfg = self.config
            if cfg.backfill != "none" and cfg.bf_poll:
                # _more_work: an update in or after the second the last pass ended
                last_change = self._last_change_t
                if cfg.node_registration_s is not None and cfg.node_registration_s <= now:
                    last_change = max(last_change, cfg.node_registration_s)
                if last_change > -math.inf and (self._last_bf_end == -math.inf or math.floor(
                        last_change) >= math.floor(self._last_bf_end)):
                    length = 0.0 if cfg.bf_pass_cost_s is None else self._bf_pass_length(cfg.bf_pass_cost_s)
                    sched.backfill_pass(now)
                    self._bf_changes_seen = self._changes
                    self._last_bf_end = now
                    # _attempt_backfill marks the nodes of its plans that run no job PLANNED at
                    # its end and clears the marks at the next pass's start, each time setting
                    # last_node_update (_handle_planned, backfill.c): the next look has work
                    planned = self._plans_on_idle_nodes()
                    if planned or self._bf_planned or self._plans_later(now):
                        self._last_change_t = now
                    self._bf_planned = planned
                    self._bf_next = now + (cfg.bf_interval_s if cfg.bf_tick_s is None else cfg.bf_tick_s) + length
                else:
                    self.counters["backfill_skipped_unchanged"] += 1
                    self._bf_next = now + 1.0
            elif cfg.backfill != "none":
                if cfg.bf_pass_cost_s is not None:
                    # measured before the pass: the jobs it tests
                    tick = cfg.bf_interval_s if cfg.bf_tick_s is None else cfg.bf_tick_s
                    self._bf_next = now + tick + self._bf_pass_length(cfg.bf_pass_cost_s)
                if self._changes == self._bf_changes_seen:
                    # Nothing started, ended or arrived since the last pass: it would find
                    # exactly the same answer, so keep its reservations.
                    self.counters["backfill_skipped_unchanged"] += 1
                else:
                    sched.backfill_pass(now)
                    self._bf_changes_seen = self._changes
        self._arm_timers(now)

    def _note_failed_partitions(self, now: float) -> None:
        """After a main pass: _schedule() sets last_job_update for every job it passes over
        because a higher one blocked its partition (_failed_partition, job_scheduler.c), so a
        pass that leaves jobs pending behind a blocked one is work for the backfill thread's
        next look (bf_poll only reads it)."""
        sched = self.sched
        if sched.blockers and sched.eligible_count > len(sched.blockers):
            self._last_change_t = now

    def _plans_later(self, now: float) -> bool:
        """Whether the backfill pass just made planned a pending job later than the running jobs
        alone would let it start on the plan's nodes: a plan held back by another plan.
        _attempt_backfill clears every pending job's start_time (_clear_job_estimates); the
        will-run test on the nodes free of plans at start_res sets start_time to when the running
        jobs there leave room (select's _will_run_test ignores plans), and ``if (start_res >
        job_ptr->start_time)`` sets last_job_update = now (backfill.c, 22.05.8). A plan set by a
        running job's end sets nothing (multifactor 7: passes 7 s apart while m21 pended); one held
        back by a higher job's plan does, so the next look has work. fairshare-users 5's
        debug-level log: a pass every 2 s, no look skipped, while u04 waited behind u29's plan.
        A plan a second ahead because its nodes are still completing (start_time = now + 1 after
        that test) sets nothing: left out. One partition only (node numbers are the partition's).
        start_res is now or, after TRY_LATER, a plan segment's end: another plan's start or end.
        A plan elsewhere is the will-run answer itself, which may lie past the single running end
        that makes room (the walk answers its batch's last end: cons_common _will_run_test), and
        sets nothing (c37p: multifactor 8's m21, planned alone at m47's end, 145.8 s, room at
        137.8 s by the single ends; Slurm skipped looks there)."""
        if len(self.sched.parts) != 1:
            return False
        part = self.sched.parts[0]
        later = [r for r in part.reservations if r.start > now and r.start != now + 1.0]
        if not later:
            return False
        ends: dict[int, list[tuple[float, int, int]]] = {}
        for job in self._running.values():
            for node in job.alloc_nodes:
                ends.setdefault(node, []).append(
                    (job.start_time + job.time_limit_s, job.cpus_per_node, job.mem_per_node_mb))
        for res in later:
            # a segment edge of another plan within the half second Slurm's whole seconds blur
            if not any(abs(res.start - t) <= 0.5 for o in part.reservations if o is not res
                       for t in (o.start, o.end)):
                continue
            room_at = now  # when every node of the plan has room, running jobs' expected ends only
            for node in res.nodes:
                cores, mem, t = int(part.np_free_c[node]), int(part.np_free_m[node]), now
                for end, c, m in sorted(ends.get(node, ())):
                    if cores >= res.cores and mem >= res.mem_mb:
                        break
                    cores, mem, t = cores + c, mem + m, end
                room_at = max(room_at, t)
            if res.start > room_at + 0.5:  # Slurm compares whole seconds
                return True
        return False

    def _plans_on_idle_nodes(self) -> bool:
        """Whether the backfill pass just made planned a job on a node that runs no job (the
        nodes _handle_planned marks PLANNED: those not allocated). Every plan is there with
        config.bf_plan_all, as in slurmctld; without it only the plans a start depended on."""
        for part in self.sched.parts:
            free = part.np_free_c
            for res in part.reservations:
                for node in res.nodes:
                    if free[node] == part.cores:
                        return True
        return False

    def _sched_agent_waits(self, now: float) -> bool:
        """Whether a main pass asked for now must wait for sched_min_interval: _sched_agent
        (job_scheduler.c) runs ``_schedule()`` once ``delta_t > sched_min_interval`` since the last
        one ended, else sleeps on its condition until then (the requests meanwhile merge). If so,
        the pass is put on the heap for that instant."""
        wait = self.config.sched_min_interval_s
        due = self._last_main_pass + wait
        if wait <= 0 or now >= due:
            return False
        self._push(due, EV_PASS, None, 0)
        return True

    def _bf_pass_length(self, cost: tuple[float, float]) -> float:
        """How long the backfill pass at hand takes (config.bf_pass_cost_s): its base plus a share
        per job it tests, the eligible pending ones."""
        return cost[0] + cost[1] * self.sched.eligible_count

    def _changed(self) -> None:
        self._changes += 1
        self._last_change_t = self._now

    def _arm_timers(self, now: float) -> None:
        """Put slurmctld's periodic timers back on the event heap once there is work for them.
        They are left off while nothing is eligible (a tick would find nothing to do), on the
        same grid of ticks, so arming must follow every change that makes a job eligible."""
        sched = self.sched
        cfg = self.config
        origin = cfg.timer_origin_s
        # The decay thread runs every PriorityCalcPeriod. Without fair-share it only matters to
        # pending jobs; with it, also while jobs run (their usage is added run by run). When
        # nothing runs or pends, skipping runs changes nothing: usage then only decays, by
        # decay_factor ** (total time) either way, and a uniform decay keeps every ratio.
        if (not self._armed[2] and cfg.priority == "multifactor"
                and (sched.eligible_count or (self.fairtree is not None and self._running))):
            self._armed[2] = True
            prio_origin = origin if cfg.prio_origin_s is None else cfg.prio_origin_s
            self._push(next_tick(now, cfg.priority_calc_period_s, prio_origin), EV_PRIO, None, 0)
        if cfg.bf_poll and not self._armed[1] and cfg.backfill != "none":
            # the thread looks whether or not anything is eligible: its phase depends on it
            self._armed[1] = True
            t = self._bf_next
            if t is None:
                t = self._bf_idle_thread(now, origin if cfg.bf_origin_s is None else cfg.bf_origin_s)
            if t <= now:
                t += math.floor(now - t) + 1.0
            self._push(t, EV_BF, None, 0)
        if sched.eligible_count:
            if not self._armed[0]:
                self._armed[0] = True
                if cfg.first_sched_tick is None:
                    t = next_tick(now, cfg.sched_interval_s * cfg.loop_tick_s, origin)
                else:
                    t = self._full_passes().next_after(now)
                self._push(t, EV_MAIN, None, 0)
            if not self._armed[1] and cfg.backfill != "none":
                self._armed[1] = True
                bf_origin = origin if cfg.bf_origin_s is None else cfg.bf_origin_s
                bf_tick = cfg.bf_interval_s if cfg.bf_tick_s is None else cfg.bf_tick_s
                if cfg.bf_pass_cost_s is None or self._bf_next is None:
                    t = next_tick(now, bf_tick, bf_origin)
                else:
                    # the thread went on while nothing was eligible: passes of no jobs (base only)
                    t = self._bf_next
                    if t <= now:
                        step = bf_tick + cfg.bf_pass_cost_s[0]
                        t += (math.floor((now - t) / step) + 1) * step
                self._push(t, EV_BF, None, 0)

    def _bf_idle_thread(self, now: float, origin: float) -> float:
        """bf_poll: where the backfill thread stands at the simulator's first event, having
        looked once a second (on ``origin``'s phase) since slurmctld's start with no event to
        see: if the nodes' registrations (config.node_registration_s) came before ``now``, its
        first look after them ran a pass (_more_work: last_node_update), so its next look is
        bf_interval after that pass, not a second later. Returns the next look on or after that."""
        cfg = self.config
        reg = cfg.node_registration_s
        if reg is None:
            return origin
        first = origin + max(0.0, math.ceil(reg - origin - 1e-9))  # the first look at or after it
        if first >= now:
            return origin  # the looks from here on see it (_run_passes)
        self._last_bf_end = first
        tick = cfg.bf_interval_s if cfg.bf_tick_s is None else cfg.bf_tick_s
        base = 0.0 if cfg.bf_pass_cost_s is None else cfg.bf_pass_cost_s[0]  # a pass of no jobs
        return first + tick + base

    def _full_passes(self) -> LimitChecks:
        """The full main passes' ticks after slurmctld's start (config.first_sched_tick)."""
        cfg = self.config
        if self._full_grid is None:
            first = first_full_pass(cfg.timer_origin_s, cfg.loop_tick_s, cfg.first_sched_tick,
                                    int(round(cfg.sched_interval_s)))
            self._full_grid = LimitChecks(first, cfg.loop_tick_s, int(round(cfg.sched_interval_s)))
        return self._full_grid

    def _loop_pass_due(self, t: float) -> bool:
        """At a batch pass's tick: whether it runs. A full pass since it was asked for zeroed
        ``job_sched_cnt`` (controller.c): the request is dropped, or, if another came after that
        full pass, due ``batch_sched_delay`` after it."""
        cfg = self.config
        if cfg.first_sched_tick is None or self._armed_from is None:
            return True
        full = self._full_passes().last_at_or_before(t)
        if full is None or full <= self._armed_from:
            return True
        self._last_loop_pass = max(self._last_loop_pass, full)
        if self._sched_req_t < full or full >= t:
            return False
        self._armed_from = full
        self._loop_pass_armed = True
        self._push(tick_at_or_after(math.floor(full + 1e-9) + cfg.batch_sched_delay_s, cfg.loop_tick_s,
                                    cfg.timer_origin_s), EV_LOOP_PASS, None, 0)
        return False

    def _request_pass(self) -> None:
        """A submission: slurmctld's ``queue_job_scheduler()``. Its background loop (a tick a
        second) runs the main pass once ``batch_sched_delay`` has passed since its last one."""
        delay = self.config.batch_sched_delay_s
        if delay is None:
            self._push(self._now, EV_PASS, None, 0)
            return
        self._sched_req_t = self._now
        if self._loop_pass_armed:
            return
        origin = self.config.timer_origin_s
        tick = self.config.loop_tick_s
        t = next_tick(self._now, tick, origin)
        if self.config.first_sched_tick is not None:
            # difftime(now, last_sched_time) >= batch_sched_delay on whole seconds, where
            # last_sched_time is the second of the loop's last pass, full passes included (also
            # those the simulator skips because nothing was eligible)
            last = self._last_loop_pass
            full = self._full_passes().last_at_or_before(self._now)
            if full is not None:
                last = max(last, full)
            self._armed_from = last
            if last > -math.inf:
                t = max(t, tick_at_or_after(math.floor(last + 1e-9) + delay, tick, origin))
        elif self._last_loop_pass > -math.inf:
            t = max(t, tick_at_or_after(self._last_loop_pass + delay * tick, tick, origin))
        self._loop_pass_armed = True
        self._push(t, EV_LOOP_PASS, None, 0)
