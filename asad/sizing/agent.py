"""The shared plumbing of every sizing agent (history, caps, time limits, saving and loading);
the values it works with are in ``base.py``, the time-limit learner it holds in ``timelimit.py``."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from asad.sizing.base import (
    Request, Outcome, Decision, Caps, clamp, Sample, mem_mb_ceil, History, rng_to_state, rng_from_state, MB, CONFIDENT_RUNS, MIN_MEM_MB,
    UNCONFIDENT_DEPTH, UNCONFIDENT_MARGIN,
)
from asad.sizing.timelimit import TimeLimitLearner


class AgentBase:
    """Shared plumbing: history, caps, time limits, serialisation.

    A subclass sets ``name``, implements :meth:`_size` (cpus and memory for the next
    first attempt, or ``None`` while it has too few observations) and, if it learns
    more than the history, :meth:`_extra_state` / :meth:`_load_extra_state` and
    :meth:`_learn`.
    """

    name: ClassVar[str] = "base"
    kind: ClassVar[str] = "base"

    def __init__(self, caps: Caps | None = None, seed: int = 0, time_margin: float = 2.0,
                 learn_time: bool = True, time_min_runs: int = 10, time_slack_s: float = 600.0,
                 time_spread_k: float = 0.0, confident_runs: int = CONFIDENT_RUNS,
                 unconfident_depth: float = UNCONFIDENT_DEPTH, unconfident_margin: float = UNCONFIDENT_MARGIN,
                 **params: Any) -> None:
        self.caps = caps
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.history = History()
        self.params = dict(params, time_margin=time_margin, learn_time=learn_time, time_min_runs=time_min_runs,
                           time_slack_s=time_slack_s, time_spread_k=time_spread_k, confident_runs=confident_runs,
                           unconfident_depth=unconfident_depth, unconfident_margin=unconfident_margin)
        self.confident_runs = int(confident_runs)
        if not unconfident_depth >= 1.0 or not unconfident_margin >= 1.0:
            raise ValueError(f"unconfident_depth and unconfident_margin must be ≥ 1 "
                             f"(got {unconfident_depth}, {unconfident_margin})")
        self.unconfident_depth, self.unconfident_margin = float(unconfident_depth), float(unconfident_margin)
        self.learn_time = bool(learn_time)
        self.time = TimeLimitLearner(margin=time_margin, min_samples=time_min_runs, slack_s=time_slack_s,
                                     spread_k=time_spread_k)

    # -- the protocol -------------------------------------------------------------------
    def propose(self, default: Request, input_bytes: float | None = None) -> Decision:
        sized = self._size(default, input_bytes)
        if sized is None:
            cpus, mem_mb = default.cpus, default.mem_mb
            why = (f"{self.history.n} completed run(s) so far, too few for {self.name}: "
                   f"using the user's {default.cpus} CPU(s) and {default.mem_mb} MB")
        else:
            cpus, mem_mb, why = sized
            if mem_mb < default.mem_mb and self.history.n < self.confident_runs:
                floor, floor_why = self._unconfident_floor(default, input_bytes)
                if mem_mb < floor:
                    why += floor_why
                    mem_mb = floor
                    self.withdraw()  # an agent that learns from its own choice did not get it
        if self.learn_time:
            time_s, time_why = self.time.limit(default.time_s, int(cpus), input_bytes, self.caps)
        else:
            time_s, time_why = default.time_s, f"time limit {default.time_s} s from the user"
        floor = float(min(MIN_MEM_MB, default.mem_mb))
        if mem_mb < floor:  # a job's own overhead (shell, wrapper) needs some: never below the floor
            why += f", raised to asad's floor of {int(floor)} MB"
            mem_mb = floor
        req = clamp(Request(cpus=int(cpus), mem_mb=mem_mb_ceil(mem_mb), time_s=int(time_s)), self.caps)
        capped = ""
        if self.caps is not None and (req.mem_mb < mem_mb_ceil(mem_mb) or req.cpus < int(cpus)):
            capped = f" (capped at the partition's {self.caps.max_cpus} CPUs / {self.caps.max_mem_mb} MB)"
        return Decision(request=req, agent=self.name, n_observations=self.history.n,
                        why=f"{why}; {time_why}{capped}.", time_why=time_why)

    def observe(self, outcome: Outcome) -> None:
        sample = self.history.add(outcome)
        if sample is not None:
            self.time.observe(sample)
        elif outcome.timed_out:
            self.time.observe_timeout(outcome.request.time_s)
        self._learn(outcome, sample)

    def withdraw(self) -> None:
        """Forget the last :meth:`propose`: its request was overruled (a retry rule took
        another size), so an agent that remembers what it chose must not learn from it."""
        return None

    def to_state(self) -> dict:
        return {"agent": self.name, "kind": self.kind, "seed": self.seed, "params": self.params,
                "caps": None if self.caps is None else self.caps.to_dict(),
                "rng": rng_to_state(self.rng), "history": self.history.to_dict(),
                "time": self.time.to_dict(), "extra": self._extra_state()}

    @classmethod
    def from_state(cls, state: dict) -> "AgentBase":
        agent = cls(caps=Caps.from_dict(state.get("caps")), seed=state.get("seed", 0),
                    **state.get("params", {}))
        agent.rng = rng_from_state(state["rng"])
        agent.history = History.from_dict(state["history"])
        agent.time = TimeLimitLearner.from_dict(state["time"])
        agent._load_extra_state(state.get("extra") or {})
        return agent

    # -- for subclasses -----------------------------------------------------------------
    def _size(self, default: Request, input_bytes: float | None) -> tuple[int, float, str] | None:
        raise NotImplementedError

    def _learn(self, outcome: Outcome, sample: Sample | None) -> None:
        return None

    def _extra_state(self) -> dict:
        return {}

    def _load_extra_state(self, extra: dict) -> None:
        return None

    # -- helpers --------------------------------------------------------------------------
    def _unconfident_floor(self, default: Request, input_bytes: float | None) -> tuple[float, str]:
        """The least memory while the stage has fewer than ``confident_runs`` completed runs.

        Graduated (docs/sizing.md): with no run, the file's request; with fewer runs than
        ``confident_runs``, never below the request / ``unconfident_depth`` nor below
        ``unconfident_margin`` × the largest peak seen, each run's peak scaled up in proportion
        where this task's input is larger than that run's (one run cannot bound the next run's
        input, asad can read it). ``unconfident_depth`` 1 keeps the request (the rule of issue
        39's first round).
        """
        n, runs = self.history.n, self.confident_runs
        keep = (f"; kept at the user's {default.mem_mb} MB: a cut below the request waits for "
                f"{runs} completed runs ({n} so far)")
        if n == 0 or self.unconfident_depth <= 1.0:
            return float(default.mem_mb), keep
        peaks, inputs = self.history.peaks(), self.history.inputs()
        scale = np.ones_like(peaks)
        if input_bytes is not None and input_bytes > 0:
            known = inputs > 0  # NaN (unknown input) fails > 0
            scale[known] = np.maximum(1.0, input_bytes / inputs[known])
        seen = float(np.max(peaks * scale))
        shallow = default.mem_mb / self.unconfident_depth
        floor = min(float(default.mem_mb), max(shallow, self.unconfident_margin * seen))
        if floor >= default.mem_mb:
            return float(default.mem_mb), keep
        return floor, (f"; held at {floor:.0f} MB: with {n} completed run(s) of the {runs} a deeper cut waits for, "
                       f"no less than the request / {self.unconfident_depth:g} ({shallow:.0f} MB) nor "
                       f"{self.unconfident_margin:g} × the largest peak scaled to this input ({seen:.0f} MB)")

    def _cap_mem(self, mem_mb: float) -> float:
        return mem_mb if self.caps is None else min(mem_mb, float(self.caps.max_mem_mb))
