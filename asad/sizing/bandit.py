"""Zunker (2021) §4.2: two gradient bandits per abstract task, one for CPUs, one for memory.

* CPU bandit: actions are CPU counts 1 … min(partition cap, max(2 × default, 4)); reward
  ``-t × (1 + cpus - cpu_usage/100)`` (eq. 4.1; ``t`` the run time in seconds,
  ``cpu_usage`` in percent of one core); step size ``α = 1/avg(t)``.
* Memory bandit: the default memory ``m`` is cut in ``n`` chunks ``c = m/n``; actions are
  ``a × c`` for ``a = 1 … 1.5·n``; reward ``-unused_chunks = -(memory - peak)/c``, or
  ``-2 × memory/c`` after an out-of-memory kill; step size ``α = 1/n``.
* Both: preferences ``H`` start at 0, softmax policy (eq. 2.4), Sutton & Barto's update
  (eq. 2.2/2.3) against the average of the earlier rewards.

The first run uses the user's values (the CPU step size needs an average run time).
Attempts the bandits did not choose (retries after a kill) teach them nothing.
"""

from __future__ import annotations

import math

import numpy as np

from asad.sizing.agent import AgentBase
from asad.sizing.base import Outcome, Request, Sample


def softmax(h: np.ndarray) -> np.ndarray:
    z = np.exp(h - np.max(h))
    return z / np.sum(z)


class GradientBandit:
    """One bandit over ``k`` actions with Sutton & Barto's gradient update."""

    def __init__(self, k: int) -> None:
        self.h = np.zeros(k)
        self.reward_sum = 0.0
        self.n_rewards = 0

    def probs(self) -> np.ndarray:
        return softmax(self.h)

    def choose(self, rng: np.random.Generator) -> int:
        return int(rng.choice(len(self.h), p=self.probs()))

    def update(self, action: int, reward: float, step: float) -> None:
        baseline = self.reward_sum / self.n_rewards if self.n_rewards else reward
        pi = self.probs()
        delta = step * (reward - baseline)
        self.h -= delta * pi  # every action a ≠ A_t: H(a) -= α (R - R̄) π(a)
        self.h[action] += delta  # A_t: H(A_t) += α (R - R̄)(1 - π(A_t))
        self.reward_sum += reward
        self.n_rewards += 1

    def to_dict(self) -> dict:
        return {"h": self.h.tolist(), "reward_sum": self.reward_sum, "n_rewards": self.n_rewards}

    @classmethod
    def from_dict(cls, d: dict) -> "GradientBandit":
        b = cls(len(d["h"]))
        b.h = np.array(d["h"], dtype=float)
        b.reward_sum, b.n_rewards = float(d["reward_sum"]), int(d["n_rewards"])
        return b


class BanditAgent(AgentBase):
    kind = "bandit"
    name = "bandit"

    def __init__(self, chunks: int = 10, action_factor: float = 1.5, **kw) -> None:
        super().__init__(chunks=chunks, action_factor=action_factor, **kw)
        self.chunks = int(chunks)
        self.action_factor = float(action_factor)
        self.chunk_mb: float | None = None
        self.cpu_actions: list[int] = []
        self.cpu_bandit: GradientBandit | None = None
        self.mem_bandit: GradientBandit | None = None

    def _setup(self, default: Request) -> None:
        if self.cpu_bandit is not None:
            return
        top = max(2 * default.cpus, 4)
        if self.caps is not None:
            top = min(top, self.caps.max_cpus)
        self.cpu_actions = list(range(1, max(1, top) + 1))
        self.chunk_mb = default.mem_mb / self.chunks
        n_mem = int(math.ceil(self.action_factor * self.chunks))
        if self.caps is not None:
            n_mem = max(1, min(n_mem, int(self.caps.max_mem_mb // self.chunk_mb)))
        self.cpu_bandit = GradientBandit(len(self.cpu_actions))
        self.mem_bandit = GradientBandit(n_mem)

    def _mem_of(self, action: int) -> int:
        return int(math.ceil((action + 1) * self.chunk_mb))

    def _size(self, default: Request, input_bytes: float | None):
        self._setup(default)
        if self.history.n < 1:
            return None
        ci = self.cpu_bandit.choose(self.rng)
        mi = self.mem_bandit.choose(self.rng)
        cpus, mem = self.cpu_actions[ci], self._mem_of(mi)
        p_cpu, p_mem = self.cpu_bandit.probs()[ci], self.mem_bandit.probs()[mi]
        return cpus, float(mem), (
            f"bandit: drew {cpus} CPU(s) (p={p_cpu:.2f}) and {mi + 1} × {self.chunk_mb:.0f} MB chunks "
            f"= {mem} MB (p={p_mem:.2f}) after {self.cpu_bandit.n_rewards} CPU / "
            f"{self.mem_bandit.n_rewards} memory rewards")

    def _learn(self, outcome: Outcome, sample: Sample | None) -> None:
        if self.cpu_bandit is None:
            return
        req = outcome.request
        mem_action = round(req.mem_mb / self.chunk_mb) - 1
        if 0 <= mem_action < len(self.mem_bandit.h) and self._mem_of(mem_action) == req.mem_mb:
            if outcome.out_of_memory:
                self.mem_bandit.update(mem_action, -2.0 * req.mem_mb / self.chunk_mb, 1.0 / self.chunks)
            elif sample is not None:
                unused = (req.mem_mb - sample.peak_mb) / self.chunk_mb
                self.mem_bandit.update(mem_action, -unused, 1.0 / self.chunks)
        if sample is not None and req.cpus in self.cpu_actions:
            usage = sample.cpu_usage if sample.cpu_usage is not None else float(req.cpus)
            reward = -sample.elapsed_s * (1.0 + req.cpus - usage)
            avg_t = float(np.mean(self.history.columns()[:, 2]))
            self.cpu_bandit.update(self.cpu_actions.index(req.cpus), reward, 1.0 / max(avg_t, 1e-3))

    def _extra_state(self) -> dict:
        if self.cpu_bandit is None:
            return {}
        return {"chunk_mb": self.chunk_mb, "cpu_actions": self.cpu_actions,
                "cpu": self.cpu_bandit.to_dict(), "mem": self.mem_bandit.to_dict()}

    def _load_extra_state(self, extra: dict) -> None:
        if not extra:
            return
        self.chunk_mb = float(extra["chunk_mb"])
        self.cpu_actions = [int(c) for c in extra["cpu_actions"]]
        self.cpu_bandit = GradientBandit.from_dict(extra["cpu"])
        self.mem_bandit = GradientBandit.from_dict(extra["mem"])
