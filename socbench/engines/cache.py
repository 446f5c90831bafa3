"""The one engine cache: a content-addressed SQLite file and the ``CachedEngine`` wrapper.

Key = sha256 of (backend identity, method, request content key): one file holds many models' answers.
Only successes are stored, each as the backend reports it, by a writer thread (short transactions),
so a killed run keeps everything but the last moment's results.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from socbench.engines.base import Engine, ResultSink
from socbench.types import EngineResult, LoglikelihoodRequest, LoglikelihoodResult, PromptRequest

log = logging.getLogger("socbench")

MAGIC = "socbench-engine-cache"
SCHEMA_VERSION = "1"
CACHE_FILE = "engine-cache.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, method TEXT NOT NULL,
                                    value TEXT NOT NULL, created REAL NOT NULL);
"""
_STOP = object()


def cache_key(identity: dict[str, str], method: str, request_key: str) -> str:
    payload = json.dumps([identity, method, request_key], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


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


class EngineCache:
    """Content-addressed answers in one SQLite file (WAL); usable from several threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._read = _open(self.path)
        self._read_lock = threading.Lock()
        self._queue: queue.Queue[Any] = queue.Queue()
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name="socbench-cache-writer", daemon=True)
        self._writer.start()

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

    def put(self, key: str, method: str, value: str) -> None:
        """Queue one value; the writer commits it within milliseconds."""
        if self._closed:
            raise RuntimeError(f"engine cache {self.path} is closed")
        self._queue.put((key, method, value, time.time()))

    def flush(self) -> None:
        self._queue.join()  # every queued value committed

    def __len__(self) -> int:
        with self._read_lock:
            return self._read.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        """Commit what is queued and close; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._writer.join()
        with self._read_lock:
            self._read.close()

    def _write_loop(self) -> None:
        conn = _connect(self.path)
        try:
            while True:
                batch = [self._queue.get()]
                while len(batch) < 1000:  # whatever queued up meanwhile goes in the same transaction
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                rows = [item for item in batch if item is not _STOP]
                try:
                    if rows:
                        with conn:
                            conn.execute("BEGIN")
                            conn.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)", rows)
                except sqlite3.Error as exc:
                    log.warning("engine cache %s: could not store %d results (%s)", self.path, len(rows), exc)
                finally:
                    for _ in batch:
                        self._queue.task_done()
                if len(rows) < len(batch):
                    return
        finally:
            conn.close()


def _encode(result: EngineResult | LoglikelihoodResult) -> str:
    """The result's fields but its key and ``cached`` flag (a shallow copy: fields are plain values;
    ``dataclasses.asdict`` deep-copies and was the cache's main cost per request)."""
    data = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
            if f.name not in ("key", "cached")}
    return json.dumps(data)


@dataclasses.dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    stored: int = 0
    errors: int = 0


class CachedEngine:
    """Any ``Engine`` behind the cache: only misses reach the backend, each stored as it finishes."""

    def __init__(self, backend: Engine, cache: EngineCache) -> None:
        self.backend = backend
        self.cache = cache
        self.stats = CacheStats()
        self._identity = dict(backend.identity)
        self._lock = threading.Lock()

    @property
    def identity(self) -> dict[str, str]:
        return dict(self._identity)

    def generate(self, requests: Sequence[PromptRequest],
                 on_result: ResultSink | None = None) -> list[EngineResult]:
        return self._run("generate", requests, on_result)

    def option_logprobs(self, requests: Sequence[PromptRequest],
                        on_result: ResultSink | None = None) -> list[EngineResult]:
        return self._run("option_logprobs", requests, on_result)

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest],
                      on_result: ResultSink | None = None) -> list[LoglikelihoodResult]:
        return self._run("loglikelihood", requests, on_result)

    def unanswered(self, method: str, requests: Sequence[Any]) -> list[Any]:
        """The requests the cache cannot answer (no backend call)."""
        keys = [cache_key(self._identity, method, request.key) for request in requests]
        found = self.cache.get_many(keys)
        return [request for request, key in zip(requests, keys) if key not in found]

    def close(self) -> None:
        try:
            self.backend.close()
        finally:
            self.cache.close()

    def _run(self, method: str, requests: Sequence[Any], on_result: ResultSink | None) -> list[Any]:
        """Hits from the cache, misses from the backend (in input order), each stored as it finishes."""
        sink = on_result or (lambda index, result: None)
        cls = LoglikelihoodResult if method == "loglikelihood" else EngineResult
        keys = [cache_key(self._identity, method, request.key) for request in requests]
        found = self.cache.get_many(keys)
        results: list[Any] = [None] * len(requests)
        misses: list[int] = []
        for index, (request, key) in enumerate(zip(requests, keys)):
            if key in found:
                results[index] = cls(key=request.key, cached=True, **json.loads(found[key]))
                self._count("hits")
                sink(index, results[index])
            else:
                misses.append(index)
        if not misses:
            return results
        self._count("misses", len(misses))
        reported: set[int] = set()

        def store(position: int, result: Any) -> None:
            index = misses[position]
            reported.add(index)
            results[index] = result
            self._store(method, keys[index], result)
            sink(index, result)

        try:
            answers = getattr(self.backend, method)([requests[i] for i in misses], store)
            for position, result in enumerate(answers):
                results[misses[position]] = result
                if misses[position] not in reported:  # a backend that did not report through on_result
                    store(position, result)
        finally:
            self.cache.flush()
        return results

    def _store(self, method: str, key: str, result: Any) -> None:
        if getattr(result, "error", None) is not None:
            self._count("errors")
            return
        self.cache.put(key, method, _encode(result))
        self._count("stored")

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + n)
