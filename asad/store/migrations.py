"""Schema migrations: ``MIGRATIONS[v]`` upgrades a store from version ``v`` to ``v + 1``.

A newer asad opens an older store by running these in order; an older asad refuses a newer store
(see ``db.open_database``). Every step is idempotent, because MySQL and MariaDB commit each
``ALTER TABLE`` at once, whatever the transaction: a step cut short there (or a version row
written in a later statement that failed) must be safe to run again, not stop the store with
"duplicate column". The version row is written with SQLAlchemy's own statement, which quotes
``key`` (a reserved word in MySQL).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import inspect, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql import sqltypes

from asad.store.models import SCHEMA_VERSION, Base, Meta


def _add_column(table: str, column: str, ddl_type: str) -> Callable[[Connection], None]:
    """``ALTER TABLE ... ADD COLUMN``, unless the column is there already."""
    def step(conn: Connection) -> None:
        if column not in {c["name"] for c in inspect(conn).get_columns(table)}:
            conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {column} {ddl_type}")
    return step


def _steps(*steps: Callable[[Connection], None]) -> Callable[[Connection], None]:
    def run(conn: Connection) -> None:
        for step in steps:
            step(conn)
    return run


def _double_precision_times(conn: Connection) -> None:
    """MySQL/MariaDB made every ``Float`` column a 4-byte FLOAT: an epoch time read back up to an hour
    off. Widen them to DOUBLE (what ``models`` now declares). The digits already lost stay lost; the
    other databases stored doubles all along (SQLite REAL, PostgreSQL FLOAT = double precision)."""
    if conn.dialect.name not in ("mysql", "mariadb"):
        return
    for table in Base.metadata.sorted_tables:
        present = {c["name"]: c for c in inspect(conn).get_columns(table.name)}
        for column in table.columns:
            found = present.get(column.name)
            if isinstance(column.type, sqltypes.Double) and found is not None \
                    and not isinstance(found["type"], sqltypes.DOUBLE):
                null = "NULL" if column.nullable else "NOT NULL"
                conn.exec_driver_sql(f"ALTER TABLE {table.name} MODIFY {column.name} DOUBLE {null}")


MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _add_column("stages", "plan_why", "TEXT DEFAULT ''"),
    2: _steps(_add_column("stages", "retry_from", "INTEGER DEFAULT 0"), _add_column("jobs", "array_tasks", "JSON")),
    3: _add_column("jobs", "wait_told", "JSON"),
    4: _add_column("jobs", "rides", "JSON"),
    5: _steps(_add_column("jobs", "account", "VARCHAR(200) DEFAULT ''"),
              _add_column("jobs", "qos", "VARCHAR(200) DEFAULT ''")),
    6: _double_precision_times,
    7: _steps(_add_column("jobs", "intent_at", "DOUBLE PRECISION"),
              _add_column("jobs", "submit_host", "VARCHAR(255) DEFAULT ''")),
    8: _steps(_add_column("jobs", "queue_pressure", "DOUBLE PRECISION"),
              _add_column("wait_observations", "queue_pressure", "DOUBLE PRECISION")),
}


def migrate(engine: Engine, from_version: int) -> None:
    with engine.begin() as conn:
        for version in range(from_version, SCHEMA_VERSION):
            step = MIGRATIONS.get(version)
            if step is None:
                raise RuntimeError(f"no migration from schema {version} to {version + 1}")
            step(conn)
        conn.execute(update(Meta).where(Meta.key == "schema_version").values(value=str(SCHEMA_VERSION)))
