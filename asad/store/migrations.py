"""Schema migrations: ``MIGRATIONS[v]`` upgrades a store from version ``v`` to ``v + 1``.

A newer asad opens an older store by running these in order inside one transaction;
an older asad refuses a newer store (see ``db.open_database``).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from asad.store.models import SCHEMA_VERSION

MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: lambda conn: conn.execute(text("ALTER TABLE stages ADD COLUMN plan_why TEXT DEFAULT ''")),
    2: lambda conn: (conn.execute(text("ALTER TABLE stages ADD COLUMN retry_from INTEGER DEFAULT 0")),
                     conn.execute(text("ALTER TABLE jobs ADD COLUMN array_tasks JSON"))),
    3: lambda conn: conn.execute(text("ALTER TABLE jobs ADD COLUMN wait_told JSON")),
    4: lambda conn: conn.execute(text("ALTER TABLE jobs ADD COLUMN rides JSON")),
    5: lambda conn: (conn.execute(text("ALTER TABLE jobs ADD COLUMN account VARCHAR(200) DEFAULT ''")),
                     conn.execute(text("ALTER TABLE jobs ADD COLUMN qos VARCHAR(200) DEFAULT ''"))),
}


def migrate(engine: Engine, from_version: int) -> None:
    with engine.begin() as conn:
        for version in range(from_version, SCHEMA_VERSION):
            step = MIGRATIONS.get(version)
            if step is None:
                raise RuntimeError(f"no migration from schema {version} to {version + 1}")
            step(conn)
        conn.execute(text("UPDATE meta SET value = :v WHERE key = 'schema_version'"), {"v": str(SCHEMA_VERSION)})
