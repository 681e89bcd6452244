"""Issue 35, fourth stop: the learned wait conditioned on the queue's pending load
(asad/slurm/pending_load.py, asad/learn/pressure.py, Learned.note_queue/pressure_now)."""

from __future__ import annotations

import pytest

from asad.learn.pressure import KEEP, PressureSamples, key_shape, pressure_level
from asad.slurm.backend import Dependency, DependencyType, JobRequest, SimTruth
from asad.slurm.pending_load import PendingLoad, competing, parse_pending_load
from asad.slurm.slurm_text import SlurmParseError

KEY = "cluster=sim|partition=batch|qos=|nodes=2|cpus=56|walltime<=1h"
CALM = PendingLoad({"batch": (28,) * 2})  # 56 CPUs queued in node-wide jobs
BUSY = PendingLoad({"batch": (28,) * 40 + (4,) * 30})  # 1,120 in node-wide jobs (the 4-CPU ones do not count)


# -- the queue's pending load ---------------------------------------------------------------------
def test_squeue_rows_count_only_jobs_that_compete_now():
    text = ("batch|28|Priority\nbatch|56|Resources\nbatch,gpu|28|Priority\nbatch|28|Dependency\n"
            "batch|28|BeginTime\nbatch|112|JobHeldUser\nbatch|2|(Priority)\n\n")
    load = parse_pending_load(text, taken_at=5.0)
    assert load.cpus_by_partition == {"batch": (28, 56, 28, 2), "gpu": (28,)}
    assert load.pressure("batch", 28) == 112 and load.pressure("batch", 1) == 114
    assert load.pressure("gpu", 28) == 28 and load.pressure("", 28) == 140  # "" = every partition
    assert load.pressure("batch,gpu", 56) == 56 and load.taken_at == 5.0
    assert not competing("DependencyNeverSatisfied") and competing("QOSMaxCpuPerUserLimit")
    with pytest.raises(SlurmParseError):
        parse_pending_load("batch|many|Priority\n")


def test_the_simulators_pending_load_is_its_scheduling_queue_not_held_jobs():
    from asad.slurm.sim import make_simulator

    sim = make_simulator("small", load=0.0, seed=1)
    cores = sim.partitions()[0].cpus_per_node
    nodes = sim.partitions()[0].nodes
    req = JobRequest(name="big", command="true", nodes=nodes, ntasks=nodes, cpus_per_task=cores,
                     time_limit_s=3600, truth=SimTruth(3000.0))
    first = sim.submit(req)
    sim.run_until(sim.now() + 60)  # the whole cluster busy
    assert sim.pending_load().pressure("", 1) == 0
    sim.submit(req)  # waits for resources: counted
    sim.submit(JobRequest(name="held", command="true", cpus_per_task=cores, time_limit_s=600,
                          dependency=Dependency(DependencyType.AFTEROK, (first,))))  # held: not counted
    sim.submit(JobRequest(name="later", command="true", cpus_per_task=cores, time_limit_s=600,
                          begin=sim.now() + 3600))  # future --begin: not counted
    sim.run_until(sim.now() + 60)
    load = sim.pending_load()
    assert load.pressure("", cores) == nodes * cores and load.taken_at == sim.now()


# -- the conditioned wait ---------------------------------------------------------------------
def test_the_k_waits_nearest_the_pressure_give_the_quantiles():
    samples = PressureSamples()
    for i in range(6):
        samples.observe(56, 20.0 + i)  # calm: 20-25 s
        samples.observe(1120, 3000.0 + 100 * i)  # congested: 3,000-3,500 s
    assert samples.quantiles([0.5], 1000, neighbours=7) is not None
    assert samples.quantiles([0.1, 0.5], 60, neighbours=6) == pytest.approx([20.5, 22.5])
    assert samples.quantiles([0.5], 1300, neighbours=6) == pytest.approx([3250.0])
    assert samples.quantiles([0.5], 1e6, neighbours=6)[0] >= 3000  # beyond every one seen: the nearest
    assert samples.quantiles([0.5], 60, neighbours=13) is None  # too few: back off
    assert samples.quantiles([0.5], 60, neighbours=0) is None
    restored = PressureSamples.from_state(samples.to_state())
    assert restored.samples == samples.samples and restored.n == 12
    for _ in range(KEEP):
        samples.observe(0, 1.0)
    assert samples.n == KEEP and all(w == 1.0 for _, w in samples.samples)  # the newest kept


def test_pressure_levels_and_key_shapes():
    assert pressure_level(0) == 0 and pressure_level(1) == 1.0 and pressure_level(3) == 2.0
    assert pressure_level(1120) == pressure_level(1200)  # the same half log2 step
    assert pressure_level(1120) != pressure_level(2240)
    assert key_shape(KEY) == ("batch", 28)
    assert key_shape("cluster=sim|partition=|nodes=1|cpus=8|walltime<=1h") == ("", 8)
    assert key_shape("cluster=sim|partition=batch|walltime<=1h") is None


def _learned(neighbours: int, predictor: str = "median-backoff"):
    from asad.core.learned import Learned

    learned = Learned(lambda kind, key: None, predictor, pressure_neighbours=neighbours)
    for i in range(6):  # one geometry, two spells, interleaved as the 28-core key saw them
        for pressure, wait in ((56.0, 20.0 + i), (1120.0, 3000.0 + 100 * i)):
            learned.observe_wait(KEY, wait, at_s=1000.0 * i, pressure=pressure)
    return learned


@pytest.mark.parametrize("predictor", ["median-backoff", "median-k"])
def test_the_learned_wait_follows_the_queue_when_on_and_not_when_off(predictor):
    on, off = _learned(6, predictor), _learned(0, predictor)
    assert on.pressure_now(KEY) is None  # before any poll: the learner's own
    assert on.wait_quantiles(KEY, [0.5]) == off.wait_quantiles(KEY, [0.5])
    on.note_queue(BUSY)
    off.note_queue(BUSY)
    assert on.pressure_now(KEY) == 1120.0 and off.pressure_now(KEY) is None
    assert on.wait_quantiles(KEY, [0.1])[0] >= 3000  # congested: even the low quantile is long
    on.note_queue(CALM)
    assert on.wait_quantiles(KEY, [0.9])[0] <= 26  # calm: even the high quantile is short
    mixed = off.wait_quantiles(KEY, [0.1, 0.9])
    assert not (mixed[0] >= 3000 or mixed[1] <= 26)  # unconditioned: both spells in one distribution


def test_a_new_pressure_level_makes_the_key_decide_again_and_state_is_written():
    from asad.core.learned import PRESSURE_KIND, WAIT_KIND

    learned = _learned(6)
    learned.note_queue(CALM)
    learned.wait_quantiles(KEY, [0.11])
    version = learned.versions.get((WAIT_KIND, KEY), 0)
    learned.note_queue(PendingLoad({"batch": (28,) * 2, "other": (28,) * 50}))  # same level in batch
    assert learned.versions.get((WAIT_KIND, KEY), 0) == version
    learned.note_queue(BUSY)
    assert learned.versions[(WAIT_KIND, KEY)] > version
    rows = {(kind, key): (state, n) for kind, key, state, n in learned.drain_dirty()}
    state, n = rows[(PRESSURE_KIND, KEY)]
    assert n == 12 and len(state["samples"]) == 12


def test_the_quantile_rule_leads_in_a_congested_spell_and_not_in_a_calm_one(limits_ctx):
    """b's geometry has met 20-25 s waits in calm spells and 3,000-3,500 s in congested ones. With
    the wait conditioned on the queue, b leads a's end by the long wait when the queue is congested
    and goes with afterok when it is calm; unconditioned, one lead serves both."""
    from asad.core.model import StageRun, StageState, WorkflowRun
    from asad.spec.load import parse_workflow
    from asad.strategies.auto import Auto

    ctx = limits_ctx
    pipe = ("name: pipe\nstages:\n  - {name: a, cpus: 8, time: 2h, run: 'true', simulate: {runtime: 5000s}}\n"
            "  - {name: b, cpus: 8, time: 10m, run: 'true', after: [a], simulate: {runtime: 60s}}\n")
    wf = WorkflowRun(id=1, spec=parse_workflow(pipe), strategy="auto", mode="dependency")
    now = 1_000_000.0
    wf.stages = {"a": StageRun(1, "a", state=StageState.RUNNING, start_time=now - 100.0, attempt=1),
                 "b": StageRun(1, "b")}
    key = ctx.geometry_key(ctx.request_for(wf, "b"))
    shape = key_shape(key)
    for _ in range(3):
        ctx.learned.observe_runtime(ctx.runtime_key(wf, "a"), 5000.0)
    ctx.learned.pressure_neighbours = 6
    for i in range(12):
        for pressure, wait in ((8.0, 20.0 + i % 6), (400.0, 3000.0 + 100 * (i % 6))):
            ctx.learned.observe_wait(key, wait, at_s=now - 50_000 + 1000 * i, pressure=pressure)
    plain = Auto().plan(wf, "b", now, ctx)  # no queue seen yet: the unconditioned learner
    ctx.learned.note_queue(PendingLoad({shape[0]: (8,) * 50}))  # 400 CPUs queued: congested
    busy = Auto().plan(wf, "b", now, ctx)
    ctx.learned.note_queue(PendingLoad({shape[0]: (8,)}))
    calm = Auto().plan(wf, "b", now, ctx)
    assert busy.barrier_on == ("a",) and busy.est_wait_s > 2500
    assert calm.dependency_on == ("a",) and calm.barrier_on == ()  # a lead under 60 s: afterok
    assert plain.barrier_on != ("a",) or plain.est_wait_s < 2500  # the mixed distribution does neither


def test_on_the_simulator_each_wait_is_learned_with_the_pressure_it_met(db_url):
    from asad.bench.counting import CountingBackend
    from asad.common.config import Settings
    from asad.daemon.wiring import run_in_process
    from asad.slurm.sim import make_simulator
    from asad.spec.load import parse_workflow
    from asad.store.repo import Store

    pipe = ("name: pipe\nstages:\n  - {name: a, cpus: 8, time: 30m, run: 'true', simulate: {runtime: 300s}}\n"
            "  - {name: b, cpus: 8, time: 30m, run: 'true', after: [a], simulate: {runtime: 60s}}\n")
    store = Store(db_url)
    try:
        for neighbours in (0, 6):
            sim = CountingBackend(make_simulator("small", seed=2, priority="multifactor",
                                                 accounting_enforce_limits=True))
            sim.run_until(sim.now() + 3600)
            run_in_process(store, sim, [parse_workflow(pipe)], settings=Settings(wait_pressure=neighbours),
                           strategy="auto")
            if not neighbours:
                assert sim.total["pending_load"] == 0  # off: not one call more to Slurm
                assert all(o.queue_pressure is None for k in {j.geometry_key for j in _jobs(store)}
                           for o in store.observations(k))
        # on: one squeue of the queue per poll interval (the first before anything is live to poll)
        assert sim.total["poll"] <= sim.total["pending_load"] <= sim.total["poll"] + 1
        keys = {j.geometry_key for j in _jobs(store)}
        seen = [o.queue_pressure for k in keys for o in store.observations(k)]
        assert seen.count(None) == 2 and len([p for p in seen if p is not None]) == 2
        assert {r.kind for r in store.learners()} >= {"wait-pressure"}
    finally:
        store.close()


def _jobs(store):
    return [j for wf in store.load_workflows(active_only=False) for j in wf.jobs]


def test_the_setting_is_a_count_of_waits_and_refuses_a_negative(monkeypatch, tmp_path):
    from asad.common.config import ConfigError, load_settings

    monkeypatch.setenv("ASAD_WAIT_PRESSURE", "8")
    assert load_settings(config_file=None).wait_pressure == 8
    monkeypatch.setenv("ASAD_WAIT_PRESSURE", "-1")
    with pytest.raises(ConfigError, match="wait_pressure.*0 \\(off\\)"):
        load_settings()
    monkeypatch.setenv("ASAD_WAIT_PRESSURE", "5")
    monkeypatch.setenv("ASAD_WAIT_PRESSURE_STEP", "0")
    with pytest.raises(ConfigError, match="wait_pressure_step"):
        load_settings()


def test_bench_variant_names():
    from asad.bench.strategies import pressure_of, variant_setup

    assert pressure_of("auto-qp5") == (5, 0.5) and pressure_of("auto-qp5-1@0.03") == (5, 0.1)
    assert pressure_of("auto") == (0, 0.5) and pressure_of("auto-qpx") == (0, 0.5)
    assert variant_setup("auto-qp5@0.03")[0] == "auto" and variant_setup("auto-qp5@0.03")[3] == 0.03
    with pytest.raises(SystemExit):
        variant_setup("auto-qpx")


def test_the_cli_backend_asks_one_all_users_squeue_and_reports_a_failure_as_unavailable():
    from test_slurm_cli_parse import backend

    from asad.slurm.backend import SlurmUnavailable
    from asad.slurm.runner import CommandFailed, CommandResult

    slurm, runner, _ = backend({"squeue": ["main|28|Resources\nmain|4|Dependency\n"]})
    load = slurm.pending_load()
    (argv,) = runner.argv_of("squeue")
    assert "--states=PENDING" in argv and "--all" in argv and "--array" in argv
    assert not any(a.startswith(("--user", "-u", "--me", "--jobs")) for a in argv)  # every user's jobs
    assert load.pressure("main", 28) == 28 and load.pressure("main", 1) == 28
    failed = CommandFailed(CommandResult(("squeue",), 1, "", "slurm_load_jobs error: Unable to contact"))
    slurm, _, _ = backend({"squeue": [failed]}, retries=0)
    with pytest.raises(SlurmUnavailable, match="squeue failed"):
        slurm.pending_load()


class _NoPendingLoad:
    """A backend that cannot tell the queue's pending load (as the pyslurm one cannot)."""

    def __init__(self, inner) -> None:  # noqa: ANN001
        self._inner = inner

    def __getattr__(self, name: str):  # noqa: ANN204
        if name == "pending_load":
            raise AttributeError(name)
        return getattr(self._inner, name)


@pytest.mark.parametrize("neighbours", [0, 5])
def test_a_backend_without_the_pending_load_is_named_when_the_setting_asks_for_it(db_url, neighbours):
    from structlog.testing import capture_logs

    from asad.common.config import Settings
    from asad.daemon.wiring import make_runner
    from asad.slurm.sim import make_simulator
    from asad.store.repo import Store

    store = Store(db_url)
    try:
        with capture_logs() as logs:
            make_runner(Settings(wait_pressure=neighbours), store, _NoPendingLoad(make_simulator("small", seed=1)))
        said = [e for e in logs if "pending load" in e["event"]]
        assert len(said) == (1 if neighbours else 0)
        if neighbours:
            assert said[0]["log_level"] == "warning" and "wait_pressure = 0" in said[0]["fix"]
    finally:
        store.close()
