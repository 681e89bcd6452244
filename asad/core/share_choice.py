"""Share or not: one run of same-shape stages, one job or a job each, learned from outcomes.

A shared job (``asad.strategies.share``) saves its later stages the queue, but it asks for the
sum of their time limits, and a longer job finds fewer backfill holes: on the Slurm-like
simulator Montage's first shared job at 28 cores waited 5x as long as its first stage alone
(docs/results/strategies.md, "Shared jobs"). Which effect wins depends on the queue, and the
learned queue wait cannot tell: its key buckets time limits (30 and 50 minutes share ``<=1h``).

So each run of stages (keyed by the workflow, its first stage and the shape) keeps what both
choices cost when they were made: the group's **waits**, the sum over its stages of the stage's
start minus the moment it could start (its predecessors' end, or the workflow's submission).
That sum is measured the same way whichever way the stages ran (``asad.core.metrics.perceived_wait``).
Each choice is tried once (a job each first, so a workflow's first run is what it was without
sharing), then the one with the lower median of its recent costs is taken. The other is tried again
after ``EXPLORE_EVERY`` decisions times the runs of it already seen (6, then 12, 18, ...), so a
queue that changes is noticed while a way that keeps losing is re-tried less and less often.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from asad.core.metrics import perceived_wait
from asad.core.model import StageState, WorkflowRun, WorkflowState

SHARED, ALONE = "shared", "alone"
MAX_OPEN_TRIALS = 1000  # choices awaiting their outcome (in memory: a restart forgets them)
WINDOW = 8  # recent costs kept per choice
# decisions after which the choice not taken is tried once again, per run of it already seen: the
# more often it lost, the rarer the re-try (a re-try of the slower way costs a slower run)
EXPLORE_EVERY = 6


@dataclass
class ShareChoice:
    costs: dict[str, list[float]] = field(default_factory=lambda: {SHARED: [], ALONE: []})
    since: dict[str, int] = field(default_factory=lambda: {SHARED: 0, ALONE: 0})  # decisions since tried

    def choose(self) -> tuple[str, str]:
        """(choice, why): ``shared`` or ``alone``, and the numbers behind it."""
        for arm in (ALONE, SHARED):  # a job each first: a workflow's first run is the default's without sharing
            if not self.costs[arm]:
                return self._take(arm, "a job each: the first try" if arm == ALONE else
                                  f"one job: not tried yet (a job each waited {self.costs[ALONE][0]:.0f} s)")
        shared, alone = (statistics.median(self.costs[a]) for a in (SHARED, ALONE))
        best, other = (SHARED, ALONE) if shared <= alone else (ALONE, SHARED)
        numbers = (f"waits as one job: median {shared:.0f} s over {len(self.costs[SHARED])} runs; "
                   f"a job each: {alone:.0f} s over {len(self.costs[ALONE])}")
        if self.since[other] >= EXPLORE_EVERY * len(self.costs[other]):
            return self._take(other, f"{numbers}; {other} tried again after {self.since[other]} decisions")
        return self._take(best, numbers)

    def _take(self, arm: str, why: str) -> tuple[str, str]:
        for a in self.since:
            self.since[a] = 0 if a == arm else self.since[a] + 1
        return arm, why

    def observe(self, arm: str, cost_s: float) -> None:
        self.costs[arm] = [*self.costs[arm], max(0.0, float(cost_s))][-WINDOW:]

    def to_state(self) -> dict[str, Any]:
        return {"costs": self.costs, "since": self.since}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ShareChoice:
        out = cls()
        for arm in (SHARED, ALONE):
            out.costs[arm] = [float(c) for c in state.get("costs", {}).get(arm, [])][-WINDOW:]
            out.since[arm] = int(state.get("since", {}).get(arm, 0))
        return out

    @property
    def n_observations(self) -> int:
        return sum(len(c) for c in self.costs.values())


@dataclass(frozen=True)
class Trial:
    """A choice made, awaiting its outcome: ``stages`` (the head first) ran as ``arm``."""
    key: str
    arm: str
    stages: tuple[str, ...]


class OpenTrials:
    """The choices whose stages have not all ended, per workflow. When they have, ``settle``
    returns each with its cost. Kept in memory only: a choice open when the daemon stops is
    not learned from."""

    def __init__(self) -> None:
        self._by_workflow: dict[int, list[Trial]] = {}

    def open(self, workflow_id: int, trial: Trial) -> None:
        trials = self._by_workflow.setdefault(workflow_id, [])
        trials[:] = [t for t in trials if t.stages[0] != trial.stages[0]] + [trial]
        if sum(len(ts) for ts in self._by_workflow.values()) > MAX_OPEN_TRIALS:
            self._by_workflow.pop(next(iter(self._by_workflow)))

    def decided(self, workflow_id: int, stage: str) -> bool:
        """Is ``stage`` a later stage of a group whose choice is made (it gets no choice of its own)?"""
        return any(stage in t.stages[1:] for t in self._by_workflow.get(workflow_id, ()))

    def settle(self, wf: WorkflowRun) -> list[tuple[Trial, float]]:
        """(trial, cost) for each of ``wf``'s choices whose stages have all completed; a workflow
        that has ended drops the rest (a stage that failed for good has no cost to learn)."""
        trials = self._by_workflow.get(wf.id)
        if not trials:
            return []
        done = [t for t in trials if all(wf.stages[s].state is StageState.COMPLETED for s in t.stages)]
        trials[:] = [t for t in trials if t not in done]
        if not trials or wf.state is not WorkflowState.ACTIVE:
            del self._by_workflow[wf.id]
        costs = [(t, group_waits(wf, t.stages)) for t in done]
        return [(t, cost) for t, cost in costs if cost is not None]


def group_waits(wf: WorkflowRun, stages: Sequence[str]) -> float | None:
    """The group's waits (s): the sum of its stages' perceived waits (``asad.core.metrics``). None
    while a stage has not run."""
    waits = [perceived_wait(wf, name) for name in stages]
    return None if any(w is None for w in waits) else sum(waits)
