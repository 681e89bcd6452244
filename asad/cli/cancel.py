"""``asad cancel``: cancel a workflow and its Slurm jobs. With a daemon (here or on another host) the
request is written to the store and the daemon acts; with none, one tick of the daemon's own runner
carries it out here, under the store's lock and lease."""

from __future__ import annotations

import argparse
import os
import time

from asad.cli.commands import (EXIT_FAILED, EXIT_INPUT, EXIT_SLURM, StoreBusy, _fail, _give_back, _remote_note,
                               _run_lock, _take_lease, _wake_remote_driver, guarded, open_store, settings_from)
from asad.common.config import Settings
from asad.daemon.wake import wake_daemon
from asad.slurm.backend import SlurmError
from asad.store.db import shown_url


@guarded
def cmd_cancel(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    store = open_store(settings)
    try:
        rows = store.workflow_rows([args.workflow])
        if not rows:
            return _fail(f"no workflow {args.workflow} in the store ({shown_url(store.url)}); 'asad status --all' lists them",
                         EXIT_INPUT)
        if not store.request_cancel(args.workflow):
            return _fail(f"workflow {args.workflow} already ended ({rows[0].state})", EXIT_FAILED)
        remote = _wake_remote_driver(store)
    finally:
        store.close()
    from asad.daemon.loop import daemon_running

    wake_daemon(settings.state_dir)
    if remote is not None:
        print(f"workflow {args.workflow}: cancel requested; {_remote_note(remote)}")
        return 0
    if daemon_running(settings):
        print(f"workflow {args.workflow}: cancel requested; the running daemon cancels its Slurm jobs within seconds")
        return 0
    return _cancel_without_daemon(settings, args.workflow)


def _cancel_without_daemon(settings: Settings, wf_id: int) -> int:
    """No daemon drives the store: carry the cancel out here, as the daemon would, so that the jobs
    stop using the cluster now and ``status``/``show`` say CANCELLED at once, not when a daemon next
    starts. One tick of a runner that drives this workflow only (under the daemon's lock and the
    store's lease, so no daemon submits meanwhile): submission intents with no job id are looked up
    in Slurm by their tag (a job whose ``sbatch`` ran just before a daemon crashed is found too), the
    jobs are polled, and the engine ends the workflow as CANCELLED, scancelling its jobs after writing
    that down (write-ahead). Interrupted, the request stays in the store and the next driver finishes it."""
    from asad.daemon.wiring import make_backend, make_runner

    try:
        lock = _run_lock(settings)  # no daemon may start and submit while this runs
    except StoreBusy:
        print(f"workflow {wf_id}: cancel requested; the daemon that just started cancels its Slurm jobs")
        return 0
    lease = None
    try:
        store = open_store(settings)
        try:
            try:
                lease = _take_lease(settings, store)
            except StoreBusy:
                print(f"workflow {wf_id}: cancel requested; a driver on another host took this store and carries it out")
                return 0
            simulated = bool(store.simulated_workflow_ids([wf_id]))
            submitted = bool(store.workflow_ids_with_jobs([wf_id]))
            try:
                backend = make_backend(settings, name="slurm") if submitted and not simulated else \
                    _NoJobsBackend(_store_now(store) if simulated or settings.backend == "sim" else time.time())
                runner = make_runner(settings, store, backend, only=frozenset({wf_id}))
            except SlurmError as exc:
                report_error = str(exc)
            else:
                runner.lease = lease
                report = runner.tick()
                report_error = report.backend_error
            if report_error is not None:
                return _fail(f"workflow {wf_id}: cancel requested, but no daemon is running and Slurm did not answer "
                             f"({report_error}), so its jobs may still be queued or running. Fix: start the daemon "
                             f"when Slurm answers (it cancels them), or scancel the jobs named asad.{wf_id}.*",
                             EXIT_SLURM)
            (row,) = store.workflow_rows([wf_id])
            state = row.state
        finally:
            _give_back(lease)
            store.close()
    finally:
        os.close(lock)
    if state == "COMPLETED":
        print(f"workflow {wf_id}: it completed before the cancel was carried out; nothing was cancelled")
        return 0
    if state == "ACTIVE":  # not expected: the next daemon carries the stored request out
        print(f"workflow {wf_id}: cancel requested (cancel pending: no daemon); a daemon carries it out when it starts")
        return 0
    ids = sorted(set(report.cancelled_ids))
    print(f"workflow {wf_id}: {state.lower()}; "
          + ("its jobs were the simulator's, gone with the process that ran them" if simulated
             else "it had not submitted any job" if not submitted
             else f"no daemon is running, so its Slurm jobs {', '.join(map(str, ids))} were cancelled here (scancel)"
             if ids else "no daemon is running, and it had no job left in Slurm's queue to cancel")
          + ".")
    return 0


def _store_now(store) -> float:  # noqa: ANN001
    """The store's clock as a simulator-driving daemon left it (its workflows' times are virtual)."""
    clock = store.get_status("clock") or {}
    return clock.get("now", time.time())


class _NoJobsBackend:
    """What ``asad cancel`` drives a workflow with when none of its jobs is in a Slurm: it submitted
    none, or they were a simulator's, gone with the process that ran them. Nothing is asked of
    anyone: no job is known, and there is nothing to cancel."""

    name = "offline"
    cluster_name = "offline"
    asks_slurm = False  # the runner records no "Slurm answers" from it

    def __init__(self, now: float):
        self._now = now

    def now(self) -> float:
        return self._now

    def partitions(self) -> list:
        return []

    def poll(self, job_ids: list[int]) -> dict:
        return {}

    def find(self, tag: str) -> dict:
        return {}

    def usage(self, job_ids: list[int]) -> dict:
        return {}

    def cancel(self, job_ids: list[int]) -> None:
        return None

    def estimate_start(self, req) -> None:  # noqa: ANN001
        return None

    def submit(self, req) -> int:  # noqa: ANN001
        raise SlurmError("asad cancel submits nothing")


