"""The default strategy: the site's priority rules choose the rule, the learned wait decides the instant.

- Where a job held by ``afterok`` keeps its place in the queue (``priority/basic``, a zero age
  weight, or ``PriorityFlags=ACCRUE_ALWAYS``; see :mod:`asad.slurm.priority_rules`), submitting
  every stage at once with ``afterok`` (a chain) is never slower and never idles a core, whatever
  the learned wait says. So the rule is **chain**.
- Where age counts but Slurm keeps the accrue time a ``--begin`` gives (``AccountingStorageEnforce``
  without ``limits``, Slurm's default), every stage is submitted at once with ``afterok`` *and*
  ``--begin`` a few seconds ahead: the rule is **aged-chain**. Each stage then ages from the
  workflow's submission while it waits for its predecessors, as a job without a dependency would,
  and still cannot start before they end: the chain's zero idle with naive mode's age.
- Where limits are enforced, a job held by a dependency falls behind every job submitted
  meanwhile. The rule is **quantile**: submit the stage *without* a dependency, eligible at
  ``expected_end - lead``, holding its allocation at a barrier until the predecessors end. The
  lead trades idle core-seconds (the wait came in shorter than the lead) against lost makespan
  (it came in longer). With cost = ``idle_price`` x idle core-seconds + lost seconds, the
  expected cost is least when the lead is the wait distribution's quantile
  ``tau = 1 / (1 + idle_price x cpus)`` (the newsvendor solution: raise the lead while the
  chance that the wait is shorter, times the price of idling, is below the chance that it is
  longer). The predecessor's run time is uncertain too: an allocation that arrives before a
  predecessor that ran long idles as well. So the instant is chosen from the distribution of
  ``R - W`` (the predecessor's run time, from its recent runs, minus the wait): eligible at the
  predecessor's start plus that difference's ``1 - tau`` quantile (:func:`begin_offset`); with one
  run time seen, this is ``run time - the wait's tau quantile``. The predecessor need not have
  started: while it is pending in Slurm, its start is its eligible instant plus its learned wait
  *given the wait so far* (:mod:`asad.strategies.expected_start`), so a successor whose lead
  exceeds its predecessor's run time (a short stage, a long wait) becomes eligible before that
  predecessor starts. Such a plan is held by the daemon (``SubmitAt``) and made again at its
  instant, since the pending predecessor's expected start moves as it keeps waiting; from a running
  predecessor the instant is handed to Slurm with ``--begin``, so a slow or restarted daemon cannot
  delay it. When that lead is short (under ``MIN_LEAD_S``) or the predecessors' run time is not
  learned yet, the stage is submitted with ``afterok`` instead (once they run): it then starts the
  moment they end, and nothing idles. An allocation that still comes far ahead of the
  predecessors' end is released and the next lead capped at the wait it took
  (:mod:`asad.strategies.release`): the learned distribution mixes the queue's calm and
  congested spells, the allocation says which one this is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from asad.core.model import StageState
from asad.strategies.base import Plan, SubmitAt, SubmitNow
from asad.strategies.chain import Chain
from asad.strategies.release import lead_cap

CHAIN = Chain()
# Below this lead a submission without dependency wins no age worth an idle risk (about two of
# Slurm's scheduling passes); afterok is used instead.
MIN_LEAD_S = 60.0
# aged-chain: how far ahead the --begin is set. Slurm must still see it in the future when it
# takes the submission (the accrue time is set then); the age lost is this many seconds.
BEGIN_AHEAD_S = 10.0
# A plan from a pending predecessor whose instant is this close is carried out now: re-planning it
# every second as the predecessor's expected start creeps later would only wake the daemon.
REPLAN_SLACK_S = 15.0


def quantile_level(idle_price: float, cpus: int) -> float:
    """The wait quantile that minimises idle_price x idle core-seconds + lost makespan seconds."""
    return 1.0 / (1.0 + max(0.0, idle_price) * max(1, cpus))


def begin_offset(runtimes_s: Sequence[float], wait_quantiles_s: Sequence[float], tau: float) -> float:
    """Seconds after a predecessor's start at which its successor should become eligible.

    Eligible at ``start + x``, the allocation comes at ``start + x + W`` and the predecessor ends at
    ``start + R``: ``c·(R - W - x)+`` core-seconds idle, ``(x - (R - W))+`` seconds lost. The
    expected cost ``idle_price·c·E[(Y - x)+] + E[(x - Y)+]`` with ``Y = R - W`` is least where
    ``P(Y <= x) = 1 - tau``. ``Y``'s distribution: every recent run time against every point of a
    quantile grid of the wait (the two are independent).
    """
    runs = np.asarray(runtimes_s, dtype=float)
    waits = np.asarray(wait_quantiles_s, dtype=float)
    return float(np.quantile((runs[:, None] - waits[None, :]).ravel(), 1.0 - tau))


class Auto:
    name = "auto"

    def plan(self, wf, stage, now, ctx) -> Plan:  # noqa: ANN001
        rules = ctx.priority_rules
        if rules.rule == "chain":
            plan = CHAIN.plan(wf, stage, now, ctx)
            if plan is not None:
                plan = replace(plan, why=f"rule chain: {rules.describe()}; submitted at once with afterok")
            return plan
        if rules.rule == "aged-chain":
            plan = CHAIN.plan(wf, stage, now, ctx)
            if plan is not None and plan.dependency_on:
                plan = replace(plan, begin=now + BEGIN_AHEAD_S,
                               why=f"rule aged-chain ({rules.describe()}): submitted at once with afterok and "
                                   f"--begin {BEGIN_AHEAD_S:.0f} s ahead, so it ages from now while held")
            elif plan is not None:
                plan = replace(plan, why=f"rule aged-chain ({rules.describe()}): no predecessor to wait for; "
                                         "submitted at once")
            return plan
        running: list[str] = []  # predecessors whose work began: their start is known
        pending: list[str] = []  # not started yet: their start is their learned wait still to come
        runtime_known = True
        for p in wf.spec.predecessors(stage):
            ps = wf.stages[p]
            if ps.state is StageState.COMPLETED:
                continue
            runtime_known &= ctx.learned.runtime(ctx.runtime_key(wf, p)).n_observations > 0
            if ps.state is StageState.RUNNING and ps.start_time is not None and ps.start_time <= now:
                running.append(p)
            elif ctx.work_start_grid(wf, p, now) is not None:
                pending.append(p)
            else:
                return None  # not in Slurm yet, held by afterok, or nothing learned: its end is unknown
        if not running and not pending:
            return SubmitNow(why=f"rule quantile ({rules.describe()}): no predecessor running; submitted at once")
        if pending and not runtime_known:
            return None  # no end to plan from until it runs: then afterok (below)
        preds = running + pending
        expected_end = max(ctx.predicted_end(wf, p, now) for p in preds)
        at, tau, seen = ctx.quantile_begin(wf, stage, preds, now)
        cap = lead_cap(wf, stage)
        capped = cap is not None and expected_end - at > cap
        if capped:
            # an earlier allocation of this stage came early after this wait: the queue's current
            # pace, fresher than the learned distribution (asad.strategies.release)
            at = expected_end - cap
        lead = expected_end - at
        if not runtime_known or lead < MIN_LEAD_S:
            if pending:
                return None  # its start will say more (a lead may open up once it runs)
            # Without a lead there is no age to win, and afterok starts the job the moment its
            # predecessors end (no idle, no early or late --begin); without a learned run time the
            # predecessors' end is only their time limit.
            reason = ("a predecessor's run time is not learned yet" if not runtime_known else
                      f"the lead is {lead:.0f} s (< {MIN_LEAD_S:.0f} s; at most the {cap:.0f}-s wait of its "
                      "allocation released as too early): no age worth winning" if capped else
                      f"the lead is {lead:.0f} s (< {MIN_LEAD_S:.0f} s; the {1 - tau:.0%} quantile of the "
                      "predecessors' run time minus the wait): no age worth winning" if seen
                      else "no wait of this geometry seen yet")
            return SubmitNow(dependency_on=tuple(running), est_wait_s=lead, planned_start=expected_end,
                             why=f"rule quantile ({rules.describe()}): {reason}; submitted at once with afterok")
        since = (f"; {', '.join(pending)} still pending: its start is its learned wait still to come"
                 if pending else "")
        if capped:
            since += f"; lead capped at the {cap:.0f}-s wait of its allocation released as too early"
        why = (f"rule quantile ({rules.describe()}): eligible {lead:.0f} s before the predecessors' "
               f"expected end ({expected_end - now:+.0f} s): the {1 - tau:.0%} quantile of their start plus "
               f"run time minus the wait ({seen} waits seen; idle_price {ctx.idle_price(wf):g} per idle "
               f"core-second){since}; no dependency, held at a barrier")
        source = ctx.wait_source(wf, stage) if hasattr(ctx, "wait_source") else ""
        if source:
            why += f"; {source}"
        if pending and at > now + REPLAN_SLACK_S:
            # A pending predecessor's expected start moves as it keeps waiting: the daemon holds
            # the plan and makes it again at the instant (or when that job starts), rather than
            # hand Slurm a --begin that would then be stale.
            return SubmitAt(at=at, est_wait_s=lead, planned_start=expected_end, why=why)
        return SubmitNow(barrier_on=tuple(preds), begin=at if at > now else None, est_wait_s=lead,
                         planned_start=expected_end, why=why)
