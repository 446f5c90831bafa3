"""Compute once: a JSON value stored under a content hash of everything it depends on.

Why: a rerun with nothing new reads what the last run computed instead of fitting the yardsticks again.
The key hashes socbench's own source and the numeric libraries' versions too, so a value computed by other
code is never read back. Values live in ``<folder>/memo/<key>.json`` (the run's cache folder).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from socbench.files import write_atomic

LIBRARIES = ("numpy", "scipy", "scikit-learn", "pandas")


@functools.cache
def code_fingerprint() -> str:
    """sha256 over socbench's source files and the versions of the libraries that compute."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256(" ".join(version(lib) for lib in LIBRARIES).encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def content_key(*parts: Any) -> str:
    """A key for ``parts`` (their ``repr``: dataclasses, dicts, tuples and floats print all they hold)."""
    digest = hashlib.sha256(code_fingerprint().encode())
    for part in parts:
        digest.update(repr(part).encode() + b"\0")
    return digest.hexdigest()


def memo(folder: Path | None, key: str, compute: Callable[[], Any]) -> Any:
    """The JSON value stored under ``key`` in ``folder``, else ``compute()`` stored and read back (so
    a first run and a rerun hand on the same value); no folder: ``compute()`` through JSON all the same."""
    path = Path(folder) / "memo" / f"{key}.json" if folder is not None else None
    if path is not None:
        try:
            return json.loads(path.read_bytes())
        except (OSError, ValueError):
            pass
    text = json.dumps(compute()).encode()
    if path is not None:
        try:
            write_atomic(path, text)
        except OSError:  # a cache: a folder that cannot be written only means computing again next time
            pass
    return json.loads(text)
