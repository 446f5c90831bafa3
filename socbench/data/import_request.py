"""What ``socbench data import`` is asked: its flags, declared once here (``cli.data`` derives them,
as a study's flags come from its configuration), so a bad value is one line naming its flag. Light: the CLI
builds its parser from it without pandas."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from socbench.config import comma_list, count_or_all
from socbench.errors import ConfigError
from socbench.manifest import PERSONA_ROLES

BACKGROUND, ALL = "background", "all"  # --persona
IMPORT_ROLES = ("respondent_id", "country", "group", "weight", *PERSONA_ROLES)


def parse_span(text: str) -> tuple[float, float]:
    """``0:100`` -> (0.0, 100.0), the lowest below the highest."""
    try:
        low, high = (float(side) for side in text.split(":"))
    except ValueError:
        raise ValueError(f"range {text!r}: expected LOW:HIGH, two numbers (0:100)") from None
    if not low < high:
        raise ValueError(f"range {text!r}: the lowest must be below the highest")
    return low, high


def _text(parse: Callable[[str], Any]) -> BeforeValidator:
    """A flag's parser of its text; a value given already parsed (from Python: a tuple) passes as it is."""
    return BeforeValidator(lambda value: parse(value) if isinstance(value, str) else value)


def _names(value: str) -> tuple[str, ...]:
    """``V1,V2,...`` or ``@file`` (names separated by commas, spaces or new lines), each named once."""
    if value.startswith("@"):
        path = Path(value[1:]).expanduser()
        try:
            value = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--questions {path}: cannot read the list ({exc})") from None
    names = [name for name in re.split(r"[\s,;]+", value) if name]
    if not names:
        raise ConfigError("--questions: no variable names given")
    first: dict[str, int] = {}
    for index, name in enumerate(names):
        if first.setdefault(name.lower(), index) != index:
            raise ConfigError(f"--questions: variable {name} is listed twice")
    return tuple(names)


def _persona(value: str) -> Any:
    """``background``, ``all`` or the variables named (as ``--questions``)."""
    return value if value in (ALL, BACKGROUND) else _names(value)


def _existing(value: Path | None) -> Path | None:
    if value is not None and not value.is_file():
        raise ValueError("question set not found")
    return value


def _roles(value: str) -> Any:
    pairs = [tuple(side.strip() for side in part.split("=", 1)) for part in comma_list(value)]
    if not pairs or any(len(p) != 2 or p[0] not in IMPORT_ROLES or not p[1] for p in pairs):
        raise ValueError(f"expected ROLE=VAR,... with ROLE one of {', '.join(IMPORT_ROLES)} (VAR 'none': "
                         "no such variable)")
    return tuple(pairs)


def _multi(value: str) -> Any:
    """``NAME=V1,V2,...;NAME2=...`` or ``NAME`` (a multiple-response set of the file: no variables)."""
    sets = [part.partition("=") for part in value.split(";") if part.strip()]
    parsed = tuple((name.strip().lstrip("$"), tuple(comma_list(names))) for name, _, names in sets)
    if not parsed or any(not name or (eq and len(names) < 2)
                         for (name, names), (_, eq, _) in zip(parsed, sets)):
        raise ValueError("expected NAME=V1,V2,... (two variables or more; sets separated by ';') or the "
                         "name of the file's multiple-response set")
    return parsed


def _numeric(value: str) -> Any:
    """``V1,V2=0:100``: each name, with its range where one is given."""
    parts = [part.split("=", 1) for part in comma_list(value)]
    if not parts or any(not part[0].strip() for part in parts):
        raise ValueError("expected V1,V2=LOW:HIGH,... (a range is optional)")
    return tuple((p[0].strip(), parse_span(p[1]) if len(p) == 2 else None) for p in parts)


def _sizes(value: Any) -> Any:
    if not (parts := comma_list(value)):
        raise ValueError("expected comma-separated positive integers or 'all'")
    return tuple(count_or_all(part) for part in parts)


def _codes(value: Any) -> Any:
    from socbench.data.survey_file import canonical_code

    codes = tuple(code for part in comma_list(value) if (code := canonical_code(part)) is not None)
    if not codes and isinstance(value, str):
        raise ValueError("expected comma-separated codes")
    return codes


class ImportRequest(BaseModel):
    """The flags of ``socbench data import`` (``source``: its one positional argument)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Path = Field(description="the survey file: .dta, .sav, .zsav or .csv")
    out: Path = Field(description="the data folder to write (then: --data_dir there)")
    qa: Annotated[Path | None, AfterValidator(_existing)] = Field(
        None, description="an ISSP question set issp_qa_<slug>.json")
    questions: Annotated[tuple[str, ...] | None, _text(_names)] = Field(
        None, description="question variables V1,V2,... or @file (variable label = question, value labels = "
                          "options)")
    multi: Annotated[tuple[tuple[str, tuple[str, ...]], ...], _text(_multi)] = Field(
        (), description="multi-select questions, each asked once ('select all that apply'): NAME=V1,V2,... "
                        "(its dichotomous variables; sets separated by ';'), or NAME alone: the .sav file's "
                        "multiple-response set of that name")
    numeric: Annotated[tuple[tuple[str, tuple[float, float] | None], ...], _text(_numeric)] = Field(
        (), description="numeric questions V1,V2=0:100,... (unlabelled numbers: hours, a 0-100 thermometer), "
                        "asked for a number in the range given (default: the data's lowest to highest "
                        "non-missing value); added to --questions")
    country: str | None = Field(None, description="the country variable (default C_ALPHAN when present)")
    weight: str | None = Field(None, description="the design weight variable (default WEIGHT when present)")
    roles: Annotated[tuple[tuple[str, str], ...], _text(_roles)] = Field(
        (), description="what variables are: ROLE=VAR,... with ROLE respondent_id, country, group (a "
                        "grouping variable that is not a country: region, state, wave), weight, sex, age, "
                        "education, religion, party, employment; VAR 'none' for none. Roles not named are "
                        "proposed from the labels (import report)")
    study_country: str | None = Field(
        None, description="the study's one country (a name or code) when no variable holds it: the prompts "
                          "name it")
    persona: Annotated[str | tuple[str, ...], _text(_persona)] = Field(
        BACKGROUND, description="the persona's attributes: background (every variable that is not a numbered "
                                "questionnaire item), all, or V1,V2,... (@file)")
    slug: str | None = Field(None, description="file slug of the domain (default: from --qa or the file "
                                               "name)")
    name: str | None = Field(None, description="display name of the domain (default: ISSP's, or from the "
                                               "slug)")
    sizes: Annotated[tuple[int | Literal["all"], ...], BeforeValidator(_sizes)] = Field(
        (500, 1000, 2000), description="nested sample sizes; 'all' writes every respondent to "
                                       "A_GroundTruth_samplingall/ (then: socbench issp --dataset_size all)")
    seed: int = Field(42, ge=0, description="sampling seed")
    codebook: Path | None = Field(
        None, description="for a .csv source: the labels, as CSV (variable,label,code,value_label) or "
                          "ISSP-style JSON")
    replace: bool = Field(False, description="replace an existing domain of the same slug whole (every "
                                             "sample size; nothing of it kept)")
    bad_weights: Literal["error", "drop", "unweighted"] = Field(
        "error", description="respondents whose weight is missing, NaN, zero or negative: error (names "
                             "them), drop (leave them out of the samples, counted) or unweighted (import no "
                             "weights)")
    missing: Annotated[tuple[str, ...], BeforeValidator(_codes)] = Field(
        (), description="codes that mean 'no answer' for every question that does not offer them, e.g. "
                        "-9,-8,99 (besides the file's user-missing declarations and missing labels)")
    scale_conflict: Literal["file", "refuse"] = Field(
        "file", description="with --qa, a question whose options disagree with the file's value labels "
                            "(another range, wording or order): file (its options are the file's own, said "
                            "per question) or refuse")
    sep: str | None = Field(None, description="a .csv source's separator (default: detected among , ; tab |)")
    decimal: Literal[".", ","] | None = Field(
        None, description="a .csv source's decimal mark (default: ',' where the separator is not ',' and "
                          "numbers use it)")
