from __future__ import annotations

import os
import sqlite3
import stat

import pytest

from asad.core.model import JobPhase, JobRecord
from asad.slurm.backend import Dependency, DependencyType, JobRequest, SimTruth
from asad.spec.load import load_workflow
from asad.store.codec import request_from_dict, request_to_dict
from asad.store.db import StoreError
from asad.store.models import SCHEMA_VERSION
from asad.store.repo import Store
from tests.conftest import EXAMPLES


def test_sqlite_store_is_private_and_in_wal_mode(tmp_path):
    path = tmp_path / "sub" / "asad.db"
    store = Store(f"sqlite:///{path}")
    store.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_workflow_round_trip(db_url):
    spec = load_workflow(EXAMPLES / "montage.yaml")
    store = Store(db_url)
    wf = store.add_workflow(spec, 1000.0, strategy="chain")
    req = JobRequest(name="x", command="echo 'a b'", partition="a,b", mem_mb=100, time_limit_s=60,
                     dependency=Dependency(DependencyType.AFTER, (3, 4), 5), begin=1234.5,
                     truth=SimTruth(10.0, 20.0, 0.5, (7,)), env={"A": "1"})
    job = JobRecord(row_id=None, workflow_id=wf.id, stage="mAdd", attempt=1, tag="t1", phase=JobPhase.SUBMITTING,
                    request=req, geometry_key="k")
    store.insert_job(job)
    store.commit()
    store.close()
    store = Store(db_url)
    (loaded,) = store.load_workflows([wf.id])
    assert loaded.spec == spec
    assert loaded.strategy == "chain"
    assert list(loaded.stages) == [s.name for s in spec.stages]
    assert loaded.jobs[0].request == req
    assert loaded.jobs[0].phase is JobPhase.SUBMITTING
    store.close()


def test_request_codec_round_trip():
    req = JobRequest(name="n", command="c", dependency=Dependency(DependencyType.AFTEROK, (1, 2)))
    assert request_from_dict(request_to_dict(req)) == req


def test_newer_schema_is_refused_with_a_clear_message(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    Store(url).close()
    with sqlite3.connect(tmp_path / "a.db") as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError, match="newer asad"):
        Store(url)


def test_corrupt_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "asad.db"
    path.write_bytes(b"this is not a database at all" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not an SQLite database.*Nothing was changed"):
        Store(f"sqlite:///{path}")
    assert path.read_bytes() == before


def test_truncated_sqlite_is_reported_as_corrupt(tmp_path):
    path = tmp_path / "asad.db"
    Store(f"sqlite:///{path}").close()
    data = path.read_bytes()
    path.write_bytes(data[:100] + b"\x00" * 50 + data[150:200])
    with pytest.raises(StoreError, match="corrupt|not a database|malformed"):
        Store(f"sqlite:///{path}")


def test_cancel_request_is_seen_by_another_connection(db_url):
    spec = load_workflow(EXAMPLES / "blast.yaml")
    a, b = Store(db_url), Store(db_url)
    wf = a.add_workflow(spec, 0.0)
    assert b.request_cancel(wf.id)
    a.session.expire_all()
    assert a.cancel_requested_ids() == {wf.id}
    a.close()
    b.close()


def test_a_store_of_schema_1_is_migrated_and_keeps_its_rows(tmp_path):
    """A store written by an older asad (schema 1: no plan_why, retry_from, array_tasks,
    wait_told, rides, account, qos) opens in this one; its rows stay and the new columns work."""
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    spec = load_workflow(EXAMPLES / "blast.yaml")
    store = Store(url)
    wf = store.add_workflow(spec, 1000.0, strategy="chain")
    store.insert_job(JobRecord(row_id=None, workflow_id=wf.id, stage="blastn", attempt=1, tag="t1",
                               phase=JobPhase.SUBMITTING, request=JobRequest(name="x", command="c"),
                               geometry_key="k"))
    store.commit()
    store.close()
    with sqlite3.connect(path) as conn:  # as schema 1 wrote it
        for table, column in (("stages", "plan_why"), ("stages", "retry_from"), ("jobs", "array_tasks"),
                              ("jobs", "wait_told"), ("jobs", "rides"), ("jobs", "account"), ("jobs", "qos"),
                              ("jobs", "queue_pressure"), ("wait_observations", "queue_pressure")):
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    store = Store(url)
    (loaded,) = store.load_workflows([wf.id])
    (job,) = loaded.jobs
    assert job.tag == "t1" and job.wait_told is None and job.array_tasks is None and job.rides == ()
    assert job.account == "" and job.qos == "" and job.queue_pressure is None
    job.wait_told = [1.5, "0", [0.1] * 7]
    job.account = "proj1"
    job.queue_pressure = 336.0
    store.save_job(job)
    store.commit()
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    store = Store(url)
    assert store.load_workflows([wf.id])[0].jobs[0].wait_told == [1.5, "0", [0.1] * 7]
    assert store.load_workflows([wf.id])[0].jobs[0].account == "proj1"
    assert store.load_workflows([wf.id])[0].jobs[0].queue_pressure == 336.0
    store.add_observation("k", 30.0, None, 2000.0, 7, queue_pressure=336.0)
    store.commit()
    assert store.observations("k")[0].queue_pressure == 336.0
    store.close()
