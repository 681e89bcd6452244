"""Wiring: settings → store, backend and runner. Shared by the CLI, the daemon and the benches."""

from __future__ import annotations

import hashlib
import math
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from asad.common.config import Settings
from asad.core.context import BIG_JOB_STAGE
from asad.core.job_env import big_job_assignments
from asad.learn.registry import recommended_predictor
from asad.core.model import WorkflowState
from asad.common.private_dir import make_private_dir
from asad.daemon.runner import Runner
from asad.slurm.backend import Backend, JobRequest, SlurmError
from asad.store.repo import Store

WRAPPER = Path(__file__).resolve().parents[2] / "slurm-scripts" / "asad-stage.sh"


def make_backend(settings: Settings, *, name: str | None = None, preset: str | None = None,
                 load: float | None = None, seed: int | None = None, priority: str | None = None,
                 wall_clock: bool = False) -> Backend:
    from asad.daemon.backend_choice import resolve_backend

    name = resolve_backend(name or settings.backend)
    if name == "sim":
        from asad.slurm.sim import make_simulator

        sim = make_simulator(preset or settings.sim_preset,
                             load=load if load is not None else settings.sim_load,
                             seed=settings.seed if seed is None else seed,
                             priority=priority or settings.sim_priority)
        if wall_clock:
            from asad.slurm.sim import WallClockSimulator

            return WallClockSimulator(sim, settings.sim_speed)
        return sim
    if name == "slurm":
        from asad.slurm.select import make_slurm_backend

        return make_slurm_backend(timeout_s=settings.slurm_timeout_s)
    raise SlurmError(f"unknown backend {name!r}: use 'sim' (the simulator) or 'slurm' (a real cluster)")


def predictor_choice(settings: Settings) -> tuple[str, dict]:
    kind, params = (settings.predictor, {}) if settings.predictor else recommended_predictor()
    if settings.slurm_expert and kind == "hedge":  # Slurm's estimate as one more expert (issue 38)
        params = {**params, "hedge_slurm": True}
    return kind, params


def engine_learned(settings: Settings, store: Store):  # noqa: ANN201 - asad.core.learned.Learned
    """The learners the engine would consult over ``store`` (its wait learner's kind and settings):
    what ``predict``, ``learners`` and ``submit --dry-run`` report."""
    from asad.core.learned import Learned

    kind, params = predictor_choice(settings)
    return Learned(store.load_learner, kind, seed=settings.seed, predictor_params=params,
                   pressure_neighbours=settings.wait_pressure, pressure_step=settings.wait_pressure_step)


def make_runner(settings: Settings, store: Store, backend: Backend, *, only: frozenset[int] | None = None) -> Runner:
    kind, params = predictor_choice(settings)
    builder = None if backend.name == "sim" else CommandBuilder(settings.run_dir)
    return Runner.create(store, backend, predictor=kind, predictor_params=params, seed=settings.seed,
                         asa_timing=settings.asa_timing, build_command=builder, idle_price=settings.idle_price,
                         run_dir="" if backend.name == "sim" else str(settings.run_dir),
                         placement=settings.placement, share_jobs=settings.share_jobs,
                         wait_pressure=settings.wait_pressure, wait_pressure_step=settings.wait_pressure_step,
                         slurm_expert=settings.slurm_expert, probe_interval_s=settings.poll_interval_s,
                         only=only)


@dataclass
class CommandBuilder:
    """The batch script of a stage's job on a real cluster: the stage wrapper with the stage's
    command, run folder and (a job submitted without a dependency) the predecessors whose end
    markers it waits for. A shared job (``rides``) runs its stages' wrappers in turn."""

    run_dir: Path
    create: bool = True  # False: only write the script (``submit --dry-run`` creates no folder)

    def __call__(self, wf, stage: str, req: JobRequest, barrier: tuple[str, ...] = (),  # noqa: ANN001
                 rides: tuple[str, ...] = ()) -> str:
        run_dir = self.run_dir / str(wf.id)
        if self.create:
            make_private_dir(run_dir, tighten=self.run_dir)
            output = wf.spec.stage(stage).slurm.output if stage != BIG_JOB_STAGE else None
            if output:  # Slurm does not create the folder of --output: the job would fail to launch
                (Path(wf.spec.workdir or ".") / output).parent.mkdir(parents=True, exist_ok=True)
        lines = ["#!/bin/bash", f"export ASAD_RUN_DIR={shlex.quote(str(run_dir))}"]
        wrapper = self._wrapper() if self.create else WRAPPER
        if stage == BIG_JOB_STAGE:
            for s in wf.spec.topo_order():
                lines += self._stage_lines(wf, s, wrapper, srun=True, barrier=())
            return "\n".join(lines) + "\n"
        for k, name in enumerate((stage, *rides)):
            lines += self._stage_lines(wf, name, wrapper, srun=False, barrier=barrier if k == 0 else (),
                                       last=k == len(rides))
        return "\n".join(lines) + "\n"

    def _wrapper(self) -> Path:
        """The stage wrapper as jobs run it: a copy in the run folder, named by its content and never
        written again. Bash reads a script as it runs it, so a job must not run a file that can
        change under it (the wrapper rewritten in place by an edit or an upgrade of asad failed a
        stage that was running: a syntax error half-way through)."""
        data = WRAPPER.read_bytes()
        path = self.run_dir / f"asad-stage-{hashlib.sha256(data).hexdigest()[:12]}.sh"
        if not path.exists():
            make_private_dir(self.run_dir, tighten=self.run_dir)
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_bytes(data)
            tmp.chmod(0o700)
            os.replace(tmp, path)  # whole or not at all, also beside another asad process
        return path

    def _stage_lines(self, wf, stage: str, wrapper: Path, *, srun: bool,  # noqa: ANN001
                     barrier: tuple[str, ...], last: bool = True) -> list[str]:
        s = wf.spec.stage(stage)
        # an array's tasks each keep their own markers and log: <stage>.<task id>.log
        name = shlex.quote(stage) + ('."$SLURM_ARRAY_TASK_ID"' if s.array is not None and not srun else "")
        env = [f"ASAD_STAGE={name}", f"ASAD_COMMAND={shlex.quote(s.run)}",
               f"ASAD_WAIT_FOR={shlex.quote(' '.join(barrier))}"]
        if s.slurm.output:  # the user named the log: the command's output goes to Slurm's --output file
            env.append("ASAD_LOG=-")
        setup = [f"# setup of stage {stage}", *s.slurm.setup] if s.slurm.setup else []
        # env: values come through the job's environment, never the script (asad/core/job_env.py); a big
        # job's stages each name their own carriers
        if srun:
            env += big_job_assignments(wf.spec, stage)
        prefix = "env " + " ".join(env)
        if srun:
            size = f"--nodes={s.nodes} --ntasks={s.ntasks} --cpus-per-task={s.cpus_per_task} --exact"
            return [*setup, f"{prefix} srun {size} {shlex.quote(str(wrapper))} || exit $?"]
        if not last:  # a shared job: the next stage runs only if this one succeeded
            return [*setup, f"{prefix} {shlex.quote(str(wrapper))} || exit $?"]
        return [*setup, f"exec {prefix} {shlex.quote(str(wrapper))}"]


def run_to_completion(runner: Runner, backend: Backend, workflow_ids: list[int], *,
                      poll_interval_s: float = 30.0, max_virtual_s: float = 90 * 86400,
                      sleep=None, run_dir: Path | None = None) -> None:  # noqa: ANN001
    """Drive the runner until the given workflows end. On the simulator this runs on virtual time,
    waking exactly when a tracked job changes state or a planned submission is due. On a real
    cluster with ``run_dir`` it also wakes when a stage's end marker, or a pending job's allocation marker, appears."""
    import time as _time

    from asad.daemon.wake import (BRISK_FOR_S, BRISK_POLL_S, RELEASED_POLL_S, WATCH_INTERVAL_S, Watch, end_markers,
                                  kill_logs, released_jobs, start_markers)

    start = backend.now()
    sim = hasattr(backend, "run_until")
    sleep = sleep or _time.sleep
    watch = Watch(None) if run_dir is not None else None
    ended: set[int] = set()
    brisk_until = 0.0
    while True:
        report = runner.tick()
        pending = [i for i in workflow_ids if i in runner.active]
        if not pending:
            return
        now = backend.now()
        if now - start > max_virtual_s:
            raise TimeoutError(f"workflows {pending} still running after {max_virtual_s / 86400:.0f} days")
        wake = report.wake_at
        if report.backend_error:
            wake = now + poll_interval_s
        if sim:
            live = runner.live_job_ids()
            if not live and math.isinf(wake):
                wake = now + poll_interval_s
            backend.run_until(min(wake, now + 86400.0), stop_on=live)
        else:
            pause = max(0.5, min(poll_interval_s, wake - now)) if not math.isinf(wake) else poll_interval_s
            if watch is None:
                sleep(pause)
                continue
            ended &= set(runner.live_job_ids())
            if ended and _time.monotonic() < brisk_until and not report.backend_error:
                pause = min(pause, BRISK_POLL_S)  # a marker announced an end Slurm has not recorded yet
            if not report.backend_error and released_jobs(runner, now):
                pause = min(pause, RELEASED_POLL_S)  # it starts, or fails leaving no marker, any second now
            watch.set_markers(end_markers(runner, run_dir), kill_logs(runner), start_markers(runner, run_dir))
            deadline = _time.monotonic() + pause
            while (left := deadline - _time.monotonic()) > 0:
                sleep(min(WATCH_INTERVAL_S, left))
                due = watch.due()  # ends, and 0 for a pending job's start: tick now
                if due:
                    if any(due):
                        ended |= {j for j in due if j}
                        brisk_until = _time.monotonic() + BRISK_FOR_S
                    break


def workflow_active(runner: Runner, wf_id: int) -> bool:
    wf = runner.active.get(wf_id)
    return wf is not None and wf.state is WorkflowState.ACTIVE


def run_in_process(store: Store, backend: Backend, specs: list, *, settings: Settings | None = None,
                   strategy: str | None = None, mode: str | None = None, warmup_s: float = 0.0,
                   stagger_s: float = 0.0) -> list[dict]:
    """Submit ``specs`` (WorkflowSpec objects) to one runner and drive them to the end; return their
    summaries. What ``asad run`` does, for tests and benchmarks (several workflows at once)."""
    settings = settings or Settings()
    runner = make_runner(settings, store, backend)
    if warmup_s and hasattr(backend, "run_until"):
        backend.run_until(backend.now() + warmup_s)
    ids = []
    for i, spec in enumerate(specs):
        if stagger_s and i and hasattr(backend, "run_until"):
            backend.run_until(backend.now() + stagger_s)
        wf = store.add_workflow(spec, backend.now(), strategy=strategy or spec.strategy, mode=mode or spec.mode)
        ids.append(wf.id)
    runner.load()
    run_to_completion(runner, backend, ids, poll_interval_s=settings.poll_interval_s)
    rows = {r.id: r for r in store.workflow_rows(ids)}
    return [rows[i].summary for i in ids]
