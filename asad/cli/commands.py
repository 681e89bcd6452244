"""The CLI's commands that change things: run, submit, resume, daemon, service (cancel is in
``asad.cli.cancel``; the ones that only read are in ``asad.cli.commands_view``). Each takes the parsed arguments and returns an exit
code; errors a user can fix are printed as one clear message (what is wrong, how to fix it), never
a traceback."""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import json
import os
import shlex
import sys
import time

from sqlalchemy.exc import SQLAlchemyError

from asad.common.config import ConfigError, Settings, load_settings
from asad.cli.interrupts import Terminated, exit_code, sigterm_interrupts, uninterruptible
from asad.daemon.lease import LeaseLost, driver_elsewhere
from asad.slurm.backend import SlurmError, SubmitRejected
from asad.spec.load import SpecError
from asad.store.db import StoreError, explain_failure, absolute_sqlite_url, shown_url, unwritable_place_message
from asad.store.identity import highest_run_folder, sqlite_absent
from asad.daemon.wake import STORE_WAKE_LOOK_S, wake_daemon, wake_through_store

# Exit codes: 1 the workflow failed or was cancelled, 2 usage (argparse), 3 the workflow file or a
# setting is wrong, 4 the store cannot be used, 5 Slurm refused or is unreachable, 6 (daemon) another
# asad daemon drives the store from this host (asad.daemon.service.EXIT_ALREADY_RUNNING).
EXIT_FAILED, EXIT_INPUT, EXIT_STORE, EXIT_SLURM = 1, 3, 4, 5


def _fail(message: str, code: int) -> int:
    print(f"asad: error: {message}", file=sys.stderr)
    return code


def guarded(fn):  # noqa: ANN001, ANN201
    @functools.wraps(fn)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except SpecError as exc:
            return _fail(f"{exc}\nNothing was submitted.", EXIT_INPUT)
        except ConfigError as exc:
            return _fail(str(exc), EXIT_INPUT)
        except StoreError as exc:
            return _fail(str(exc), EXIT_STORE)
        except SubmitRejected as exc:
            from asad.slurm.refusals import refusal_text

            return _fail(refusal_text(exc.slurm_message), EXIT_SLURM)
        except SlurmError as exc:
            return _fail(f"{exc}\nIs Slurm up? 'sinfo' should answer; see docs/local-cluster.md.", EXIT_SLURM)
        except StoreBusy as exc:
            return _fail(str(exc), EXIT_INPUT)
        except LeaseLost as exc:  # another host's asad took the store over mid-run
            return _fail(str(exc), EXIT_STORE)
        except OSError as exc:
            # asad's own files (state dir, daemon lock, run folders) on a read-only or foreign place
            if exc.errno not in _UNWRITABLE:
                raise
            return _fail(unwritable_place_message("a file of asad's state", exc), EXIT_STORE)
        except SQLAlchemyError as exc:
            # the store failed after it opened: a damaged page of an SQLite file, a server that went
            # away or changed its password. The same message as a failure to open it.
            return _fail(explain_failure(_store_url(args), exc), EXIT_STORE)
    return wrapper


def _store_url(args: argparse.Namespace) -> str:
    try:
        return settings_from(args).database_url
    except Exception:  # noqa: BLE001 - only for a message
        return "(the configured store)"


_UNWRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.ENOTDIR, errno.EDQUOT}


def settings_from(args: argparse.Namespace, **extra) -> Settings:  # noqa: ANN003
    overrides = {"db_url": getattr(args, "db_url", None), **extra}
    return load_settings(overrides, getattr(args, "config", None))


def open_store(settings: Settings, *, read_only: bool = False):  # noqa: ANN201
    """The store. ``read_only`` (the commands that only show): an existing SQLite store is opened for
    reading only, so they work on a read-only file system (a snapshot, a backup, a full disk) and
    never write; one of an older schema is opened as before (writable: upgraded)."""
    from asad.common.config import sqlite_file
    from asad.store.db import OlderSchema
    from asad.store.repo import Store

    path = sqlite_file(settings.database_url)
    if read_only and path is not None and path.is_file():
        with contextlib.suppress(OlderSchema):
            return Store(settings.database_url, read_only=True)
    return Store(settings.database_url)


# -- run ------------------------------------------------------------------------------------
@guarded
def cmd_run(args: argparse.Namespace) -> int:
    from asad.daemon.wiring import make_backend, make_runner, run_to_completion
    from asad.spec.load import check_against_cluster, load_workflow

    settings = settings_from(args, backend=args.backend, seed=args.seed)
    spec = load_workflow(args.workflow, strategy=args.strategy)
    backend = make_backend(settings, preset=args.preset, load=args.load, priority=args.priority)
    parts = backend.partitions()
    check_against_cluster(spec, parts, next((p.name for p in parts if p.default), None))
    lock_fd = _run_lock(settings)
    store = open_store(settings)
    lease = None
    try:
        lease = _take_lease(settings, store)
        runner = make_runner(settings, store, backend)
        runner.lease = lease
        if backend.name == "sim":
            backend.run_until(backend.now() + _warmup_s(backend, args.load))
        wf = store.add_workflow(spec, backend.now(), strategy=args.strategy or spec.strategy,
                                first_id=highest_run_folder(settings.run_dir) + 1,
                                mode=args.mode or spec.mode)
        runner.load()
        try:
            with sigterm_interrupts():
                run_to_completion(runner, backend, [wf.id], poll_interval_s=settings.poll_interval_s,
                                  run_dir=None if backend.name == "sim" else settings.run_dir)
        except KeyboardInterrupt as exc:
            return _cancel_after_interrupt(store, runner, wf.id, backend.name, exc)
        summary = {**store.workflow_rows([wf.id])[0].summary, "simulated": backend.name == "sim"}
        _add_output_paths(summary, store.load_workflows([wf.id])[0])
    finally:
        _give_back(lease)
        store.close()
        os.close(lock_fd)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        from asad.view.status import render_summary

        print(render_summary(summary))
    return 0 if summary["state"] == "COMPLETED" else EXIT_FAILED


class StoreBusy(Exception):
    pass


def _wake_remote_driver(store):  # noqa: ANN001, ANN202
    """The driver on another host, if one drives this store, woken through the store (the wake file
    reaches this host only); None when none does."""
    remote = driver_elsewhere(store)
    if remote is not None:
        wake_through_store(store)
    return remote


def _remote_note(holder) -> str:  # noqa: ANN001
    return (f"the daemon on host {holder.host} (pid {holder.pid}) drives this store; it acts within "
            f"{STORE_WAKE_LOOK_S:.0f} s (it reads the store's wake row)")


def _take_lease(settings: Settings, store):  # noqa: ANN001, ANN202
    """The store's lease (asad/daemon/lease.py) for a driver in this process; StoreBusy when another
    host's daemon drives the store (the local lock cannot see it)."""
    from asad.daemon.lease import Lease, LeaseHeld, lease_seconds

    lease = Lease(store, lease_s=lease_seconds(settings.max_poll_interval_s))
    try:
        lease.acquire()
    except LeaseHeld as exc:
        raise StoreBusy(f"{exc} Nothing was submitted.") from None
    return lease


def _give_back(lease) -> None:  # noqa: ANN001
    if lease is not None:
        with contextlib.suppress(StoreError):
            lease.release()


def _run_lock(settings: Settings, resume_id: int | None = None) -> int:
    """``asad run`` drives the store's workflows itself, as the daemon does: two drivers on one store
    would submit the same stages (the daemon's tick failing on ``UNIQUE constraint failed:
    jobs.tag``). So it holds the daemon's lock while it runs, and refuses when a daemon holds it."""
    from asad.daemon.loop import AlreadyRunning, acquire_lock

    try:
        return acquire_lock(settings)
    except AlreadyRunning:
        fix = (f"'asad resume {resume_id}' without --run: the daemon runs it" if resume_id is not None else
               "hand the workflow to it with 'asad submit', or run beside it on a store of its own: "
               "asad run --db sqlite:///$(mktemp -d)/asad.db ...")
        raise StoreBusy(
            f"a daemon (or another 'asad run') is driving this store ({shown_url(settings.database_url)}; lock "
            f"{settings.lock_file}). Nothing was submitted. Fix: {fix}"
        ) from None


def _cancel_after_interrupt(store, runner, wf_id: int, backend_name: str,  # noqa: ANN001
                            exc: KeyboardInterrupt) -> int:
    """Ctrl-C (or SIGTERM) on ``asad run``: cancel the workflow and the jobs it submitted, and say
    so. The interrupt may have landed mid-tick: read the store again (the write-ahead intents
    reconcile a submission whose job id was not recorded yet), then let the engine cancel as for
    ``asad cancel``."""
    from asad.core.model import JobPhase

    with uninterruptible():
        store.session.rollback()
        store.request_cancel(wf_id)
        runner.reload()
        wf = runner.active.get(wf_id)
        ids = [j.job_id for j in (wf.jobs if wf else []) if j.phase is JobPhase.LIVE and j.job_id is not None]
        runner.tick()
        if ids:
            runner.backend.cancel(ids)  # again, harmless: the engine's tick cancelled them already
    what = "Slurm jobs" if backend_name != "sim" else "simulated jobs"
    how = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
    print(f"asad: {how}: workflow {wf_id} cancelled"
          + (f", and its {what} {', '.join(map(str, ids))} with it" if ids else "; it had no job in the queue"),
          file=sys.stderr)
    return exit_code(exc)


def _warmup_s(backend, load: float | None) -> float:  # noqa: ANN001
    """Let the background load fill the cluster and build a queue before the workflow arrives
    (the simulator starts empty)."""
    return 0.0 if load == 0 else 86400.0


# -- submit / cancel -----------------------------------------------------------------------------
@guarded
def cmd_submit(args: argparse.Namespace) -> int:
    """load -> check against the site -> store -> wake: nothing is stored unless the file is valid
    and fits the cluster, and nothing is submitted here (the daemon submits)."""
    from asad.spec.load import load_workflow

    settings = settings_from(args)
    spec = load_workflow(args.workflow, strategy=args.strategy)
    if getattr(args, "dry_run", False):
        # A dry run prints what a backend would be asked; with none to ask it stops (BackendChoiceError
        # is a user error with its fix), never falling through to a real submission.
        settings.backend = daemon_backend(settings, args.backend)
        return _dry_run(settings, spec, args)
    _check_against_site(spec, settings, args.backend)
    wf_id, remote, earlier_store_note = _store_workflow(settings, spec, args)
    wake_daemon(settings.state_dir)
    print(wf_id)
    if earlier_store_note:
        print(f"asad: note: {earlier_store_note}", file=sys.stderr)
    _note_who_runs_it(settings, wf_id, remote)
    return 0


def _check_against_site(spec, settings: Settings, backend_flag: str | None) -> None:  # noqa: ANN001
    """Refuse a workflow that cannot run on the cluster the daemon drives (an unknown partition, a
    stage bigger than a node), asking that cluster's partitions without building a backend. Sets
    ``settings.backend`` to that cluster's kind. With no cluster to ask (no daemon, no Slurm here),
    the workflow is stored unchecked, with a warning: the daemon checks it when it submits."""
    from asad.daemon.backend_choice import BackendChoiceError
    from asad.slurm.site import site_partitions
    from asad.spec.load import check_against_cluster

    try:
        settings.backend = daemon_backend(settings, backend_flag)
    except BackendChoiceError as exc:
        # Never check against a simulator the user did not ask for.
        print(f"asad: warning: the stage sizes were not checked against a cluster: {exc}", file=sys.stderr)
        return
    try:
        parts = site_partitions(settings.backend, sim_preset=settings.sim_preset, timeout_s=settings.slurm_timeout_s)
    except SlurmError as exc:
        # Refused rather than stored unchecked: a stage too big or an unknown partition would then
        # surface only later, in the daemon. The daemon keeps driving the workflows it already has.
        raise SlurmError(f"Slurm did not answer, so the stage sizes cannot be checked against the cluster "
                         f"({exc}). Nothing was stored or submitted; submit again once it answers.") from None
    check_against_cluster(spec, parts, next((p.name for p in parts if p.default), None))


def _store_workflow(settings: Settings, spec, args: argparse.Namespace):  # noqa: ANN001, ANN202
    """The workflow added to the store: (its id, the other host's driver woken through the store or
    None, a note when the store was new beside an earlier store's run folders, else None)."""
    fresh = sqlite_absent(settings.database_url)
    store = open_store(settings)
    try:
        now = time.time()
        status = store.get_status("clock")
        if status and settings.backend == "sim":
            now = status.get("now", now)  # the simulated daemon's virtual clock
        # never a folder of an earlier store's workflow (a deleted store's ids start at 1 again)
        stale = highest_run_folder(settings.run_dir)
        wf = store.add_workflow(spec, now, strategy=args.strategy or spec.strategy, mode=args.mode or spec.mode,
                                first_id=stale + 1)
        remote = _wake_remote_driver(store)
    finally:
        store.close()
    note = None
    if fresh and stale:
        note = (f"there was no store at {shown_url(settings.database_url)}, so a new, empty one was "
                f"created; {settings.run_dir} holds the run folders of an earlier store (deleted?), so this "
                f"workflow is numbered {wf.id}, after them. A daemon started before the store was deleted has "
                "stopped; start one again (see below, or 'asad status').")
    return wf.id, remote, note


def _note_who_runs_it(settings: Settings, wf_id: int, remote) -> None:  # noqa: ANN001
    from asad.daemon.loop import daemon_running

    if remote is not None:
        print(f"asad: note: {_remote_note(remote)}", file=sys.stderr)
    elif not daemon_running(settings):
        print(f"asad: note: no daemon is running for this store, so workflow {wf_id} waits until one starts.\n"
              "  Start one with:  systemctl --user enable --now asad   (see docs/operations.md)\n"
              # the simulator only for a simulated store: real use never falls into it (auto: Slurm or refuse)
              f"  or in a terminal: asad daemon{' --backend sim' if settings.backend == 'sim' else ''}",
              file=sys.stderr)


def _dry_run(settings: Settings, spec, args: argparse.Namespace) -> int:  # noqa: ANN001
    from asad.daemon.wiring import make_backend
    from asad.cli.dryrun import dry_run
    from asad.spec.load import check_against_cluster

    backend = make_backend(settings)
    parts = backend.partitions()
    check_against_cluster(spec, parts, next((p.name for p in parts if p.default), None))
    text = dry_run(spec, settings, backend, strategy=args.strategy or spec.strategy, mode=args.mode or spec.mode)
    if backend.name == "sim":
        text = text.replace("# Nothing was submitted", "# (against the simulated cluster: use --backend slurm for "
                            "a real one)\n# Nothing was submitted", 1)
    print(text, end="")
    return 0


def daemon_backend(settings: Settings, flag: str | None = None) -> str:
    """The backend ``submit`` and ``predict`` check against: the flag's, else the running daemon's
    (as it recorded it in the store), else the configured one (``auto``: Slurm when it answers, else
    an error). Never the simulator unless asked for."""
    from asad.daemon.backend_choice import resolve_backend
    from asad.daemon.loop import daemon_running

    if flag:
        return flag
    if daemon_running(settings):
        try:
            pid = int(settings.lock_file.read_text().strip() or 0)
        except (OSError, ValueError):
            pid = 0
        store = open_store(settings)
        try:
            deadline = time.monotonic() + 5.0  # a daemon just started records its backend within a tick
            while True:
                recorded = store.get_status("daemon") or {}
                if recorded.get("pid") == pid or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        finally:
            store.close()
        if recorded.get("backend") in ("sim", "slurm"):
            return recorded["backend"]
    return resolve_backend(settings.backend)


@guarded
def cmd_resume(args: argparse.Namespace) -> int:
    """Make a failed or cancelled workflow active again under its own id (asad/store/resume.py); a daemon
    (woken now) or ``--run`` (in this process, as ``asad run``) submits its unfinished stages."""
    from asad.store.resume import ResumeRefused, resume_workflow

    settings = settings_from(args, backend=getattr(args, "backend", None))
    lock_fd = _run_lock(settings, args.workflow) if args.run else None  # refuse --run beside a daemon before changing anything
    lease = None
    try:
        store = open_store(settings)
        try:
            lease = _take_lease(settings, store) if args.run else None
            rows = store.workflow_rows([args.workflow])
            if args.run and rows and rows[0].state == "ACTIVE":
                # Resumed earlier with no daemon to drive it (this process holds the store's lock):
                # drive it now rather than refuse.
                print(f"workflow {args.workflow} is active and no daemon drives it: driving it here")
                return _drive_resumed(settings, store, args.workflow, args, lease)
            try:
                done = resume_workflow(store, args.workflow)
            except ResumeRefused as exc:
                return _fail(str(exc), EXIT_FAILED if rows else EXIT_INPUT)
            print(f"workflow {done.workflow_id} resumed (was {done.was}): "
                  f"running again {', '.join(done.rerun) or 'nothing'}"
                  + (f"; kept completed {', '.join(done.kept)}" if done.kept else ""))
            _note_edited_file(store.load_workflows([done.workflow_id])[0].spec, done.rerun, done.workflow_id)
            if args.run:
                return _drive_resumed(settings, store, done.workflow_id, args, lease)
            remote = _wake_remote_driver(store)
        finally:
            _give_back(lease)
            store.close()
    finally:
        if lock_fd is not None:
            os.close(lock_fd)
    wake_daemon(settings.state_dir)
    from asad.daemon.loop import daemon_running

    if remote is not None:
        print(f"asad: note: {_remote_note(remote)}", file=sys.stderr)
    elif not daemon_running(settings):
        print(f"asad: note: no daemon is running for this store, so workflow {args.workflow} waits until one "
              f"starts ('asad daemon'), or drive it in this terminal: asad resume {args.workflow} --run",
              file=sys.stderr)
    return 0


def _note_edited_file(spec, rerun: tuple[str, ...], wf_id: int) -> None:  # noqa: ANN001
    """resume runs the stages as they were submitted: say so when the workflow file has changed
    since (a user who edited it to fix the failure expects the edit to count)."""
    from asad.spec.load import load_workflow

    try:
        fresh = load_workflow(spec.path)
    except (SpecError, OSError):
        return  # gone, or no longer valid: nothing to compare
    changed = []
    for name in rerun:
        try:
            if fresh.stage(name) != spec.stage(name):
                changed.append(name)
        except KeyError:
            changed.append(name)
    if changed:
        print(f"asad: note: {spec.path} has changed since workflow {wf_id} was submitted "
              f"(stage{'s' if len(changed) > 1 else ''} {', '.join(changed)}); resume runs the stages as submitted. "
              "To run the edited file, submit it anew: asad submit FILE (fix what a stage uses, such as a "
              "script or its inputs, to have resume pick it up)", file=sys.stderr)


def _drive_resumed(settings: Settings, store, wf_id: int, args: argparse.Namespace, lease) -> int:  # noqa: ANN001
    from asad.daemon.wiring import make_backend, make_runner, run_to_completion
    from asad.view.status import render_summary

    backend = make_backend(settings)
    runner = make_runner(settings, store, backend)
    runner.lease = lease
    try:
        with sigterm_interrupts():
            run_to_completion(runner, backend, [wf_id], poll_interval_s=settings.poll_interval_s,
                              run_dir=None if backend.name == "sim" else settings.run_dir)
    except KeyboardInterrupt as exc:
        return _cancel_after_interrupt(store, runner, wf_id, backend.name, exc)
    summary = {**store.workflow_rows([wf_id])[0].summary, "simulated": backend.name == "sim"}
    _add_output_paths(summary, store.load_workflows([wf_id])[0])
    print(json.dumps(summary, indent=2) if args.json else render_summary(summary))
    return 0 if summary["state"] == "COMPLETED" else EXIT_FAILED


def _add_output_paths(summary: dict, wf) -> None:  # noqa: ANN001
    from asad.view.status import output_paths

    for st in summary["stages"]:
        if st["name"] in wf.stages:
            st.update(output_paths(wf, st["name"]))


# -- daemon -------------------------------------------------------------------------------------------
@guarded
def cmd_daemon(args: argparse.Namespace) -> int:
    from asad.daemon.loop import run_daemon

    settings = settings_from(args, backend=args.backend, sim_speed=args.speed, sim_preset=args.preset,
                             sim_load=args.load, poll_interval_s=args.poll_interval_s)
    return run_daemon(settings)


@guarded
def cmd_service(args: argparse.Namespace) -> int:
    from asad.daemon.backend_choice import resolve_backend
    from asad.daemon.service import default_unit_path, unit_text

    settings = settings_from(args)
    backend = resolve_backend(args.backend or settings.backend)
    daemon_args = ["--backend", backend] + (["--config", str(args.config.resolve())] if args.config else [])
    env = dict(os.environ)
    if args.db_url or env.get("ASAD_DB_URL"):
        # In the unit's environment, not on its command line: every user on the node reads a command
        # line (ps), and a server store's URL holds a password. Absolute: systemd starts it in $HOME.
        env["ASAD_DB_URL"] = absolute_sqlite_url(settings.database_url)
    text = unit_text(daemon_args, env)
    if str(args.output) == "-":
        print(text, end="")
        return 0
    path = args.output or default_unit_path()
    if path.exists() and not args.force:
        return _fail(f"{path} exists; nothing was written. Fix: --force to replace it, or --output elsewhere",
                     EXIT_INPUT)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)  # it may hold the store's password
    with os.fdopen(fd, "w") as unit:
        os.fchmod(unit.fileno(), 0o600)  # an existing file (--force) keeps its mode otherwise
        unit.write(text)
    # systemd --user finds units in its own folders: one written elsewhere is linked in first
    linked = path.resolve().parent == default_unit_path().resolve().parent
    start = "systemctl --user daemon-reload && systemctl --user enable --now " + (
        path.stem if linked else f"{shlex.quote(str(path.resolve()))}")
    print(f"wrote {path} (ExecStart: this asad, --backend {backend}; Environment: this shell's PATH"
          f"{', SLURM_CONF' if os.environ.get('SLURM_CONF') else ''}). Start it with:\n  {start}")
    return 0
