"""The CLI's read-only commands: what asad knows and shows (status, history, show, predict,
learners, explain). They read the store and never drive it; ``asad.cli.commands`` holds the ones
that submit, cancel or drive workflows, and the error handling both share."""

from __future__ import annotations

import argparse
import json
import sys
import time

from asad.cli.commands import (EXIT_INPUT, _add_output_paths, _fail, daemon_backend, guarded, open_store,
                           settings_from)
from asad.common.config import Settings
from asad.daemon.lease import driver_elsewhere
from asad.core.model import JobPhase, StageState
from asad.store.db import shown_url


# -- status / history / show ---------------------------------------------------------------------
@guarded
def cmd_status(args: argparse.Namespace) -> int:
    from asad.view.status import check_format, render_status, status_rows

    if args.format:
        try:
            check_format(args.format)
        except ValueError as exc:
            return _fail(str(exc), EXIT_INPUT)
    settings = settings_from(args)
    while True:
        store = open_store(settings, read_only=True)
        try:
            if args.workflow is not None and not store.workflow_rows([args.workflow]):
                return _fail(f"no workflow {args.workflow} in the store ({shown_url(store.url)}); "
                             "'asad status --all' lists them", EXIT_INPUT)
            rows, notes = status_rows(store, workflow_id=args.workflow, include_finished=args.all,
                                      run_dir=settings.run_dir)
            if any(not StageState(r["state"]).is_final for r in rows) and driver_elsewhere(store) is None:
                from asad.daemon.loop import daemon_running

                if not daemon_running(settings):
                    notes.append("no daemon drives this store: nothing is submitted and states are as of its "
                                 "last poll; start one with 'systemctl --user start asad' or 'asad daemon'")
        finally:
            store.close()
        if args.json:
            print(json.dumps({"stages": rows, "notes": notes}, indent=2))
        else:
            if args.watch and sys.stdout.isatty():  # into a file or a pipe: one table after another
                print("\033[2J\033[H", end="")
            print(render_status(rows, args.format, notes))
        if not args.watch:
            return 0
        time.sleep(args.watch)


@guarded
def cmd_history(args: argparse.Namespace) -> int:
    from asad.view.status import render_history

    store = open_store(settings_from(args), read_only=True)
    try:
        rows = store.workflow_rows(limit=args.limit)
        simulated = store.simulated_workflow_ids([r.id for r in rows])
        with_jobs = store.workflow_ids_with_jobs([r.id for r in rows])
        items = [{**_history_item(r), "simulated": r.id in simulated,
                  "backend": "sim" if r.id in simulated else "slurm" if r.id in with_jobs else None} for r in rows]
    finally:
        store.close()
    if args.json:
        print(json.dumps(items, indent=2))
    else:
        print(render_history(items))
    return 0


def _history_item(row) -> dict:  # noqa: ANN001
    s = row.summary or {}
    return {"id": row.id, "workflow": row.name, "strategy": row.strategy, "mode": row.mode, "state": row.state,
            "created_at": row.created_at, "ended_at": row.ended_at, "makespan_s": s.get("makespan_s"),
            "total_wait_s": s.get("total_wait_s"), "core_hours": s.get("core_hours"),
            "overhead_core_hours": s.get("overhead_core_hours"), "message": row.message}


def _load_workflow(args: argparse.Namespace, simulated: list | None = None) -> list:
    store = open_store(settings_from(args), read_only=True)
    try:
        wfs = store.load_workflows([args.workflow])
        if simulated is not None:
            simulated.append(bool(store.simulated_workflow_ids([args.workflow])))
        return wfs
    finally:
        store.close()


@guarded
def cmd_show(args: argparse.Namespace) -> int:
    from asad.core.metrics import summarize
    from asad.view.status import render_summary

    if args.plot:
        from asad.view.plots import _pyplot

        plt = _pyplot()  # says how to install matplotlib if it is absent
        kinds = plt.figure().canvas.get_supported_filetypes()
        plt.close("all")
        if args.plot.suffix.lower().lstrip(".") not in kinds:
            return _fail(f"--plot {args.plot}: cannot draw a '{args.plot.suffix or 'no suffix'}' file; name a file "
                         f"ending in .png, .pdf or .svg (or {', '.join('.' + k for k in sorted(kinds))})", EXIT_INPUT)
    simulated: list = []
    wfs = _load_workflow(args, simulated)
    if not wfs:
        return _fail(f"no workflow {args.workflow} in the store; 'asad history' lists them", EXIT_INPUT)
    summary = {**summarize(wfs[0]), "simulated": simulated[0]}
    _add_output_paths(summary, wfs[0])
    if args.plot:
        from asad.view.plots import plot_workflow

        plot_workflow(summary, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    print(json.dumps(summary, indent=2) if args.json else render_summary(summary))
    return 0


# -- learning ---------------------------------------------------------------------------------------
@guarded
def cmd_predict(args: argparse.Namespace) -> int:
    """The wait the engine would be told for this geometry: the same learner, with the same
    backoff to coarser keys for a geometry never seen (not the exact key's row alone)."""
    from asad.daemon.wiring import engine_learned
    from asad.learn.geometry import geometry_key
    from asad.learn.key_levels import BACKOFF_LEVELS, key_levels
    from asad.common.units import parse_duration_s

    settings = settings_from(args)
    time_limit_s = parse_duration_s(args.time)
    cluster, partitions = (args.cluster, []) if args.cluster else _cluster_of_backend(settings)
    problem = _geometry_problem(args, time_limit_s, partitions)
    if problem:
        return _fail(problem, EXIT_INPUT)
    qs = [0.1, 0.25, 0.5, 0.75, 0.9]
    store = open_store(settings, read_only=True)
    try:
        if not args.partition:
            args.partition = (_default_partition(store, cluster)
                              or next((p.name for p in partitions if p.default), ""))
        key = geometry_key(cluster=cluster, partition=args.partition, qos=args.qos, nodes=args.nodes,
                           cpus=args.cpus, time_limit_s=time_limit_s)
        learned = engine_learned(settings, store)
        floor_s = _note_own_pending(store, learned, key)
        estimate, quantiles = learned.estimate_wait(key), learned.wait_quantiles(key, qs)
        n_obs = len(store.observations(key))
        known = {row.key: row.n_observations for row in store.learners("wait")}
    finally:
        store.close()
    borrowed = [(level, known[level]) for level in key_levels(key, BACKOFF_LEVELS)[1:] if known.get(level)]
    out = {"key": key, "predictor": learned.predictor_kind, "estimate_s": estimate,
           "quantiles": dict(zip([str(q) for q in qs], quantiles, strict=True)),
           "observations": n_obs, "learned": n_obs > 0 or bool(borrowed),
           "borrowed_from": [level for level, _ in borrowed] if not n_obs else [],
           "pending_floor_s": floor_s}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        from asad.common.units import format_duration

        print(f"geometry     {key}")
        print(f"estimate     {format_duration(out['estimate_s'])}  ({out['estimate_s']:.0f} s)")
        print("quantiles    " + "  ".join(f"p{int(float(q) * 100)}={format_duration(v)}"
                                         for q, v in out["quantiles"].items()))
        if n_obs:
            print(f"observations {n_obs}")
        elif borrowed:
            level, n = borrowed[0]
            print(f"observations 0 of this geometry: borrowed from a coarser key ({level}, {n} observations)")
        else:
            print("observations 0  (nothing learned for this geometry yet: the estimate is the learner's prior)")
        if floor_s is not None:
            print(f"pending      a job of yours of this class has waited {format_duration(floor_s)} so far; "
                  "the engine floors its answers there (the pending floor, in steps of ~12 %)")
    return 0


def _note_own_pending(store, learned, key: str = "") -> float | None:  # noqa: ANN001
    """Give ``learned`` the pending floor the daemon's engine has (asad's own jobs still pending,
    on a real cluster: their times are the wall clock's); how long the oldest pending job of
    ``key``'s class has waited (s), or None when none is or the learner has no floor."""
    pending = [(job.geometry_key, job.eligible_time) for wf in store.load_workflows(active_only=True)
               for job in wf.jobs if job.phase is JobPhase.LIVE and job.queued
               and not job.geometry_key.startswith("cluster=sim|")]
    now = time.time()
    learned.note_pending(now, pending)
    floor_key = learned.floor_key(key) if key else None
    waits = [now - since for other, since in pending if learned.floor_key(other) == floor_key and since <= now]
    return max(waits) if floor_key is not None and waits else None


def _cluster_of_backend(settings: Settings) -> tuple[str, list]:
    """The cluster part of the learners' keys for the backend the daemon drives (the runner keys
    them by the backend's ``cluster_name``: Slurm's ClusterName, or ``sim``), and its partitions."""
    from asad.daemon.wiring import make_backend

    name = daemon_backend(settings)
    backend = make_backend(settings, name=name)
    cluster = "sim" if name == "sim" else getattr(backend, "cluster_name", backend.name)
    return cluster, backend.partitions()


def _geometry_problem(args: argparse.Namespace, time_limit_s: int, partitions: list) -> str | None:
    """Why no job of the asked geometry could run on this cluster (an answer would be a prior for a
    job Slurm refuses), or None. Nothing is checked when the partitions are not known (--cluster)."""
    from asad.spec.cluster import geometry_misfit, unknown_partition_fix

    if not partitions:
        return None
    by_name = {p.name: p for p in partitions}
    if args.partition and args.partition not in by_name:
        return f"unknown partition '{args.partition}'. Fix: {unknown_partition_fix(args.partition, partitions)}"
    if args.partition:
        candidates = [by_name[args.partition]]
    else:
        candidates = [p for p in partitions if p.default] or partitions
    cpus_per_node = -(-args.cpus // args.nodes)
    misfits = [geometry_misfit(p, args.nodes, cpus_per_node, time_limit_s) for p in candidates]
    if all(misfits):
        spread = [p for p in candidates if p.cpus_per_node and args.cpus > p.cpus_per_node]
        hint = ""
        if spread and args.nodes == 1:  # --cpus is the whole job's: more nodes may hold it
            nodes = -(-args.cpus // spread[0].cpus_per_node)
            if nodes <= spread[0].nodes:
                hint = f" (or --nodes {nodes}: --cpus counts the whole job's CPUs)"
        return f"no job of this geometry can run here: {misfits[0]}{hint}"
    return None


def _default_partition(store, cluster: str) -> str:  # noqa: ANN001
    """The partition most learners of this cluster are keyed under (a user rarely types it).
    Coarser keys that name no partition do not count."""
    from asad.learn.key_levels import parse_key

    counts: dict[str, int] = {}
    for row in store.learners("wait"):
        fields = parse_key(row.key)
        if fields.get("cluster", "") == cluster and fields.get("partition"):
            counts[fields["partition"]] = counts.get(fields["partition"], 0) + row.n_observations
    return max(counts, key=counts.get) if counts else ""


@guarded
def cmd_learners(args: argparse.Namespace) -> int:
    from asad.daemon.wiring import engine_learned
    from asad.view.learners import LEARNER_QS, render_learners

    settings = settings_from(args)
    store = open_store(settings, read_only=True)
    try:
        rows = [(r.key, r.state, r.n_observations, r.updated_at) for r in store.learners("wait")]
        learned = engine_learned(settings, store)
        _note_own_pending(store, learned)  # the floor the engine has, as predict tells it

        def engine_view(key: str, row_kind: str | None):  # noqa: ANN202 - what predict says of the key
            if row_kind != learned.predictor_kind:
                return None
            return learned.estimate_wait(key), learned.wait_quantiles(key, list(LEARNER_QS))

        text = render_learners(rows, as_json=args.json, engine_view=engine_view)
    finally:
        store.close()
    print(text)
    return 0


@guarded
def cmd_explain(args: argparse.Namespace) -> int:
    from asad.view.explain import render_explain

    wfs = _load_workflow(args)
    if not wfs:
        return _fail(f"no workflow {args.workflow} in the store; 'asad history' lists them", EXIT_INPUT)
    if args.stage is not None and args.stage not in wfs[0].stages:
        return _fail(f"no stage {args.stage!r} in workflow {args.workflow}; its stages: "
                     f"{', '.join(wfs[0].stages)}", EXIT_INPUT)
    print(render_explain(wfs[0], args.stage, as_json=args.json))
    return 0
