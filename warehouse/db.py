"""The DuckDB warehouse: connections and numbered migrations recorded in `schema_migrations`."""

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import duckdb

from warehouse import config

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Written in a storage format the DuckDB 1.5 shell (PyPI duckdb-cli) can still open, for ad-hoc readers.
STORAGE_VERSION = "v1.5.0"
# Rows per row group that writes create (DuckDB's default: 122,880). A checkpoint rewrites the row group a load
# appended to whole: with the default, a day of vast.ai offers (~38k rows) left one that grew night after night,
# and its rewrite took up to +400 MB and 1 s at the load's commit. At 16,384 it takes a few MB and 0.1 s; the
# price is space: a year of offers takes 590 MB instead of 506 (1.50x its zstd Parquet instead of 1.29x), and
# 32,768 still added ~50 MB at the commit (bench/ingest.py, bench/history.py; README: Performance). DuckDB
# takes it only as an ATTACH option, for that session: every writable connection attaches the file with it.
# A writer with another size rewrites row groups at its checkpoint (1.4 GB once, reopening a 16,384-row warehouse
# at 32,768): write only through gpuledger; read with anything.
ROW_GROUP_SIZE = 16_384
_MIGRATION_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")


class WarehouseError(RuntimeError):
    """A warehouse that cannot be opened or used as asked; the message says what to do."""


@cache
def migrations() -> tuple[tuple[int, str, str], ...]:
    """(version, name, sql) for every file in warehouse/migrations, in version order."""
    found = []
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        m = _MIGRATION_FILE.match(path.name)
        if not m:
            raise WarehouseError(f"{path.name}: migration files are named NNNN_name.sql")
        found.append((int(m[1]), m[2], path.read_text()))
    return tuple(found)


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All of the block's statements or none: commit when it ends, roll back on any exception (an interrupt
    included) and raise it again. Every write of more than one statement goes through here."""
    con.execute("begin transaction")
    try:
        yield con
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")


def schema_version() -> int:
    """The newest schema this code knows."""
    return migrations()[-1][0]


def applied_versions(con: duckdb.DuckDBPyConnection) -> set[int]:
    has_table = con.execute(
        "select count(*) from information_schema.tables where table_name = 'schema_migrations'"
    ).fetchall()[0][0]
    if not has_table:
        return set()
    return {v for (v,) in con.execute("select version from schema_migrations").fetchall()}


def _refuse_newer(applied: set[int], path: Path | str) -> None:
    if applied and max(applied) > schema_version():
        raise WarehouseError(
            f"{path} has schema version {max(applied)}, newer than this gpuledger knows "
            f"({schema_version()}): upgrade gpuledger instead of opening it with an older one"
        )


def migrate(con: duckdb.DuckDBPyConnection, path: Path | str = "warehouse") -> list[int]:
    """Apply every known migration the file lacks, each in its own transaction; return the versions applied."""
    con.execute(
        "create table if not exists schema_migrations ("
        "version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )
    applied = applied_versions(con)
    _refuse_newer(applied, path)
    done = []
    for version, name, sql in migrations():
        if version in applied:
            continue
        with transaction(con):
            con.execute(sql)
            con.execute("insert into schema_migrations values (?, ?, ?)", [version, name, config.utc_now()])
        done.append(version)
    return done


def _open(path: Path, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    """The file's connection, waiting up to wait_s while another process holds a conflicting lock on it."""
    deadline, pause = time.monotonic() + wait_s, 0.1
    while True:
        try:
            return duckdb.connect(str(path), read_only=True) if read_only else _attach_writable(path)
        except duckdb.IOException as exc:
            if "Conflicting lock" not in str(exc) and "Could not set lock" not in str(exc):
                raise
            if time.monotonic() >= deadline:
                raise WarehouseError(
                    f"the warehouse is in use by another process and stayed locked for {wait_s:g} s ({exc}). "
                    "A gpuledger run holds it only while it writes; try again in a moment"
                ) from None
            time.sleep(pause)
            pause = min(pause * 2, 1.0)


def _attach_writable(path: Path) -> duckdb.DuckDBPyConnection:
    """The file attached under the name duckdb.connect(path) would give it, and made the default database; what
    spills to disk goes beside it, as with duckdb.connect(path) (an in-memory session's default is ./.tmp)."""
    con = duckdb.connect(config={"temp_directory": f"{path}.tmp"})
    try:
        alias = '"' + path.stem.replace('"', '""') + '"'
        con.execute(f"attach ? as {alias} (storage_version '{STORAGE_VERSION}', row_group_size {ROW_GROUP_SIZE})",
                    [str(path)])
        con.execute(f"use {alias}")
    except BaseException:
        con.close()
        raise
    return con


def connect(path: Path | None = None, *, read_only: bool = False, wait_s: float | None = None) -> duckdb.DuckDBPyConnection:
    """Open the warehouse; a writable connection creates and migrates it, a read-only one only checks it.

    While another process holds the file, wait up to wait_s (default $GPULEDGER_LOCK_WAIT_S, else 30 s).
    """
    path = path or config.db_path()
    wait_s = config.lock_wait_s() if wait_s is None else wait_s
    if read_only:
        if not path.exists():
            raise WarehouseError(f"no warehouse at {path}: run `gpuledger init` first")
        con = _open(path, True, wait_s)
        applied = applied_versions(con)
        _refuse_newer(applied, path)
        if {v for v, _, _ in migrations()} - applied:
            con.close()
            raise WarehouseError(f"{path} has an older schema: run `gpuledger init` to upgrade it")
        return con
    path.parent.mkdir(parents=True, exist_ok=True)
    con = _open(path, False, wait_s)
    try:
        migrate(con, path)
    except Exception:
        con.close()
        raise
    return con
