"""Survey microdata as archives publish it (``.dta``, ``.sav``/``.zsav``, ``.csv`` + codebook), with labels.

Why: ``open_survey`` reads only metadata and ``chunks`` streams row blocks, so a 60,000 x 400 file
never sits in memory as Python objects. Every kind of missing value is kept as what it is: SPSS
user-missing codes as the recorded numbers, Stata's extended missing values as ``.a``-``.z``, R's
``NA`` in a numeric CSV column as ``NA``; only a blank (system-missing) becomes None.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from socbench.data.loaders import normalize_code
from socbench.data.missing_labels import STATA_MISSING
from socbench.data.options import in_span
from socbench.errors import ConfigError, DataError
from socbench.files import read_json

FORMATS = {".dta": "Stata", ".sav": "SPSS", ".zsav": "SPSS", ".csv": "CSV"}
CHUNK_ROWS = 10_000
CODEBOOK_CSV_COLUMNS = ("variable", "label", "code", "value_label")
CSV_NA = {"keep_default_na": False, "na_values": [""]}  # only an empty cell is blank ("NA" is Namibia)
R_NA = "NA"  # R's missing value as write.csv writes it: a missing code of a numeric CSV column
SYSTEM_MISSING = "."  # the key of blank cells in ``code_counts`` (never an answer code)


@dataclass(frozen=True)
class Variable:
    """One variable: name, label (None when unlabelled), value labels by canonical code."""

    name: str
    label: str | None
    value_labels: dict[str, str] = field(default_factory=dict)
    is_string: bool = False
    missing_codes: tuple[str, ...] = ()  # declared user-missing codes (SPSS; CSV: R's NA)
    missing_ranges: tuple[tuple[float, float], ...] = ()  # declared user-missing ranges (SPSS)

    def declared_missing(self, code: str) -> bool:
        """Whether the file declares ``code`` missing (SPSS: a discrete value or in a range; Stata's
        .a-.z; R's NA in a numeric CSV column)."""
        return (code in self.missing_codes or bool(STATA_MISSING.match(code))
                or any(in_span(code, span) for span in self.missing_ranges))

    @property
    def key(self) -> str:
        """The attribute key: the variable label, else the name."""
        return self.label.strip() if self.label and self.label.strip() else self.name


@dataclass(frozen=True)
class SurveyFile:
    """A readable survey file and its variables in file order (metadata only)."""

    path: Path
    kind: str  # Stata | SPSS | CSV
    variables: dict[str, Variable]
    n_rows: int
    csv: dict[str, str] = field(default_factory=dict)  # a .csv's separator and decimal mark (csv_options)
    mr_sets: dict[str, dict] = field(default_factory=dict)  # a .sav's multiple-response sets (pyreadstat's)

    def find(self, name: str) -> str | None:
        """The variable's name as the file spells it (names match case-insensitively)."""
        exact = name if name in self.variables else None
        return exact or next((v for v in self.variables if v.lower() == name.strip().lower()), None)

    def columns(self, names: Sequence[str]) -> pd.DataFrame:
        """Whole columns (a few of them: country, weight) in one read (of a file with rows: the import stops
        at 0 rows)."""
        return pd.concat(list(self.chunks(names, chunk_rows=self.n_rows)), ignore_index=True)

    def code_counts(self, names: Sequence[str], dropped: np.ndarray | None = None) -> dict[str, Counter[str]]:
        """``{variable: {canonical code: answers}}`` over the file's rows (but those ``dropped``: no usable
        weight), blanks (system-missing) under ``SYSTEM_MISSING``: what the data holds, for the import's
        per-question decisions and report."""
        counts: dict[str, Counter[str]] = {name: Counter() for name in names}
        start = 0
        for frame in self.chunks(list(dict.fromkeys(names))):
            start += len(frame)
            if dropped is not None:
                frame = frame[~dropped[start - len(frame):start]]
            for name in counts:
                for value, n in frame[name].value_counts(dropna=False).items():
                    counts[name][canonical_code(value) or SYSTEM_MISSING] += int(n)
        return counts

    def chunks(self, names: Sequence[str], chunk_rows: int = CHUNK_ROWS) -> Iterator[pd.DataFrame]:
        """Row blocks of the named columns, in file order."""
        try:
            yield from self._chunks(list(names), chunk_rows)
        except (OSError, ValueError, *readstat_errors()) as exc:
            raise DataError(f"{self.path}: cannot read the {self.kind} file ({exc})") from None

    def _chunks(self, names: list[str], chunk_rows: int) -> Iterator[pd.DataFrame]:
        if self.kind == "CSV":
            reader = pd.read_csv(self.path, usecols=names, chunksize=chunk_rows, **self.csv, **CSV_NA)
            yield from (frame[names] for frame in reader)
            return
        import pyreadstat

        def read(reader: Callable, user_missing: bool) -> Iterator[tuple[pd.DataFrame, Any]]:
            return pyreadstat.read_file_in_chunks(reader, str(self.path), chunksize=chunk_rows, usecols=names,
                                                  user_missing=user_missing)

        if self.kind == "SPSS":
            yield from (frame[names] for frame, _ in read(pyreadstat.read_sav, True))
            return
        # Stata twice: pyreadstat 1.3.7 gives the letters of .a-.z only with user_missing=True, and then
        # reads a later system-missing cell of an integer column as an arbitrary number
        for (plain, _), (tagged, _) in zip(read(pyreadstat.read_dta, False), read(pyreadstat.read_dta, True)):
            for name in names:  # a column holding no .a-.z reads as numbers: "." + it is no string
                if not self.variables[name].is_string and plain[name].isna().any():
                    tags = tagged[name].map(lambda v: f".{v}" if isinstance(v, str) else None)
                    plain[name] = plain[name].astype(object).where(~(plain[name].isna() & tags.notna()), tags)
            yield plain[names]


def readstat_errors() -> tuple[type[Exception], ...]:
    """ReadStat's error types (pyreadstat is imported only when a binary file is read)."""
    import pyreadstat

    return (pyreadstat.ReadstatError, pyreadstat.PyreadstatError)


def canonical_code(value: Any) -> str | None:
    """A cell's code as the benchmark compares it (``normalize_code``); a "." cell (Stata's and SAS's
    system-missing written into a CSV) is a blank too."""
    return None if isinstance(value, str) and value.strip() == SYSTEM_MISSING else normalize_code(value)


def map_codes(series: pd.Series, fn: Callable[[str], Any]) -> np.ndarray:
    """``fn(canonical code)`` for every cell (None for blanks), computed once per distinct value."""
    positions, uniques = pd.factorize(series, use_na_sentinel=True)
    table = [None if (code := canonical_code(value)) is None else fn(code) for value in uniques]
    return np.array([*table, None], dtype=object)[positions]  # position -1 (blank) -> None


SEPARATORS = (",", ";", "\t", "|")
SAMPLE_BYTES = 1 << 16
_COMMA_NUMBER = re.compile(r"^\s*-?\d+,\d+\s*$")


# The first bytes of files that are not text: a survey file or spreadsheet named .csv
_MAGIC = {b"$FL2": "an SPSS .sav", b"$FL3": "an SPSS .zsav", b"<stata_dta>": "a Stata .dta",
          b"PK\x03\x04": "a zip (.xlsx, .zip)", b"\xd0\xcf\x11\xe0": "an Excel .xls"}


def _rows(text: str, sep: str, path: Path) -> list[list[str]]:
    lines = text.splitlines(keepends=True)
    try:
        return list(csv.reader(io.StringIO("".join(lines[:-1] if len(lines) > 1 else lines)), delimiter=sep))
    except csv.Error as exc:
        raise DataError(f"{path}: not a CSV file ({exc})") from None


def csv_layout(path: Path, sep: str | None = None, decimal: str | None = None) -> tuple[dict[str, str], int]:
    """(``{"sep": ..., "decimal": ...}`` for ``pandas.read_csv``, data rows). Why: European archives and
    Excel write ``;`` with decimal commas (R's ``write.csv2``). The separator is the candidate that splits
    the header into the most columns; the decimal mark is ``,`` when the separator is not and the first
    rows hold numbers written with it. Every line is then checked against the header: the first that
    breaks (a separator changing partway) is one line naming it."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SAMPLE_BYTES)
    except OSError as exc:
        raise DataError(f"{path}: cannot read as CSV ({exc})") from None
    # a binary file named .csv (a .sav renamed, random bytes) is one line naming what it looks like
    kind = next((what for magic, what in _MAGIC.items() if head.startswith(magic)), None)
    if kind or b"\0" in head:
        looks = f": it looks like {kind} file (give it that extension)" if kind else ""
        raise DataError(f"{path}: not a CSV file: its bytes are binary, not text{looks}")
    text = head.decode("utf-8", errors="replace")
    given = sep
    if sep is None:
        sep = max(SEPARATORS, key=lambda c: len(next(iter(_rows(text, c, path)), [])))  # ties: the first, ","
    rows = [row for row in _rows(text, sep, path) if row]
    header = rows[0] if rows else []
    if len(header) == 1 and (other := next((s for s in SEPARATORS if s != sep and s in header[0]), None)):
        raise DataError(f"{path}: with the separator {sep!r} the header is one column {header[0][:60]!r}; "
                        f"give --sep {other!r} if that is the file's separator")
    if decimal is None:
        cells = (cell for row in rows[1:] for cell in row)
        decimal = "," if sep != "," and any(_COMMA_NUMBER.match(cell) for cell in cells) else "."
    return {"sep": sep, "decimal": decimal}, _count_rows(path, sep, len(header), given is not None)


def _count_rows(path: Path, sep: str, width: int, given: bool) -> int:
    """The data rows (quoted line breaks inside a cell, blank lines skipped, as pandas reads them); the
    first line whose columns differ from the header's is one DataError naming it."""
    rows = 0
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # a long label is checked later, by name
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        reader = csv.reader(handle, delimiter=sep)
        try:
            next(reader, None)
            for row in reader:
                if row and len(row) != width:
                    raise DataError(_uneven(path, reader.line_num, sep, width, row, given))
                rows += bool(row)
        except csv.Error as exc:
            raise DataError(f"{path}: not a CSV file (line {reader.line_num}: {exc})") from None
    return rows


def _uneven(path: Path, line: int, sep: str, width: int, row: list[str], given: bool) -> str:
    """The message for a line that does not split like the header: which separator it is written with."""
    written = sep.join(row)
    other = next((s for s in SEPARATORS if s != sep and len(written.split(s)) == width), None)
    how = f"--sep {sep!r}" if given else f"the separator {sep!r} (the header's)"
    changes = f"; it splits with {other!r}: the file changes its separator there" if other else ""
    return (f"{path}: line {line} has {len(row)} column(s) where the header has {width}, with {how}: "
            f"{written[:60]!r}{changes}; fix the file from that line on")


def _labels(mapping: dict[Any, Any] | None, tagged: bool = False) -> dict[str, str]:
    """Value labels by canonical code; ``tagged``: a letter key is Stata's extended missing ``.a``."""
    pairs = ((f".{code}" if tagged and isinstance(code, str) else canonical_code(code), label)
             for code, label in (mapping or {}).items() if label is not None)
    return {key: str(label).strip() for key, label in pairs if key is not None and str(label).strip()}


def _spss_missing(meta: Any, name: str) -> tuple[tuple[str, ...], tuple[tuple[float, float], ...]]:
    """Declared user-missing codes (discrete values, the labelled codes inside a range), and the ranges."""
    numbers = (int, float)
    ranges = tuple((float(e["lo"]), float(e["hi"])) for e in (meta.missing_ranges or {}).get(name, [])
                   if isinstance(e.get("lo"), numbers) and isinstance(e.get("hi"), numbers))
    labelled = [code for code in (meta.variable_value_labels.get(name) or {}) if isinstance(code, numbers)]
    values = [v for low, high in ranges
              for v in ([low] if low == high else [c for c in labelled if low <= c <= high])]
    return tuple(code for value in values if (code := canonical_code(value)) is not None), ranges


def _read_binary(path: Path, kind: str) -> SurveyFile:
    import pyreadstat

    reader = pyreadstat.read_dta if kind == "Stata" else pyreadstat.read_sav
    try:
        _, meta = reader(str(path), metadataonly=True, user_missing=True)
    except (OSError, ValueError, *readstat_errors()) as exc:
        raise DataError(f"{path}: cannot read as a {kind} file ({exc})") from None
    types = meta.readstat_variable_types or {}
    variables = {name: Variable(name, meta.column_names_to_labels.get(name),
                                _labels(meta.variable_value_labels.get(name), tagged=kind == "Stata"),
                                types.get(name) == "string", *_spss_missing(meta, name))
                 for name in meta.column_names}
    return SurveyFile(path, kind, variables, int(meta.number_rows or 0),
                      mr_sets=getattr(meta, "mr_sets", None) or {})


def open_survey(path: str | Path, codebook: str | Path | None = None, sep: str | None = None,
                decimal: str | None = None) -> SurveyFile:
    """The file's variables and row count; one DataError line for an unreadable file. ``sep`` and
    ``decimal``: a .csv's separator and decimal mark (default: detected, ``csv_options``)."""
    path = Path(path).expanduser()
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise ConfigError(f"{path}: unknown survey format {path.suffix!r} "
                          "(expected .dta, .sav, .zsav or .csv)")
    if not path.is_file():
        raise DataError(f"{path}: survey file not found")
    if kind != "CSV":
        if codebook is not None:
            raise ConfigError(f"--codebook {codebook}: only a .csv source needs a codebook "
                              f"({path.name} has labels)")
        if sep is not None or decimal is not None:
            raise ConfigError(f"--sep/--decimal: only a .csv source has them ({path.name} is {kind})")
        return _read_binary(path, kind)
    if codebook is None:
        raise ConfigError(f"{path}: a .csv source needs --codebook (a codebook .csv or .json with the "
                          "labels)")
    dialect, rows = csv_layout(path, sep, decimal)
    try:
        head = pd.read_csv(path, nrows=1000, **dialect, **CSV_NA)  # column types from the first rows
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read as CSV ({exc})") from None
    book = read_codebook(Path(codebook).expanduser())
    variables = {}
    for name in map(str, head.columns):
        label, values = book.get(name.lower(), (None, {}))
        text = head[name].dropna().astype(str).str.strip()
        is_string = (head[name].dtype == object or pd.api.types.is_string_dtype(head[name].dtype)) and bool(
            pd.to_numeric(text[text != R_NA], errors="coerce").isna().any())  # numbers and R's NA: numeric
        variables[name] = Variable(name, label, values, is_string, missing_codes=() if is_string else (R_NA,))
    return SurveyFile(path, "CSV", variables, rows, dialect)


def read_codebook(path: Path) -> dict[str, tuple[str | None, dict[str, str]]]:
    """``{variable (lower case): (label, {code: value label})}`` from an ISSP-style JSON codebook, or a
    CSV ``variable,label,code,value_label`` (a variable without value labels: one row, ``code`` empty)."""
    if not path.is_file():
        raise DataError(f"{path}: codebook not found")
    book: dict[str, tuple[str | None, dict[str, str]]] = {}
    if path.suffix.lower() == ".json":
        raw = read_json(path, "codebook")
        if not isinstance(raw, list) or not all(isinstance(e, dict) and "domain" in e for e in raw):
            raise DataError(f'{path}: expected a JSON array of {{"domain", "meaning", "content"}} entries')
        for entry in raw:
            name = str(entry["domain"]).strip().lower()
            if name not in book:  # first entry wins, as in the ISSP codebooks
                book[name] = (str(entry.get("meaning") or "").strip() or None, _labels(entry.get("content")))
        return book
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, sep=csv_layout(path)[0]["sep"])
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the codebook as CSV ({exc})") from None
    missing = [c for c in CODEBOOK_CSV_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: codebook column(s) {', '.join(missing)} missing "
                        f"(expected {','.join(CODEBOOK_CSV_COLUMNS)})")
    for row in frame.itertuples(index=False):
        if not (name := str(row.variable).strip().lower()):
            continue
        label, values = book.get(name, (None, {}))
        if (code := canonical_code(row.code)) is not None and str(row.value_label).strip():
            values[code] = str(row.value_label).strip()
        book[name] = (label or str(row.label).strip() or None, values)
    return book

