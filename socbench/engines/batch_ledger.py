"""Where ``--batch`` records its batches, next to the engine cache: one JSON file per uploaded input file,
written atomically (a temporary file, fsynced, renamed over), so a killed process leaves either the old
record or the new one. A record is written when its file is uploaded, again with the batch's id as soon as
the batch exists (before anything waits on it), and removed once its answers are collected.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from socbench.errors import DataError
from socbench.files import read_json, write_json

log = logging.getLogger("socbench")
SUFFIX = ".batch.json"


@dataclass(frozen=True)
class BatchRecord:
    """One submitted (or about to be submitted) batch and the custom ids of the calls it holds."""

    name: str  # the input file's content hash: the record's file name
    path: str  # the endpoint, e.g. /v1/chat/completions
    input_file_id: str
    batch_id: str | None
    custom_ids: tuple[str, ...]
    created: float


class BatchLedger:
    """The records in one folder; safe for several processes (each record is its own file)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def records(self) -> list[BatchRecord]:
        """Every readable record, oldest first; a damaged one is skipped with a warning."""
        found = []
        for path in sorted(self.folder.glob(f"*{SUFFIX}")) if self.folder.is_dir() else []:
            try:
                data = read_json(path)
                found.append(BatchRecord(**{**data, "custom_ids": tuple(data["custom_ids"])}))
            except (DataError, TypeError, KeyError) as exc:
                log.warning("batch record %s is unreadable (%s); skipped", path, exc)
        return sorted(found, key=lambda record: record.created)

    def save(self, record: BatchRecord) -> None:
        """Write ``record`` so that it survives a kill at any point (fsync before and after the rename)."""
        write_json(self.folder / f"{record.name}{SUFFIX}", asdict(record))
        _sync_folder(self.folder)

    def drop(self, name: str) -> None:
        """Forget a collected batch (gone already: nothing to do)."""
        (self.folder / f"{name}{SUFFIX}").unlink(missing_ok=True)
        _sync_folder(self.folder)


def _sync_folder(folder: Path) -> None:
    """Make a rename or removal in ``folder`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
