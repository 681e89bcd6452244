"""Placement across partitions: ReASSIGN's Q-learning (Nascimento et al.), per abstract task.

When a stage may run in several partitions, an agent picks one. ReASSIGN (RL-based
Activation Scheduling of Scientific workflows) learns ``Q(s, a)`` over actions = the
partitions with the reward of its eq. 4–6:

* per partition ``j``, ``P̄i_j = μ × te̅_j + (1 - μ) × tf̅_j`` (mean execution and queue times
  of the stage's jobs that ran there), and ``P̄w`` the same over all its jobs;
* ``r_i = -1`` if ``P̄i_j > P̄w + stdv`` (``stdv`` the standard deviation of the ``P̄i_j``),
  else ``+1``; smoothed ``r_t = r_{t-1} + ρ (r_i - r_{t-1})``;
* ``Q(s, a) += α (r_t + γ max_a' Q(s', a') - Q(s, a))``, ε-greedy.

The paper's episodes end (one workflow execution); a stage's placements never do, and with
γ = 1 the values of a never-ending single state diverge, so γ = 0.5 here. The paper's state
(workflow available / unavailable) carries nothing at submission time; ours is which
partition Slurm's own estimate (``sbatch --test-only``) says would start the job first.

``variant="turnaround"`` (ours) keeps the same Q-learning but rewards each decision by its
own outcome, ``-(wait + run) / the stage's mean turnaround``, and adds one action: all the
partitions at once (Slurm's ``-p a,b``, which keeps both open until one can start the job),
so it can only restrict a stage to one partition where that has paid off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asad.sizing.base import rng_from_state, rng_to_state

VARIANTS = ("reassign", "turnaround")


@dataclass(frozen=True)
class PlacementDecision:
    partition: str
    state: str
    agent: str
    why: str


class PlacementAgent:
    """Q-learning over partitions for one abstract task."""

    def __init__(self, partitions: list[str], variant: str = "reassign", alpha: float = 0.1,
                 gamma: float = 0.5, epsilon: float = 0.05, mu: float = 0.5, rho: float = 0.5,
                 seed: int = 0) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown placement variant {variant!r} (one of {', '.join(VARIANTS)})")
        if len(partitions) < 1:
            raise ValueError("placement needs at least one partition")
        self.partitions = list(partitions)
        self.variant = variant
        # the actions: each partition, and for the turnaround variant all of them at once
        self.actions = list(self.partitions)
        if variant == "turnaround" and len(self.partitions) > 1:
            self.actions.append(",".join(self.partitions))
        self.alpha, self.gamma, self.epsilon, self.mu, self.rho = alpha, gamma, epsilon, mu, rho
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.q: dict[str, list[float]] = {}
        self.reward = 0.0  # r_{t-1}
        self.times: dict[str, list[tuple[float, float]]] = {p: [] for p in self.actions}  # (te, tf)
        self.pending: dict[str, tuple[str, int]] = {}  # job key → (state, action)

    @property
    def name(self) -> str:
        return "reassign" if self.variant == "reassign" else "reassign-turnaround"

    @staticmethod
    def state_of(estimated_start: dict[str, float | None]) -> str:
        """The partition Slurm would start the job in first (ties: the first listed)."""
        known = {p: t for p, t in estimated_start.items() if t is not None}
        if not known:
            return "unknown"
        return min(known, key=lambda p: known[p])

    def _row(self, s: str) -> list[float]:
        row = self.q.get(s)
        if row is None:
            row = self.q[s] = [self._initial_q(i) for i in range(len(self.actions))]
        return row

    def _initial_q(self, action: int) -> float:
        """ReASSIGN starts from 0. The turnaround variant starts every value at the steady state of
        an average outcome (r = -1: -1/(1-γ)), and a single partition one unit lower: Slurm's own
        multi-partition choice is the prior, a restriction must earn its place."""
        if self.variant == "reassign":
            return 0.0
        neutral = -1.0 / (1.0 - self.gamma)
        return neutral if "," in self.actions[action] else neutral - 1.0

    def choose(self, key: str, estimated_start: dict[str, float | None]) -> PlacementDecision:
        s = self.state_of(estimated_start)
        row = self._row(s)
        if self.rng.random() < self.epsilon:
            a = int(self.rng.integers(len(self.actions)))
            how = f"explore (ε={self.epsilon:g})"
        else:
            best = max(row)
            a = next(i for i, v in enumerate(row) if v == best)
            how = f"greedy Q={best:.2f}"
        self.pending[key] = (s, a)
        part = self.actions[a]
        return PlacementDecision(part, s, self.name,
                                 f"{self.name}: {how} picks {part} (Slurm would start it first in {s})")

    def observe(self, key: str, wait_s: float, run_s: float) -> None:
        """A placed job ended: its queue wait and run time in the chosen partition."""
        if key not in self.pending:
            return
        s, a = self.pending.pop(key)
        part = self.actions[a]
        self.times[part].append((float(run_s), float(wait_s)))
        if self.variant == "reassign":
            r_i = self._crisp_reward(part)
            self.reward = self.reward + self.rho * (r_i - self.reward)
            r = self.reward
        else:
            all_tt = [te + tf for ts in self.times.values() for te, tf in ts]
            r = -(wait_s + run_s) / max(float(np.mean(all_tt)), 1e-9)
        row = self._row(s)
        # the next state is unknown until the next job arrives: bootstrap on the same state
        row[a] += self.alpha * (r + self.gamma * max(row) - row[a])

    def _crisp_reward(self, part: str) -> float:
        """ReASSIGN eq. 4–6 for the partition just used."""
        def perf(ts: list[tuple[float, float]]) -> float:
            arr = np.array(ts, dtype=float)
            return self.mu * float(np.mean(arr[:, 0])) + (1 - self.mu) * float(np.mean(arr[:, 1]))

        per_part = [perf(ts) for ts in self.times.values() if ts]
        everything = [t for ts in self.times.values() for t in ts]
        pw = perf(everything)
        stdv = float(np.std(per_part)) if len(per_part) > 1 else 0.0
        return -1.0 if perf(self.times[part]) > pw + stdv else 1.0

    def to_state(self) -> dict:
        return {"partitions": self.partitions, "variant": self.variant, "alpha": self.alpha, "gamma": self.gamma,
                "epsilon": self.epsilon, "mu": self.mu, "rho": self.rho, "seed": self.seed,
                "rng": rng_to_state(self.rng), "q": self.q, "reward": self.reward,
                "times": {p: [list(t) for t in ts] for p, ts in self.times.items()},
                "pending": {k: list(v) for k, v in self.pending.items()}}

    @classmethod
    def from_state(cls, state: dict) -> "PlacementAgent":
        agent = cls(state["partitions"], variant=state["variant"], alpha=state["alpha"], gamma=state["gamma"],
                    epsilon=state["epsilon"], mu=state["mu"], rho=state["rho"], seed=state["seed"])
        agent.rng = rng_from_state(state["rng"])
        agent.q = {k: [float(v) for v in row] for k, row in state["q"].items()}
        agent.reward = float(state["reward"])
        agent.times = {p: [tuple(t) for t in ts] for p, ts in state["times"].items()}
        agent.pending = {k: (str(v[0]), int(v[1])) for k, v in state["pending"].items()}
        return agent
