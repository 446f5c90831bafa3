"""Every file and folder socbench writes goes to a temporary sibling and is moved into place, so a
killed run never leaves one that looks complete; JSON is strict (NaN/inf written as ``null``)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from socbench.errors import DataError


@contextmanager
def atomic_path(path: Path, suffix: str = "") -> Iterator[Path]:
    """A temporary sibling of ``path`` (ending in ``suffix``) to write; moved onto ``path`` when the
    body succeeds, removed when it raises (``path`` left as it was)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{suffix}")
    os.fchmod(fd, 0o644)  # mkstemp's 0600 would make results unreadable to others
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


@contextmanager
def atomic_open(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """``path``'s temporary sibling opened (UTF-8 unless binary), fsynced before it is moved into place."""
    encoding = None if "b" in mode else "utf-8"
    with atomic_path(path) as tmp, open(tmp, mode, encoding=encoding) as handle:
        yield handle
        handle.flush()
        os.fsync(handle.fileno())


def write_atomic(path: Path, payload: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(payload)
    return path


@contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """A temporary sibling folder to build ``path`` in; on success it replaces ``path`` (an unfinished
    or stale one removed), else it is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache may be shared
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def file_sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def json_safe(value: Any) -> Any:
    """NaN/inf floats -> None, recursively (strict JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def json_bytes(data: object, indent: int = 2) -> bytes:
    """Indented UTF-8 JSON with a final new line (the import's files, the synthetic data's)."""
    return (json.dumps(data, indent=indent, ensure_ascii=False) + "\n").encode("utf-8")


def write_text(path: Path, text: str) -> Path:
    """``text`` as UTF-8 at ``path``, atomically."""
    with atomic_open(path) as handle:
        handle.write(text)
    return path


def write_json(path: Path, payload: Mapping[str, Any]) -> Path:
    """Atomically write ``payload`` as strict, indented UTF-8 JSON."""
    with atomic_open(path) as handle:
        json.dump(json_safe(payload), handle, indent=2, ensure_ascii=False, allow_nan=False)
        handle.write("\n")
    return path


def read_json(path: Path, what: str = "JSON") -> Any:
    """``path``'s JSON; a file that is missing, not UTF-8 or malformed is one DataError line naming it (and
    the line and column of malformed JSON). ``what`` names the kind of file in "not found"."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: {what} file not found") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}:{exc.colno}: malformed JSON: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None
