"""The question set ``data import`` writes: each question's options and missing codes from its labels *and*
its data (``decide``), a curated set (``--qa``) checked against the file's labels (``checked_decision``), or
a set built from the file's own labels (``--questions``), and its multi-select sets (``--multi``).

Why: a file's value labels are not always its answer scale (ESS and many ISSP files label a 0-10 scale
only at its ends), and a curated set may ask on another scale than the file codes (SocioBench's
Citizenship set: 1-3 where GESIS codes 1-7); only labels and data together tell. The rules (missing codes
per question, the scale rule, nothing silently dropped, scale conflicts) are in docs/own-survey.md.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from socbench.data.import_request import ImportRequest
from socbench.data.loaders import load_questions
from socbench.data.missing_labels import STATA_MISSING, is_missing_label, is_missing_option
from socbench.data.options import INVALID_CODE, code_order, exclusion, in_span, plain_number
from socbench.data.survey_file import R_NA, SYSTEM_MISSING, SurveyFile, Variable, canonical_code
from socbench.errors import ConfigError, DataError
from socbench.files import read_json
from socbench.types import MultiOption, Question, Span

NON_INTEGER = "non-integer code"
UNLABELLED = "code without a label (not in the question's options)"
_INTEGER = re.compile(r"^-?\d+$")


@dataclass(frozen=True)
class QuestionDecision:
    """What the import decided for one question, and what its data holds."""

    variable: str
    question_id: str
    options: dict[str, str]  # code -> label, in code order
    filled: tuple[str, ...] = ()  # codes the scale rule added
    missing: dict[str, tuple[str, str]] = field(default_factory=dict)  # code -> (label, source)
    counts: Mapping[str, int] = field(default_factory=dict)  # answers per code (blanks: SYSTEM_MISSING)
    conflicts: tuple[str, ...] = ()  # how a --qa set's options disagree with the file's (checked_decision)
    notes: tuple[str, ...] = ()  # other changes to the question set, one line each
    text: str | None = None  # the question text, where the import changed it
    numeric: Span | None = None  # a numeric question's range (``numeric_decision``): no options

    def scored(self, code: str) -> bool:
        """An answer that is scored: one of the options, or a number in a numeric question's range."""
        if self.numeric is not None:
            return code not in self.missing and in_span(code, self.numeric)
        return code in self.options

    def excluded(self) -> dict[str, int]:
        """Answers that will not be scored, by reason: ``data validate``'s (``options.exclusion``), a code not
        offered told apart as unlabelled or not an integer."""
        options = tuple(self.options.items())
        missing = {code: label for code, (label, _) in self.missing.items()}
        reasons: Counter[str] = Counter()
        for code, n in self.counts.items():
            reason = exclusion(None if code == SYSTEM_MISSING else code, options, missing, self.numeric)
            if reason == INVALID_CODE:
                reason = UNLABELLED if _INTEGER.match(code) else NON_INTEGER
            if reason:
                reasons[reason] += n
        return dict(sorted(reasons.items()))

    @property
    def answered(self) -> int:
        """Substantive answers: codes among the options (numbers in a numeric question's range)."""
        return sum(n for code, n in self.counts.items() if self.scored(code))

    def unoffered(self) -> dict[str, int]:
        """Codes in the data that are neither options nor missing, with their counts."""
        return {code: n for code, n in sorted(self.counts.items(), key=lambda kv: code_order(kv[0]))
                if not self.scored(code) and code not in self.missing and code != SYSTEM_MISSING}


def _file_missing(variable: Variable, codes: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Missing codes the file itself marks: declarations (SPSS user-missing, Stata .a-.z, R's NA in a
    CSV) first, then value labels."""
    labels = variable.value_labels
    out: dict[str, tuple[str, str]] = {}
    for code in sorted(set(codes) - {SYSTEM_MISSING} | set(labels), key=code_order):
        if variable.declared_missing(code):  # R's NA, Stata's .a-.z, SPSS user-missing
            kind = "no label" if STATA_MISSING.match(code) else "user-missing"
            out[code] = (labels.get(code, "R's NA in the CSV" if code == R_NA else kind),
                         "declared missing in the file")
        elif code in labels and is_missing_label(labels[code]):
            out[code] = (labels[code], "value label")
    return out


def _scale_fill(variable: Variable, options: Mapping[str, str], counts: Mapping[str, int],
                missing: Mapping[str, object]) -> list[str]:
    """Unlabelled integer codes of the range the data shows to be a scale (the scale rule)."""
    ints = [int(code) for code in options if _INTEGER.match(code)]
    if variable.is_string or len(ints) < 2:
        return []
    low, high = min(ints), max(ints)
    if not any(_INTEGER.match(code) and low < int(code) < high and code not in variable.value_labels
               and code not in missing for code in counts):
        return []
    return [str(c) for c in range(low, high + 1) if str(c) not in options and str(c) not in missing]


def decide(variable: Variable, question_id: str, counts: Mapping[str, int], extra_missing: Iterable[str] = (),
           offered: Mapping[str, str] | None = None) -> QuestionDecision:
    """The question's options and missing codes (docs/own-survey.md's rules); ``offered``: a curated
    question set's options (``--qa``, base and every country's), taken as they are, never missing."""
    missing = _file_missing(variable, counts)
    options = dict(offered) if offered is not None else {
        c: label for c, label in variable.value_labels.items() if c not in missing}
    filled = [] if offered is not None else _scale_fill(variable, options, counts, missing)
    options.update(zip(filled, filled))
    missing = {c: m for c, m in missing.items() if c not in options}
    missing.update({code: (variable.value_labels.get(code, f"{code}, named by --missing"), "--missing")
                    for code in extra_missing if code not in options and code not in missing})
    options, missing = ({c: m[c] for c in sorted(m, key=code_order)} for m in (options, missing))
    return QuestionDecision(variable.name, question_id, options, tuple(filled), missing, dict(counts))


def numeric_decision(variable: Variable, question_id: str, counts: Mapping[str, int],
                     extra_missing: Iterable[str] = (), span: Span | None = None) -> QuestionDecision:
    """A numeric question: the missing codes as ``decide`` finds them, and its range (``span``, else the
    data's lowest to highest value that is not missing); a file without one number is an error."""
    missing = decide(variable, question_id, counts, extra_missing, offered={}).missing
    if span is None:
        values = [float(c) for c in counts if c not in missing and in_span(c, (-math.inf, math.inf))]
        if not values or min(values) == max(values):
            raise DataError(f"{variable.name}: --numeric: the data hold {len(set(values))} distinct "
                            "number(s) that are not missing codes; give its range (--numeric NAME=LOW:HIGH)")
        span = (min(values), max(values))
    return QuestionDecision(variable.name, question_id, {}, (), missing, dict(counts), numeric=span)


_COUNTRIES = r"[A-Z]{2}(?:-[A-Z]{1,3})?(?:\s*[,/+]\s*[A-Z]{2}(?:-[A-Z]{1,3})?)*\s*:"


def label_words(code: str, label: str) -> tuple[str, ...]:
    """A label as the words that carry its meaning: case, punctuation, the code's own number and country
    notes aside."""
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
    """The question's decision under the set's options, or the file's where they disagree (a numeric
    question's: its range as the set declares it)."""
    if question.numeric is not None:
        return numeric_decision(variable, question.id, counts, extra_missing, question.numeric)
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


def question_set(survey: SurveyFile, request: ImportRequest, pairs: Sequence[tuple[str, str]],
                 counts: Mapping[str, Mapping[str, int]]) -> tuple[list[QuestionDecision], list[dict]]:
    """Each question's decision and the question file to write: ``--qa``'s set checked against the
    file's labels (``checked_decision``) with the file's missing codes added, else the set built from
    the labels of the named variables (``decide``, or ``numeric_decision`` for the ``--numeric`` ones,
    asked for a number); a variable with fewer than two options is an error naming it."""
    if request.qa is not None:
        qa = {q.id: q for q in load_questions(request.qa)}
        decisions = [checked_decision(survey.variables[name], qa[qid], counts[name], request.missing)
                     for name, qid in pairs]
        bad = [d for d in decisions if d.conflicts]
        if bad and request.scale_conflict == "refuse":  # one line naming the questions whose options disagree
            raise DataError(
                f"{survey.path}: {len(bad)} question(s) of {request.qa.name} are asked on another scale than "
                f"the file codes them ({', '.join(d.question_id for d in bad[:10])}"
                f"{' ...' if len(bad) > 10 else ''}): {bad[0].question_id} {bad[0].conflicts[0]} (without "
                "--scale_conflict refuse the file's own options are used)")
        return decisions, _with_missing(request.qa, decisions)
    numeric = {survey.find(name): span for name, span in request.numeric}
    records: list[dict] = []
    decisions = []
    for name, _ in pairs:
        variable, extra_missing = survey.variables[name], request.missing
        decision = (numeric_decision(variable, name, counts[name], extra_missing, numeric[name])
                    if name in numeric else decide(variable, name, counts[name], extra_missing))
        if decision.numeric is None and len(decision.options) < 2:
            raise DataError(f"{survey.path}: variable {name} has {len(decision.options)} labelled answer "
                            "option(s); a question needs its value labels (label it, declare a number "
                            "--numeric, or leave it out of --questions and --multi)")
        decisions.append(decision)
        missing = {code: label for code, (label, _) in decision.missing.items()}
        span = {"numeric": [plain_number(end) for end in decision.numeric]} if decision.numeric else {}
        records.append({"question_id": name, "question": variable.key, "answer": decision.options,
                        "special": {}, "missing": missing, **span})
    return decisions, records


def _with_missing(qa: Path, decisions: list[QuestionDecision]) -> list[dict]:
    """The question set with each question's missing codes from the file added to its ``missing``
    (the set's own labels win): exclusions are then reported as "missing code -9 (No answer)". A
    question whose options disagree with the file's gets the file's options and missing codes."""
    by_id = {d.question_id: d for d in decisions}
    records = read_json(qa, "question set")
    for record in records:
        decision = by_id[str(record["question_id"]).strip()]
        missing = {code: label for code, (label, _) in decision.missing.items()}
        if decision.conflicts:
            record.update(question=decision.text or record["question"], answer=decision.options, special={})
        record["missing"] = missing if decision.conflicts else {**missing, **(record.get("missing") or {})}
    return records


def check_answers(survey: SurveyFile, decisions: list[QuestionDecision]) -> None:
    """A question no respondent answered substantively cannot be scored: one line naming it."""
    for decision in decisions:
        if decision.answered == 0:
            held = ", ".join(f"{code}: {n}" for code, n in sorted(decision.counts.items())[:6]
                             if code != SYSTEM_MISSING)
            raise DataError(f"{survey.path}: variable {decision.variable} has no substantive answer in "
                            f"{survey.n_rows} rows (codes held: {held or 'only blanks'}); leave it out or "
                            "fix its labels")

# ``data import --multi``: which variables form a multi-select set (named, or a .sav file's multiple-response
# set), each as its option (``types.MultiOption``) marked on its record of the question file. Each variable
# stays the dichotomy the file holds (its options, missing codes and value labels as any question's); only
# the ``multi`` mark says it is asked with its set (``socbench.multi_select``).

_STEM_SEPARATORS = ":?-\u2013\u2014"


def _stem(labels: Sequence[str]) -> tuple[str, list[str]]:
    """The labels' shared stem up to its last separator ("News source: TV", "News source: Radio" -> "News
    source", ["TV", "Radio"]); none shared: ("", the labels)."""
    prefix = os.path.commonprefix(list(labels))
    cut = max(prefix.rfind(c) for c in _STEM_SEPARATORS)
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
        if (option := members.get(record["question_id"])) is None:
            continue
        if option.selected not in record["answer"] or len(record["answer"]) < 2:
            raise DataError(f"{survey.path}: variable {record['question_id']} (--multi {option.set}) is no "
                            f"dichotomy with the selected code {option.selected} (its answer codes: "
                            f"{', '.join(record['answer'])})")
        record["multi"] = asdict(option)

