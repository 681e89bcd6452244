"""Opening the store: SQLite by default (WAL, busy timeout, 0600), any SQLAlchemy URL works.

Every failure to open becomes a :class:`StoreError` that names the database and the fix.
"""

from __future__ import annotations

import os
import random
import secrets
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar
from pathlib import Path

from sqlalchemy import create_engine, event, inspect, make_url, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from asad.common.config import sqlite_file
from asad.store.models import SCHEMA_VERSION, Base, Meta

T = TypeVar("T")


class StoreError(Exception):
    """The store cannot be used; the message says why and what to do."""


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).expanduser()}"


def absolute_sqlite_url(url: str) -> str:
    """``url`` with an SQLite file's path made absolute (its query kept); other URLs unchanged."""
    path = sqlite_file(url)
    if path is None:
        return url
    query = url.partition("?")[2]
    return sqlite_url(path) + (f"?{query}" if query else "")


def unwritable_place_message(what: str, exc: OSError) -> str:
    """A clear message for a file or folder asad cannot create or write (read-only file system,
    permissions, a file where a folder should be), naming the path and the fix."""
    where = exc.filename or what
    return (f"{what} cannot be written: {where}: {exc.strerror or exc}. Fix: make that place writable, "
            "or point asad at a writable one (ASAD_STATE_DIR, or --db for the store alone).")


def _prepare_sqlite_file(path: Path) -> None:
    # The store holds commands and paths of the user's work: keep it private.
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
    except OSError as exc:
        raise StoreError(unwritable_place_message(f"the store {path}", exc)) from exc
    _check_sqlite_header(path)


def _check_sqlite_header(path: Path) -> None:
    if path.stat().st_size:
        with open(path, "rb") as fh:
            head = fh.read(16)
        if head and not head.startswith(b"SQLite format 3\x00"):
            raise StoreError(
                f"the store {path} is not an SQLite database (corrupt or overwritten). "
                f"Nothing was changed. Fix: move it aside (mv {path} {path}.broken) and restore a backup "
                "(see docs/operations.md, 'Back up and restore'), or start afresh with an empty store."
            )


# The PyPI package that installs a driver module SQLAlchemy asked for (where the names differ).
_DRIVER_PACKAGES = {"MySQLdb": "mysqlclient", "pymysql": "PyMySQL", "psycopg2": "psycopg2-binary",
                    "psycopg": "'psycopg[binary]'", "mysql": "mysql-connector-python"}


def read_only_sqlite_url(path: Path) -> str:
    """An SQLite file opened read-only (``mode=ro``): nothing is written, neither the file nor its
    folder (no journal switch). On a read-only file system also ``immutable=1``: SQLite then needs
    no ``-shm`` beside a WAL file (it cannot make one there), and nothing can change the file."""
    immutable = "&immutable=1" if _read_only_fs(path.parent) else ""
    return f"sqlite:///file:{path}?mode=ro&uri=true{immutable}"


def make_engine(url: str, *, read_only: bool = False) -> Engine:
    path = sqlite_file(url)
    if path is not None and read_only:
        if not path.is_file():
            raise StoreError(f"the store {path} does not exist")
        _check_sqlite_header(path)
        url, path = read_only_sqlite_url(path), None  # no file made, no journal switched
    elif path is not None:
        _prepare_sqlite_file(path)
    kwargs: dict = {}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"timeout": 10.0}  # busy timeout: wait for another process's write
    else:  # a server closes idle connections (MariaDB after 8 h): test one before use, reconnect if gone
        kwargs.update(pool_pre_ping=True, pool_recycle=3600)
    engine = create_engine(url, **kwargs)
    if url.startswith("sqlite"):
        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # noqa: ANN001
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA busy_timeout=10000")
            if path is not None:
                # Turning a fresh file to WAL needs its exclusive lock, and SQLite reports "locked"
                # at once (no busy wait) when another process is doing the same: try again.
                _retrying_creation_race(lambda: cur.execute("PRAGMA journal_mode=WAL"))
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()
    return engine


class OlderSchema(StoreError):
    """A store opened read-only holds an older schema: only a writable open can upgrade it."""


def open_database(url: str, *, create: bool = True,
                  read_only: bool = False) -> tuple[Engine, sessionmaker[Session], str]:
    """Open (and create or migrate) the database; return engine, session factory and store id.
    ``read_only`` (an SQLite file): open it for reading only, creating and migrating nothing."""
    try:
        engine = make_engine(url, read_only=read_only)
        with engine.connect() as conn:
            inspect(conn).get_table_names()  # a file that is no database fails here, explained below
    except StoreError:
        raise
    except (DatabaseError, sqlite3.DatabaseError) as exc:
        raise StoreError(explain_failure(url, exc)) from exc
    except ImportError as exc:
        package = _DRIVER_PACKAGES.get(exc.name or "", exc.name)
        raise StoreError(f"the store {shown_url(url)} needs the Python database driver {exc.name!r}, which is not "
                         f"installed. Fix: pip install {package}, or use the default SQLite store.") from exc
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot open the store {shown_url(url)}: {exc}. Check the URL (config 'db_url', "
                         "env ASAD_DB_URL or --db).") from exc
    factory = sessionmaker(engine, expire_on_commit=False)
    if read_only:
        return engine, factory, _read_meta_only(engine, factory, url)
    try:
        version, store_id = _create_or_read_meta(engine, factory, url, create)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the store {shown_url(url)} was written by a newer asad (schema {version}; this asad knows up to "
                f"{SCHEMA_VERSION}). Nothing was changed. Fix: upgrade asad, or use another store (--db)."
            )
        if version < SCHEMA_VERSION:
            from asad.store.migrations import migrate

            migrate(engine, version)
        # tables added by this version but unused by migrations; on a fresh store, another process
        # that wrote the meta rows first may still be creating tables
        _retrying_creation_race(lambda: Base.metadata.create_all(engine))
    except StoreError:
        raise
    except (DatabaseError, OperationalError) as exc:
        raise StoreError(explain_failure(url, exc)) from exc
    return engine, factory, store_id


def _read_meta_only(engine: Engine, factory: sessionmaker[Session], url: str) -> str:
    """The store id of a store opened read-only, whose schema must be this asad's."""
    try:
        with factory() as s:
            version_row, id_row = s.get(Meta, "schema_version"), s.get(Meta, "store_id")
    except (DatabaseError, OperationalError, sqlite3.DatabaseError) as exc:
        engine.dispose()
        if "no such table" in str(exc).lower():
            raise OlderSchema(f"{shown_url(url)} has no asad schema yet") from exc
        raise StoreError(explain_failure(url, exc)) from exc
    if version_row is None or id_row is None or int(version_row.value) != SCHEMA_VERSION:
        engine.dispose()
        if version_row is not None and int(version_row.value) > SCHEMA_VERSION:
            raise StoreError(
                f"the store {shown_url(url)} was written by a newer asad (schema {version_row.value}; this asad "
                f"knows up to {SCHEMA_VERSION}). Nothing was changed. Fix: upgrade asad, or use another store (--db).")
        raise OlderSchema(f"the store {shown_url(url)} has schema {version_row.value if version_row else '-'}, "
                          f"this asad {SCHEMA_VERSION}")
    return id_row.value


def _create_or_read_meta(engine: Engine, factory: sessionmaker[Session], url: str,
                         create: bool) -> tuple[int, str]:
    """The store's schema version and id, creating the schema first if the store is new.

    Idempotent under concurrency: several processes (a daemon and a submit) may open one fresh store
    at the same moment. Each creates what is missing; a table or meta row another process created in
    between (``already exists``, a duplicate key) or one not yet committed is simply read again.
    """
    def attempt() -> tuple[int, str] | None:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
        if "meta" not in tables and tables and not create:
            raise StoreError(f"{shown_url(url)} holds tables but no asad schema version: not an asad store.")
        if "meta" not in tables or "workflows" not in tables:
            Base.metadata.create_all(engine)  # checkfirst: creates only what is missing
        with factory() as s:
            version_row, id_row = s.get(Meta, "schema_version"), s.get(Meta, "store_id")
            if version_row is not None and id_row is not None:
                return int(version_row.value), id_row.value
        with factory.begin() as s:  # one transaction: another process sees both rows or neither
            if version_row is None:
                s.add(Meta(key="schema_version", value=str(SCHEMA_VERSION)))
            if id_row is None:
                s.add(Meta(key="store_id", value=secrets.token_hex(3)))
        return None  # written: read them back (a process that lost the race reads the winner's)

    while (got := _retrying_creation_race(attempt)) is None:
        pass
    return got


def _retrying_creation_race(step: Callable[[], T], timeout_s: float = 30.0) -> T:
    """``step()``; while it fails because another process is creating the same store (a table or
    meta row that now exists, a lock held for that), run it again, for up to ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return step()
        except (IntegrityError, OperationalError, sqlite3.OperationalError) as exc:
            if time.monotonic() > deadline or not _lost_creation_race(exc):
                raise
            time.sleep(random.uniform(0.01, 0.05))


def _lost_creation_race(exc: BaseException) -> bool:
    if isinstance(exc, IntegrityError):
        return True
    low = str(getattr(exc, "orig", exc)).lower()
    return "already exists" in low or "locked" in low or "unique" in low


def shown_url(url: str) -> str:
    """The store's URL as it may be printed or logged: a password in it becomes ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return url.split("@", 1)[-1] if "@" in url else url


def _corrupt_text(low: str) -> bool:
    return "not a database" in low or "malformed" in low or "corrupt" in low


def is_corrupt(exc: BaseException) -> bool:
    """Whether a store failure (a StoreError or the database error under it) says the database itself
    is damaged: that will not mend by waiting, unlike a lock, a full disk or a server away."""
    while exc is not None:
        if _corrupt_text(str(getattr(exc, "orig", exc) or exc).lower()):
            return True
        exc = exc.__cause__
    return False


def explain_failure(url: str, exc: BaseException) -> str:
    url = shown_url(url)
    text = str(getattr(exc, "orig", exc) or exc)
    low = text.lower()
    if "locked" in low:
        return (f"the store {url} is locked by another process (waited 10 s): {text}. "
                "Fix: wait for it, or find it with 'fuser' / 'lsof' on the database file.")
    if _corrupt_text(low):
        return (f"the store {url} is corrupt ({text}). Nothing was changed. Fix: move it aside and restore "
                "a backup (docs/operations.md, 'Back up and restore').")
    if "disk" in low and ("full" in low or "i/o" in low):
        return f"the store {url} cannot be written ({text}): the disk is full or failing. Free space and retry."
    path = sqlite_file(url)
    if path is not None and ("unable to open" in low or "readonly" in low) and _read_only_fs(path.parent):
        return (f"the store {url} is on a read-only file system ({text}). Fix: make it writable, or point asad "
                "at a writable place (ASAD_STATE_DIR, or --db for the store alone).")
    if "readonly" in low or "read-only" in low or "permission" in low:
        if path is not None and path.exists() and os.access(path, os.W_OK) and not os.access(path.parent, os.W_OK):
            # SQLite writes its journal (-wal, -shm) beside the file: the folder must be writable too
            return (f"the store {url} cannot be written ({text}): its folder {path.parent} is not writable, and "
                    "SQLite keeps its journal there. Fix: make the folder writable by you (chmod u+w), or move "
                    "the store to a writable folder (--db).")
        return (f"the store {url} cannot be written ({text}). Check the file's and its folder's owner and "
                "mode (the file 0600, the folder writable by you).")
    if not url.startswith("sqlite"):
        return _explain_server(url, text, low)
    return f"the store {url} failed: {text}"


def _explain_server(url: str, text: str, low: str) -> str:
    """A database server's refusal (MySQL/MariaDB codes, PostgreSQL words), with the fix."""
    where = "the URL (config 'db_url', env ASAD_DB_URL or --db)"
    if "(1044" in low:  # MariaDB says this, not "unknown database", to a user without rights there
        return (f"the store {url} is not open to this user ({text}): the database does not exist or the user "
                f"has no rights on it. Fix: create it and GRANT ALL ON <database>.* TO <user>, or correct {where}.")
    if "access denied" in low or "password authentication failed" in low or "(1045" in low:
        return f"the store {url} refused the login ({text}). Fix: check the user and password in {where}."
    if "unknown database" in low or "(1049" in low or ("database" in low and "does not exist" in low):
        return (f"the store {url} names a database the server does not have ({text}). Fix: create it "
                "(CREATE DATABASE <name>), or correct the database in " + where + ".")
    if any(code in low for code in ("(2003", "(2002", "(2005", "(2006", "(2013", "connection refused",
                                    "could not connect", "lost connection", "server has gone away")):
        return (f"the store {url} does not answer ({text}). Fix: start the database server, or check the "
                f"host and port in {where}. asad retries by itself once it answers.")
    return f"the store {url} failed: {text}. Fix: check {where} and the database server's log."


def _read_only_fs(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def read_meta(factory: sessionmaker[Session]) -> dict[str, str]:
    with factory() as s:
        return {m.key: m.value for m in s.scalars(select(Meta))}
