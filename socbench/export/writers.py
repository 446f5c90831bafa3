"""Tables to files: csv (pandas), parquet (pyarrow), sav and dta (pyreadstat, with labels, user-missing
and Stata's ``.a``-``.z``), each under a temporary name and renamed. What a format cannot hold is changed
by ``fit`` (noted, and listed in a mapping file); what cannot be written at all is one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from socbench.data.survey_file import readstat_errors
from socbench.errors import DataError
from socbench.export.fit import RULES, Change, Labels, fit
from socbench.files import atomic_path

STATA_STRING_MAX = 2045  # pyreadstat writes str# columns (no strL)
MAPPING_SUFFIX = "_mapping.csv"
TARGET = {"dta": "Stata", "sav": "SPSS"}


def _sav(frame: pd.DataFrame, path: Path, labels: Labels) -> None:
    import pyreadstat

    ranges = {name: [low if low == high else {"lo": low, "hi": high} for low, high in spans]
              for name, spans in labels.missing.items() if spans}
    pyreadstat.write_sav(frame, str(path), column_labels=dict(labels.columns) or None,
                         variable_value_labels={k: dict(v) for k, v in labels.values.items()} or None,
                         missing_ranges=ranges or None)


def _check_dta(frames: Sequence[pd.DataFrame], written: str) -> None:
    """What no .dta can hold (pyreadstat writes no strL): one line naming the variable and the rule."""
    for frame in frames:
        for name in frame.columns:
            longest = max((len(v) for v in frame[name].dropna().unique() if isinstance(v, str)), default=0)
            if longest > STATA_STRING_MAX:
                raise DataError(f"{written}: variable {name}: a text of {longest:,} characters; Stata's str# "
                                f"holds at most {STATA_STRING_MAX:,} (export it as csv, parquet or sav)")


def _dta(frame: pd.DataFrame, path: Path, labels: Labels) -> None:
    import pyreadstat

    pyreadstat.write_dta(frame, str(path), column_labels=dict(labels.columns) or None,
                         variable_value_labels={k: dict(v) for k, v in labels.values.items() if v} or None,
                         missing_user_values={k: list(v) for k, v in labels.tagged.items()} or None)


WRITERS: dict[str, Callable[[pd.DataFrame, Path, Labels], None]] = {
    "csv": lambda frame, path, _: frame.to_csv(path, index=False),
    "parquet": lambda frame, path, _: frame.to_parquet(path, index=False),
    "sav": _sav,
    "dta": _dta,
}


def write_table(frame: pd.DataFrame, path: Path, fmt: str, labels: Labels | None = None) -> Path:
    """``frame`` as ``fmt`` at ``path`` (a temporary sibling renamed onto it), labels as they are."""
    if fmt in ("sav", "dta"):  # ReadStat takes NaN for a blank number, not pandas' nullable integers, and
        # iterates text a value at a time: Python strings, not pyarrow's (~10x slower to iterate)
        kinds = {c: str(frame[c].dtype) for c in frame.columns}
        frame = frame.astype({c: "float64" if kind == "Int64" else object for c, kind in kinds.items()
                              if kind in ("Int64", "str")})
    try:
        with atomic_path(path, path.suffix) as tmp:
            WRITERS[fmt](frame, tmp, labels or Labels())
    except (ValueError, *readstat_errors()) as exc:
        raise DataError(f"{path.name}: cannot write it as {fmt} ({exc})") from None
    return path


def write_tables(tables: Sequence[tuple[pd.DataFrame, Path]], fmt: str,
                 labels: Labels | None = None) -> tuple[list[Path], list[str]]:
    """Tables of one shape (the model's and the real answers) as ``fmt``, fitted to Stata's or SPSS's
    rules; the paths written and one note per kind of change, every change listed (original ->
    written) in ``<first file's stem>_<fmt>_mapping.csv`` beside them."""
    frames, labels, changes, first = [frame for frame, _ in tables], labels or Labels(), [], tables[0][1]
    if fmt in TARGET:
        frames, labels, changes = fit(frames, labels, fmt)
    if fmt == "dta":
        _check_dta(frames, first.name)  # before any file of the set is written
    paths = [write_table(frame, path, fmt, labels) for frame, (_, path) in zip(frames, tables)]
    mapping = first.with_name(f"{first.stem}_{fmt}{MAPPING_SUFFIX}")
    if not changes:
        mapping.unlink(missing_ok=True)  # an earlier export's, no longer true
        return paths, []
    write_table(pd.DataFrame(changes, columns=list(Change.__dataclass_fields__)), mapping, "csv")
    return [*paths, mapping], change_notes(changes, fmt, first.name, mapping.name)


def change_notes(changes: Sequence[Change], fmt: str, written: str, mapping: str) -> list[str]:
    """One line per kind of change: how many, the rule, the first variables."""
    notes = []
    for kind in dict.fromkeys(change.kind for change in changes):
        variables = list(dict.fromkeys(c.variable for c in changes if c.kind == kind))
        shown = ", ".join(variables[:3]) + (f" and {len(variables) - 3} more" if len(variables) > 3 else "")
        notes.append(f"{written}: {kind} changed for {len(variables)} variable(s) to fit {TARGET[fmt]} "
                     f"({RULES[fmt][kind]}): {shown}; original -> written in {mapping}")
    return notes
