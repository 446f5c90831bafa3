"""Respondent records from row blocks of a survey file, streamed into the sample files.

Why: a full ISSP file as Python dicts would need gigabytes; only rows some sample keeps become
records. Files are written under a temporary name and renamed, so none ever looks whole too early.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from socbench.data.import_report import ImportPlan
from socbench.data.survey_file import Variable, map_codes
from socbench.errors import DataError
from socbench.files import atomic_open


def label_values(column: pd.Series, variable: Variable) -> np.ndarray:
    """Value label of each cell, its raw code where there is none, None where blank."""
    return map_codes(column, lambda code: variable.value_labels.get(code, code))


def _as_answer(code: str) -> Any:
    """An answer value as JSON holds it: an integer code as int, another as its string."""
    try:
        return int(code)
    except ValueError:
        return code


def _weights(column: pd.Series) -> list[float | None]:
    numbers = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return [float(x) if np.isfinite(x) else None for x in numbers]


def block_records(frame: pd.DataFrame, person_ids: Sequence[int], plan: ImportPlan,
                  rows: Sequence[int]) -> list[dict[str, Any]]:
    """The answer-file records of one row block, in order; ``rows``: each one's row number in the source
    file (1 = the first respondent), kept so an export merges back onto it."""
    attr_keys, qids = [key for _, key in plan.attributes], [qid for _, qid in plan.questions]
    blank, column, labels = [()] * len(frame), plan.weights.weight, plan.survey.variables
    attrs = list(zip(*(label_values(frame[n], labels[n]) for n, _ in plan.attributes))) or blank
    answers = list(zip(*(map_codes(frame[name], _as_answer) for name, _ in plan.questions))) or blank
    weights = _weights(frame[column]) if column else blank
    return [{"person_id": int(pid), "attributes": {k: v for k, v in zip(attr_keys, attr) if v is not None},
             "questions_answer": dict(zip(qids, answer)), **({"weight": weight} if column else {}),
             "source_row": int(row)}
            for pid, row, attr, answer, weight in zip(person_ids, rows, attrs, answers, weights)]


def write_samples(plan: ImportPlan, paths: dict[int | str, Path], person_ids: np.ndarray, ranks: np.ndarray,
                  limits: dict[int | str, int]) -> dict[int | str, int]:
    """Stream the rows some sample keeps into every sample's answer file (one pass over the file, one JSON
    array per size): a record goes to each sample whose draw rank it falls within (``limits``: ranks kept per
    size; nested samples share their records). The respondents written per size."""
    survey, weight = plan.survey, plan.weights.weight
    columns = [*(name for name, _ in plan.attributes + plan.questions), *([weight] if weight else [])]
    counts = {size: 0 for size in paths}
    offset = 0
    with ExitStack() as stack:
        handles = {size: stack.enter_context(atomic_open(path)) for size, path in paths.items()}
        for handle in handles.values():
            handle.write("[")
        for frame in survey.chunks(list(dict.fromkeys(columns))):
            span = slice(offset, offset + len(frame))
            keep = ranks[span] < max(limits.values())
            rows = np.arange(offset + 1, offset + len(frame) + 1)[keep]
            records = block_records(frame[keep], person_ids[span][keep], plan, rows)
            for record, rank in zip(records, ranks[span][keep]):
                text = json.dumps(record, ensure_ascii=False, allow_nan=False)
                for size, handle in handles.items():
                    if rank < limits[size]:
                        handle.write((",\n" if counts[size] else "\n") + text)
                        counts[size] += 1
            offset += len(frame)
        for handle in handles.values():
            handle.write("\n]\n")
    if offset != survey.n_rows:
        raise DataError(f"{survey.path}: read {offset} rows, the file declares {survey.n_rows}")
    return counts
