"""SQLAlchemy models: the store is the truth.

Bump ``SCHEMA_VERSION`` with every change and add a step to ``migrations.MIGRATIONS``.
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Double, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_VERSION = 9


class Base(DeclarativeBase):
    pass


class Meta(Base):
    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class WorkflowRow(Base):
    __tablename__ = "workflows"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    strategy: Mapped[str] = mapped_column(String(32))
    mode: Mapped[str] = mapped_column(String(32))
    state: Mapped[str] = mapped_column(String(16), index=True)
    spec: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[float] = mapped_column(Double)
    ended_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    summary: Mapped[dict | None] = mapped_column(JSON, nullable=True)


class StageRow(Base):
    __tablename__ = "stages"
    __table_args__ = (UniqueConstraint("workflow_id", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workflow_id: Mapped[int] = mapped_column(ForeignKey("workflows.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(16))
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    job_row: Mapped[int | None] = mapped_column(Integer, nullable=True)
    planned_submit_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    est_wait_s: Mapped[float | None] = mapped_column(Double, nullable=True)
    est_runtime_s: Mapped[float | None] = mapped_column(Double, nullable=True)
    cpus: Mapped[int | None] = mapped_column(Integer, nullable=True)
    mem_mb: Mapped[int | None] = mapped_column(Integer, nullable=True)
    time_s: Mapped[int | None] = mapped_column(Integer, nullable=True)
    size_why: Mapped[str] = mapped_column(Text, default="")
    plan_why: Mapped[str] = mapped_column(Text, default="")
    start_time: Mapped[float | None] = mapped_column(Double, nullable=True)
    end_time: Mapped[float | None] = mapped_column(Double, nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")
    retry_from: Mapped[int] = mapped_column(Integer, default=0)  # attempts up to this one predate a resume


class JobRow(Base):
    """One submission attempt. Written (phase SUBMITTING) *before* sbatch runs."""

    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workflow_id: Mapped[int] = mapped_column(ForeignKey("workflows.id"), index=True)
    stage: Mapped[str] = mapped_column(String(200))
    attempt: Mapped[int] = mapped_column(Integer)
    tag: Mapped[str] = mapped_column(String(300), unique=True)
    phase: Mapped[str] = mapped_column(String(16), index=True)
    request: Mapped[dict] = mapped_column(JSON)
    geometry_key: Mapped[str] = mapped_column(String(200))
    job_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    submitted_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(64), default="")
    eligible_time: Mapped[float | None] = mapped_column(Double, nullable=True)
    start_time: Mapped[float | None] = mapped_column(Double, nullable=True)
    end_time: Mapped[float | None] = mapped_column(Double, nullable=True)
    alloc_cpus: Mapped[int] = mapped_column(Integer, default=0)
    alloc_nodes: Mapped[int] = mapped_column(Integer, default=0)
    partition: Mapped[str] = mapped_column(String(200), default="")
    account: Mapped[str] = mapped_column(String(200), default="")
    qos: Mapped[str] = mapped_column(String(200), default="")
    nodelist: Mapped[str] = mapped_column(Text, default="")
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    peak_rss_mb: Mapped[float | None] = mapped_column(Double, nullable=True)
    cpu_s: Mapped[float | None] = mapped_column(Double, nullable=True)
    wait_learned: Mapped[bool] = mapped_column(Boolean, default=False)
    est_wait_s: Mapped[float | None] = mapped_column(Double, nullable=True)
    planned_start: Mapped[float | None] = mapped_column(Double, nullable=True)
    cancelled_by_asad: Mapped[bool] = mapped_column(Boolean, default=False)
    array_tasks: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # an array job's tasks per state
    wait_told: Mapped[list | None] = mapped_column(JSON, nullable=True)  # what the wait learner told it
    # the stages that run after ``stage`` inside this same job (a shared job: asad.strategies.share)
    rides: Mapped[list | None] = mapped_column(JSON, nullable=True)
    # when and on which host the intent was written (asad.daemon.intents judges a crash's sbatch by them)
    intent_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    submit_host: Mapped[str] = mapped_column(String(255), default="")
    # the queue's pending load the job met when it became eligible (asad.learn.pressure)
    queue_pressure: Mapped[float | None] = mapped_column(Double, nullable=True)


class WaitObservation(Base):
    __tablename__ = "wait_observations"
    __table_args__ = (Index("ix_wait_key", "geometry_key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    geometry_key: Mapped[str] = mapped_column(String(200))
    wait_s: Mapped[float] = mapped_column(Double)
    estimate_s: Mapped[float | None] = mapped_column(Double, nullable=True)
    observed_at: Mapped[float] = mapped_column(Double)
    job_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    queue_pressure: Mapped[float | None] = mapped_column(Double, nullable=True)  # the feature the wait was learned with


class LearnerRow(Base):
    """A learner's serialised state, one per (kind, key): wait learners per geometry,
    run-time and sizing learners per workflow stage."""

    __tablename__ = "learners"
    kind: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    state: Mapped[dict] = mapped_column(JSON)
    n_observations: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[float] = mapped_column(Double, default=0.0)


class DaemonStatus(Base):
    """What the daemon wants ``asad status`` to show (heartbeat, backend health)."""

    __tablename__ = "daemon_status"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[dict] = mapped_column(JSON)
