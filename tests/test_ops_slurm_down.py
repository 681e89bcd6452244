"""Slurm unavailable: commands that fail, hang past their timeout, or answer garbage.

The outage goes through the real command-line backend (``SlurmCLI`` running fake ``squeue`` /
``sbatch`` scripts), so its retries, timeouts and parser produce the error the daemon sees. The
daemon must back off with growing pauses, say it is paused after repeated failures (``asad
status`` shows it), keep every plan, and resume on its own when Slurm answers again.
"""

from __future__ import annotations

import math
import stat
import threading
import time
from pathlib import Path

import pytest

from asad.daemon.wiring import make_runner
from asad.common.config import Settings
from asad.daemon.loop import OUTAGE_RETRY_MAX_S, PAUSE_AFTER, Pacer
from asad.core.model import StageState
from asad.slurm.backend import SlurmUnavailable
from asad.slurm.cli import SlurmCLI
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow, parse_workflow
from asad.view.status import SIMULATED_NOTE, render_status, status_rows
from asad.store.repo import Store
from tests.conftest import EXAMPLES

# A long time limit on the first stage: ASA plans the second one far ahead (its expected end is
# the limit until a run time has been learned), so a plan exists while Slurm is down.
PLANNED_WF = """name: planned
strategy: asa
stages:
  - {name: first, cpus: 4, time: 2d, run: 'true', simulate: {runtime: 3h}}
  - {name: second, cpus: 4, time: 1h, run: 'true', simulate: {runtime: 20m}}
  - {name: third, cpus: 2, time: 1h, run: 'true', simulate: {runtime: 10m}}
"""

FAKES = {
    "fail": 'echo "$(basename "$0"): error: Unable to contact slurm controller (connect failure)" >&2; exit 1',
    "hang": "exec sleep 30",
    "garbage": "echo '<html><body>502 Bad Gateway</body></html>'",
}


def fake_slurm(tmp_path: Path, mode: str) -> SlurmCLI:
    """A SlurmCLI whose commands all misbehave in one way; short timeout, no real pauses."""
    bin_dir = tmp_path / f"bin-{mode}"
    bin_dir.mkdir()
    for cmd in ("squeue", "sbatch", "sacct", "scontrol", "scancel", "sinfo"):
        path = bin_dir / cmd
        path.write_text(f"#!/bin/sh\n{FAKES[mode]}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return SlurmCLI(bin_dir=str(bin_dir), timeout_s=0.3, retries=1, backoff_s=0.0, accounting=False,
                    sleep=lambda _s: None, user="nobody")


class FlakyBackend:
    """The simulator, except that while ``down`` every call goes to the misbehaving CLI."""

    def __init__(self, sim, broken: SlurmCLI):  # noqa: ANN001
        self.sim, self.broken, self.name, self.down = sim, broken, sim.name, False
        self.failed_calls = 0

    def _target(self):  # noqa: ANN202
        if self.down:
            self.failed_calls += 1
            return self.broken
        return self.sim

    def submit(self, req):  # noqa: ANN001, ANN201
        return self._target().submit(req)

    def cancel(self, ids):  # noqa: ANN001, ANN201
        return self._target().cancel(ids)

    def poll(self, ids):  # noqa: ANN001, ANN201
        return self._target().poll(ids)

    def find(self, tag):  # noqa: ANN001, ANN201
        return self._target().find(tag)

    def usage(self, ids):  # noqa: ANN001, ANN201
        return self._target().usage(ids)

    def __getattr__(self, item):  # noqa: ANN001, ANN204
        return getattr(self.sim, item)


def _stage_rows(store: Store, wf_id: int) -> dict[str, tuple]:
    (wf,) = store.load_workflows([wf_id])
    return {n: (r.state, r.planned_submit_at, r.job_row, r.attempt) for n, r in wf.stages.items()}


def daemon_like_tick(runner, pacer: Pacer, store: Store, backend) -> tuple[float, object]:  # noqa: ANN001
    """What asad.daemon.loop's tick does, on virtual time: tick, choose the pause, record the status."""
    report = runner.tick()
    now = backend.now()
    pause = pacer.after_tick(changed=bool(report.changed or report.submitted), error=report.backend_error is not None,
                             now=now, wake_at=report.wake_at, next_end=runner.next_expected_end())
    store.set_status("daemon", {"pid": 1, "paused": pacer.paused, "retry_s": pause, "backend": "sim", "active": 1})
    store.commit()
    return pause, report


@pytest.mark.parametrize("mode", ["fail", "hang", "garbage"])
def test_outage_backs_off_pauses_keeps_plans_and_resumes(tmp_path, db_url, mode):
    sim = make_simulator("small", load=0.0, seed=2)
    backend = FlakyBackend(sim, fake_slurm(tmp_path, mode))
    store = Store(db_url)
    runner = make_runner(Settings(), store, backend)
    spec = parse_workflow(PLANNED_WF)
    wf = store.add_workflow(spec, sim.now(), strategy="asa")
    runner.load()
    pacer = Pacer(30.0, 300.0)
    # run until the first stage runs and the second is planned (ASA: submit before the first ends)
    for _ in range(20):
        pause, _ = daemon_like_tick(runner, pacer, store, backend)
        if any(r.state is StageState.PLANNED for r in runner.active[wf.id].stages.values()):
            break
        sim.run_until(sim.now() + pause)
    before = _stage_rows(store, wf.id)
    assert StageState.PLANNED in [v[0] for v in before.values()]

    backend.down = True
    outage_began = sim.now()
    pauses, notes = [], []
    for _ in range(PAUSE_AFTER + 3):
        pause, report = daemon_like_tick(runner, pacer, store, backend)
        assert report.backend_error, "the outage was not noticed"
        pauses.append(pause)
        rows, tick_notes = status_rows(store)
        notes.append(tick_notes)
        assert _stage_rows(store, wf.id) == before, "a plan changed while Slurm was down"
        sim.run_until(sim.now() + pause)
    # growing pauses up to the ceiling, then paused; asad status says so
    assert pauses[:4] == sorted(pauses[:4]) and pauses[-1] == OUTAGE_RETRY_MAX_S
    assert pacer.paused
    assert any("Slurm unavailable" in n for n in notes[0])
    assert not any("paused" in n for n in notes[0])
    assert any("daemon paused" in n for n in notes[-1])
    text = render_status(rows, None, notes[-1])
    assert text.splitlines()[0].startswith("# Slurm unavailable")
    assert {"fail": "Unable to contact", "hang": "no answer within", "garbage": "cannot parse"}[mode] in text
    assert len(rows) == 3 and all(r["workflow"] == wf.id for r in rows), "status must still list every stage"
    assert store.get_status("backend")["since"] == outage_began  # when it began, not the latest failure

    backend.down = False
    _, report = daemon_like_tick(runner, pacer, store, backend)
    assert report.backend_error is None and not pacer.paused
    rows, tick_notes = status_rows(store)
    assert [n for n in tick_notes if n != SIMULATED_NOTE] == [], tick_notes  # no trouble left
    for _ in range(400):
        if wf.id not in runner.active:
            break
        pause, _ = daemon_like_tick(runner, pacer, store, backend)
        sim.run_until(sim.now() + pause)
    summary = store.workflow_rows([wf.id])[0].summary
    store.close()
    assert summary["state"] == "COMPLETED"
    per_stage = [st.comment.split(":")[3] for st in sim.find(f"asad:{store.store_id}:").values()]
    assert sorted(per_stage) == ["first", "second", "third"]


def test_outage_during_submission_neither_loses_nor_doubles(tmp_path, db_url):
    """sbatch fails transiently: the intent stays, is reconciled (not in Slurm) and resubmitted."""
    sim = make_simulator("small", load=0.0, seed=2)
    backend = FlakyBackend(sim, fake_slurm(tmp_path, "fail"))
    store = Store(db_url)
    runner = make_runner(Settings(), store, backend)
    wf = store.add_workflow(load_workflow(EXAMPLES / "blast.yaml"), sim.now(), strategy="per-stage")
    runner.load()
    backend.down = True
    report = runner.tick()
    assert report.backend_error and "sbatch failed" in report.backend_error
    backend.down = False
    pacer = Pacer(30.0, 300.0)
    for _ in range(200):
        if wf.id not in runner.active:
            break
        pause, _ = daemon_like_tick(runner, pacer, store, backend)
        sim.run_until(sim.now() + pause)
    assert store.workflow_rows([wf.id])[0].state == "COMPLETED"
    tags = [st.comment for st in sim.find(f"asad:{store.store_id}:").values()]
    store.close()
    assert len(tags) == len(set(tags)) == 2


def test_pacer_growth_pause_and_reset():
    pacer = Pacer(30.0, 300.0)
    pauses = [pacer.after_tick(changed=False, error=True, now=0.0, wake_at=math.inf, next_end=math.inf)
              for _ in range(PAUSE_AFTER + 2)]
    # an outage is retried at most a minute apart (OUTAGE_RETRY_MAX_S), whatever the idle ceiling
    assert pauses == [60.0] * (PAUSE_AFTER + 2)
    assert pacer.paused
    # success resets; then no change backs off by half each time up to the ceiling
    quiet = [pacer.after_tick(changed=False, error=False, now=0.0, wake_at=math.inf, next_end=math.inf)
             for _ in range(8)]
    assert not pacer.paused
    assert quiet[:3] == [45.0, 67.5, 101.25] and quiet[-1] == 300.0
    # a planned submission 50 s ahead tightens the pause to meet it; a change resets to the minimum
    assert pacer.after_tick(changed=False, error=False, now=1000.0, wake_at=1050.0, next_end=math.inf) == 50.0
    assert pacer.after_tick(changed=False, error=False, now=1000.0, wake_at=math.inf, next_end=1010.0) == 10.0
    assert pacer.after_tick(changed=True, error=False, now=0.0, wake_at=math.inf, next_end=math.inf) == 30.0


def test_broken_cli_raises_slurm_unavailable_for_each_mode(tmp_path):
    for mode, words in (("fail", "Unable to contact"), ("hang", "no answer within 0.3 s"), ("garbage", "cannot parse")):
        with pytest.raises(SlurmUnavailable, match=words):
            fake_slurm(tmp_path, mode).poll([1, 2])


def test_real_daemon_records_paused_state_then_resumes(tmp_path, monkeypatch):
    """asad.daemon.loop.run_daemon itself (APScheduler, lock, Pacer) against an outage, then recovery."""
    import asad.daemon.wiring
    from asad.daemon.loop import run_daemon
    from asad.slurm.sim import WallClockSimulator

    settings = Settings(db_url=f"sqlite:///{tmp_path / 'd.db'}", state_dir=tmp_path / "state", poll_interval_s=30.0,
                        max_poll_interval_s=300.0)
    sim = make_simulator("small", load=0.0, seed=2)
    backend = FlakyBackend(WallClockSimulator(sim, speed=20000.0), fake_slurm(tmp_path, "fail"))
    backend.down = True
    monkeypatch.setattr(asad.daemon.wiring, "make_backend", lambda *_a, **_k: backend)
    store = Store(settings.database_url)
    wf = store.add_workflow(parse_workflow(PLANNED_WF), sim.now(), strategy="asa")
    store.close()
    assert run_daemon(settings, max_ticks=PAUSE_AFTER + 2) == 0
    store = Store(settings.database_url)
    rows, notes = status_rows(store)
    daemon = store.get_status("daemon")
    store.close()
    assert daemon["paused"] is True and daemon["retry_s"] == 60.0
    assert any("Slurm unavailable" in n and "Unable to contact slurm controller" in n for n in notes), notes
    assert any("daemon paused" in n for n in notes), notes
    assert [r["stage"] for r in rows] == ["first", "second", "third"]

    backend.down = False
    assert run_daemon(settings, max_ticks=3) == 0
    store = Store(settings.database_url)
    rows, notes = status_rows(store)
    daemon = store.get_status("daemon")
    tags = [st.comment for st in sim.find(f"asad:{store.store_id}:").values()]
    store.close()
    assert [n for n in notes if n != SIMULATED_NOTE] == [] and daemon["paused"] is False
    assert rows[0]["job_id"] is not None and len(tags) == len(set(tags)) >= 1
    del wf


def test_daemon_started_during_an_outage_waits_and_starts_by_itself(tmp_path, monkeypatch):
    """Slurm does not answer the questions a runner starts with (partitions, priority rules): the
    daemon waits with growing pauses, says so in ``asad status``, and starts when Slurm answers,
    rather than exiting (a reboot brings the daemon up before slurmctld)."""
    import asad.daemon.wiring
    from asad.daemon.loop import run_daemon

    settings = Settings(db_url=f"sqlite:///{tmp_path / 'd.db'}", state_dir=tmp_path / "state", poll_interval_s=0.01,
                        max_poll_interval_s=0.04)
    sim = make_simulator("small", load=0.0, seed=2)
    failures: list[float] = []
    notes_while_down: list[list[str]] = []
    pauses: list[float] = []  # what the daemon asked to sleep between its tries, not wall time
    real_sleep = time.sleep

    def slurm_comes_back(*_a, **_k):  # noqa: ANN002, ANN003, ANN202
        if len(failures) < 4:
            if failures:  # asad status, while the daemon waits
                seen = Store(settings.database_url)
                notes_while_down.append(status_rows(seen)[1])
                seen.close()
            failures.append(time.monotonic())
            raise SlurmUnavailable("squeue: error: Unable to contact slurm controller (connect failure)")
        return sim

    def sleep(seconds: float) -> None:
        if threading.current_thread() is threading.main_thread() and 0 < len(failures) <= 4 and len(pauses) < len(failures):
            pauses.append(seconds)  # the pause after each failed try
        real_sleep(seconds)

    monkeypatch.setattr(asad.daemon.wiring, "make_backend", slurm_comes_back)
    monkeypatch.setattr(time, "sleep", sleep)
    store = Store(settings.database_url)
    wf = store.add_workflow(parse_workflow(PLANNED_WF), sim.now(), strategy="asa")
    store.close()
    assert run_daemon(settings, max_ticks=2) == 0
    assert len(failures) == 4
    assert all(any("Slurm unavailable" in n and "Unable to contact" in n for n in notes) for notes in notes_while_down)
    # growing pauses, up to the ceiling (the pauses asked for: wall-clock gaps between tries also
    # hold the status reads above, which under load outweigh a 10-ms pause)
    assert pauses == [0.01, 0.02, 0.04, 0.04]
    store = Store(settings.database_url)
    rows, notes = status_rows(store)
    store.close()
    assert rows[0]["job_id"] is not None  # started, and drove the workflow
    assert [n for n in notes if n != SIMULATED_NOTE] == []  # the outage note is gone once it ran
    del wf


def test_cancel_during_outage_keeps_ends_that_happened_and_cancels_the_rest(tmp_path, db_url):
    """A user cancels while Slurm is down, after a stage completed unseen: once Slurm answers, that
    stage is COMPLETED (as sacct says), the others CANCELLED, and no job of the workflow lives on."""
    sim = make_simulator("small", load=0.0, seed=3)
    backend = FlakyBackend(sim, fake_slurm(tmp_path, "fail"))
    store = Store(db_url)
    runner = make_runner(Settings(), store, backend)
    wf = store.add_workflow(parse_workflow(PLANNED_WF), sim.now(), strategy="chain")
    runner.load()
    pacer = Pacer(30.0, 300.0)
    for _ in range(20):
        pause, _ = daemon_like_tick(runner, pacer, store, backend)
        if runner.active[wf.id].stages["first"].state is StageState.RUNNING:
            break
        sim.run_until(sim.now() + pause)
    assert runner.active[wf.id].stages["first"].state is StageState.RUNNING

    backend.down = True
    started = runner.active[wf.id].stages["first"].start_time
    sim.run_until(started + 3 * 3600 + 300)  # the first stage (3 h) ends while nobody can see it
    assert store.request_cancel(wf.id)
    report = runner.tick()
    assert report.backend_error
    backend.down = False
    for _ in range(5):
        if wf.id not in runner.active:
            break
        runner.tick()
    (done,) = store.load_workflows([wf.id])
    assert done.state.value == "CANCELLED"
    states = {n: r.state for n, r in done.stages.items()}
    assert states == {"first": StageState.COMPLETED, "second": StageState.CANCELLED, "third": StageState.CANCELLED}
    assert done.stages["first"].end_time == pytest.approx(started + 3 * 3600, abs=60)
    live = [st for st in sim.find(f"asad:{store.store_id}:").values() if not st.state.is_final]
    store.close()
    assert live == []


def test_an_end_marker_during_an_outage_does_not_override_the_back_off(tmp_path, monkeypatch):
    """Issue 36: an end marker asks for a poll a second for 15 s (Slurm has not recorded the end
    yet). During an outage that brisk poll overrode the back-off: a call a second to a slurmctld
    that is down. Now the marker brings one tick forward and the back-off holds."""
    import os
    import signal
    import threading

    import asad.daemon.wiring
    from asad.core import markers
    from asad.daemon.loop import run_daemon
    from asad.slurm.sim import WallClockSimulator

    settings = Settings(db_url=f"sqlite:///{tmp_path / 'd.db'}", state_dir=tmp_path / "state", poll_interval_s=30.0,
                        max_poll_interval_s=300.0)
    sim = make_simulator("small", load=0.0, seed=2)
    backend = FlakyBackend(WallClockSimulator(sim, speed=1.0), fake_slurm(tmp_path, "fail"))
    backend.name = "slurm"  # the daemon watches end markers on a real cluster only
    monkeypatch.setattr(asad.daemon.wiring, "make_backend", lambda *_a, **_k: backend)
    store = Store(settings.database_url)
    wf = store.add_workflow(parse_workflow(PLANNED_WF), sim.now(), strategy="asa")
    store.close()
    seen: dict[str, int] = {}

    def outage_after_a_marker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            look = Store(settings.database_url)
            (run,) = look.load_workflows([wf.id])
            look.close()
            if run.current_job("first") is not None and run.current_job("first").job_id is not None:
                break
            time.sleep(0.2)
        backend.down = True
        end = markers.end_path(markers.folder(settings.run_dir, wf.id), "first")
        end.parent.mkdir(parents=True, exist_ok=True)
        end.write_text(f"0 {time.time():.3f}\n")
        time.sleep(8.0)  # the brisk poll: a tick every 1-2 s (4 in 8 s); the back-off: none after the first
        seen["calls"] = backend.failed_calls
        os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.getsignal(signal.SIGTERM)
    helper = threading.Thread(target=outage_after_a_marker, daemon=True)
    helper.start()
    try:
        assert run_daemon(settings) == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    helper.join(timeout=10)
    # the marker's tick (its poll failed), and no call a second after it
    assert seen["calls"] == 1, seen
