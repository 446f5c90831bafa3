"""JSON Lines of the results log read back: small files line by line through their pydantic model, a
domain's items (millions of lines in a whole survey) column by column through pyarrow's JSON reader, only
the fields a reader names. Why pyarrow: it parses ~10x faster than a Python loop and keeps only the
columns asked for, so a reader's memory is its columns, never the file's text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
from pyarrow import json as pa_json
from pydantic import BaseModel, ValidationError

from socbench.errors import DataError, problem

R = TypeVar("R", bound=BaseModel)
TEXT, CODES = pa.string(), pa.list_(pa.string())
# ``records.detail_row``'s fields as pyarrow reads them; None: inferred (the person id: a number or text;
# ``option_distribution``: an object whose keys are the item's codes)
ITEM_TYPES: dict[str, pa.DataType | None] = {
    "person_id": None, "question_id": TEXT, "country_code": TEXT, "true_answer": TEXT, "llm_answer": TEXT,
    "correct": pa.bool_(), "is_country_specific": pa.bool_(), "parse_error": TEXT, "engine_error": TEXT,
    "raw_reply": TEXT, "offered_codes": CODES, "option_distribution": None, "draws": CODES}
DEFAULTS = {"is_country_specific": False, "offered_codes": []}  # a line written without them
REQUIRED = ("person_id", "question_id", "true_answer", "correct")


def read_lines(path: Path, model: type[R], what: str) -> Iterator[R]:
    """Each line of a JSON Lines file through its model, one at a time (bounded memory); a missing file
    or a bad line is one DataError line naming file and line (``what``: what a line should be)."""
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield model.model_validate_json(line)
                except ValidationError as exc:
                    raise DataError(f"{path}:{number}: not {what} ({problem(exc)})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _table(path: Path, names: Sequence[str], person: pa.DataType) -> pa.Table:
    """The named item fields of every line; ``option_distribution`` is inferred, so with it every field is
    parsed (the others are typed and the rest dropped)."""
    infer = "option_distribution" in names
    fields = [(n, person if n == "person_id" else ITEM_TYPES[n]) for n in names
              if n == "person_id" or ITEM_TYPES[n] is not None]
    options = pa_json.ParseOptions(explicit_schema=pa.schema(fields),
                                   unexpected_field_behavior="infer" if infer else "ignore")
    return pa_json.read_json(path, parse_options=options)


def _values(table: pa.Table, name: str) -> list[Any]:
    """A column as Python values: absent: None (or its default); a code's probability the line did not
    hold (pyarrow's inferred object has every line's codes) left out."""
    if name not in table.column_names:
        return [DEFAULTS.get(name)] * table.num_rows
    values = table.column(name).to_pylist()
    if name == "option_distribution":
        return [None if v is None else {k: p for k, p in v.items() if p is not None} for v in values]
    default = DEFAULTS.get(name)
    return values if default is None else [default if v is None else v for v in values]


def item_columns(path: Path, names: Sequence[str], expected: int) -> dict[str, list[Any]]:
    """The named fields of a domain's items (``ITEM_TYPES``), in the file's order; a file that cannot be
    read, a line that is not an item or a count other than ``expected`` is one DataError line."""
    if not path.is_file():
        raise DataError(f"{path}: not found: re-score it by running the same command again")
    for person in (pa.int64(), TEXT):  # a study's ids are all numbers or all text
        try:
            table = _table(path, names, person)
            break
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            error = str(exc).splitlines()[0]
    else:
        raise DataError(f"{path}: not JSON Lines of scored items ({error})")
    for name in (n for n in REQUIRED if n in names and table.column(n).null_count):
        line = table.column(name).is_null().index(True).as_py() + 1
        raise DataError(f"{path}:{line}: not a scored item record (no {name})")
    if table.num_rows != expected:
        raise DataError(f"{path}: {table.num_rows} items, but its record counts {expected}: re-score it by "
                        "running the same command again")
    return {name: _values(table, name) for name in names}
