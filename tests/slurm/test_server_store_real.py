"""A store on a database server: the local cluster's own MariaDB (``local-cluster.sh up
--accounting``), through PyMySQL. Found by the real-Slurm audit of 2026-11-26: MariaDB stored every
time as a 4-byte FLOAT (an epoch read back up to an hour off), and a schema upgrade there left the
store unusable ("duplicate column": MariaDB commits each ALTER TABLE at once, and the version row's
``key`` is a reserved word)."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect
from sqlalchemy.sql import sqltypes

from asad.core.model import JobPhase, JobRecord
from asad.slurm.backend import JobRequest, JobState
from asad.spec.load import load_workflow
from asad.store.models import SCHEMA_VERSION, Base
from asad.store.repo import Store
from test_workflows_real import asad, asad_env

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EPOCH = 1_795_722_577.125  # 2026-11-26; a MariaDB FLOAT read it back as 1795720000 (the audit)


def _mariadb(cluster_dir: Path, sql: str) -> None:
    subprocess.run(["mariadb", "--no-defaults", f"--socket={cluster_dir / 'mysql' / 'mysqld.sock'}", "-u", "root",
                    "-e", sql], check=True, capture_output=True, text=True, timeout=60)


@pytest.fixture
def server_url(cluster):
    pytest.importorskip("pymysql", reason="PyMySQL (the test extra) talks to MariaDB")
    conf = Path(cluster.cluster_dir or "/nonexistent") / "slurmdbd.conf"
    if not conf.exists():
        pytest.skip("the local cluster runs without its MariaDB (start it with --accounting)")
    db = dict(line.strip().split("=", 1) for line in conf.read_text().splitlines() if "=" in line)
    name = f"asad_test_{secrets.token_hex(4)}"
    _mariadb(conf.parent, f"CREATE DATABASE {name}; GRANT ALL ON {name}.* TO '{db['StorageUser']}'@'127.0.0.1';")
    base = f"mysql+pymysql://{db['StorageUser']}:{db['StoragePass']}@127.0.0.1:{db['StoragePort']}"
    yield f"{base}/{name}"
    _mariadb(conf.parent, f"DROP DATABASE IF EXISTS {name};")


def _job(wf_id: int) -> JobRecord:
    return JobRecord(row_id=None, workflow_id=wf_id, stage="blastn", attempt=1, tag=f"t{wf_id}",
                     phase=JobPhase.DONE, request=JobRequest(name="x", command="c"), geometry_key="k",
                     job_id=42, submitted_at=EPOCH, eligible_time=EPOCH + 1.5, start_time=EPOCH + 2.25,
                     end_time=EPOCH + 63.75, state=JobState.COMPLETED)


def test_times_keep_their_seconds_on_a_server_store(server_url):
    store = Store(server_url)
    wf = store.add_workflow(load_workflow(EXAMPLES / "blast.yaml"), EPOCH)
    store.insert_job(_job(wf.id))
    store.commit()
    store.close()
    store = Store(server_url)
    (back,) = store.load_workflows([wf.id])
    (job,) = back.jobs
    store.close()
    assert back.created_at == EPOCH
    assert (job.submitted_at, job.eligible_time, job.start_time, job.end_time) == (
        EPOCH, EPOCH + 1.5, EPOCH + 2.25, EPOCH + 63.75)


def test_a_store_left_half_migrated_by_mariadb_opens_and_widens_its_times(server_url):
    """The state the audit's store was left in: schema 5 in the version row, the columns of the
    5 → 6 step already there (MariaDB had committed them), times as FLOAT."""
    Store(server_url).close()
    engine = create_engine(server_url)
    with engine.begin() as conn:
        for table in Base.metadata.sorted_tables:
            for column in table.columns:
                if isinstance(column.type, sqltypes.Double):
                    conn.exec_driver_sql(f"ALTER TABLE {table.name} MODIFY {column.name} FLOAT NULL")
        conn.exec_driver_sql("UPDATE meta SET value = '5' WHERE `key` = 'schema_version'")
    store = Store(server_url)  # failed with "Duplicate column name 'account'"
    wf = store.add_workflow(load_workflow(EXAMPLES / "blast.yaml"), EPOCH)
    store.commit()
    assert store.load_workflows([wf.id])[0].created_at == EPOCH
    store.close()
    with engine.connect() as conn:
        version = conn.exec_driver_sql("SELECT value FROM meta WHERE `key` = 'schema_version'").scalar()
        types = {c["name"]: c["type"] for c in inspect(conn).get_columns("jobs")}
    engine.dispose()
    assert version == str(SCHEMA_VERSION)
    assert all(isinstance(types[name], sqltypes.DOUBLE) for name in ("submitted_at", "start_time", "end_time"))


def test_a_server_that_refuses_says_what_to_fix(cluster, server_url, tmp_path):
    env = asad_env(cluster, tmp_path / "state")
    base, _, name = server_url.rpartition("/")
    user_pass, _, host = base.removeprefix("mysql+pymysql://").partition("@")
    user = user_pass.split(":")[0]
    for url, says in ((f"mysql+pymysql://{user}:wrong@{host}/{name}", "refused the login"),
                      (f"{base}/no_such_database", "the database does not exist or the user has no rights on it")):
        res = asad(env, "status", "--db", url)
        assert res.returncode == 4 and says in res.stderr and "Fix:" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr and "wrong" not in res.stderr  # the password is never shown
