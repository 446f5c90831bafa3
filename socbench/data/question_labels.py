"""A question set from a survey file's own labels (``data import --questions``).

Why: a study that is not ISSP has no curated ``issp_qa_*.json``; its variable labels are the
question texts and its value labels (and, for a scale labelled at some points only, its
range: ``question_scale``) the options. Each question's missing-value codes (SPSS
user-missing codes, codes labelled "Don't know", "Weiß nicht", "No answer" ..., ``--missing``)
go into its own record's ``missing``, so answers with them are excluded at scoring for that
question only. The result is written for the user to edit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from socbench.data.question_scale import QuestionDecision, decide
from socbench.data.survey_file import SurveyFile
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


def question_records(
    survey: SurveyFile,
    names: Sequence[str],
    counts: Mapping[str, Mapping[str, int]],
    extra_missing: Sequence[str] = (),
) -> tuple[list[dict], list[QuestionDecision]]:
    """``issp_qa`` records for the named variables, and each question's decision.

    Options and missing codes are decided per question (``question_scale.decide``) and
    written into the record (``answer``, ``missing``); a variable with fewer than two
    options cannot be asked and is an error naming it.
    """
    records: list[dict] = []
    decisions: list[QuestionDecision] = []
    for name in names:
        variable = survey.variables[name]
        decision = decide(variable, name, counts[name], extra_missing)
        if len(decision.options) < 2:
            raise DataError(
                f"{survey.path}: variable {name} has {len(decision.options)} labelled answer option(s); "
                f"a question needs its value labels (label it, or leave it out of --questions)"
            )
        decisions.append(decision)
        records.append({
            "question_id": name,
            "question": variable.key,
            "answer": decision.options,
            "special": {},
            "missing": {code: label for code, (label, _) in decision.missing.items()},
        })
    return records, decisions
