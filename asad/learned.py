"""What asad has learned, shared by every workflow: queue waits per job geometry and run
times per stage. Learners live in memory while asad runs and are written back to the
store (one row per learner) whenever they change.
"""

from __future__ import annotations

from collections.abc import Callable

from asad.learn.registry import make_predictor, predictor_from_state
from asad.learn.runtime import RuntimeEstimator

WAIT_KIND = "wait"
RUNTIME_KIND = "runtime"
SIZING_KIND = "sizing"
PLACEMENT_KIND = "placement"


class Learned:
    """In-memory learners with write-back. ``load(kind, key) -> state | None`` reads the store."""

    def __init__(self, load: Callable[[str, str], dict | None], predictor_kind: str, seed: int = 0,
                 predictor_params: dict | None = None):
        self._load = load
        self.predictor_kind = predictor_kind
        self.predictor_params = predictor_params or {}
        self.seed = seed
        self._waits: dict[str, object] = {}
        self._runtimes: dict[str, RuntimeEstimator] = {}
        self._sizers: dict[str, object] = {}
        self._placers: dict[str, object] = {}
        self.dirty: set[tuple[str, str]] = set()
        self._wait_estimates: dict[str, float] = {}  # a learner's estimate only moves when it observes
        # For the runner's incremental decisions: a (kind, key)'s version grows whenever what it
        # tells the engine may have changed; ``consulted``, when a set, records what was asked.
        self.versions: dict[tuple[str, str], int] = {}
        self.consulted: set[tuple[str, str]] | None = None

    def wait_predictor(self, key: str):  # noqa: ANN201
        pred = self._waits.get(key)
        if pred is None:
            state = self._load(WAIT_KIND, key)
            if state is not None and state.get("kind") == self.predictor_kind:
                pred = predictor_from_state(state)
            else:
                # A fresh learner per key; seeded from the key so runs are reproducible.
                seed = (self.seed * 1_000_003 + _stable_hash(key)) % (2**32)
                pred = make_predictor(self.predictor_kind, seed=seed, **self.predictor_params)
            self._waits[key] = pred
        return pred

    def estimate_wait(self, key: str) -> float:
        if self.consulted is not None:
            self.consulted.add((WAIT_KIND, key))
        return self._estimate_wait(key)

    def _estimate_wait(self, key: str) -> float:
        est = self._wait_estimates.get(key)
        if est is None:
            est = self._wait_estimates[key] = float(self.wait_predictor(key).estimate())
        return est

    def wait_quantiles(self, key: str, qs: list[float]) -> list[float]:
        """Quantiles (s) of the learned wait distribution of one geometry."""
        if self.consulted is not None:
            self.consulted.add((WAIT_KIND, key))
        return [max(0.0, float(v)) for v in self.wait_predictor(key).quantiles(qs)]

    def wait_observations(self, key: str) -> int:
        """How many waits of this geometry have been learned."""
        if self.consulted is not None:
            self.consulted.add((WAIT_KIND, key))
        return int(self.wait_predictor(key).n_observations)

    def observe_wait(self, key: str, wait_s: float) -> None:
        before = self._wait_estimates.pop(key, None)
        self.wait_predictor(key).observe(wait_s)
        self.dirty.add((WAIT_KIND, key))
        # Same draws as estimating lazily: each learner has its own generator, and the next
        # estimate would be drawn before its next observation anyway.
        if self._estimate_wait(key) != before:
            self.versions[(WAIT_KIND, key)] = self.versions.get((WAIT_KIND, key), 0) + 1

    def runtime(self, key: str) -> RuntimeEstimator:
        if self.consulted is not None:
            self.consulted.add((RUNTIME_KIND, key))
        return self._runtime(key)

    def _runtime(self, key: str) -> RuntimeEstimator:
        hist = self._runtimes.get(key)
        if hist is None:
            state = self._load(RUNTIME_KIND, key)
            hist = RuntimeEstimator.from_state(state) if state else RuntimeEstimator()
            self._runtimes[key] = hist
        return hist

    def observe_runtime(self, key: str, runtime_s: float) -> None:
        self._runtime(key).observe(runtime_s)
        self.dirty.add((RUNTIME_KIND, key))
        self.versions[(RUNTIME_KIND, key)] = self.versions.get((RUNTIME_KIND, key), 0) + 1

    def sizing_agent(self, key: str, name: str, caps):  # noqa: ANN001, ANN201
        """The sizing agent of one stage (same workflow name, same stage name)."""
        from asad.sizing.registry import agent_from_state, make_agent

        agent = self._sizers.get(key)
        if agent is None or agent.name != _canonical_agent(name):
            state = self._load(SIZING_KIND, key)
            if state is not None and state.get("agent") == _canonical_agent(name):
                agent = agent_from_state(state)
                agent.caps = caps
            else:
                agent = make_agent(name, caps=caps, seed=(self.seed + _stable_hash(key)) % (2**32))
            self._sizers[key] = agent
        return agent

    def observe_size(self, key: str, agent, outcome) -> None:  # noqa: ANN001
        agent.observe(outcome)
        self.dirty.add((SIZING_KIND, key))

    def placement_agent(self, key: str, partitions: list[str], variant: str):  # noqa: ANN201
        """The partition chooser of one stage that may run in several partitions (ReASSIGN)."""
        from asad.sizing.placement import PlacementAgent

        agent = self._placers.get(key)
        if agent is None:
            state = self._load(PLACEMENT_KIND, key)
            if state is not None and state.get("partitions") == partitions and state.get("variant") == variant:
                agent = PlacementAgent.from_state(state)
            else:
                agent = PlacementAgent(partitions, variant=variant, seed=(self.seed + _stable_hash(key)) % (2**32))
            self._placers[key] = agent
        return agent

    def placement_changed(self, key: str) -> None:
        self.dirty.add((PLACEMENT_KIND, key))

    def drain_dirty(self) -> list[tuple[str, str, dict, int]]:
        """(kind, key, state, n_observations) for every learner changed since the last drain."""
        out = []
        for kind, key in sorted(self.dirty):
            if kind == WAIT_KIND:
                pred = self._waits[key]
                out.append((kind, key, pred.to_state(), int(pred.n_observations)))
            elif kind == PLACEMENT_KIND:
                out.append((kind, key, self._placers[key].to_state(), 0))
            elif kind == SIZING_KIND:
                agent = self._sizers[key]
                out.append((kind, key, agent.to_state(), int(agent.history.n)))
            else:
                hist = self._runtimes[key]
                out.append((kind, key, hist.to_state(), hist.n_observations))
        self.dirty.clear()
        return out


def _canonical_agent(name: str) -> str:
    from asad.sizing.registry import ALIASES

    return ALIASES.get(name, name)


def _stable_hash(text: str) -> int:
    h = 2166136261
    for ch in text.encode():
        h = ((h ^ ch) * 16777619) % (2**32)
    return h
