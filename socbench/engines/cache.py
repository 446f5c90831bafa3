"""The one engine cache: content-addressed answers (key: sha256 of backend identity, method and request
key) in a SQLite file or in append-only segment files, and the ``CachedEngine`` wrapper. Only successes
are stored, as the backend reports them, by a writer thread: a killed run keeps all but the last moment's.

Segments serve several processes and hosts (SQLite's locks are not safe on NFS): each process appends
``<key>\\t<method>\\t<value JSON>\\n`` lines to its own ``<host>-<pid>-<random>.seg``, fsynced at most
every ``SYNC_S`` seconds and on close; readers read them all but a line without its newline."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import queue
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from functools import partialmethod
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any, Literal

from socbench.engines.base import Engine, ResultSink
from socbench.types import EngineResult, LoglikelihoodResult

log = logging.getLogger("socbench")

MAGIC = "socbench-engine-cache"
SCHEMA_VERSION = "1"
CACHE_FILE = "engine-cache.sqlite"
CacheStore = Literal["sqlite", "segments"]
SEGMENTS_DIR = "engine-cache.segments"
SUFFIX = ".seg"
HEADER = f"#{MAGIC}-segment {SCHEMA_VERSION}"
SYNC_S = 1.0  # the longest an answer stays unsynced (what another host may not see yet)
_KEY_LEN = 64  # sha256 hex
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, method TEXT NOT NULL,
                                    value TEXT NOT NULL, created REAL NOT NULL);
"""
_STOP = object()
Row = tuple[str, str, str, float]  # key, method, value JSON, when


def cache_key(identity: dict[str, str], method: str, request_key: str) -> str:
    payload = json.dumps([identity, method, request_key], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def cache_keys(identity: dict[str, str], method: str, requests: Sequence[Any]) -> list[str]:
    """``cache_key`` of each request, its shared part encoded once (a run asks three times a request)."""
    head = json.dumps([identity, method], sort_keys=True)[:-1] + ", "
    return [hashlib.sha256(f"{head}{json.dumps(request.key)}]".encode()).hexdigest() for request in requests]


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, timeout=30.0, isolation_level=None)
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def _problem(conn: sqlite3.Connection) -> tuple[str, str] | None:
    """(corrupt or incompatible, why) unless this is an empty database or our cache of this schema."""
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            return None
        if "meta" not in tables:
            return "incompatible", f"a foreign SQLite file (tables: {', '.join(sorted(tables))})"
        meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        return "corrupt", f"not a readable SQLite file ({exc})"
    if meta.get("magic") != MAGIC:
        return "incompatible", f"not a socbench cache (magic {meta.get('magic')!r})"
    if meta.get("schema") != SCHEMA_VERSION or "results" not in tables:
        return "incompatible", f"schema {meta.get('schema')!r}, socbench needs {SCHEMA_VERSION}"
    return None


def _set_aside(path: Path, kind: str) -> Path:
    """Rename the file and its WAL side files to ``<name>.<kind>-<timestamp>``."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = path.with_name(f"{path.name}.{kind}-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.{kind}-{stamp}-{n}")
    path.rename(aside)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(aside.with_name(aside.name + suffix))
    return aside


def _open(path: Path) -> sqlite3.Connection:
    """Open or create the cache; an unusable file is moved aside with one warning line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = _connect(path)
    problem = _problem(conn)
    if problem is not None:
        conn.close()
        aside = _set_aside(path, problem[0])
        log.warning("engine cache %s is unusable (%s); moved it to %s and started a fresh cache",
                    path, problem[1], aside.name)
        conn = _connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # in WAL mode a commit survives a process kill
    conn.executescript(_SCHEMA)
    conn.execute("INSERT OR IGNORE INTO meta VALUES ('magic', ?), ('schema', ?)", (MAGIC, SCHEMA_VERSION))
    return conn


class _Store:
    """What both stores share: ``put`` queues an answer, one writer thread stores whatever queued up
    meanwhile in one go (``_write``, within milliseconds: a killed run keeps all but the last moment's),
    ``flush`` waits for it and makes it durable (``_sync``), ``close`` stops it. Usable from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()  # in C: a put a reply costs no lock dance
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name="socbench-cache-writer", daemon=True)
        self._writer.start()

    def put(self, key: str, method: str, value: str) -> None:
        if self._closed:
            raise RuntimeError(f"engine cache {self.path} is closed")
        self._queue.put((key, method, value, time.time()))

    def flush(self) -> None:
        if not self._closed:  # the writer reaches this mark once every value queued before it is stored
            self._queue.put(done := threading.Event())
            done.wait()
        self._sync()

    def close(self) -> None:
        """Store what is queued and close; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._writer.join()
        self._sync()
        self._close()

    def _write_loop(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < 1000:  # whatever queued up meanwhile goes in the same write
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            rows = [item for item in batch if isinstance(item, tuple)]
            try:
                if rows:
                    self._write(rows)
            except (sqlite3.Error, OSError) as exc:
                log.warning("engine cache %s: could not store %d results (%s)", self.path, len(rows), exc)
            finally:
                for mark in batch:
                    if isinstance(mark, threading.Event):
                        mark.set()
            if _STOP in batch:
                return

    _write: Callable[[list[Row]], None]  # the format's: store a batch of rows
    _close: Callable[[], None]

    def _sync(self) -> None:
        """Make what was written durable (and visible to other hosts)."""


class EngineCache(_Store):
    """Content-addressed answers in one SQLite file (WAL): one host."""

    def __init__(self, path: Path) -> None:
        self._read = _open(Path(path))
        self._read_lock = threading.Lock()
        self._conn = _connect(Path(path))  # the writer thread's
        # per connection, so the writer's too: its default, FULL, synced the WAL at each commit (~50 us a row)
        self._conn.execute("PRAGMA synchronous=NORMAL")
        super().__init__(path)

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        with self._read_lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start:start + 500]
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT key, value FROM results WHERE key IN ({marks})"
                found.update(self._read.execute(sql, chunk))
        return found

    def __len__(self) -> int:
        with self._read_lock:
            return self._read.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def _write(self, rows: list[Row]) -> None:
        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)", rows)

    def _sync(self) -> None:
        """A checkpoint: what the WAL holds is then durable past a power loss too."""
        with self._read_lock:
            self._read.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _close(self) -> None:
        self._conn.close()
        with self._read_lock:
            self._read.close()


def partition(identity: dict[str, str]) -> str:
    """The folder name of one backend identity (a model's answers live together)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def _lines(path: Path) -> Iterator[str]:
    """Complete lines of a segment after a valid header; nothing from a foreign file."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="\n") as handle:
            header = handle.readline()
            if header.rstrip("\n") != HEADER:
                if header.endswith("\n"):  # a complete header that is not ours
                    log.warning("engine cache: %s is not a socbench segment of schema %s; skipped",
                                path, SCHEMA_VERSION)
                return
            for line in handle:
                if line.endswith("\n") and not line.startswith("#"):  # a merged segment's inner headers
                    yield line
    except FileNotFoundError:  # removed between listing and opening
        return


class SegmentCache(_Store):
    """Content-addressed answers in append-only segments, one per writing process: several hosts."""

    def __init__(self, folder: Path) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = None
        self._file_lock = threading.Lock()  # the writer writes, ``flush``'s caller syncs
        self._synced = 0.0
        self._bad_lines = 0
        super().__init__(folder)

    def segments(self) -> list[Path]:
        return sorted(self.path.glob(f"*{SUFFIX}"))

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """Stored JSON values of those keys that are present, read from every segment."""
        wanted = set(keys)
        return {key: value for key, value in self._records() if key in wanted} if wanted else {}

    def __len__(self) -> int:
        return len({key for key, _ in self._records()})

    def _write(self, rows: list[Row]) -> None:
        """Append to this process's segment (created on the first answer), in the OS at once (a process
        kill keeps it), synced at most every ``SYNC_S``."""
        with self._file_lock:
            if self._file is None:
                name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}{SUFFIX}"
                self._file = open(self.path / name, "x", encoding="utf-8", newline="\n")
                self._file.write(HEADER + "\n")
            self._file.write("".join(f"{key}\t{method}\t{value}\n" for key, method, value, _ in rows))
            self._file.flush()
        if time.monotonic() - self._synced >= SYNC_S:
            self._sync()

    def _sync(self) -> None:
        with self._file_lock:
            if self._file is not None:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._synced = time.monotonic()

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _records(self) -> Iterator[tuple[str, str]]:
        """(key, value) of every complete, well-formed line; later copies of a key win."""
        bad = 0
        for segment in self.segments():
            for line in _lines(segment):
                parts = line.rstrip("\n").split("\t", 2)
                if len(parts) != 3 or len(parts[0]) != _KEY_LEN:
                    bad += 1
                    continue
                yield parts[0], parts[2]
        if bad > self._bad_lines:
            log.warning("engine cache %s: %d damaged line(s) skipped", self.path, bad)
            self._bad_lines = bad


def open_store(store: CacheStore, cache_dir: Path, identity: dict[str, str]) -> EngineCache | SegmentCache:
    """The answer store of ``cache_dir`` for one backend: the SQLite file, or this identity's segments."""
    if store == "segments":
        return SegmentCache(Path(cache_dir) / SEGMENTS_DIR / partition(identity))
    return EngineCache(Path(cache_dir) / CACHE_FILE)


def _encode(result: EngineResult | LoglikelihoodResult) -> str:
    """The result's fields but its key and ``cached`` flag (a shallow copy: fields are plain values;
    ``dataclasses.asdict`` deep-copies and was the cache's main cost per request)."""
    data = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
            if f.name not in ("key", "cached")}
    return json.dumps(data)


class CachedEngine:
    """Any ``Engine`` behind the cache: only misses reach the backend, each stored as it finishes."""

    def __init__(self, backend: Engine, cache: EngineCache | SegmentCache) -> None:
        self.backend = backend
        self.cache = cache
        self.stats = SimpleNamespace(hits=0, misses=0)  # answers from the cache, requests sent to the backend
        self.identity = dict(backend.identity)
        self._lock = threading.Lock()

    def unanswered(self, method: str, requests: Sequence[Any]) -> list[Any]:
        """The requests the cache cannot answer (no backend call): what a dry run would send."""
        keys = cache_keys(self.identity, method, requests)
        found = self.cache.get_many(keys)
        return [request for request, key in zip(requests, keys) if key not in found]

    def close(self) -> None:
        try:
            self.backend.close()
        finally:
            self.cache.close()

    def _run(self, method: str, requests: Sequence[Any], on_result: ResultSink | None = None) -> list[Any]:
        """Hits from the cache, misses from the backend (in input order), each stored as it finishes."""
        sink = on_result or (lambda index, result: None)
        cls = LoglikelihoodResult if method == "loglikelihood" else EngineResult
        keys = cache_keys(self.identity, method, requests)
        found = self.cache.get_many(keys)
        results: list[Any] = [None] * len(requests)
        misses: list[int] = []
        for index, (request, key) in enumerate(zip(requests, keys)):
            if key in found:
                results[index] = cls(key=request.key, cached=True, **json.loads(found[key]))
                sink(index, results[index])
            else:
                misses.append(index)
        with self._lock:
            self.stats.hits += len(requests) - len(misses)
            self.stats.misses += len(misses)
        if not misses:
            return results

        def store(position: int, result: Any) -> None:  # only successes, as the backend reports them
            index = misses[position]
            results[index] = result
            if getattr(result, "error", None) is None:
                self.cache.put(keys[index], method, _encode(result))
            sink(index, result)

        try:
            answers = getattr(self.backend, method)([requests[i] for i in misses], store)
            for position, result in enumerate(answers):
                if results[misses[position]] is None:  # a backend that did not report through on_result
                    store(position, result)
                results[misses[position]] = result
        finally:
            self.cache.flush()
        return results

    generate = partialmethod(_run, "generate")  # the Engine methods, each through the cache
    option_logprobs = partialmethod(_run, "option_logprobs")
    loglikelihood = partialmethod(_run, "loglikelihood")
