"""A question set from a survey file's own labels (``data import --questions``).

Why: a non-ISSP study has no curated ``issp_qa_*.json``. Each question's missing codes go into its
own record's ``missing``, so they are excluded for that question only. Written for the user to edit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from socbench.data.loaders import load_questions
from socbench.data.question_scale import QuestionDecision, decide
from socbench.data.scale_check import checked_decision, file_record, refuse_conflicts
from socbench.data.survey_file import SYSTEM_MISSING, SurveyFile
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


def question_records(survey: SurveyFile, names: Sequence[str], counts: Mapping[str, Mapping[str, int]],
                     extra_missing: Sequence[str] = ()) -> tuple[list[dict], list[QuestionDecision]]:
    """``issp_qa`` records for the named variables, and each question's decision
    (``question_scale.decide``); a variable with fewer than two options is an error naming it."""
    records: list[dict] = []
    decisions: list[QuestionDecision] = []
    for name in names:
        variable = survey.variables[name]
        decision = decide(variable, name, counts[name], extra_missing)
        if len(decision.options) < 2:
            raise DataError(f"{survey.path}: variable {name} has {len(decision.options)} labelled answer "
                            "option(s); a question needs its value labels (label it, or leave it out of "
                            "--questions)")
        decisions.append(decision)
        missing = {code: label for code, (label, _) in decision.missing.items()}
        records.append({"question_id": name, "question": variable.key, "answer": decision.options,
                        "special": {}, "missing": missing})
    return records, decisions


def question_set(survey: SurveyFile, qa_path: Path | None, pairs: Sequence[tuple[str, str]],
                 counts: Mapping[str, Mapping[str, int]], extra_missing: Sequence[str] = (),
                 scale_conflict: str = "file") -> tuple[list[QuestionDecision], bytes]:
    """Each question's decision and the question file to write: ``--qa``'s set checked against the
    file's labels (``scale_check``) with the file's missing codes added, else the set built from
    the labels of the named variables."""
    if qa_path is not None:
        qa = {q.id: q for q in load_questions(qa_path)}
        decisions = [checked_decision(survey.variables[name], qa[qid], counts[name], extra_missing)
                     for name, qid in pairs]
        if scale_conflict == "refuse":
            refuse_conflicts(survey.path, qa_path, decisions)
        return decisions, _with_missing(qa_path, decisions)
    records, decisions = question_records(survey, [name for name, _ in pairs], counts, extra_missing)
    return decisions, json_bytes(records)


def json_bytes(data: object) -> bytes:
    """Indented UTF-8 JSON with a final new line, as every file the import writes."""
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _with_missing(qa: Path, decisions: list[QuestionDecision]) -> bytes:
    """The question set with each question's missing codes from the file added to its ``missing``
    (the set's own labels win): exclusions are then reported as "missing code -9 (No answer)". A
    question whose options disagree with the file's gets the file's (``scale_check.file_record``)."""
    by_id = {d.question_id: d for d in decisions}
    records = []
    for record in json.loads(qa.read_text(encoding="utf-8")):
        decision = by_id[str(record["question_id"]).strip()]
        own = record.get("missing") or {}
        record["missing"] = {**{code: label for code, (label, _) in decision.missing.items()}, **own}
        records.append(file_record(record, decision))
    return json_bytes(records)


def check_answers(survey: SurveyFile, decisions: list[QuestionDecision]) -> None:
    """A question no respondent answered substantively cannot be scored: one line naming it."""
    for decision in decisions:
        if decision.answered == 0:
            held = ", ".join(f"{code}: {n}" for code, n in sorted(decision.counts.items())[:6]
                             if code != SYSTEM_MISSING)
            raise DataError(f"{survey.path}: variable {decision.variable} has no substantive answer in "
                            f"{survey.n_rows} rows (codes held: {held or 'only blanks'}); leave it out or "
                            "fix its labels")
