"""Slurm's own start estimate for the wait learner's ``slurm`` expert (issue 38's missing expert).

The engine decides on what it is given: while it plans, :meth:`asad.core.context.Context.geometry_key`
records each geometry whose wait it asks, with the stage's request
(:meth:`asad.core.learned.Learned.want_probe`, only when the learner in use has the expert:
``hedge`` with ``hedge_slurm``). Here, at the runner's edge, once per tick before the engine
decides, each wanted geometry is probed with the backend's ``estimate_start`` (on a real cluster
``sbatch --test-only``: nothing is submitted; on the simulator its answer from its backfill plan)
and the answer, ``start - now`` in seconds, is noted with the learner
(:meth:`asad.core.learned.Learned.note_slurm_estimate`).

Polite to Slurm: at most one probe per geometry per ``interval_s`` (the poll interval; the answer
is cached with its time), only for geometries asked within the last ``wanted_ttl_s`` (after that
the estimate is withdrawn, so no stale probe speaks), without the request's dependency, ``--begin``
and array (the wait of one job of the geometry as it would be eligible now). A probe never blocks or
fails a submission: on a real cluster probes run on one worker thread and the tick waits at most
``timeout_s`` for them (a slower one is picked up at a later tick, and none of its geometry is sent
meanwhile); a refusal or an outage is logged once per geometry until it answers again and the
learner goes on without the expert.
"""

from __future__ import annotations

import concurrent.futures as cf
from dataclasses import dataclass, replace

import structlog

from asad.core.learned import Learned
from asad.slurm.backend import Backend, JobRequest

log = structlog.get_logger("asad.daemon.slurm_probe")

PROBE_TIMEOUT_S = 5.0  # the most a tick waits for its probes (wall time)
WANTED_TTL_S = 3600.0  # a geometry not asked about for this long is probed no more


@dataclass(frozen=True)
class Probe:
    """One answer: when it was asked (the backend's clock) and Slurm's wait, start - then (None:
    no answer, e.g. refused or failed)."""

    at_s: float
    wait_s: float | None


def probe_request(req: JobRequest) -> JobRequest:
    """The request a probe sends: the stage's own geometry, eligible now, one job."""
    return replace(req, dependency=None, begin=None, array=None, array_offset=0)


def can_probe(backend: Backend) -> bool:
    """Whether ``backend`` can tell Slurm's start estimate (asad cancel's stand-in, say, cannot)."""
    return callable(getattr(backend, "estimate_start", None)) and getattr(backend, "asks_slurm", True)


class SlurmProbes:
    def __init__(self, backend: Backend, learned: Learned, *, interval_s: float,
                 timeout_s: float = PROBE_TIMEOUT_S, wanted_ttl_s: float = WANTED_TTL_S,
                 inline: bool | None = None) -> None:
        self.backend = backend
        self.learned = learned
        self.interval_s = float(interval_s)
        self.timeout_s = float(timeout_s)
        self.wanted_ttl_s = float(wanted_ttl_s)
        self.cache: dict[str, Probe] = {}
        self.wanted: dict[str, tuple[JobRequest, float]] = {}  # key -> (request to probe, last asked at)
        self.calls = 0  # probes sent
        self._failing: set[str] = set()  # geometries whose last probe failed (logged once)
        # the simulator answers at once and is not thread-safe: probe it inline; Slurm on a thread
        inline = backend.name == "sim" if inline is None else inline
        self._executor = None if inline else cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="asad-probe")
        self._inflight: dict[str, tuple[cf.Future, float]] = {}

    def refresh(self, now: float) -> None:
        """Take the geometries the engine asked about, withdraw those no longer asked about, and
        probe each one whose answer is older than ``interval_s`` (at most one in flight each)."""
        for key, req in self.learned.probe_wanted.items():
            self.wanted[key] = (probe_request(req), now)
        self.learned.probe_wanted.clear()
        for key in [k for k, (_, asked) in self.wanted.items() if now - asked > self.wanted_ttl_s]:
            del self.wanted[key]
            self.cache.pop(key, None)
            self.learned.note_slurm_estimate(key, None, now)
        self._collect(now, wait=False)
        sent = False
        for key, (req, _) in self.wanted.items():
            cached = self.cache.get(key)
            if key in self._inflight or (cached is not None and now - cached.at_s < self.interval_s):
                continue
            self.calls += 1
            if self._executor is None:
                self._record(key, now, self._ask(req, now), now)
            else:
                self._inflight[key] = (self._executor.submit(self._ask, req, now), now)
                sent = True
        if sent:
            self._collect(now, wait=True)

    def _ask(self, req: JobRequest, asked_s: float) -> float | None | BaseException:
        """Slurm's wait for ``req`` asked at ``asked_s`` (s; None: no start foreseen), or the error."""
        try:
            start = self.backend.estimate_start(req)
        except Exception as exc:  # noqa: BLE001 -- any failure only costs the expert this answer
            return exc
        return None if start is None else max(0.0, float(start) - asked_s)

    def _collect(self, now: float, *, wait: bool) -> None:
        if not self._inflight:
            return
        if wait:
            pending = [future for future, _ in self._inflight.values()]
            cf.wait(pending, timeout=self.timeout_s)
        for key, (future, asked) in list(self._inflight.items()):
            if not future.done():
                continue
            del self._inflight[key]
            self._record(key, asked, future.result(), now)

    def _record(self, key: str, asked_s: float, answer: float | None | BaseException, now: float) -> None:
        if isinstance(answer, BaseException):
            if key not in self._failing:
                self._failing.add(key)
                log.warning("Slurm's start estimate for this geometry failed; its wait is learned without "
                            "it until a probe answers", geometry=key, error=str(answer)[:300])
            answer = None
        else:
            self._failing.discard(key)
        self.cache[key] = Probe(asked_s, answer)
        self.learned.note_slurm_estimate(key, answer, now)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


def make_probes(backend: Backend, learned: Learned, *, on: bool, interval_s: float) -> SlurmProbes | None:
    """The runner's probes when the ``slurm_expert`` setting is on and they can take effect; said
    once here, with the fix, when they cannot (not per poll)."""
    if not on:
        return None
    if not learned.takes_slurm_estimate:
        log.warning("slurm_expert is set but the wait learner in use has no expert for Slurm's estimate, "
                    "so no probe is sent", predictor=learned.predictor_kind,
                    fix="use predictor = hedge, or set slurm_expert = false")
        return None
    if not can_probe(backend):
        log.warning("slurm_expert is set but this backend cannot tell Slurm's start estimate, so the wait "
                    "is learned without it", backend=backend.name,
                    fix="use Slurm's commands (ASAD_SLURM_API=cli) or set slurm_expert = false")
        return None
    return SlurmProbes(backend, learned, interval_s=interval_s)

