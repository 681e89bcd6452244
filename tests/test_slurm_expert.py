"""Issue 38's missing expert: Slurm's own start estimate (``sbatch --test-only``) in hedge's panel
(asad/learn/hedge.py ``slurm``), and the daemon's polite probes of it (asad/daemon/slurm_probe.py)."""

from __future__ import annotations

import math
import random
import threading
import time

import pytest

from asad.core.learned import Learned
from asad.daemon.slurm_probe import SlurmProbes, make_probes, probe_request
from asad.learn.hedge import PANEL, SLURM, HedgePool
from asad.learn.registry import make_pool
from asad.slurm.backend import Dependency, DependencyType, JobRequest

KEY = "cluster=g|account=a{a}|partition=p|qos=|nodes=1|cpus={c}|walltime<=3h"


def stream(pool, waits, keys, slurm=None, gap_s=2e4):
    """Feed waits in order: before each is told, ``slurm(i, wait)`` (if given) is noted as Slurm's
    estimate of its key; returns the |log10 errors| of what was told."""
    errors, t = [], 0.0
    for i, (wait, key) in enumerate(zip(waits, keys)):
        if slurm is not None:
            pool.note_slurm(key, t, slurm(i, wait))
        told = pool.told(key, t, None)
        if told is not None:
            errors.append(abs(told[0] - math.log10(1 + wait)))
        pool.observe(key, wait, at_s=t + wait, told=told)  # started before the next is told
        t += gap_s
    return errors


def noisy_waits(n, seed):
    rng = random.Random(seed)
    return [10 ** rng.uniform(1.0, 4.0) for _ in range(n)]


def test_without_probes_the_panel_and_its_answers_are_the_six_experts():
    waits = noisy_waits(600, 1)
    keys = [KEY.format(a=i % 3, c=1 + i % 2) for i in range(600)]
    off, on = make_pool("hedge"), make_pool("hedge", hedge_slurm=True)
    assert stream(off, waits, keys) == stream(on, waits, keys)
    assert on.panel(keys[0]).values[SLURM] is None
    # the six experts start as they did before the seventh existed (the preset's prior 0.5 on
    # the back-off, 0.1 each on the other five), and slurm as one of those five
    weights = on.initial_weights()
    shares = [math.exp(w) for w in weights[:SLURM]]
    assert shares[0] / sum(shares) == pytest.approx(0.5) and shares[1] / sum(shares) == pytest.approx(0.1)
    assert weights[SLURM] == pytest.approx(weights[1])


def test_the_expert_enters_only_where_a_probe_was_noted_and_shares_renormalise():
    pool = make_pool("hedge", hedge_slurm=True)
    key, other = KEY.format(a=1, c=4), KEY.format(a=2, c=4)
    stream(pool, noisy_waits(50, 2), [key, other] * 25)
    before = pool.told(key)[0]
    pool.note_slurm(key, 5000.0, 99999.0)
    panel = pool.panel(key)
    assert panel.values[SLURM] == pytest.approx(math.log10(1 + 99999.0))
    shares = dict(pool.shares(panel))
    assert set(shares) == set(range(len(PANEL))) and sum(shares.values()) == pytest.approx(1.0)
    # it comes in with a non-back-off expert's standing, 1/7 of a fresh panel's at most: not half
    assert shares[SLURM] < 0.2
    assert pool.told(key)[0] > before  # the mean moved towards Slurm's 5-decade answer
    assert pool.panel(other).values[SLURM] is None  # another geometry has no probe
    assert sum(dict(pool.shares(pool.panel(other))).values()) == pytest.approx(1.0)
    pool.note_slurm(key, 5100.0, None)  # withdrawn: silent again
    assert pool.panel(key).values[SLURM] is None and pool.told(key)[0] == pytest.approx(before)


def test_an_exact_slurm_wins_the_weight_and_explain_names_it():
    pool = make_pool("hedge", hedge_slurm=True)
    key = KEY.format(a=1, c=4)
    waits = noisy_waits(300, 3)
    errors = stream(pool, waits, [key] * len(waits), slurm=lambda i, wait: wait)
    dominant = pool.dominant(key)
    assert dominant.expert == "slurm" and dominant.weight > 0.5
    baseline = stream(make_pool("hedge"), waits, [key] * len(waits))
    assert sorted(errors)[len(errors) // 2] < sorted(baseline)[len(baseline) // 2]
    # a useless Slurm (always 0 s) loses its weight instead
    pool = make_pool("hedge", hedge_slurm=True)
    stream(pool, waits, [key] * len(waits), slurm=lambda i, wait: 0.0)
    assert dict(pool.shares(pool.panel(key)))[SLURM] < 0.01


def test_weights_saved_before_the_expert_load_with_it_at_a_fresh_experts_share():
    pool = make_pool("hedge", hedge_slurm=True)
    key = KEY.format(a=1, c=4)
    stream(pool, noisy_waits(40, 5), [key] * 40)
    state = pool.to_state()
    coarsest = pool.levels(key)[-1]
    saved = state["keys"][coarsest]["hedge_weights"]
    old = {g: w[:SLURM] for g, w in saved.items()}  # as a version before the seventh expert saved them
    reloaded = make_pool("hedge", hedge_slurm=True)
    reloaded.load_key_state(coarsest, {**state["keys"][coarsest], "hedge_weights": old})
    for group, weights in old.items():
        got = reloaded.log_weights[group]
        assert got[:SLURM] == pytest.approx(weights)
        total = sum(math.exp(w) for w in weights)
        assert math.exp(got[SLURM]) / total == pytest.approx(0.1)  # the preset's prior: 0.5 / 5 others


def test_slurm_pays_only_for_waits_it_answered_and_as_it_stood_when_told():
    pool = make_pool("hedge", hedge_slurm=True, hedge_batch_s=-1.0)
    key = KEY.format(a=1, c=4)
    stream(pool, [100.0] * 20, [key] * 20)
    group = pool.panel(key).group

    def slurm_standing():
        w = pool.log_weights[group]
        others = [i for i in range(len(PANEL)) if i != SLURM]
        return w[SLURM] - math.log(sum(math.exp(w[i]) for i in others))

    standing = slurm_standing()
    pool.observe(key, 1000.0, at_s=1e6)  # no probe ever: slurm sat it out
    assert slurm_standing() == pytest.approx(standing)
    # told at 2e6 with Slurm saying 1000 s where the others say ~100 s; a later probe (2e6 + 50)
    # says 10^5 s before the wait ends: Slurm is judged on the answer the job was told
    pool.note_slurm(key, 2e6, 1000.0)
    pool.note_slurm(key, 2e6 + 50, 1e5)
    pool.observe(key, 1000.0, at_s=2e6 + 1000)
    assert slurm_standing() > standing


def test_learned_takes_probes_only_with_the_expert_and_decides_the_key_again():
    key = KEY.format(a=1, c=4)
    plain = Learned(lambda kind, k: None, "hedge")
    plain.want_probe(key, object())
    assert not plain.takes_slurm_estimate and plain.probe_wanted == {}
    learned = Learned(lambda kind, k: None, "hedge", predictor_params={"hedge_slurm": True})
    assert learned.takes_slurm_estimate
    for i in range(30):
        learned.observe_wait(key, 60.0, at_s=1000.0 + 100 * i)
    learned.estimate_wait(key)
    version = learned.versions.get(("wait", key), 0)
    learned.note_slurm_estimate(key, 50000.0, 5000.0)
    assert learned.versions[("wait", key)] == version + 1 and learned.estimate_wait(key) > 60.0


def test_explain_names_slurm_when_it_weighs_most():
    key = KEY.format(a=1, c=4)
    learned = hedge_learned()
    t = 0.0
    for wait in noisy_waits(200, 4):
        learned.note_slurm_estimate(key, wait, t)  # an exact Slurm
        told = learned.wait_told(key)
        learned.observe_wait(key, wait, at_s=t + wait, told=told)
        t += 2e4
    source = learned.wait_source(key)
    assert source.startswith("hedge: expert 'slurm' weighs ") and "weights of cluster=g#0" in source, source


class FakeSlurm:
    """A backend stand-in that answers ``estimate_start`` (and counts the probes)."""

    name = "fake"

    def __init__(self, answer=lambda req, n: 1000.0 + 600.0, gate=None):
        self.answer, self.gate, self.asked = answer, gate, []

    def estimate_start(self, req):
        self.asked.append(req)
        if self.gate is not None:  # a slow sbatch --test-only: answers once the test opens the gate
            self.gate.wait(timeout=60)
        return self.answer(req, len(self.asked))


def request(cpus=4):
    return JobRequest(name="asad.1.b", command="", partition="p", cpus_per_task=cpus, time_limit_s=3600,
                      dependency=Dependency(DependencyType.AFTEROK, (7,)), begin=9999.0, array="0-9")


def hedge_learned():
    return Learned(lambda kind, k: None, "hedge", predictor_params={"hedge_slurm": True})


@pytest.mark.parametrize("inline", [True, False])
def test_one_probe_per_geometry_per_poll_interval(inline):
    learned, slurm = hedge_learned(), FakeSlurm()
    probes = SlurmProbes(slurm, learned, interval_s=30.0, inline=inline)
    a, b = KEY.format(a=1, c=4), KEY.format(a=1, c=8)
    learned.want_probe(a, request(4))
    probes.refresh(1000.0)
    assert len(slurm.asked) == 1 and probes.cache[a].wait_s == pytest.approx(600.0)
    assert learned._pool.slurm_answer(a) == pytest.approx(math.log10(601.0))
    # the probe is of the geometry eligible now: no dependency, --begin or array
    sent = slurm.asked[0]
    assert sent.dependency is None and sent.begin is None and sent.array is None and sent.cpus_per_task == 4
    for now in (1005.0, 1020.0, 1029.0):  # asked again within the interval: the cached answer
        learned.want_probe(a, request(4))
        learned.want_probe(b, request(8))
        probes.refresh(now)
    assert [r.cpus_per_task for r in slurm.asked] == [4, 8]
    probes.refresh(1031.0)
    assert [r.cpus_per_task for r in slurm.asked] == [4, 8, 4]
    probes.close()


def test_geometries_no_longer_asked_about_are_withdrawn_and_not_probed():
    learned, slurm = hedge_learned(), FakeSlurm()
    probes = SlurmProbes(slurm, learned, interval_s=30.0, wanted_ttl_s=600.0, inline=True)
    a = KEY.format(a=1, c=4)
    learned.want_probe(a, request())
    probes.refresh(1000.0)
    probes.refresh(1500.0)
    assert len(slurm.asked) == 2
    probes.refresh(1700.0)  # not asked for 700 s: withdrawn, not probed
    assert len(slurm.asked) == 2 and learned._pool.slurm_answer(a) is None


def test_a_failed_or_slow_probe_blocks_nothing_and_is_logged_once(caplog):
    learned = hedge_learned()
    a = KEY.format(a=1, c=4)

    def refuse(req, n):
        raise RuntimeError("sbatch: error: Batch job submission failed")

    probes = SlurmProbes(FakeSlurm(refuse), learned, interval_s=30.0, inline=True)
    import structlog

    with structlog.testing.capture_logs() as logs:
        for now in (1000.0, 1031.0, 1062.0):
            learned.want_probe(a, request())
            probes.refresh(now)
        logged = [e for e in logs if "failed" in e["event"]]
    assert len(logged) == 1 and learned._pool.slurm_answer(a) is None
    # a probe slower than the timeout: the tick goes on, the answer is taken at a later tick
    gate = threading.Event()
    slow = FakeSlurm(gate=gate)
    probes = SlurmProbes(slow, learned, interval_s=30.0, timeout_s=0.1, inline=False)
    learned.want_probe(a, request())
    probes.refresh(2000.0)  # had it waited for the probe, the answer would be in (the gate is shut)
    assert len(slow.asked) == 1 and learned._pool.slurm_answer(a) is None
    probes.refresh(2001.0)  # still in flight: not sent twice
    assert len(slow.asked) == 1
    gate.set()
    deadline = time.monotonic() + 30
    while learned._pool.slurm_answer(a) is None and time.monotonic() < deadline:
        time.sleep(0.05)
        probes.refresh(2002.0)  # the answer is taken at a later tick
    assert len(slow.asked) == 1
    assert learned._pool.slurm_answer(a) == 0.0  # Slurm said 1600 s, asked at 2000 s: start now
    probes.close()


def test_no_probes_when_the_learner_or_the_backend_cannot_take_them():
    import structlog
    with structlog.testing.capture_logs() as logs:
        assert make_probes(FakeSlurm(), Learned(lambda k, key: None, "median-backoff"), on=True,
                           interval_s=30.0) is None

        class CannotTell:
            name = "stand-in"
            asks_slurm = False

            def estimate_start(self, req):
                return None

        assert make_probes(CannotTell(), hedge_learned(), on=True, interval_s=30.0) is None
        assert make_probes(FakeSlurm(), hedge_learned(), on=False, interval_s=30.0) is None
    said = [e["event"] for e in logs]
    assert len(said) == 2 and "no expert for Slurm's estimate" in said[0] and "cannot tell" in said[1]
    assert isinstance(make_probes(FakeSlurm(), hedge_learned(), on=True, interval_s=30.0), SlurmProbes)


def test_the_setting_turns_the_expert_on_for_hedge_only(monkeypatch):
    from asad.common.config import Settings, load_settings
    from asad.daemon.wiring import predictor_choice

    monkeypatch.setenv("ASAD_SLURM_EXPERT", "true")
    assert load_settings().slurm_expert is True
    assert predictor_choice(Settings(predictor="hedge", slurm_expert=True))[1] == {"hedge_slurm": True}
    assert predictor_choice(Settings(predictor="hedge"))[1] == {}
    assert "hedge_slurm" not in predictor_choice(Settings(predictor="median-backoff", slurm_expert=True))[1]


def test_on_the_simulator_its_estimate_reaches_hedge_through_the_engine(db_url):
    """The real engine and runner on the simulator: each geometry the engine plans is probed with
    the simulator's estimate_start (once per poll interval at most), and hedge weighs the answers."""
    from asad.bench.counting import CountingBackend
    from asad.common.config import Settings
    from asad.daemon.wiring import run_in_process
    from asad.slurm.sim import make_simulator
    from asad.spec.load import parse_workflow
    from asad.store.repo import Store

    pipe = ("name: pipe\nstages:\n  - {name: a, cpus: 8, time: 30m, run: 'true', simulate: {runtime: 300s}}\n"
            "  - {name: b, cpus: 16, time: 1h, run: 'true', after: [a], simulate: {runtime: 60s}}\n")
    store = Store(db_url)
    try:
        for on in (False, True):
            sim = CountingBackend(make_simulator("small", load=0.9, seed=5, priority="fifo"))
            sim.run_until(sim.now() + 6 * 3600)
            settings = Settings(predictor="hedge", slurm_expert=on)
            for _ in range(3):
                run_in_process(store, sim, [parse_workflow(pipe)], settings=settings, strategy="asa")
            if not on:
                assert sim.total["estimate_start"] == 0  # off: not one probe
        assert sim.total["estimate_start"] >= 2  # both geometries, at least once each
        assert sim.total["estimate_start"] <= 2 * sim.total["poll"] + 2  # at most one each per poll
        rows = {r.key: r for r in store.learners() if r.kind == "wait"}
        weights = [w for r in rows.values() for g, w in (store.load_learner("wait", r.key) or {})
                   .get("hedge_weights", {}).items() if not g.endswith("#top")]
        fresh = HedgePool.initial_weights(make_pool("hedge"))
        assert weights and any(abs(w[SLURM] - fresh[SLURM]) > 1e-9 for w in weights)  # slurm paid
    finally:
        store.close()


def test_probe_request_keeps_the_geometry():
    req = request(8)
    sent = probe_request(req)
    assert (sent.cpus_per_task, sent.partition, sent.time_limit_s) == (8, "p", 3600)
    assert sent.dependency is None
