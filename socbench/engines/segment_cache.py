"""The engine cache for several processes and hosts: append-only segment files in a shared folder.

SQLite's locks are not safe on NFS. Answers are content-addressed and never change, so each
process appends ``<key>\\t<method>\\t<value JSON>\\n`` lines to its own segment
(``<host>-<pid>-<random>.seg``) and readers read them all; a line without its newline is not
read. Lines are written as stored; fsync at most every ``SYNC_S`` seconds and on close.
``SegmentCache`` has ``EngineCache``'s interface; ``open_store`` picks by ``cache_store``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Literal

from socbench.engines.cache import CACHE_FILE, MAGIC, SCHEMA_VERSION, EngineCache

log = logging.getLogger("socbench")

CacheStore = Literal["sqlite", "segments"]
SEGMENTS_DIR = "engine-cache.segments"
SUFFIX = ".seg"
HEADER = f"#{MAGIC}-segment {SCHEMA_VERSION}"
SYNC_S = 1.0  # the longest an answer stays unsynced (what another host may not see yet)
_KEY_LEN = 64  # sha256 hex


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


class SegmentCache:
    """Content-addressed answers in append-only segments, one per writing process; thread-safe."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder)
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._synced = 0.0
        self._closed = False
        self._bad_lines = 0

    def segments(self) -> list[Path]:
        return sorted(self.path.glob(f"*{SUFFIX}"))

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """Stored JSON values of those keys that are present, read from every segment."""
        wanted = set(keys)
        return {key: value for key, value in self._records() if key in wanted} if wanted else {}

    def put(self, key: str, method: str, value: str) -> None:
        """Append one answer to this process's segment (created on the first answer)."""
        line = f"{key}\t{method}\t{value}\n"
        with self._lock:
            if self._closed:
                raise RuntimeError(f"engine cache {self.path} is closed")
            handle = self._file or self._open_segment()
            handle.write(line)
            handle.flush()  # in the OS: a process kill keeps it
            if time.monotonic() - self._synced >= SYNC_S:
                self._sync(handle)

    def flush(self) -> None:
        """Make every stored answer durable and visible to other hosts."""
        with self._lock:
            if self._file is not None:
                self._sync(self._file)

    def __len__(self) -> int:
        return len({key for key, _ in self._records()})

    def close(self) -> None:
        """Sync and close this process's segment; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._file is not None:
                self._sync(self._file)
                self._file.close()
                self._file = None

    def _open_segment(self) -> IO[str]:
        name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}{SUFFIX}"
        handle = open(self.path / name, "x", encoding="utf-8", newline="\n")
        handle.write(HEADER + "\n")
        self._file = handle
        return handle

    def _sync(self, handle: IO[str]) -> None:
        handle.flush()
        os.fsync(handle.fileno())
        self._synced = time.monotonic()

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
