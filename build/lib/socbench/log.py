"""A run's results log, read back: what the run wrote, never recomputed.

A run folder holds one record per unit (ISSP: ``<Domain>_detailed.json`` with every item and
``<Domain>_metrics.json``; MCQ: ``<dataset>_results.json`` with ``<dataset>_predictions.jsonl``) and the
run's ``summary.json``. ``socbench.evaluate``'s result reads through here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from socbench.errors import DataError

METRICS_SUFFIX = "_metrics.json"
RESULTS_SUFFIX = "_results.json"
PREDICTIONS_SUFFIX = "_predictions.jsonl"
DETAILED_SUFFIX = "_detailed.json"


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}:{exc.colno}: malformed JSON: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None


def _records(folder: Path, suffix: str) -> dict[str, Path]:
    """The unit records of one kind in a run folder, by unit name."""
    return {path.name.removesuffix(suffix): path for path in sorted(Path(folder).glob(f"*{suffix}"))
            if "_circular" not in path.name}


def unit_metrics(folder: Path) -> dict[str, dict[str, Any]]:
    """Each unit's metrics as the run wrote them: an ISSP domain's ``metrics``, ``baselines`` and counts;
    an MCQ dataset's accuracies per k and method."""
    found: dict[str, dict[str, Any]] = {}
    for name, path in _records(folder, METRICS_SUFFIX).items():
        record = read_json(path)
        found[name] = {**record.get("metrics", {}), "complete": record.get("complete"),
                       "baselines": record.get("baselines", {}), "scoreable_items": record.get("total_count")}
    for name, path in _records(folder, RESULTS_SUFFIX).items():
        record = read_json(path)
        found[name] = {"accuracy": record.get("accuracy", {}), "complete": record.get("complete"),
                       "chance_accuracy": record.get("chance_accuracy")}
    return found


def items_frame(folder: Path) -> pd.DataFrame:
    """Every item of the run: an ISSP domain's scored items (``domain`` column), an MCQ dataset's
    predictions per k and method (``dataset`` column)."""
    frames = [pd.DataFrame(read_json(path).get("details", [])).assign(domain=name)
              for name, path in _records(folder, DETAILED_SUFFIX).items()]
    for name, path in _records(folder, PREDICTIONS_SUFFIX).items():
        lines = path.read_text(encoding="utf-8").splitlines()
        frames.append(pd.DataFrame([json.loads(line) for line in lines if line.strip()]).assign(dataset=name))
    if not frames:
        raise DataError(f"{folder}: no results of a run here")
    return pd.concat(frames, ignore_index=True)
