"""The SQLite revision log (kine's table layout), synchronous: schema, the "is this file ours" check, one write batch
per transaction, and the read queries. Only `sqlite.py` calls it, always from its worker threads.

One append-only table; every change is a row whose `id` is the new global revision:

    kine(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, created INTEGER, deleted INTEGER, create_revision INTEGER,
         prev_revision INTEGER, lease INTEGER, value BLOB, old_value BLOB)

`created=1` on a create, `deleted=1` for a delete tombstone (its `value` and `old_value` are the last value),
`prev_revision` = id of the key's previous row (0 for the first), `old_value` = the previous value (an event's prev).
The unique index on (name, prev_revision) is the optimistic-concurrency guard even against a second writer process.
The revision counter is `sqlite_sequence` (never goes back, even when compaction deletes the newest tombstone); it
starts at 1 so the first write is revision 2, as in etcd. `pykubeadm_meta` holds the format marker (a foreign SQLite
file is refused) and the compacted revision.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from pykubeadm.storage.interface import (
    CompactedError,
    ConflictError,
    Event,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    KeyValue,
    StoreError,
    StoreUnavailableError,
)
from pykubeadm.storage.keys import prefix_end

__all__ = ["FORMAT", "Op", "Row", "SqliteLog"]

FORMAT = "pykubeadm-kine"
FORMAT_VERSION = "1"
META = "pykubeadm_meta"

_DDL = [
    """CREATE TABLE kine (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, created INTEGER NOT NULL,
       deleted INTEGER NOT NULL, create_revision INTEGER NOT NULL, prev_revision INTEGER NOT NULL,
       lease INTEGER NOT NULL DEFAULT 0, value BLOB, old_value BLOB)""",
    "CREATE INDEX kine_name_index ON kine (name)",
    "CREATE INDEX kine_name_id_index ON kine (name, id)",
    "CREATE INDEX kine_id_deleted_index ON kine (id, deleted)",
    "CREATE INDEX kine_prev_revision_index ON kine (prev_revision)",
    "CREATE UNIQUE INDEX kine_name_prev_revision_uindex ON kine (name, prev_revision)",
    f"CREATE TABLE {META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    f"INSERT INTO {META} (key, value) VALUES ('format', '{FORMAT}'), ('version', '{FORMAT_VERSION}'), "  # noqa: S608
    "('compact_revision', '0')",
    "INSERT INTO sqlite_sequence (name, seq) VALUES ('kine', 1)",
]
_COLS = "id, name, created, deleted, create_revision, prev_revision, value, old_value"
_INSERT = f"INSERT INTO kine ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"  # noqa: S608
_SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True, slots=True)
class Row:
    id: int
    name: str
    created: int
    deleted: int
    create_revision: int
    prev_revision: int
    value: bytes | None
    old_value: bytes | None

    def astuple(self) -> tuple[object, ...]:
        return (
            self.id,
            self.name,
            self.created,
            self.deleted,
            self.create_revision,
            self.prev_revision,
            self.value,
            self.old_value,
        )

    def event(self) -> Event:
        old = self.old_value or b""
        if self.deleted:
            return Event(
                "DELETED",
                KeyValue(self.name, old, self.create_revision, self.id),
                KeyValue(self.name, old, self.create_revision, self.prev_revision),
            )
        kv = KeyValue(self.name, self.value or b"", self.create_revision, self.id)
        if self.created:
            return Event("ADDED", kv)
        return Event("MODIFIED", kv, KeyValue(self.name, old, self.create_revision, self.prev_revision))


#: ("create", key, value, 0) | ("update", key, value, expected) | ("delete", key, b"", expected)
Op = tuple[str, str, bytes, int]


def _range(prefix: str, start_key: str | None = None) -> tuple[str, list[object]]:
    lo = max(prefix, start_key) if start_key else prefix
    end = prefix_end(prefix)
    if end is None:
        return "name >= ?", [lo]
    return "name >= ? AND name < ?", [lo, end]


class SqliteLog:
    """Opens connections to one database file; each worker thread owns its own connection."""

    def __init__(self, path: Path, synchronous: str = "FULL"):
        self.path = path
        self.synchronous = synchronous

    # -- opening -----------------------------------------------------------------------------------------------

    def connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        except sqlite3.Error as e:
            raise StoreUnavailableError(f"cannot open SQLite datastore {self.path}: {e}") from e
        return conn

    def initialize(self) -> None:
        """Create the schema in a new (or empty) file, or check that an existing file is a pykubeadm datastore."""
        not_ours = f"{self.path} is not a pykubeadm datastore"
        if self.path.is_dir():
            raise StoreUnavailableError(f"{not_ours}: it is a directory")
        if not self.path.parent.is_dir():
            raise StoreUnavailableError(
                f"cannot open SQLite datastore {self.path}: directory {self.path.parent} does not exist"
            )
        try:
            with open(self.path, "rb") as f:
                head = f.read(len(_SQLITE_MAGIC))
        except FileNotFoundError:
            head = b""
            # The store holds Secrets: owner-only, like etcd's data dir (SQLite gives -wal/-shm the same mode).
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError as e:
            raise StoreUnavailableError(f"cannot open SQLite datastore {self.path}: {e}") from e
        if head and head != _SQLITE_MAGIC:
            raise StoreUnavailableError(f"{not_ours} (not an SQLite database file)")
        conn = self.connect()
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreUnavailableError(f"cannot switch {self.path} to WAL mode (journal_mode={mode})")
            conn.execute("BEGIN IMMEDIATE")
            try:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if META in tables:
                    meta = dict(conn.execute(f"SELECT key, value FROM {META}").fetchall())  # noqa: S608
                    if meta.get("format") != FORMAT:
                        raise StoreUnavailableError(f"{not_ours} (format marker {meta.get('format')!r})")
                    if meta.get("version") != FORMAT_VERSION:
                        raise StoreUnavailableError(
                            f"{self.path}: unsupported pykubeadm datastore version {meta.get('version')!r} "
                            f"(this build reads version {FORMAT_VERSION})"
                        )
                elif tables - {"sqlite_sequence"}:
                    raise StoreUnavailableError(
                        f"{not_ours}: it holds tables {', '.join(sorted(tables))} and no {META} marker"
                    )
                else:
                    for stmt in _DDL:
                        conn.execute(stmt)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as e:
            raise StoreUnavailableError(f"{not_ours} or it is damaged: {e}") from e
        finally:
            conn.close()

    # -- shared helpers ----------------------------------------------------------------------------------------

    @staticmethod
    def _seq(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'kine'").fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _compacted(conn: sqlite3.Connection) -> int:
        return int(conn.execute(f"SELECT value FROM {META} WHERE key = 'compact_revision'").fetchone()[0])  # noqa: S608

    @staticmethod
    def _latest(conn: sqlite3.Connection, key: str) -> tuple[int, int, int, bytes] | None:
        return conn.execute(
            "SELECT id, create_revision, deleted, value FROM kine WHERE name = ? ORDER BY id DESC LIMIT 1", (key,)
        ).fetchone()

    # -- writes (the writer thread only) -----------------------------------------------------------------------

    def write_batch(self, conn: sqlite3.Connection, ops: list[Op]) -> tuple[list[KeyValue | StoreError], list[Row]]:
        """Apply `ops` in one transaction (one fsync); per-op failures are returned, not raised. Also returns the
        rows written, in revision order (the watch fan-out uses them without reading them back)."""
        results: list[KeyValue | StoreError] = []
        rows: list[Row] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            rev = self._seq(conn)
            for kind, key, value, expected in ops:
                try:
                    row = self._apply(conn, rev + 1, kind, key, value, expected)
                except StoreError as e:
                    results.append(e)
                    continue
                rev += 1
                rows.append(row)
                kv = row.event().kv
                results.append(kv)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return results, rows

    def _apply(self, conn: sqlite3.Connection, rev: int, kind: str, key: str, value: bytes, expected: int) -> Row:
        latest = self._latest(conn, key)
        live = latest is not None and not latest[2]
        if kind == "create":
            if live:
                raise KeyExistsError(key)
            row = Row(rev, key, 1, 0, rev, latest[0] if latest else 0, value, None)
        else:
            if not live:
                raise KeyNotFoundError(key)
            assert latest is not None
            prev_id, create_rev, _, old = latest
            if expected and expected != prev_id:
                raise ConflictError(key, expected, KeyValue(key, old, create_rev, prev_id))
            if kind == "update":
                row = Row(rev, key, 0, 0, create_rev, prev_id, value, old)
            else:
                row = Row(rev, key, 0, 1, create_rev, prev_id, old, old)
        conn.execute(_INSERT, row.astuple())
        return row

    def compact(self, conn: sqlite3.Connection, target: int) -> int:
        """Delete rows superseded at or before `target` and tombstones older than it; returns rows deleted.
        The newest row of every key at `target` stays, so list/watch at >= target still work."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            current, done = self._seq(conn), self._compacted(conn)
            if target > current:
                raise FutureRevisionError(target, current)
            if target <= done:
                conn.execute("ROLLBACK")
                return 0
            n = conn.execute(
                "DELETE FROM kine WHERE id IN (SELECT prev_revision FROM kine WHERE id > ? AND id <= ? "
                "AND prev_revision != 0)",
                (done, target),
            ).rowcount
            n += conn.execute("DELETE FROM kine WHERE deleted = 1 AND id < ?", (target,)).rowcount
            conn.execute(f"UPDATE {META} SET value = ? WHERE key = 'compact_revision'", (str(target),))  # noqa: S608
            conn.execute("COMMIT")
            return n
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # -- reads (reader threads) --------------------------------------------------------------------------------

    def get(self, conn: sqlite3.Connection, key: str) -> KeyValue | None:
        row = self._latest(conn, key)
        if row is None or row[2]:
            return None
        return KeyValue(key, row[3], row[1], row[0])

    def current(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """(current revision, compacted revision) from one snapshot."""
        conn.execute("BEGIN")
        try:
            return self._seq(conn), self._compacted(conn)
        finally:
            conn.execute("COMMIT")

    def list(
        self, conn: sqlite3.Connection, prefix: str, revision: int, limit: int, start_key: str | None
    ) -> tuple[list[KeyValue], int, bool, int | None]:
        conn.execute("BEGIN")
        try:
            current, compacted = self._seq(conn), self._compacted(conn)
            if revision:
                if revision < compacted:
                    raise CompactedError(revision, compacted)
                if revision > current:
                    raise FutureRevisionError(revision, current)
            at = revision or current
            where, args = _range(prefix, start_key)
            inner = f"SELECT MAX(id) AS mid FROM kine WHERE {where} AND id <= ? GROUP BY name"  # noqa: S608
            sql = (
                f"SELECT k.name, k.value, k.create_revision, k.id FROM kine k JOIN ({inner}) m "  # noqa: S608
                "ON k.id = m.mid WHERE k.deleted = 0 ORDER BY k.name"
            )
            params: list[object] = [*args, at]
            if limit:
                sql += " LIMIT ?"
                params.append(limit + 1)
            rows = conn.execute(sql, params).fetchall()
            more = bool(limit) and len(rows) > limit
            remaining = None
            if more:
                rows = rows[:limit]
                count_sql = f"SELECT COUNT(*) FROM kine k JOIN ({inner}) m ON k.id = m.mid WHERE k.deleted = 0"  # noqa: S608
                remaining = int(conn.execute(count_sql, [*args, at]).fetchone()[0]) - limit
            return [KeyValue(r[0], r[1], r[2], r[3]) for r in rows], at, more, remaining
        finally:
            conn.execute("COMMIT")

    def tail(
        self, conn: sqlite3.Connection, after: int, upto: int | None, prefix: str | None, limit: int
    ) -> tuple[builtins.list[Row], int, int]:
        """Rows with after < id [<= upto] [under prefix] in id order, plus (current, compacted) of the snapshot."""
        conn.execute("BEGIN")
        try:
            current, compacted = self._seq(conn), self._compacted(conn)
            sql = f"SELECT {_COLS} FROM kine WHERE id > ?"  # noqa: S608
            params: list[object] = [after]
            if upto is not None:
                sql += " AND id <= ?"
                params.append(upto)
            if prefix:
                where, args = _range(prefix)
                sql += f" AND {where}"
                params += args
            sql += " ORDER BY id LIMIT ?"
            params.append(limit)
            rows = [Row(*r) for r in conn.execute(sql, params).fetchall()]
            return rows, current, compacted
        finally:
            conn.execute("COMMIT")
