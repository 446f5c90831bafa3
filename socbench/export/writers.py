"""One table to one file: csv (pandas), parquet (pyarrow), sav and dta (pyreadstat), with labels.

Why: the files are opened by SPSS, Stata, R (haven, readr) and pandas as they are; pyreadstat
carries variable labels, value labels and SPSS user-missing declarations; Stata has no declared
missing codes for numbers, so there a code such as -9 stays a value with its value label (as in
the archives' own ``.dta`` files). Every file is written under a temporary name and renamed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from socbench.errors import DataError

STATA_STRING_MAX = 2045  # pyreadstat writes str# columns (no strL)


@dataclass(frozen=True)
class Labels:
    """What a labelled format keeps beside the values (csv and parquet keep the values only)."""

    columns: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, Mapping[int | float, str]] = field(default_factory=dict)
    missing: Mapping[str, list[tuple[float, float]]] = field(default_factory=dict)  # SPSS user-missing


def code_number(code: str) -> int | float:
    """A canonical code as the number a labelled file stores: "3" -> 3, "2.5" -> 2.5."""
    number = float(code)
    return int(number) if number.is_integer() else number


def _sav(frame: pd.DataFrame, path: Path, labels: Labels) -> None:
    import pyreadstat

    ranges = {name: [low if low == high else {"lo": low, "hi": high} for low, high in spans]
              for name, spans in labels.missing.items() if spans}
    pyreadstat.write_sav(frame, str(path), column_labels=dict(labels.columns) or None,
                         variable_value_labels={k: dict(v) for k, v in labels.values.items()} or None,
                         missing_ranges=ranges or None)


def _dta(frame: pd.DataFrame, path: Path, labels: Labels) -> None:
    import pyreadstat

    for name in frame.columns:
        if frame[name].dtype == object and frame[name].dropna().map(len).max(skipna=True) > STATA_STRING_MAX:
            raise DataError(f"{path}: column {name} holds text longer than Stata's {STATA_STRING_MAX} "
                            "characters; export it as csv or parquet")
    whole = {name: dict(values) for name, values in labels.values.items()
             if all(float(code).is_integer() for code in values)}  # Stata labels integers only
    pyreadstat.write_dta(frame, str(path), column_labels=dict(labels.columns) or None,
                         variable_value_labels=whole or None)


WRITERS: dict[str, Callable[[pd.DataFrame, Path, Labels], None]] = {
    "csv": lambda frame, path, _: frame.to_csv(path, index=False),
    "parquet": lambda frame, path, _: frame.to_parquet(path, index=False),
    "sav": _sav,
    "dta": _dta,
}


def write_table(frame: pd.DataFrame, path: Path, fmt: str, labels: Labels | None = None) -> Path:
    """``frame`` as ``fmt`` at ``path`` (a temporary sibling renamed onto it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    if fmt in ("sav", "dta"):  # ReadStat takes NaN for a blank number, not pandas' nullable integers
        frame = frame.astype({c: "float64" for c in frame.columns if str(frame[c].dtype) == "Int64"})
    try:
        WRITERS[fmt](frame, tmp, labels or Labels())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
