"""A question set's options checked against the file's own value labels (``data import --qa``).

Why: a curated set may ask on another scale than the file codes (SocioBench's Citizenship set asks 22
of 59 questions 1-3 or 1-5 where GESIS codes 1-7 or 0-10): a respondent's 3 of 7 would score as "3, Very
important". Labels are compared as words (case, punctuation, the code's own number and country notes
aside); where they disagree the question gets the file's own options (its overrides dropped, a "1 to 3"
in its text rescaled) and the report says so, or ``--scale_conflict refuse`` stops the import. Country
overrides are checked only against the file's missing codes: a file holds one label per code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from socbench.data.missing_labels import is_missing_option
from socbench.data.question_scale import QuestionDecision, decide
from socbench.data.survey_file import Variable
from socbench.errors import DataError
from socbench.types import Question

_COUNTRIES = r"[A-Z]{2}(?:-[A-Z]{1,3})?(?:\s*[,/+]\s*[A-Z]{2}(?:-[A-Z]{1,3})?)*\s*:"


def label_words(code: str, label: str) -> tuple[str, ...]:
    """A label as the words that carry its meaning (see the module docstring)."""
    text = re.split(rf"[;,]\s*{_COUNTRIES}", re.sub(rf"^\s*{_COUNTRIES}\s*", "", label))[0]
    words = (str(int(w)) if w.isdigit() else w for w in re.findall(r"\w+", text.lower()))
    return tuple(w for w in words if w != code.lstrip("-"))


def _conflicts(question: Question, own: QuestionDecision) -> tuple[str, ...]:
    """Each code the set offers under another meaning than the file's, as one phrase."""
    out = []
    for country, options in [("", question.options), *question.special.items()]:
        for code, label in options.items():
            where = f" ({country})" if country else ""
            if is_missing_option(code, label):
                continue
            file_label = own.missing[code][0] if code in own.missing else own.options.get(code)
            noted = country and re.search(rf"\b{re.escape(country)}\b[^:;]*:", file_label or "")
            if code in own.missing and not noted:  # "No answer; TW: I used to" is TW's answer
                out.append(f'{code} "{label}"{where} is a missing code in the file ("{file_label}")')
            elif not country and file_label is not None and label_words(code, label) != label_words(
                    code, file_label):
                out.append(f'{code} "{label}" is "{own.options[code]}" in the file')
    return tuple(out)


def _span(codes: Sequence[str]) -> tuple[int, int] | None:
    ints = [int(c) for c in codes if re.fullmatch(r"-?\d+", c)]
    return (min(ints), max(ints)) if len(ints) > 1 else None


def rescaled_text(text: str, set_codes: Sequence[str], file_codes: Sequence[str]) -> str:
    """"on a scale of 1 to 3, where 1 is ... and 3 is ..." -> the file's ends, where the text names them."""
    old, new = _span(set_codes), _span(file_codes)
    if old is None or new is None or old == new or not re.search(rf"\b{old[0]} to {old[1]}\b", text):
        return text
    ends = {str(old[0]): str(new[0]), str(old[1]): str(new[1])}
    pattern = rf"\b{old[0]} to {old[1]}\b|(?<![\w-])(?:{old[0]}|{old[1]})(?= (?:is|means)\b)"
    return re.sub(pattern, lambda m: f"{new[0]} to {new[1]}" if " to " in m[0] else ends[m[0]], text)


def checked_decision(variable: Variable, question: Question, counts: Mapping[str, int],
                     extra_missing: Sequence[str]) -> QuestionDecision:
    """The question's decision under the set's options, or the file's where they disagree."""
    withheld = [f'{code} "{label}"' + (f" ({country})" if country else "")
                for country, options in [("", question.options), *question.special.items()]
                for code, label in options.items() if is_missing_option(code, label)]
    notes = (f"not offered, labelled as missing: {', '.join(withheld)}",) if withheld else ()
    offered = {c: label for o in (*question.special.values(), question.options) for c, label in o.items()
               if not is_missing_option(c, label)}
    own = decide(variable, question.id, counts, extra_missing)
    conflicts = _conflicts(question, own) if variable.value_labels else ()
    if not variable.value_labels:
        notes += (f"the file does not label {variable.name}: the question set's options are used unchecked",)
    if not conflicts:
        return replace(decide(variable, question.id, counts, extra_missing, offered=offered), notes=notes)
    text = rescaled_text(question.text, list(question.options), list(own.options))
    if text != question.text:
        notes += ("question text rescaled to the file's ends: " + text,)
    if question.special:
        notes += (f"country overrides of the question set dropped: {', '.join(question.special)}",)
    return replace(own, conflicts=conflicts, notes=notes, text=text)


def refuse_conflicts(source: Path, qa: Path, decisions: Sequence[QuestionDecision]) -> None:
    """``--scale_conflict refuse``: one line naming the questions whose options disagree."""
    bad = [d for d in decisions if d.conflicts]
    if bad:
        raise DataError(
            f"{source}: {len(bad)} question(s) of {qa.name} are asked on another scale than the file codes "
            f"them ({', '.join(d.question_id for d in bad[:10])}{' ...' if len(bad) > 10 else ''}): "
            f"{bad[0].question_id} {bad[0].conflicts[0]} (without --scale_conflict refuse the file's own "
            f"options are used)"
        )


def file_record(record: dict, decision: QuestionDecision) -> dict:
    """The question set's record with the file's options, where they replaced the set's."""
    if not decision.conflicts:
        return record
    return {**record, "question": decision.text or record["question"], "answer": decision.options,
            "special": {}, "missing": {code: label for code, (label, _) in decision.missing.items()}}
