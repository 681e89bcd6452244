"""One driver per store across hosts (asad/daemon/lease.py): a store on a database server, or an SQLite
file in a home folder several login nodes share, is out of reach of the local lock file."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import pytest

from asad.daemon.wiring import make_runner
from asad.common.config import Settings, load_settings
from asad.daemon.lease import KEY, Lease, LeaseHeld, LeaseLost, current_holder, driver_elsewhere
from asad.core.model import WorkflowState
from asad.slurm.sim import make_simulator
from asad.spec.load import parse_workflow
from asad.store.repo import Store
from tests.conftest import EXAMPLES, ROOT
from tests.test_cli import asad, wait_for

WF = """name: leased
stages:
  - {name: a, cpus: 1, time: 10m, run: 'true', simulate: {runtime: 1m}}
"""


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_a_fresh_lease_of_another_host_refuses_and_a_release_frees_the_store(db_url):
    store = Store(db_url)
    clock = Clock()
    login1 = Lease(store, lease_s=600, host="login1", clock=clock)
    login1.acquire()
    with pytest.raises(LeaseHeld, match="login1") as refused:
        Lease(store, lease_s=600, host="login2", clock=clock).acquire()
    assert "stop that one first" in str(refused.value) and "--db" in str(refused.value)
    login1.release()
    Lease(store, lease_s=600, host="login2", clock=clock).acquire()
    assert current_holder(store).host == "login2"
    store.close()


def test_a_lapsed_lease_is_taken_over_and_its_old_holder_learns_it_lost(db_url):
    store = Store(db_url)
    clock = Clock()
    crashed = Lease(store, lease_s=600, host="login1", clock=clock)
    crashed.acquire()
    clock.t += 599
    with pytest.raises(LeaseHeld):
        Lease(store, lease_s=600, host="login2", clock=clock).acquire()
    clock.t += 2  # past the lease: login1 is presumed dead
    Lease(store, lease_s=600, host="login2", clock=clock).acquire()
    assert crashed.renew(force=True) is False  # it was only slow: it must stop driving
    store.close()


def test_the_same_host_takes_its_own_lease_back_after_a_crash(db_url):
    """On one host the lock file already proved the earlier holder gone (a kill -9)."""
    store = Store(db_url)
    Lease(store, lease_s=600, host="login1").acquire()  # never released
    again = Lease(store, lease_s=600, host="login1")
    again.acquire()
    assert again.renew(force=True)
    store.close()


def _race(stores: list[Store]) -> list[Lease]:
    """Every store's host tries to take the store at the same instant; the leases that won."""
    won, barrier = [], threading.Barrier(len(stores))

    def start(i: int) -> None:
        lease = Lease(stores[i], lease_s=600, host=f"login{i}")
        barrier.wait()
        try:
            lease.acquire()
            won.append(lease)
        except LeaseHeld:
            pass

    threads = [threading.Thread(target=start, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won


def test_two_hosts_starting_at_once_cannot_both_win(db_url):
    """Compare-and-set: of hosts that read the free store at the same instant, one wins, on a store
    never leased (insert) and on one whose lease was released (update)."""
    stores = [Store(db_url) for _ in range(4)]
    for _ in range(3):
        won = _race(stores)
        assert len(won) == 1, [w.host for w in won]
        assert current_holder(stores[0]).host == won[0].host
        won[0].release()
    for s in stores:
        s.close()


def test_a_runner_whose_lease_was_taken_over_submits_nothing(db_url):
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    clock = Clock()
    runner = make_runner(Settings(), store, sim)
    runner.lease = Lease(store, lease_s=600, host="login1", clock=clock)
    runner.lease.acquire()
    store.add_workflow(parse_workflow(WF), sim.now(), strategy="per-stage")
    runner.load()
    clock.t += 700
    Lease(store, lease_s=600, host="login2", clock=clock).acquire()
    runner.lease._renewed = -float("inf")  # its next tick renews
    with pytest.raises(LeaseLost):
        runner.tick()
    assert sim.find("asad:") == {}
    store.close()


def _foreign_lease(settings) -> Store:  # noqa: ANN001
    """A daemon on another host drives the store (fresh lease)."""
    store = Store(settings.database_url)
    Lease(store, lease_s=600, host="other-login-node").acquire()
    return store


def test_a_daemon_beside_another_hosts_driver_stands_by_and_takes_over_when_it_stops(tmp_path):
    settings = load_settings()
    store = Store(settings.database_url)
    foreign = Lease(store, lease_s=600, host="other-login-node")
    foreign.acquire()
    config = tmp_path / "asad.toml"
    config.write_text("max_poll_interval_s = 1\n")  # the standby looks again every second
    out = tmp_path / "daemon.out"
    with out.open("w") as sink:
        daemon = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "sim", "--config", str(config)],
                                  cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: "standing by" in out.read_text())
        assert "other-login-node" in out.read_text() and daemon.poll() is None  # no exit, no restart loop
        assert current_holder(store).host == "other-login-node"
        foreign.release()  # the other host's daemon stops cleanly
        store.commit()
        wait_for(lambda: (store.session.rollback() or True) and not current_holder(store).released
                 and current_holder(store).host != "other-login-node")
        wait_for(lambda: (store.session.rollback() or True)  # and it drives: its ticks are recorded
                 and (store.get_status("daemon") or {}).get("pid") == daemon.pid)
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0, out.read_text()
        store.close()


def test_run_refuses_beside_another_hosts_driver_and_submit_names_it():
    settings = load_settings()
    _foreign_lease(settings).close()
    run = asad("run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0", check=False)
    assert run.returncode == 3 and "other-login-node" in run.stderr and "Nothing was submitted" in run.stderr
    assert json.loads(asad("history", "--json").stdout) == []
    # submit and cancel say who drives the store (the local lock sees no daemon)
    sub = asad("submit", str(EXAMPLES / "blast.yaml"), "--backend", "sim")
    assert "the daemon on host other-login-node" in sub.stderr, sub.stderr
    wf_id = sub.stdout.strip()
    cancel = asad("cancel", wf_id)
    assert "the daemon on host other-login-node" in cancel.stdout, cancel.stdout
    store = Store(settings.database_url)  # the remote daemon carries the cancel out
    (wf,) = store.load_workflows([int(wf_id)])
    wf.state = WorkflowState.CANCELLED
    store.save_workflow(wf, summary={})
    store.commit()
    store.close()
    resumed = asad("resume", wf_id)
    assert "the daemon on host other-login-node" in resumed.stderr, resumed.stderr


def test_a_clean_stop_frees_the_store_for_another_host():
    settings = load_settings()
    assert asad("run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0").returncode == 0
    store = Store(settings.database_url)
    holder = current_holder(store)
    assert holder is not None and holder.released
    assert driver_elsewhere(store) is None
    raw = store.meta_value(KEY)
    store.close()
    assert json.loads(raw)["released"] is True


def test_a_daemon_holds_the_lease_while_it_runs_and_frees_it_when_it_stops(monkeypatch):
    from asad.daemon.loop import run_daemon
    from asad.daemon.runner import Runner

    settings = load_settings({"backend": "sim"})
    seen = []
    original = Runner.tick

    def tick(self):  # noqa: ANN001, ANN202
        store = Store(settings.database_url)  # what another process sees while the daemon ticks
        seen.append(current_holder(store))
        store.close()
        return original(self)

    monkeypatch.setattr(Runner, "tick", tick)
    assert run_daemon(settings, max_ticks=2) == 0
    assert seen and all(h is not None and not h.released for h in seen)
    store = Store(settings.database_url)
    assert current_holder(store).released
    store.close()


def test_a_cli_on_another_host_wakes_the_daemon_through_the_store(tmp_path):
    from asad.daemon.wake import STORE_WAKE_KEY, wake_through_store

    settings = load_settings()
    config = tmp_path / "asad.toml"
    config.write_text("max_poll_interval_s = 600\n")  # left alone, the daemon would not look for 10 min
    out = tmp_path / "daemon.out"
    with out.open("w") as sink:
        daemon = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "sim", "--load", "0",
                                   "--poll", "600", "--config", str(config)],
                                  cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, text=True)
    store = Store(settings.database_url)
    try:
        wait_for(lambda: (store.session.rollback() or True) and store.get_status("daemon") is not None)
        # what 'asad submit' on another host does: commit the workflow, then write the wake row (the
        # wake file it would touch is on its own host)
        wf = store.add_workflow(parse_workflow(WF), time.time())
        store.commit()
        wake_through_store(store)
        started = time.monotonic()
        wait_for(lambda: (store.session.rollback() or True) and store.load_workflows([wf.id])[0].jobs, timeout_s=30)
        assert time.monotonic() - started < 10, out.read_text()
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0, out.read_text()
        store.close()
    # and the CLI writes that row when another host's daemon drives the store
    foreign = _foreign_lease(settings)
    before = foreign.meta_value(STORE_WAKE_KEY)
    asad("submit", str(EXAMPLES / "blast.yaml"), "--backend", "sim")
    assert foreign.meta_value(STORE_WAKE_KEY) != before
    foreign.close()


def test_a_standing_by_daemon_stops_cleanly_on_sigterm(tmp_path):
    settings = load_settings()
    _foreign_lease(settings).close()
    out = tmp_path / "daemon.out"
    with out.open("w") as sink:
        daemon = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "sim"],
                                  cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: "standing by" in out.read_text())
    finally:
        daemon.send_signal(signal.SIGTERM)  # systemctl --user stop asad
        assert daemon.wait(timeout=60) == 0, out.read_text()
    assert "Traceback" not in out.read_text()
