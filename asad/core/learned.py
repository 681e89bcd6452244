"""What asad has learned, shared by every workflow: queue waits per job geometry and run
times per stage. Learners live in memory while asad runs and are written back to the
store (one row per learner) whenever they change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from asad.learn.calibration import told_waits_s
from asad.learn.pressure import STEP_LOG2, PressureSamples, key_shape, pressure_level
from asad.learn.registry import is_pooled, make_pool, make_predictor, predictor_from_state
from asad.learn.runtime import RuntimeEstimator
from asad.core.share_choice import OpenTrials, ShareChoice, Trial

WAIT_KIND = "wait"
RUNTIME_KIND = "runtime"
SIZING_KIND = "sizing"
PLACEMENT_KIND = "placement"
SHARE_KIND = "share"
PRESSURE_KIND = "wait-pressure"  # a key's recent waits with the queue's pending load each met (asad.learn.pressure)
WAIT_COUNT = "wait-count"  # versions only: how many waits a key has learned (its own version)
WAIT_STEP_LOG10 = 0.005  # a pooled learner's waits as the engine sees them: steps of ~1.2 %
# The pending floor as the engine hands it to the learner: how long the oldest pending job of a
# class has waited, in steps of 0.05 in log10(1 + s) (~12 %, rounded down), so a floor that grows
# with the clock moves what the engine sees once per step, not at every poll
FLOOR_STEP_LOG10 = 0.05


class Learned:
    """In-memory learners with write-back. ``load(kind, key) -> state | None`` reads the store."""

    def __init__(self, load: Callable[[str, str], dict | None], predictor_kind: str, seed: int = 0,
                 predictor_params: dict | None = None, pressure_neighbours: int = 0,
                 pressure_step: float = STEP_LOG2):
        self._load = load
        # the wait conditioned on the queue's pending load (asad.learn.pressure): the waits nearest
        # the current pressure, this many; 0 = off (the learner's unconditioned quantiles)
        self.pressure_neighbours = max(0, int(pressure_neighbours))
        self.pressure_step = float(pressure_step) if pressure_step > 0 else STEP_LOG2  # log2 levels
        self._pressure: dict[str, PressureSamples] = {}
        self._queue = None  # the last PendingLoad seen (asad.slurm.pending_load), None before any
        self.predictor_kind = predictor_kind
        self.predictor_params = predictor_params or {}
        self.seed = seed
        self._waits: dict[str, object] = {}
        self._runtimes: dict[str, RuntimeEstimator] = {}
        self._sizers: dict[str, object] = {}
        self._placers: dict[str, object] = {}
        self._share: dict[str, ShareChoice] = {}
        self.share_trials = OpenTrials()
        self.dirty: set[tuple[str, str]] = set()
        self._wait_estimates: dict[str, float] = {}  # a learner's estimate only moves when it observes
        # For the runner's incremental decisions: a (kind, key)'s version grows whenever what it
        # tells the engine may have changed; ``consulted``, when a set, records what was asked.
        self.versions: dict[tuple[str, str], int] = {}
        self.consulted: set[tuple[str, str]] | None = None
        # A pooled learner (``experts``) serves every key from one pool: a key's coarser keys
        # are shared with its neighbours and stored as rows of their own (e.g. "cluster=cedar").
        self._pool = (make_pool(predictor_kind, seed=seed, **self.predictor_params)
                      if is_pooled(predictor_kind) else None)
        self._pool_loaded: set[str] = set()
        self._quantiles_asked: dict[str, dict[tuple, list[float]]] = {}  # key -> qs -> values given
        self._basis_asked: dict[str, int] = {}  # key -> the quantile basis given
        # Slurm's estimate as an expert (``hedge`` with ``hedge_slurm``): the geometries whose wait
        # the engine asked since the runner last looked, with a request of each to probe
        # (asad.daemon.slurm_probe takes them; the engine itself asks Slurm nothing)
        self.probe_wanted: dict[str, object] = {}
        # The pending floor (ExpertsConfig.pending_floor; ``median-backoff`` has one): per floor
        # class, how long its oldest job still pending has waited (s, stepped), from asad's own
        # jobs at the last poll (:meth:`note_pending`); each key's floor class, cached
        self._floor_waited: dict[str, float] = {}
        self._floor_class: dict[str, str | None] = {}

    def wait_predictor(self, key: str):  # noqa: ANN201
        if self._pool is not None:
            return self._pooled_predictor(key)
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

    def _pooled_predictor(self, key: str):  # noqa: ANN202
        pred = self._waits.get(key)
        if pred is None:
            for level_key in self._pool.levels(key):
                if level_key not in self._pool_loaded:
                    self._pool_loaded.add(level_key)
                    state = self._load(WAIT_KIND, level_key)
                    if state is not None and state.get("kind") == self.predictor_kind:
                        self._pool.load_key_state(level_key, state)
            pred = self._waits[key] = self._pool.view(key)
        return pred

    def wait_quantiles(self, key: str, qs: list[float]) -> list[float]:
        """Quantiles (s) of the learned wait of a geometry key, e.g. ``[0.1, 0.5, 0.9]``.

        For choosing a submission instant from the wait's distribution; calibrated for the
        default learner (docs/results/learn.md). All 0 s before anything was learned.
        """
        if self.consulted is not None:
            self.consulted.add((WAIT_KIND, key))
        values = self._quantiles(key, qs)
        self._quantiles_asked.setdefault(key, {})[tuple(qs)] = values
        return values

    def _quantiles(self, key: str, qs: Sequence[float]) -> list[float]:
        """The wait's quantiles as the engine sees them: given the queue's current pressure where
        that is on and enough waits were seen with one, else the learner's own (with its
        pending floor)."""
        now = self.pressure_now(key)
        if now is not None:
            conditioned = self._pressure_samples(key).quantiles(qs, now, self.pressure_neighbours,
                                                                self.pressure_step)
            if conditioned is not None:
                return [self._seen(v) for v in conditioned]
        return [self._seen(v) for v in self.wait_predictor(key).quantiles(list(qs), **self._floor(key))]

    # -- the pending floor (ExpertsConfig.pending_floor) -----------------------------------
    def floor_key(self, key: str) -> str | None:
        """The class whose oldest pending job floors ``key``'s answers (None: the learner has no floor)."""
        if key not in self._floor_class:
            self._floor_class[key] = self._pool.floor_key(key) if self._pool is not None else None
        return self._floor_class[key]

    def _floor(self, key: str) -> dict[str, float]:
        """The pooled learner's floor arguments for ``key`` (``now_s``, ``pending_since_s``):
        how long the oldest pending job of its class has waited, as at the last poll; {}
        when none of asad's jobs of that class is pending (or the learner has no floor)."""
        if not self._floor_waited:
            return {}
        waited = self._floor_waited.get(self.floor_key(key))
        return {} if waited is None else {"now_s": waited, "pending_since_s": 0.0}

    def note_pending(self, now_s: float, pending: Iterable[tuple[str, float]]) -> None:
        """asad's own jobs still pending at this poll, as (geometry key, when it became
        eligible): the pooled learner's pending floor (a wait under way is at least as long as
        it has lasted; docs/asa.md) for every key of their floor classes, as the replay bench
        gives it. Keys whose answers moved are decided again (their version grows)."""
        if self._pool is None or not self._pool.config.pending_floor:
            return
        waited: dict[str, float] = {}
        for key, since in pending:
            floor_key = self.floor_key(key)
            if floor_key is not None and since <= now_s:
                waited[floor_key] = max(waited.get(floor_key, 0.0), _stepped(now_s - since))
        before = self._floor_waited
        moved = {k for k in before.keys() | waited.keys() if before.get(k) != waited.get(k)}
        affected = [key for key in self._waits if self.floor_key(key) in moved]
        estimates = {key: self._estimate_wait(key) for key in affected}  # under the floor before
        self._floor_waited = waited
        for key in affected:
            self._wait_estimates.pop(key, None)
            moved_quantiles = self._quantiles_moved(key)  # first: it also refreshes the values given
            if moved_quantiles or self._estimate_wait(key) != estimates[key]:
                self._bump(WAIT_KIND, key)

    # -- the queue's pending load (asad.learn.pressure) ------------------------------------
    @property
    def pressure_on(self) -> bool:
        return self.pressure_neighbours > 0

    def note_queue(self, load) -> None:  # noqa: ANN001 -- asad.slurm.pending_load.PendingLoad
        """The queue's pending load from this poll: every key whose pressure level moved is
        decided again (its version grows), the others not."""
        if not self.pressure_on:
            return
        before = {key: self.pressure_now(key) for key in self._quantiles_asked}
        self._queue = load
        for key, was in before.items():
            now = self.pressure_now(key)
            step = self.pressure_step
            if (was is None) != (now is None) or (
                    now is not None and pressure_level(now, step) != pressure_level(was, step)):
                if self._quantiles_moved(key):
                    self._bump(WAIT_KIND, key)

    def pressure_now(self, key: str) -> float | None:
        """CPUs queued now in the key's partition in jobs at least one node's share as wide as its
        jobs; None when off, before any poll, or for a key without CPUs."""
        shape = key_shape(key) if self.pressure_on and self._queue is not None else None
        return None if shape is None else float(self._queue.pressure(*shape))

    def _pressure_samples(self, key: str) -> PressureSamples:
        samples = self._pressure.get(key)
        if samples is None:
            samples = self._pressure[key] = PressureSamples.from_state(self._load(PRESSURE_KIND, key))
        return samples

    def _quantiles_moved(self, key: str) -> bool:
        """Whether any quantiles asked of this key changed (then its version must grow)."""
        moved = False
        for qs, values in self._quantiles_asked.get(key, {}).items():
            now = self._quantiles(key, qs)
            if now != values:
                self._quantiles_asked[key][qs] = now
                moved = True
        return moved

    # -- Slurm's estimate as an expert (asad.learn.hedge, hedge_slurm) -----------------------
    @property
    def takes_slurm_estimate(self) -> bool:
        """Whether the wait learner in use has an expert for Slurm's own start estimate."""
        return self._pool is not None and bool(getattr(self._pool, "takes_slurm", False))

    def want_probe(self, key: str, req) -> None:  # noqa: ANN001 -- asad.slurm.backend.JobRequest
        """The engine is about to predict ``key``'s wait for ``req``: worth a probe (when taken)."""
        if self.takes_slurm_estimate:
            self.probe_wanted[key] = req

    def note_slurm_estimate(self, key: str, wait_s: float | None, at_s: float) -> None:
        """Slurm's estimate of ``key``'s wait from a probe at ``at_s`` (None: withdrawn, e.g. no
        longer current); the key is decided again when what the engine sees of it moved."""
        if not self.takes_slurm_estimate:
            return
        self._pooled_predictor(key)
        self._pool.note_slurm(key, at_s, wait_s)
        before = self._wait_estimates.pop(key, None)
        moved = self._quantiles_moved(key)
        if before is None or self._estimate_wait(key) != before or moved:
            self._bump(WAIT_KIND, key)

    def estimate_wait(self, key: str) -> float:
        if self.consulted is not None:
            self.consulted.add((WAIT_KIND, key))
        return self._estimate_wait(key)

    def _estimate_wait(self, key: str) -> float:
        est = self._wait_estimates.get(key)
        if est is None:
            est = self._wait_estimates[key] = self._seen(self.wait_predictor(key).estimate(**self._floor(key)))
        return est

    def _seen(self, wait_s: float) -> float:
        """A learned wait as the engine sees it. A pooled learner's median moves by a rank with
        almost every wait of its key, and each move would make every workflow planning against
        that key decide again (docs/results/ops.md: ten times the engine time at 1,000
        workflows). So its waits are rounded to ``WAIT_STEP_LOG10`` in log10(1 + s), about 1 %,
        far inside the learner's error; incremental and full decisions see the same value."""
        wait_s = max(0.0, float(wait_s))
        if self._pool is None:
            return wait_s
        return max(0.0, 10.0 ** (round(math.log10(1.0 + wait_s) / WAIT_STEP_LOG10) * WAIT_STEP_LOG10) - 1.0)

    def wait_source(self, key: str) -> str:
        """Where the learned wait of ``key`` came from, for ``asad explain``: which expert
        dominated it and its weight (``hedge``: asad.learn.hedge), and whether the pending floor
        raised it; "" for a learner without either, or before any wait."""
        if self._pool is None:
            return ""
        self._pooled_predictor(key)
        parts = []
        dominant = self._pool.dominant(key) if hasattr(self._pool, "dominant") else None
        if dominant is not None:
            parts.append(f"{self.predictor_kind}: expert '{dominant.expert}' weighs {100 * dominant.weight:.0f} % "
                         f"(answers {max(0.0, 10 ** dominant.answer_log10 - 1):.0f} s; weights of {dominant.group})")
        floor = self._floor(key)
        if floor and self._pool.told(key, shifts=False) is not None:  # nothing learned: no answer to floor
            learned = self.wait_predictor(key).estimate()
            if floor["now_s"] > learned:
                parts.append(f"raised by the pending floor: a job of yours of this class has waited "
                             f"{floor['now_s']:.0f} s so far (the learned wait alone: {learned:.0f} s)")
        return "; ".join(parts)

    def wait_quantile_basis(self, key: str) -> int:
        """How many samples the spread of :meth:`wait_quantiles` rests on: the waits or residuals
        a pooled learner read it from, else the waits learned (at least 1 once one was: a point
        rests on it). For pricing what the samples leave unseen (``asad.strategies.expected_start``)."""
        if self.consulted is not None:
            self.consulted.add((WAIT_KIND, key))
            self.consulted.add((WAIT_COUNT, key))
        basis = self._basis_asked[key] = self._quantile_basis(key)
        return basis

    def _quantile_basis(self, key: str) -> int:
        pred = self.wait_predictor(key)
        seen = int(pred.n_observations)
        basis = getattr(pred, "quantile_basis", None)
        return seen if basis is None else max(int(basis()), min(1, seen))

    def wait_observations(self, key: str) -> int:
        """How many waits of this geometry have been learned."""
        if self.consulted is not None:
            self.consulted.add((WAIT_COUNT, key))
        return int(self.wait_predictor(key).n_observations)

    def wait_told(self, key: str) -> list | None:
        """What the pooled wait learner tells a job of ``key`` submitted now (its estimate,
        residual stratum and the shifts adaptive conformal inference checks), as JSON to keep
        with the job; None for other learners or before anything was learned."""
        if self._pool is None:
            return None
        self._pooled_predictor(key)  # loads the key's levels from the store
        floor = self._floor(key)
        told = self._pool.told(key, floor.get("now_s"), floor.get("pending_since_s"))
        return None if told is None else [told[0], told[1], None if told[2] is None else list(told[2])]

    def observe_wait(self, key: str, wait_s: float, at_s: float | None = None, told: list | None = None,
                     pressure: float | None = None) -> None:
        """Learn a wait; ``at_s``: when the job started (a pooled learner scores its experts
        on what they said at submission, ``at_s - wait_s``); ``told``: the job's ``wait_told``
        (:meth:`wait_told`, with the levels :meth:`hear_misses` fed already); ``pressure``: the
        queue's pending load the job met when it became eligible (:meth:`pressure_now` then)."""
        if self.pressure_on and pressure is not None:
            self._pressure_samples(key).observe(pressure, wait_s)
            self.dirty.add((PRESSURE_KIND, key))
            if self._pool is None and self._quantiles_moved(key):
                self._bump(WAIT_KIND, key)
        if self._pool is not None:
            core, fed = (None, []) if told is None else self._split_told(told)
            self._observe_pooled(key, wait_s, at_s, core, fed)
            return
        before = self._wait_estimates.pop(key, None)
        self.wait_predictor(key).observe(wait_s)
        self.dirty.add((WAIT_KIND, key))
        self._bump(WAIT_COUNT, key)
        # Same draws as estimating lazily: each learner has its own generator, and the next
        # estimate would be drawn before its next observation anyway.
        if self._estimate_wait(key) != before:
            self._bump(WAIT_KIND, key)

    def _bump(self, kind: str, key: str) -> None:
        self.versions[(kind, key)] = self.versions.get((kind, key), 0) + 1

    @staticmethod
    def _split_told(told: list) -> tuple[tuple, list[int]]:
        """A job's stored ``wait_told``: what the pool told it (estimate, stratum, shifts) and,
        fourth, the levels whose misses were heard already."""
        return tuple(told[:3]), list(told[3]) if len(told) > 3 else []

    def hear_misses(self, key: str, told: list, waited_s: float) -> list | None:
        """A pending job with ``wait_told`` ``told`` has waited ``waited_s``: feed the pooled
        learner's ACI a miss at every level whose told wait that passed and was not fed yet
        (:meth:`ExpertsPool.aci_miss`). Returns ``told`` with those levels added as its fourth
        item (keep it with the job, so a restart does not feed them twice); None when nothing
        was fed (no new miss, or a learner that takes no early misses)."""
        config = None if self._pool is None else self._pool.config
        if config is None or not (config.aci_gamma and config.aci_early_misses) or told[2] is None:
            return None
        core, fed = self._split_told(told)
        new = [i for i, wait_s in enumerate(told_waits_s(core)) if i not in fed and waited_s > wait_s]
        if not new:
            return None
        self._pooled_predictor(key)
        for level in new:
            self._pool.aci_miss(key, core, level)
        self.dirty.add((WAIT_KIND, self._pool.levels(key)[-1]))  # the strata live at the coarsest key
        self._bump_moved()
        return [*core, sorted(fed + new)]

    def _observe_pooled(self, key: str, wait_s: float, at_s: float | None, told: tuple | None,
                        fed: Sequence[int]) -> None:
        self.wait_predictor(key).observe(wait_s, at_s=at_s, told=told, fed=fed)
        self._bump(WAIT_COUNT, key)
        for level_key in self._pool.levels(key):
            self.dirty.add((WAIT_KIND, level_key))
        self._bump_moved()

    def _bump_moved(self) -> None:
        # Coarse keys are shared: any key's estimate (and quantiles) may have moved. Only what the
        # engine sees counts (rounded, ``_seen``); the key's count has its own version.
        for other in list(self._waits):
            before = self._wait_estimates.pop(other, None)
            moved = self._quantiles_moved(other)
            if before is None or self._estimate_wait(other) != before or moved:
                self._bump(WAIT_KIND, other)
            # another key's wait can add to the level a key's spread is read from (its basis)
            # without moving its quantiles; a barrier priced from that basis must be priced again
            if other in self._basis_asked and self._quantile_basis(other) != self._basis_asked[other]:
                self._basis_asked[other] = self._quantile_basis(other)
                self._bump(WAIT_COUNT, other)

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
        self._bump(RUNTIME_KIND, key)

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

    def share_choice(self, key: str) -> ShareChoice:
        choice = self._share.get(key)
        if choice is None:
            state = self._load(SHARE_KIND, key)
            choice = self._share[key] = ShareChoice.from_state(state) if state is not None else ShareChoice()
        return choice

    def choose_sharing(self, key: str, workflow_id: int, stages: list[str]) -> tuple[str, str]:
        """(choice, why) for running ``stages`` (a head and its candidate riders) as one job or a
        job each (``asad.core.share_choice``); the outcome is learned when they have all ended."""
        arm, why = self.share_choice(key).choose()
        self.dirty.add((SHARE_KIND, key))
        self.share_trials.open(workflow_id, Trial(key, arm, tuple(stages)))
        return arm, why

    def sharing_decided(self, workflow_id: int, stage: str) -> bool:
        """Is ``stage`` a later stage of one of ``workflow_id``'s open share choices (it gets none of its own)?"""
        return self.share_trials.decided(workflow_id, stage)

    def settle_sharing(self, wf) -> None:  # noqa: ANN001 -- asad.core.model.WorkflowRun
        """Learn the cost of every share choice of ``wf`` whose stages have all ended."""
        for trial, cost in self.share_trials.settle(wf):
            self.share_choice(trial.key).observe(trial.arm, cost)
            self.dirty.add((SHARE_KIND, trial.key))

    def drain_dirty(self) -> list[tuple[str, str, dict, int]]:
        """(kind, key, state, n_observations) for every learner changed since the last drain."""
        out = []
        for kind, key in sorted(self.dirty):
            if kind == WAIT_KIND and self._pool is not None:
                out.append((kind, key, self._pool.key_state(key), self._pool.n_observations(key)))
            elif kind == WAIT_KIND:
                pred = self._waits[key]
                out.append((kind, key, pred.to_state(), int(pred.n_observations)))
            elif kind == PRESSURE_KIND:
                samples = self._pressure[key]
                out.append((kind, key, samples.to_state(), samples.n))
            elif kind == PLACEMENT_KIND:
                out.append((kind, key, self._placers[key].to_state(), 0))
            elif kind == SHARE_KIND:
                out.append((kind, key, self._share[key].to_state(), self._share[key].n_observations))
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


def _stepped(waited_s: float) -> float:
    """``waited_s`` rounded down to a step of FLOOR_STEP_LOG10 in log10(1 + s)."""
    steps = math.floor(math.log10(1.0 + max(0.0, waited_s)) / FLOOR_STEP_LOG10 + 1e-9)
    return 10.0 ** (steps * FLOOR_STEP_LOG10) - 1.0


def _stable_hash(text: str) -> int:
    h = 2166136261
    for ch in text.encode():
        h = ((h ^ ch) * 16777619) % (2**32)
    return h
