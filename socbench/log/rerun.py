"""A rerun with nothing new reads what the last run computed: a run that completed leaves ``last_run.json``
in its folder (what it printed, its fingerprint); the same command finds it and answers before Prefect or a
model starts. Any writer of the folder's results log removes it first, so it never outlives what it names.
ISSP runs only: an MCQ dataset's files may lie anywhere.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from socbench.errors import SocbenchError
from socbench.files import read_json, write_json
from socbench.outcomes import Outcome

NAME = "last_run.json"


def marker(config: Any) -> Path:
    from socbench.report.output import model_dir

    return model_dir(config.output_dir, config.run_name) / NAME


def forget(folder: Path) -> None:
    (folder / NAME).unlink(missing_ok=True)


def fingerprint(config: Any) -> str | None:
    """What the run's results depend on: socbench's code, the whole configuration, the data folder's files
    and a local model's files; None for a study whose inputs are not all known (MCQ)."""
    from socbench.memo import code_fingerprint
    from socbench.models import resolve_model

    if not hasattr(config, "dataset_dir"):
        return None
    engine = config.engine
    try:
        model = "" if engine.api_type == "openai" else resolve_model(engine.model).fingerprint
    except SocbenchError:  # a model only a test's registered engine knows: nothing to compare
        return None
    digest = hashlib.sha256((code_fingerprint() + config.model_dump_json() + model).encode())
    folder = Path(config.dataset_dir)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(folder)}\0".encode() + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def remember(config: Any, stamp: str | None, outcome: Outcome) -> None:
    """Leave the marker of a run that completed (``stamp``: its fingerprint when it started)."""
    if stamp is not None and outcome.ok:
        write_json(marker(config), {"fingerprint": stamp, "printed": outcome.printed, "paths": outcome.paths,
                                    "completed": outcome.completed})


def recall(config: Any) -> Outcome | None:
    """The last run's outcome if it was this exact run, it completed and its files are there; else None."""
    try:
        last = read_json(marker(config))
        same = last["fingerprint"] == fingerprint(config)
    except Exception:  # noqa: BLE001 - no marker, or one that cannot be read: run normally
        return None
    if not same or not all(Path(p).is_file() for p in last["paths"].values()):
        return None
    return Outcome(last["printed"], last["paths"], completed=last["completed"])
