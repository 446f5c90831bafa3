"""A ``.csv``'s separator and decimal mark, as archives and Excel write them.

Why: European archives and Excel in most European locales write ``;`` with decimal commas (R's
``write.csv2``); read with pandas' defaults such a file is one column named ``id;vote;...``. The
separator is the candidate that splits the header into the most columns, checked on the first
rows; the decimal mark is ``,`` when the separator is not and the first rows hold numbers written
with it. Either can be given (``--sep``, ``--decimal``); what cannot be told is one line naming it.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from socbench.errors import DataError

SEPARATORS = (",", ";", "\t", "|")
SAMPLE_BYTES = 1 << 16
_COMMA_NUMBER = re.compile(r"^\s*-?\d+,\d+\s*$")


def _rows(text: str, sep: str) -> list[list[str]]:
    lines = text.splitlines(keepends=True)
    return list(csv.reader(io.StringIO("".join(lines[:-1] if len(lines) > 1 else lines)), delimiter=sep))


def csv_options(path: Path, sep: str | None = None, decimal: str | None = None) -> dict[str, str]:
    """``{"sep": ..., "decimal": ...}`` for ``pandas.read_csv`` (see the module docstring)."""
    try:
        with path.open("rb") as handle:
            text = handle.read(SAMPLE_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        raise DataError(f"{path}: cannot read as CSV ({exc})") from None
    if sep is None:
        widths = {candidate: len(next(iter(_rows(text, candidate)), [])) for candidate in SEPARATORS}
        sep = max(SEPARATORS, key=lambda candidate: widths[candidate])  # ties: the first, ","
    rows = [row for row in _rows(text, sep) if row]
    header = rows[0] if rows else []
    if len(header) == 1 and (other := next((s for s in SEPARATORS if s != sep and s in header[0]), None)):
        raise DataError(f"{path}: with the separator {sep!r} the header is one column {header[0][:60]!r}; "
                        f"give --sep {other!r} if that is the file's separator")
    uneven = next((i for i, row in enumerate(rows[1:], 2) if len(row) != len(header)), None)
    if uneven is not None:
        raise DataError(f"{path}: cannot tell the CSV separator: with {sep!r} the header has {len(header)} "
                        f"columns and line {uneven} {len(rows[uneven - 1])} (give --sep)")
    if decimal is None:
        cells = (cell for row in rows[1:] for cell in row)
        decimal = "," if sep != "," and any(_COMMA_NUMBER.match(cell) for cell in cells) else "."
    return {"sep": sep, "decimal": decimal}
