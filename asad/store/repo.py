"""The store's operations, in the engine's terms (dataclasses in, dataclasses out)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from asad.core.model import JobPhase, JobRecord, StageRun, StageState, WorkflowRun, WorkflowState
from asad.slurm.backend import JobState
from asad.spec.load import WorkflowSpec
from asad.store.codec import request_from_dict, request_to_dict
from asad.store.db import StoreError, explain_failure, open_database
from asad.store.models import DaemonStatus, JobRow, LearnerRow, Meta, StageRow, WaitObservation, WorkflowRow

_STAGE_FIELDS = ("state", "attempt", "job_row", "planned_submit_at", "est_wait_s", "est_runtime_s", "cpus",
                 "mem_mb", "time_s", "size_why", "plan_why", "start_time", "end_time", "message", "retry_from")
_JOB_FIELDS = ("job_id", "submitted_at", "reason", "eligible_time", "start_time", "end_time", "alloc_cpus",
               "alloc_nodes", "partition", "account", "qos", "nodelist", "exit_code", "peak_rss_mb", "cpu_s", "wait_learned",
               "est_wait_s", "planned_start", "cancelled_by_asad", "array_tasks", "wait_told", "intent_at",
               "submit_host", "queue_pressure")


# Core statements built once: the runner writes thousands of rows per tick at 1,000 workflows, and
# an ORM-enabled update per row (new expression, cache key, session synchronisation) cost ~1 ms each.
# They bypass the session's identity map; readers expire it first (Runner.refresh, get_status).
_STAGES, _JOBS = StageRow.__table__, JobRow.__table__
_SAVE_STAGE = update(_STAGES).where(_STAGES.c.workflow_id == bindparam("w_workflow_id"),
                                    _STAGES.c.name == bindparam("w_name"))
_SAVE_JOB = update(_JOBS).where(_JOBS.c.id == bindparam("w_id"))
_LEARNERS = LearnerRow.__table__
_SAVE_LEARNER = update(_LEARNERS).where(_LEARNERS.c.kind == bindparam("w_kind"), _LEARNERS.c.key == bindparam("w_key"))


class Store:
    """One open store. Not thread-safe: one per process/thread."""

    def __init__(self, url: str, *, read_only: bool = False):
        self.url = url
        self.read_only = read_only  # an SQLite file opened for reading only (asad.store.db.read_only_sqlite_url)
        self.engine, self._factory, self.store_id = open_database(url, read_only=read_only)
        self.session: Session = self._factory()
        self._prefetched: dict[tuple[str, str], dict | None] = {}

    def close(self) -> None:
        self.session.close()
        self.engine.dispose()

    # -- transactions -------------------------------------------------------------------
    def commit(self) -> None:
        try:
            self.session.commit()
        except SQLAlchemyError as exc:
            self.session.rollback()
            raise StoreError(explain_failure(self.url, exc)) from exc

    def _flush(self) -> None:
        self._guard(self.session.flush)

    def _execute(self, statement, values: dict) -> None:  # noqa: ANN001
        self._guard(lambda: self.session.connection().execute(statement, values))

    def _guard(self, fn) -> None:  # noqa: ANN001
        self._guard_result(fn)

    def _guard_result(self, fn):  # noqa: ANN001, ANN202
        """A failed write (disk full, locked, read-only) rolls the transaction back, so the store
        stays usable once the cause is gone, and says what happened as a StoreError."""
        try:
            return fn()
        except SQLAlchemyError as exc:
            self.session.rollback()
            raise StoreError(explain_failure(self.url, exc)) from exc

    # -- workflows ------------------------------------------------------------------------
    def add_workflow(self, spec: WorkflowSpec, now: float, *, strategy: str | None = None,
                     mode: str | None = None, first_id: int = 0) -> WorkflowRun:
        """A new workflow; its id is the next free one, and at least ``first_id`` (run folders an
        earlier store left under the same ``runs/``: asad.store.identity.highest_run_folder)."""
        row = WorkflowRow(name=spec.name, strategy=strategy or spec.strategy, mode=mode or spec.mode,
                          state=WorkflowState.ACTIVE.value, spec=spec.to_dict(), created_at=now, message="")
        if first_id and first_id > self.max_workflow_id():
            row.id = first_id  # rare: a new store beside an earlier one's folders
            self.session.add(row)
            try:
                self.session.flush()
            except IntegrityError:  # another submit took that id a moment ago: the next free one
                self.session.rollback()
                row = WorkflowRow(**{c: getattr(row, c) for c in ("name", "strategy", "mode", "state", "spec",
                                                                 "created_at", "message")})
                self.session.add(row)
                self._flush()
        else:
            self.session.add(row)
            self._flush()
        wf = WorkflowRun(id=row.id, spec=spec, strategy=row.strategy, mode=row.mode, created_at=now)
        for stage in spec.stages:
            run = StageRun(workflow_id=row.id, name=stage.name)
            wf.stages[stage.name] = run
            self.session.add(StageRow(workflow_id=row.id, name=stage.name, state=run.state.value))
        self.commit()
        return wf

    def save_workflow(self, wf: WorkflowRun, summary: dict | None = None) -> None:
        values = dict(state=wf.state.value, ended_at=wf.ended_at, message=wf.message)
        if summary is not None:
            values["summary"] = summary
        self.session.execute(update(WorkflowRow).where(WorkflowRow.id == wf.id).values(**values))

    def save_stage(self, stage: StageRun) -> None:
        values = {f: getattr(stage, f) for f in _STAGE_FIELDS}
        values["state"] = stage.state.value
        values["w_workflow_id"], values["w_name"] = stage.workflow_id, stage.name
        self._execute(_SAVE_STAGE, values)

    def request_cancel(self, workflow_id: int) -> bool:
        res = self.session.execute(update(WorkflowRow).where(WorkflowRow.id == workflow_id,
                                                             WorkflowRow.state == WorkflowState.ACTIVE.value)
                                   .values(cancel_requested=True))
        self.commit()
        return res.rowcount > 0

    def workflow_rows(self, ids: Iterable[int] | None = None, *, states: Iterable[str] | None = None,
                      limit: int | None = None) -> list[WorkflowRow]:
        q = select(WorkflowRow).order_by(WorkflowRow.id)
        if ids is not None:
            q = q.where(WorkflowRow.id.in_(list(ids)))
        if states is not None:
            q = q.where(WorkflowRow.state.in_(list(states)))
        if limit:
            q = q.order_by(None).order_by(WorkflowRow.id.desc()).limit(limit)
        return list(self.session.scalars(q))

    def load_workflows(self, ids: Iterable[int] | None = None, *, active_only: bool = False,
                       after_id: int = 0) -> list[WorkflowRun]:
        q = select(WorkflowRow).where(WorkflowRow.id > after_id).order_by(WorkflowRow.id)
        if ids is not None:
            q = q.where(WorkflowRow.id.in_(list(ids)))
        if active_only:
            q = q.where(WorkflowRow.state == WorkflowState.ACTIVE.value)
        rows = list(self.session.scalars(q))
        if not rows:
            return []
        wf_ids = [r.id for r in rows]
        stages: dict[int, list[StageRow]] = {}
        fresh = {"populate_existing": True}  # rows written by Core updates (save_stage/save_job)
        for s in self.session.scalars(select(StageRow).where(StageRow.workflow_id.in_(wf_ids))
                                      .execution_options(**fresh)):
            stages.setdefault(s.workflow_id, []).append(s)
        jobs: dict[int, list[JobRow]] = {}
        for j in self.session.scalars(select(JobRow).where(JobRow.workflow_id.in_(wf_ids)).order_by(JobRow.id)
                                      .execution_options(**fresh)):
            jobs.setdefault(j.workflow_id, []).append(j)
        out = []
        for r in rows:
            spec = WorkflowSpec.from_dict(r.spec)
            wf = WorkflowRun(id=r.id, spec=spec, strategy=r.strategy, mode=r.mode, state=WorkflowState(r.state),
                             created_at=r.created_at, ended_at=r.ended_at, message=r.message,
                             cancel_requested=r.cancel_requested)
            by_name = {s.name: s for s in stages.get(r.id, [])}
            for st in spec.stages:  # spec order, so iteration follows the file
                s = by_name[st.name]
                run = StageRun(workflow_id=r.id, name=s.name)
                for f in _STAGE_FIELDS:
                    setattr(run, f, getattr(s, f))
                run.state = StageState(s.state)
                wf.stages[s.name] = run
            wf.jobs = [_job_from_row(j) for j in jobs.get(r.id, [])]
            out.append(wf)
        return out

    def cancel_requested_ids(self) -> set[int]:
        q = select(WorkflowRow.id).where(WorkflowRow.cancel_requested.is_(True),
                                         WorkflowRow.state == WorkflowState.ACTIVE.value)
        return set(self.session.scalars(q))

    def active_workflow_ids(self) -> set[int]:
        q = select(WorkflowRow.id).where(WorkflowRow.state == WorkflowState.ACTIVE.value)
        return set(self.session.scalars(q))

    def max_workflow_id(self) -> int:
        return self.session.scalar(select(func.max(WorkflowRow.id))) or 0

    # -- jobs -------------------------------------------------------------------------------
    def insert_job(self, job: JobRecord) -> int:
        """Write a submission intent; committed before sbatch runs (write-ahead)."""
        values = {f: getattr(job, f) for f in _JOB_FIELDS}
        values.update(workflow_id=job.workflow_id, stage=job.stage, attempt=job.attempt, tag=job.tag,
                      phase=job.phase.value, request=request_to_dict(job.request), geometry_key=job.geometry_key,
                      state=job.state.value, rides=list(job.rides) or None)
        res = self._guard_result(lambda: self.session.connection().execute(_JOBS.insert(), values))
        job.row_id = int(res.inserted_primary_key[0])
        return job.row_id

    def save_job(self, job: JobRecord) -> None:
        values = {f: getattr(job, f) for f in _JOB_FIELDS}
        values["phase"] = job.phase.value
        values["state"] = job.state.value
        values["w_id"] = job.row_id
        self._execute(_SAVE_JOB, values)

    def jobs_for(self, workflow_id: int) -> list[JobRecord]:
        q = select(JobRow).where(JobRow.workflow_id == workflow_id).order_by(JobRow.id).execution_options(
            populate_existing=True)
        return [_job_from_row(j) for j in self.session.scalars(q)]

    def simulated_workflow_ids(self, ids: Iterable[int] | None = None) -> set[int]:
        """Workflows whose jobs went to the simulator (their geometry keys name the cluster ``sim``)."""
        q = select(JobRow.workflow_id).where(JobRow.geometry_key.like("cluster=sim|%")).distinct()
        if ids is not None:
            q = q.where(JobRow.workflow_id.in_(list(ids)))
        return set(self.session.scalars(q))

    def workflow_ids_with_jobs(self, ids: Iterable[int]) -> set[int]:
        """Workflows that submitted at least one job (or hold an intent to)."""
        q = select(JobRow.workflow_id).where(JobRow.workflow_id.in_(list(ids))).distinct()
        return set(self.session.scalars(q))

    # -- learning ---------------------------------------------------------------------------
    def load_learner(self, kind: str, key: str) -> dict | None:
        # Called inside the engine's decisions (a stage's first run-time estimate): served from
        # prefetch_learners when it can, else a plain read without autoflush.
        if (kind, key) in self._prefetched:
            return self._prefetched.pop((kind, key))
        q = select(LearnerRow.state).where(LearnerRow.kind == kind, LearnerRow.key == key)
        with self.session.no_autoflush:
            return self.session.execute(q).scalar_one_or_none()

    def prefetch_learners(self, kind: str, keys: Iterable[str]) -> None:
        """Read many learners' states in one query (absent ones as None) for the next load_learner
        calls: a thousand new workflows would otherwise cost a thousand reads inside one tick."""
        keys = [k for k in set(keys) if (kind, k) not in self._prefetched]
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            found = dict(self.session.execute(select(LearnerRow.key, LearnerRow.state).where(
                LearnerRow.kind == kind, LearnerRow.key.in_(chunk))).all())
            for k in chunk:
                self._prefetched[(kind, k)] = found.get(k)

    def save_learner(self, kind: str, key: str, state: dict, n_observations: int, now: float) -> None:
        # Core statements, not the ORM: hundreds of learners change per tick at 1,000 workflows,
        # and an ORM get (with its autoflush) plus a flush cost ~10 ms each.
        values = {"state": state, "n_observations": n_observations, "updated_at": now}
        res = self._guard_result(lambda: self.session.connection().execute(
            _SAVE_LEARNER, {**values, "w_kind": kind, "w_key": key}))
        if res.rowcount == 0:
            self._execute(_LEARNERS.insert(), {**values, "kind": kind, "key": key})

    def learners(self, kind: str | None = None) -> list[LearnerRow]:
        q = select(LearnerRow).order_by(LearnerRow.kind, LearnerRow.key).execution_options(populate_existing=True)
        if kind:
            q = q.where(LearnerRow.kind == kind)
        return list(self.session.scalars(q))

    def add_observation(self, key: str, wait_s: float, estimate_s: float | None, now: float,
                        job_id: int | None, queue_pressure: float | None = None) -> None:
        self.session.add(WaitObservation(geometry_key=key, wait_s=wait_s, estimate_s=estimate_s,
                                         observed_at=now, job_id=job_id, queue_pressure=queue_pressure))

    def observations(self, key: str) -> list[WaitObservation]:
        q = select(WaitObservation).where(WaitObservation.geometry_key == key).order_by(WaitObservation.id)
        return list(self.session.scalars(q))

    # -- daemon status ------------------------------------------------------------------------
    def set_status(self, key: str, value: dict) -> None:
        row = self.session.get(DaemonStatus, key)
        if row is None:
            self.session.add(DaemonStatus(key=key, value=value))
        else:
            row.value = value

    def meta_value(self, key: str) -> str | None:
        self.session.expire_all()
        row = self.session.get(Meta, key)
        return None if row is None else row.value

    def swap_meta(self, key: str, old: str | None, new: str) -> bool:
        """Compare-and-set one meta row, committed: True when it held ``old`` (None: absent) and now
        holds ``new``; False when another process changed it first."""
        try:
            if old is None:
                self.session.add(Meta(key=key, value=new))
                self.session.commit()
                return True
            done = self.session.execute(update(Meta).where(Meta.key == key, Meta.value == old).values(value=new))
            self.session.commit()
            return done.rowcount == 1
        except IntegrityError:  # another process inserted it first
            self.session.rollback()
            return False
        except SQLAlchemyError as exc:
            self.session.rollback()
            raise StoreError(explain_failure(self.url, exc)) from exc

    def get_status(self, key: str) -> dict | None:
        self.session.expire_all()
        row = self.session.get(DaemonStatus, key)
        return None if row is None else dict(row.value)


def _job_from_row(j: JobRow) -> JobRecord:
    job = JobRecord(row_id=j.id, workflow_id=j.workflow_id, stage=j.stage, attempt=j.attempt, tag=j.tag,
                    phase=JobPhase(j.phase), request=request_from_dict(j.request), geometry_key=j.geometry_key,
                    state=JobState(j.state), rides=tuple(j.rides or ()))
    for f in _JOB_FIELDS:
        setattr(job, f, getattr(j, f))
    return job


def retry_locked(fn, attempts: int = 5, pause_s: float = 0.5):  # noqa: ANN001, ANN201
    """Run ``fn`` again when SQLite says the database is locked (another process is writing)."""
    for i in range(attempts):
        try:
            return fn()
        except OperationalError as exc:
            if "locked" not in str(exc).lower() or i == attempts - 1:
                raise
            time.sleep(pause_s * (i + 1))
    return None
