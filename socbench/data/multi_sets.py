"""``data import --multi``: which variables form a multi-select set (named, or a .sav file's multiple-response
set), each as its option (``types.MultiOption``) in the question file. Why apart from the question set:
each variable stays the dichotomy the file holds (its options, missing codes and value labels as any
question's), only the ``multi`` mark says it is asked with its set (``socbench.multi_select``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict

from socbench.data.survey_file import SurveyFile, canonical_code
from socbench.errors import ConfigError, DataError
from socbench.types import MultiOption

SEPARATORS = ":?-\u2013\u2014"


def _stem(labels: Sequence[str]) -> tuple[str, list[str]]:
    """The labels' shared stem up to its last separator ("News source: TV", "News source: Radio" -> "News
    source", ["TV", "Radio"]); none shared: ("", the labels)."""
    prefix = os.path.commonprefix(list(labels))
    cut = max(prefix.rfind(c) for c in SEPARATORS)
    rest = [label[cut + 1:].strip() for label in labels]
    if cut <= 0 or not all(rest):
        return "", list(labels)
    return prefix[:cut + (prefix[cut] == "?")].strip(), rest


def _file_set(survey: SurveyFile, name: str) -> tuple[list[str], str, str | None]:
    """A .sav's multiple-response set: its variables, label and counted value; one line when it is none."""
    found = next((key for key in survey.mr_sets if key.lstrip("$").lower() == name.lower()), None)
    if found is None:
        known = ", ".join(survey.mr_sets) or "none"
        raise DataError(f"{survey.path}: --multi {name}: give its variables (NAME=V1,V2,...); the file "
                        f"has no multiple-response set {name} (its sets: {known})")
    mr = survey.mr_sets[found]
    if not mr.get("is_dichotomy", mr.get("type") == "D"):
        raise DataError(f"{survey.path}: --multi {name}: a multiple-category set, not dichotomies; only a "
                        "dichotomy set is a multi-select question")
    return list(mr["variable_list"]), str(mr.get("label") or ""), canonical_code(mr.get("counted_value"))


def set_members(survey: SurveyFile, sets: Sequence[tuple[str, tuple[str, ...]]]) -> dict[str, MultiOption]:
    """Each set variable (as the file names it) -> its option: the set's question (the multiple-response
    set's label, else the variable labels' shared stem, else its name), its label, the code counted as
    selected (the set's counted value, else 1)."""
    members: dict[str, MultiOption] = {}
    for name, wanted in sets:
        names, question, selected = (list(wanted), "", "1") if wanted else _file_set(survey, name)
        found = [survey.find(v) for v in names]
        absent = next((v for v, f in zip(names, found) if f is None), None)
        if absent is not None:
            raise DataError(f"{survey.path}: variable {absent} (--multi {name}) is not in the file")
        stem, labels = _stem([survey.variables[v].key for v in found if v])
        for variable, label in zip(found, labels):
            if variable in members:
                raise ConfigError(f"--multi: variable {variable} is in two sets ({members[variable].set}, "
                                  f"{name})")
            members[str(variable)] = MultiOption(name, question or stem or name, label, selected or "1")
    return members


def with_sets(survey: SurveyFile, records: list[dict], members: dict[str, MultiOption]) -> None:
    """Marks each set variable's record of the question file ``multi``; one line for a variable whose
    selected code is not one of its answer codes."""
    for record in records:
        option = members.get(record["question_id"])
        if option is None:
            continue
        if option.selected not in record["answer"] or len(record["answer"]) < 2:
            raise DataError(f"{survey.path}: variable {record['question_id']} (--multi {option.set}) is no "
                            f"dichotomy with the selected code {option.selected} (its answer codes: "
                            f"{', '.join(record['answer'])})")
        record["multi"] = asdict(option)


def multi_pairs(pairs: list[tuple[str, str]], members: dict[str, MultiOption],
                qa: bool) -> list[tuple[str, str]]:
    """The questions to import: the named ones, then the set variables not among them."""
    if members and qa:
        raise ConfigError("--multi: only with --questions or alone (an ISSP question set --qa has no sets)")
    named = {name for name, _ in pairs}
    return pairs + [(name, name) for name in members if name not in named]

