"""The options and missing codes of one imported question, from its labels *and* its data.

Why: a file's value labels are not always its answer scale (ESS and many ISSP files label a 0-10 scale
only at its ends); labels alone cannot tell such a scale from a nominal set (Family V59: 1 "Yes", 2 "No",
6 "Doesn't apply"), but the data can. The rules, per question:

1. **Missing codes belong to the question**: declared user-missing in the file, else a missing value
   label (``is_missing_label``), else named by ``--missing`` and not one of its options.
2. **The scale rule**: the options are the labelled, non-missing codes; when a numeric variable's data
   holds unlabelled, non-missing integer codes strictly between its lowest and highest option, every
   integer of that range is an option, shown as the number where unlabelled (never for a fully
   labelled set such as V59 or any real ISSP question set).
3. **Nothing silently dropped**: codes neither offered nor missing stay in the answer file as recorded,
   are excluded at scoring as "code not offered", and are counted in the report.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from socbench.data.missing_labels import STATA_MISSING, is_missing_label
from socbench.data.options import NO_ANSWER, code_order, missing_reason
from socbench.data.survey_file import R_NA, SYSTEM_MISSING, Variable

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
    conflicts: tuple[str, ...] = ()  # how a question set's options disagree with the file's (scale_check)
    notes: tuple[str, ...] = ()  # other changes to the question set, one line each
    text: str | None = None  # the question text, where the import changed it

    def excluded(self) -> dict[str, int]:
        """Answers that will not be scored, by reason (the words ``data validate`` counts under)."""
        reasons: Counter[str] = Counter()
        for code, n in self.counts.items():
            if code in self.options:
                continue
            if code == SYSTEM_MISSING:
                reasons[NO_ANSWER] += n
            elif code in self.missing:
                reasons[missing_reason(code, self.missing[code][0])] += n
            else:
                reasons[UNLABELLED if _INTEGER.match(code) else NON_INTEGER] += n
        return dict(sorted(reasons.items()))

    @property
    def answered(self) -> int:
        """Substantive answers: codes among the options."""
        return sum(n for code, n in self.counts.items() if code in self.options)

    def unoffered(self) -> dict[str, int]:
        """Codes in the data that are neither options nor missing, with their counts."""
        return {code: n for code, n in sorted(self.counts.items(), key=lambda kv: code_order(kv[0]))
                if code not in self.options and code not in self.missing and code != SYSTEM_MISSING}


def _file_missing(variable: Variable, codes: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Missing codes the file itself marks: declarations (SPSS user-missing, Stata .a-.z, R's NA in a
    CSV) first, then value labels."""
    labels = variable.value_labels
    out: dict[str, tuple[str, str]] = {}
    for code in sorted(set(codes) - {SYSTEM_MISSING} | set(labels), key=code_order):
        if variable.declared_missing(code):  # R's NA, Stata's .a-.z, SPSS user-missing
            kind = "no label" if STATA_MISSING.match(code) else "user-missing"
            kind = "R's NA in the CSV" if code == R_NA else kind
            out[code] = (labels.get(code, kind), "declared missing in the file")
        elif code in labels and is_missing_label(labels[code]):
            out[code] = (labels[code], "value label")
    return out


def _scale_fill(variable: Variable, options: Mapping[str, str], counts: Mapping[str, int],
                missing: Mapping[str, object]) -> list[str]:
    """Unlabelled integer codes of the range the data shows to be a scale (rule 2)."""
    if variable.is_string:
        return []
    ints = [int(code) for code in options if _INTEGER.match(code)]
    if len(ints) < 2:
        return []
    low, high = min(ints), max(ints)
    if not any(_INTEGER.match(code) and low < int(code) < high and code not in variable.value_labels
               and code not in missing for code in counts):
        return []
    return [str(c) for c in range(low, high + 1) if str(c) not in options and str(c) not in missing]


def decide(variable: Variable, question_id: str, counts: Mapping[str, int], extra_missing: Iterable[str] = (),
           offered: Mapping[str, str] | None = None) -> QuestionDecision:
    """The question's options and missing codes (rules 1-2 of the module docstring); ``offered``: a
    curated question set's options (``--qa``, base and every country's), taken as they are, never missing."""
    missing = _file_missing(variable, counts)
    if offered is not None:
        options = dict(offered)
        filled: list[str] = []
    else:
        options = {c: label for c, label in variable.value_labels.items() if c not in missing}
        filled = _scale_fill(variable, options, counts, missing)
        options.update({code: code for code in filled})
    missing = {c: m for c, m in missing.items() if c not in options}
    for code in extra_missing:
        if code not in options and code not in missing:
            missing[code] = (variable.value_labels.get(code, f"{code}, named by --missing"), "--missing")
    options = {c: options[c] for c in sorted(options, key=code_order)}
    missing = {c: missing[c] for c in sorted(missing, key=code_order)}
    return QuestionDecision(variable.name, question_id, options, tuple(filled), missing, dict(counts))
