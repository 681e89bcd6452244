"""Zunker (2021) §4.3: one ε-greedy Q-learning agent per abstract task.

State: the current allocation (cpus, memory chunks), CPUs 1 … min(cap, max(2 × default,
4)), memory chunks of ``c = default/n`` (``n = 4``) from 1 to 1.5·n. The first run is in
the default state. Actions: +1 CPU, -1 CPU, +1 chunk, -1 chunk, keep (those leaving the
range are not offered). Reward eq. 4.2::

    r = -max(0.1, unused_cpus) × (t / avg_t) × (mem × (1 - max(0.75, mem_use)))

with ``unused_cpus = cpus - cpu_usage/100``, ``mem`` in chunks, ``mem_use = peak/mem``.
The thesis gives no reward for an out-of-memory kill (eq. 4.2 would call a kill with
``mem_use = 1`` free); here a kill costs ``-2 × cpus × mem`` (the memory bandit's
doubled penalty, times the CPU factor's ceiling). α = 0.1, γ = 1.0, ε = 0.5, then 0.25
after 50 runs, 0.1 after 100. In a state, untried actions are taken first.
"""

from __future__ import annotations

import math

import numpy as np

from asad.sizing.agent import AgentBase
from asad.sizing.base import Outcome, Request, Sample

ACTIONS = ("keep", "+cpu", "-cpu", "+mem", "-mem")
_DELTA = {"keep": (0, 0), "+cpu": (1, 0), "-cpu": (-1, 0), "+mem": (0, 1), "-mem": (0, -1)}


def epsilon_for(runs: int) -> float:
    return 0.5 if runs < 50 else (0.25 if runs < 100 else 0.1)


def reward_eq42(cpus: int, cpu_usage: float, t: float, avg_t: float, mem_chunks: float, mem_use: float) -> float:
    unused_cpus = cpus - cpu_usage
    return -max(0.1, unused_cpus) * (t / max(avg_t, 1e-9)) * (mem_chunks * (1.0 - max(0.75, mem_use)))


class QLearningAgent(AgentBase):
    kind = "qlearn"
    name = "qlearn"

    def __init__(self, chunks: int = 4, alpha: float = 0.1, gamma: float = 1.0, **kw) -> None:
        super().__init__(chunks=chunks, alpha=alpha, gamma=gamma, **kw)
        self.chunks, self.alpha, self.gamma = int(chunks), float(alpha), float(gamma)
        self.chunk_mb: float | None = None
        self.max_cpus = 0
        self.max_chunks = 0
        self.state: tuple[int, int] | None = None
        self.q: dict[str, list[float]] = {}
        self.tried: dict[str, list[bool]] = {}
        self.pending: list[tuple[tuple[int, int], int, tuple[int, int]]] = []

    def _setup(self, default: Request) -> None:
        if self.chunk_mb is not None:
            return
        self.chunk_mb = default.mem_mb / self.chunks
        top = max(2 * default.cpus, 4)
        self.max_chunks = int(math.ceil(1.5 * self.chunks))
        if self.caps is not None:
            top = min(top, self.caps.max_cpus)
            self.max_chunks = max(1, min(self.max_chunks, int(self.caps.max_mem_mb // self.chunk_mb)))
        self.max_cpus = max(1, top)
        self.state = (min(default.cpus, self.max_cpus), min(self.chunks, self.max_chunks))

    @staticmethod
    def _key(s: tuple[int, int]) -> str:
        return f"{s[0]},{s[1]}"

    def _valid(self, s: tuple[int, int]) -> list[int]:
        out = []
        for i, a in enumerate(ACTIONS):
            dc, dm = _DELTA[a]
            if 1 <= s[0] + dc <= self.max_cpus and 1 <= s[1] + dm <= self.max_chunks:
                out.append(i)
        return out

    def _qrow(self, s: tuple[int, int]) -> list[float]:
        return self.q.setdefault(self._key(s), [0.0] * len(ACTIONS))

    def _mem_of(self, chunks: int) -> int:
        return int(math.ceil(chunks * self.chunk_mb))

    def _size(self, default: Request, input_bytes: float | None):
        self._setup(default)
        if self.history.n < 1:
            self.pending.append((self.state, 0, self.state))  # the default run: "keep" in the start state
            return None
        s = self.state
        valid = self._valid(s)
        tried = self.tried.setdefault(self._key(s), [False] * len(ACTIONS))
        untried = [i for i in valid if not tried[i]]
        eps = epsilon_for(self.history.n)
        if untried:
            a, how = untried[0], "untried"
        elif self.rng.random() < eps:
            a, how = int(self.rng.choice(valid)), f"explore (ε={eps:g})"
        else:
            row = self._qrow(s)
            a, how = max(valid, key=lambda i: row[i]), f"greedy (ε={eps:g})"
        dc, dm = _DELTA[ACTIONS[a]]
        nxt = (s[0] + dc, s[1] + dm)
        self.pending.append((s, a, nxt))
        self.state = nxt
        mem = self._mem_of(nxt[1])
        return nxt[0], float(mem), (
            f"qlearn: {how} action {ACTIONS[a]} from ({s[0]} CPUs, {s[1]} chunks) to "
            f"({nxt[0]} CPUs, {nxt[1]} × {self.chunk_mb:.0f} MB = {mem} MB)")

    def withdraw(self) -> None:
        """The last step was overruled: back to the state it left, nothing to learn."""
        if self.pending:
            s, _, _ = self.pending.pop()
            self.state = s

    def _learn(self, outcome: Outcome, sample: Sample | None) -> None:
        if self.chunk_mb is None:
            return
        req = outcome.request
        match = next((i for i, (_, _, nxt) in enumerate(self.pending)
                      if nxt[0] == req.cpus and self._mem_of(nxt[1]) == req.mem_mb), None)
        if match is None:
            return  # a retry the agent did not choose
        s, a, nxt = self.pending.pop(match)
        if outcome.out_of_memory:
            r = -2.0 * req.cpus * nxt[1]
        elif sample is not None:
            avg_t = float(np.mean(self.history.columns()[:, 2]))
            usage = sample.cpu_usage if sample.cpu_usage is not None else float(req.cpus)
            r = reward_eq42(req.cpus, usage, sample.elapsed_s, avg_t, nxt[1], sample.peak_mb / req.mem_mb)
        else:
            return
        row = self._qrow(s)
        best_next = max(self._qrow(nxt)[i] for i in self._valid(nxt))
        row[a] += self.alpha * (r + self.gamma * best_next - row[a])
        self.tried.setdefault(self._key(s), [False] * len(ACTIONS))[a] = True

    def _extra_state(self) -> dict:
        if self.chunk_mb is None:
            return {}
        return {"chunk_mb": self.chunk_mb, "max_cpus": self.max_cpus, "max_chunks": self.max_chunks,
                "state": list(self.state), "q": self.q, "tried": self.tried,
                "pending": [[list(s), a, list(n)] for s, a, n in self.pending]}

    def _load_extra_state(self, extra: dict) -> None:
        if not extra:
            return
        self.chunk_mb = float(extra["chunk_mb"])
        self.max_cpus, self.max_chunks = int(extra["max_cpus"]), int(extra["max_chunks"])
        self.state = tuple(extra["state"])
        self.q = {k: [float(v) for v in row] for k, row in extra["q"].items()}
        self.tried = {k: [bool(v) for v in row] for k, row in extra["tried"].items()}
        self.pending = [(tuple(s), int(a), tuple(n)) for s, a, n in extra["pending"]]
