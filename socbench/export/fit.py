"""What Stata and SPSS can hold, and the deterministic changes that make a table fit them (an SPSS label
of 256 characters into Stata's 80, a name such as ``Q1.A``, Stata's ``.a`` into SPSS). Nothing changes
silently: each ``Change`` is noted and listed beside the export, so users can join back.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from socbench.data.missing_labels import STATA_MISSING
from socbench.data.survey_file import R_NA

# per format, the rule each kind of change is noted under; the long table's column labels (package data)
TEXTS = json.loads(Path(__file__).with_name("texts.json").read_text(encoding="utf-8"))
RULES: dict[str, dict[str, str]] = TEXTS["rules"]
STATA_RESERVED = {"_all", "_b", "byte", "_coef", "_cons", "double", "float", "if", "in", "int", "long", "_n",
                  "_N", "_pi", "_pred", "_rc", "_skip", "strL", "using", "with"}
SPSS_RESERVED = {"ALL", "AND", "BY", "EQ", "GE", "GT", "LE", "LT", "NE", "NOT", "OR", "TO", "WITH"}
SPSS_TAG_BASE = -900  # .a -> -901 ... .z -> -926 (-1901 ... where the variable already uses those codes)


@dataclass(frozen=True)
class Labels:
    """What a labelled format keeps beside the values (csv and parquet keep the values only). Value
    label codes are numbers, or ``.a``-``.z`` for Stata's extended missing values."""

    columns: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, Mapping[int | float | str, str]] = field(default_factory=dict)
    missing: Mapping[str, list[tuple[float, float]]] = field(default_factory=dict)  # SPSS user-missing
    tagged: Mapping[str, list[str]] = field(default_factory=dict)  # Stata: the letters .a-.z used, fitted


@dataclass(frozen=True)
class Change:
    """One thing the export had to change, by the variable's original name."""

    kind: str  # name | variable label | value label | missing value | missing declaration
    variable: str
    original: str
    written: str


def _cut(text: str, limit: int, in_bytes: bool) -> str:
    """``text`` within ``limit`` characters (or UTF-8 bytes, never splitting a character)."""
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore") if in_bytes else text[:limit]


def _stata_name(name: str) -> str:
    text = re.sub(r"[^A-Za-z0-9_]", "_", name)
    text = text if re.match(r"[A-Za-z_]", text) else f"_{text}"
    return f"{text}_" if text in STATA_RESERVED or re.fullmatch(r"str\d+", text) else text


def _spss_name(name: str) -> str:
    text = "".join(c if c.isalnum() or c in "._$#@" else "_" for c in name)
    text = text if text[:1].isalpha() else f"v{text}"
    return f"{text}_" if text.upper() in SPSS_RESERVED else text


# per format: (the valid form of a name, its limit, counted in bytes, the key names must differ in)
NAMES: dict[str, tuple[Callable[[str], str], int, bool, Callable[[str], str]]] = {
    "dta": (_stata_name, 32, False, str), "sav": (_spss_name, 64, True, str.lower)}


def fit_names(names: Sequence[str], fmt: str, limits: Mapping[str, int] | None = None) -> dict[str, str]:
    """Each name as ``fmt`` takes it: valid names kept, others made valid (``_2``... when taken);
    ``limits``: a shorter limit for some names."""
    valid, most, in_bytes, key = NAMES[fmt]
    limit = {name: (limits or {}).get(name, most) for name in names}
    fits = {name: valid(name) == _cut(name, limit[name], in_bytes) == name for name in names}
    taken = {key(name) for name in names if fits[name]}
    out = {name: name for name in names if fits[name]}
    for name in (name for name in names if not fits[name]):
        candidate, k = _cut(valid(name), limit[name], in_bytes), 1
        while key(candidate) in taken:
            k += 1
            candidate = _cut(valid(name), limit[name] - len(f"_{k}"), in_bytes) + f"_{k}"
        taken.add(key(candidate))
        out[name] = candidate
    return {name: out[name] for name in names}


def _is_tag(value: object) -> bool:
    return isinstance(value, str) and bool(STATA_MISSING.match(value))


def _number(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def code_number(code: str) -> int | float | str:
    """A canonical code as the key a labelled file stores: "3" -> 3, "2.5" -> 2.5, ".a" -> ".a"."""
    number = _number(code)
    return code if number is None else int(number) if number.is_integer() else number


def _tag_codes(values: list[object], fmt: str) -> dict[str, str | float]:
    """Each ``.a``-``.z`` among ``values`` as ``fmt`` stores it: Stata its letter, SPSS a negative code
    no other value of the variable uses (``SPSS_TAG_BASE``)."""
    tags = sorted({str(v) for v in values if _is_tag(v)})
    if fmt == "dta":
        return {tag: tag[1] for tag in tags}
    used = {n for v in values if (n := _number(v)) is not None}
    base = SPSS_TAG_BASE
    while any(base - 26 <= n <= base - 1 for n in used):
        base -= 1000
    return {tag: float(base - (ord(tag[1]) - ord("a") + 1)) for tag in tags}


def _stored(series: pd.Series, codes: Mapping[str, str | float], fmt: str) -> pd.Series:
    """A text column of numbers, ``.a``-``.z`` and R's NA as numbers, tag codes and blanks; any other
    column as it is (numbers are numbers already, text stays text). Each distinct value once: a whole
    survey's column has millions of values and a few codes."""
    if series.dtype != object:
        return series
    special = {v: v == R_NA or _is_tag(v) for v in series.dropna().unique()}
    if not any(special.values()) or any(_number(v) is None for v, s in special.items() if not s):
        return series
    out = series.map({v: codes.get(v, math.nan) if s else _number(v) for v, s in special.items()})
    return out.astype(float) if fmt == "sav" else out.where(out.notna(), math.nan)


def _value_labels(name: str, mapping: Mapping[int | float | str, str], codes: Mapping[str, str | float],
                  fmt: str, changes: list[Change]) -> dict[int | float | str, str]:
    out: dict = {}
    for code, label in mapping.items():
        key = codes.get(code, code) if isinstance(code, str) else code
        shown = f".{key}" if isinstance(key, str) else f"{key:g}"
        if fmt == "dta" and not isinstance(key, str) and not float(key).is_integer():
            changes.append(Change("value label", name, f"{shown} = {label}", "(not written)"))
            continue
        out[key] = _cut(label, 120, True) if fmt == "sav" else label
        if out[key] != label:
            changes.append(Change("value label", name, f"{shown} = {label}", f"{shown} = {out[key]}"))
    return out


def fit(frames: Sequence[pd.DataFrame], labels: Labels, fmt: str) -> tuple[list[pd.DataFrame], Labels,
                                                                           list[Change]]:
    """Tables of one shape (the model's and the real answers) and their labels as ``fmt`` (dta or
    sav) holds them, and what changed."""
    columns = [str(c) for c in frames[0].columns]
    codes = {name: _tag_codes([*(v for f in frames for v in f[name].dropna().unique()),
                               *labels.values.get(name, {})], fmt) for name in columns}
    changes = [Change("missing value", name, R_NA, "system-missing") for name in columns
               if any((f[name] == R_NA).any() for f in frames if f[name].dtype == object)]
    frames = [f.apply(lambda s: _stored(s, codes[str(s.name)], fmt)) for f in frames]
    values = {name: _value_labels(name, mapping, codes.get(name, {}), fmt, changes)
              for name, mapping in labels.values.items()}
    missing = {name: list(spans) for name, spans in labels.missing.items() if spans}
    if fmt == "dta":
        changes += [Change("missing declaration", name, "user-missing " + ", ".join(
            f"{lo:g}" if lo == hi else f"{lo:g} thru {hi:g}" for lo, hi in spans), "labelled values")
            for name, spans in missing.items()]
        missing = {}
    else:
        for name, tags in ((n, c) for n, c in codes.items() if c):
            changes += [Change("missing value", name, tag, f"{code:g} (declared user-missing)")
                        for tag, code in tags.items()]
            spss = sorted(tags.values())
            missing[name] = [*missing.get(name, []), *([(c, c) for c in spss] if len(spss) <= 3
                                                       else [(spss[0], spss[-1])])]
    variable_labels = {name: _cut(label, 80 if fmt == "dta" else 256, fmt == "sav")
                       for name, label in labels.columns.items()}
    changes += [Change("variable label", name, label, variable_labels[name])
                for name, label in labels.columns.items() if variable_labels[name] != label]
    labelled = [name for name in columns if values.get(name)]  # pyreadstat's label sets: <name>0, <name>1 ...
    shorter = {name: 32 - len(str(i)) for i, name in enumerate(labelled)} if fmt == "dta" else None
    names = fit_names(columns, fmt, shorter)
    changes += [Change("name", old, old, new) for old, new in names.items() if old != new]
    fitted = Labels(columns={names.get(k, k): v for k, v in variable_labels.items()},
                    values={names.get(k, k): v for k, v in values.items()},
                    missing={names.get(k, k): v for k, v in missing.items()},
                    tagged={names[k]: sorted(v.values()) for k, v in codes.items() if v and fmt == "dta"})
    return [f.rename(columns=names) for f in frames], fitted, changes
