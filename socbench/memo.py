"""Compute once: a JSON value stored under a content hash of everything it depends on.

Why: a rerun with nothing new reads what the last run computed instead of fitting the yardsticks again.
The key hashes socbench's own source and the numeric libraries' versions too, so a value computed by other
code is never read back. Values live in ``<folder>/memo/<key>.json`` (the run's cache folder).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import pickle
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


LONG = 256  # a sequence longer than this is hashed a chunk of elements at a time
CHUNK = 500


def _feed(digest: Any, value: Any, top: bool) -> None:
    """``value`` into ``digest``: a long sequence (a domain's items, its respondents: a gigabyte at a whole
    survey's size) pickled ``CHUNK`` elements at a time (3x their ``repr``s' speed; the same objects built
    the same way pickle the same), a part's dataclass one field at a time, anything else by its ``repr``."""
    if isinstance(value, (list, tuple)) and len(value) > LONG:
        digest.update(f"{type(value).__name__}[".encode())
        for start in range(0, len(value), CHUNK):
            digest.update(pickle.dumps(list(value[start:start + CHUNK]), pickle.HIGHEST_PROTOCOL))
        digest.update(b"]")
    elif top and dataclasses.is_dataclass(value) and not isinstance(value, type):
        digest.update(f"{type(value).__name__}(".encode())
        for field in dataclasses.fields(value):
            digest.update(f"{field.name}=".encode())
            _feed(digest, getattr(value, field.name), False)
        digest.update(b")")
    else:
        digest.update(repr(value).encode() + b",")


def content_key(*parts: Any) -> str:
    """A key for ``parts`` (their ``repr``: dataclasses, dicts, tuples and floats print all they hold), in
    memory bounded by one element's."""
    digest = hashlib.sha256(code_fingerprint().encode())
    for part in parts:
        _feed(digest, part, True)
        digest.update(b"\0")
    return digest.hexdigest()


def memo(folder: Path | None, key: str, compute: Callable[[], Any]) -> Any:
    """The JSON value stored under ``key`` in ``folder``, else ``compute()`` stored and read back (so
    a first run and a rerun hand on the same value); no folder: ``compute()`` through JSON all the same."""
    path = Path(folder) / "memo" / f"{key}.json" if folder is not None else None
    if path is not None:
        with contextlib.suppress(OSError, ValueError):
            return json.loads(path.read_bytes())
    text = json.dumps(compute()).encode()
    if path is not None:  # a cache: a folder that cannot be written only means computing again next time
        with contextlib.suppress(OSError):
            write_atomic(path, text)
    return json.loads(text)
