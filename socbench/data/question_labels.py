"""A question set from a survey file's own labels (``data import --questions``).

Why: a study that is not ISSP has no curated ``issp_qa_*.json``; its variable labels are the
question texts and its value labels the options. Missing-value codes (SPSS user-missing
codes, and codes labelled "Don't know", "Refused", "No answer" ...) are not options: they
go to the manifest's ``missing_codes`` so answers with them are excluded at scoring.
The result is written for the user to edit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from socbench.data.loaders import is_missing_label
from socbench.data.survey_file import SurveyFile, Variable
from socbench.errors import ConfigError, DataError


def parse_question_list(text: str) -> list[str]:
    """``V1,V2,...`` or ``@file`` (names separated by commas, spaces or new lines)."""
    if text.startswith("@"):
        path = Path(text[1:]).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--questions {path}: cannot read the list ({exc})") from None
    names = [name for name in re.split(r"[\s,;]+", text) if name]
    if not names:
        raise ConfigError("--questions: no variable names given")
    seen: set[str] = set()
    for name in names:
        if name.lower() in seen:
            raise ConfigError(f"--questions: variable {name} is listed twice")
        seen.add(name.lower())
    return names


def missing_codes_of(variable: Variable) -> list[str]:
    """Codes of a variable that are not substantive answers, in code order."""
    codes = set(variable.missing_codes)
    codes |= {code for code, label in variable.value_labels.items() if is_missing_label(label)}
    return sorted(codes, key=_code_order)


def _code_order(code: str) -> tuple[int, float, str]:
    try:
        return (0, float(code), code)
    except ValueError:
        return (1, 0.0, code)


def question_records(survey: SurveyFile, names: Sequence[str]) -> tuple[list[dict], list[str]]:
    """``issp_qa`` records for the named variables, and every missing code met on the way.

    Options keep the file's code order (ascending), without missing codes; a variable with
    no value labels (or only missing ones) cannot be asked and is an error naming it.
    """
    records: list[dict] = []
    missing: set[str] = set()
    for name in names:
        variable = survey.variables[name]
        dropped = missing_codes_of(variable)
        options = {
            code: label
            for code, label in sorted(variable.value_labels.items(), key=lambda kv: _code_order(kv[0]))
            if code not in dropped
        }
        if len(options) < 2:
            raise DataError(
                f"{survey.path}: variable {name} has {len(options)} labelled answer option(s); "
                f"a question needs its value labels (label it, or leave it out of --questions)"
            )
        missing.update(dropped)
        records.append({"question_id": name, "question": variable.key, "answer": options, "special": {}})
    return records, sorted(missing, key=_code_order)
