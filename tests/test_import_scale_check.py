"""An answer is only ever scored against its own scale: a question set checked against the file.

A GESIS-shaped module file (Stata, written with pyreadstat: text ``C_ALPHAN``, value labels with
ISSP's "Can't choose"/"No answer" codes) is imported under a question set that asks some items on
other scales than the file codes them, as SocioBench's Citizenship set does: a 1-7 item under a
1-3 question, a 0-10 item shown as 1-5, an agree scale in reversed order. Every scored item's
label must be the file's label of its code; ``--scale_conflict refuse`` stops with one line. The
real question sets are checked against the real codebooks (22 of 59 Citizenship questions).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from socbench.cli import main
from socbench.data.loaders import load_domain, load_questions
from socbench.data.options import build_items
from socbench.data.question_labels import checked_decision, label_words, rescaled_text
from socbench.data.survey_file import Variable
from socbench.domains import get_domain

IMPORTANT = {1: "1, Not at all important", **{c: str(c) for c in range(2, 7)}, 7: "7, Very important",
             8: "Can't choose", 9: "No answer"}
AGREE = {1: "Agree strongly", 2: "Agree", 3: "Neither agree nor disagree", 4: "Disagree",
         5: "Disagree strongly", 8: "Can't choose", 9: "No answer"}
CARE = {1: "Mother at home, father full-time", 2: "Both full-time", 6: "Father at home, mother full-time",
        8: "Can't choose", 9: "No answer"}
LEFT_RIGHT = {0: "0, Left", **{c: f"{c:02d}" for c in range(1, 10)}, 10: "10, Right", 98: "Can't choose",
              99: "No answer"}
FILE_LABELS = {"V5": IMPORTANT, "V6": AGREE, "V7": AGREE, "V31": CARE, "V48": LEFT_RIGHT}
SUBSTANTIVE = {"V5": range(1, 8), "V6": range(1, 6), "V7": range(1, 6), "V31": (1, 2, 6), "V48": range(11)}


def _set_options(labels: dict[int, str]) -> dict[str, str]:
    return {str(c): label for c, label in labels.items() if c < 8}


QUESTION_SET = [
    {"question_id": "V5", "question": "On a scale of 1 to 3, where 1 is not at all important and 3 is very "
     "important, how important is it: Always to vote in elections",
     "answer": {"1": "1, Not at all important", "2": "2", "3": "3, Very important"}, "special": {}},
    {"question_id": "V6", "question": "Women should work", "answer": _set_options(AGREE), "special": {}},
    {"question_id": "V7", "question": "Men should work",  # reversed order
     "answer": {str(6 - c): AGREE[c] for c in range(1, 6)}, "special": {}},
    {"question_id": "V31", "question": "Best way to organise family life?", "answer": _set_options(CARE),
     "special": {"ES": {"6": "Not asked"}}},
    {"question_id": "V48", "question": "Where would you place yourself on a scale from 1 to 5 where 1 means "
     "the left and 5 means the right?",
     "answer": {"1": "1, Left", "2": "2", "3": "3", "4": "4", "5": "5, Right"}, "special": {}},
]


@pytest.fixture()
def module_file(tmp_path: Path) -> tuple[Path, Path, pd.DataFrame]:
    rng = np.random.default_rng(29)
    n = 300
    frame = pd.DataFrame({
        "C_ALPHAN": np.repeat(["DE", "ES", "TW"], n // 3),
        **{name: rng.choice(sorted(labels), n).astype(float) for name, labels in FILE_LABELS.items()},
        "SEX": rng.choice([1.0, 2.0], n),
    })
    source = tmp_path / "ZA6670.dta"
    pyreadstat.write_dta(frame, source, column_labels={"C_ALPHAN": "Country Prefix ISO 3166", "SEX": "Sex",
                                                       **{name: f"{name} item" for name in FILE_LABELS}},
                         variable_value_labels={**FILE_LABELS, "SEX": {1: "Male", 2: "Female"}})
    qa = tmp_path / "issp_qa_citizenship.json"
    qa.write_text(json.dumps(QUESTION_SET))
    return source, qa, frame


def _import(capsys, source: Path, qa: Path, out: Path, *argv: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["data", "import", str(source), "--out", str(out), "--qa", str(qa), "--sizes", "all", *argv])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_codes_are_scored_only_under_the_files_own_labels(module_file, tmp_path: Path, capsys) -> None:
    source, qa, frame = module_file
    out = tmp_path / "out"
    code, err = _import(capsys, source, qa, out)
    assert code == 0, err
    assert any("3 questions asked on the file's own options" in line and "V5, V7, V48" in line
               for line in err)
    assert len(err) < 15  # a summary; the detail is in the file
    qa_file = out / "q&a" / "issp_qa_citizenship.json"
    written = {q["question_id"]: q for q in json.loads(qa_file.read_text())}
    assert written["V5"]["answer"] == _set_options(IMPORTANT)
    assert "1 to 7, where 1 is not at all important and 7 is very important" in written["V5"]["question"]
    assert "from 0 to 10 where 0 means the left and 10 means the right" in written["V48"]["question"]
    assert written["V7"]["answer"] == _set_options(AGREE)
    assert written["V6"] == {**QUESTION_SET[1], "missing": {"8": "Can't choose", "9": "No answer"}}
    assert written["V31"]["special"] == {"ES": {"6": "Not asked"}}  # kept: the loader withholds it

    items = build_items(load_domain(out, get_domain("citizenship", out), "all"))
    scored = [i for i in items if i.excluded_reason is None]
    for item in scored:  # the invariant: a code is only ever shown under the file's label
        assert dict(item.options)[item.true_code] == FILE_LABELS[item.question_id][int(item.true_code)]
    expected = sum(int(frame[q].isin(codes).sum()) for q, codes in SUBSTANTIVE.items())
    spanish_six = int(((frame["C_ALPHAN"] == "ES") & (frame["V31"] == 6)).sum())
    assert len(scored) == expected - spanish_six
    spanish = [i for i in items if i.question_id == "V31" and i.country_code == "ES"]
    assert spanish and all("6" not in dict(i.options) for i in spanish)
    assert Counter(i.excluded_reason for i in spanish if i.true_code == "6") == {"missing code 6 (Not asked)":
                                                                                 spanish_six}
    report = (out / "import_report_citizenship.md").read_text()
    assert '3 "3, Very important" is "3" in the file' in report
    assert '1 "1, Left" is "01" in the file' in report
    assert 'not offered, labelled as missing: 6 "Not asked" (ES)' in report


def test_refuse_is_one_line_and_writes_nothing(module_file, tmp_path: Path, capsys) -> None:
    source, qa, _ = module_file
    code, err = _import(capsys, source, qa, tmp_path / "out", "--scale_conflict", "refuse")
    assert code == 2 and len(err) == 1, err
    assert "3 question(s) of issp_qa_citizenship.json" in err[0] and "(V5, V7, V48)" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("code", "one", "other", "same"), [
    ("1", "1, Not at all important", "Not at all important", True),
    ("0", "00 - No trust at all", "0, No trust at all", True),
    ("6", "women should decide", "TW: women should decide", True),
    ("6", "Never or almost never", "Never or almost never; PL: 1-2 times a year + Never", True),
    ("3", "3, Very important", "3", False),
    ("1", "Agree strongly", "Agree", False),
    ("5", "Top, Highest, 05", "05", False),
])
def test_label_words(code: str, one: str, other: str, same: bool) -> None:
    assert (label_words(code, one) == label_words(code, other)) is same


def test_rescaled_text_moves_only_the_scale_ends() -> None:
    text = ("Here is a scale from 1 to 5 where 1 is 'All information public' and 5 is 'Security first'. "
            "Q5 asks about 15 is 5 items.")
    assert rescaled_text(text, ["1", "2", "3", "4", "5"], [str(c) for c in range(11)]) == (
        "Here is a scale from 0 to 10 where 0 is 'All information public' and 10 is 'Security first'. "
        "Q5 asks about 15 is 5 items.")
    assert rescaled_text("How often?", ["1", "2"], ["1", "2", "3"]) == "How often?"


EXPECTED_CONFLICTS = {"citizenship": 22, "environment": 4, "family": 0, "health": 0, "nationalidentity": 0,
                      "religion": 0, "roleofgovernment": 1, "socialinequality": 4, "socialnetworks": 2,
                      "workorientations": 0}


def test_real_question_sets_against_their_codebooks(shared_issp: Path) -> None:
    """The curated SocioBench sets against the GESIS codebooks' value labels: the questions asked on
    another scale than the file codes them, and nothing else (country notes, subsets agree)."""
    found = {}
    for slug in EXPECTED_CONFLICTS:
        books = (shared_issp / "codebooks").glob("*.json")
        book = next(p for p in books if p.stem.lower().endswith(f"_{slug}"))
        entries = {e["domain"].lower(): e for e in json.loads(book.read_text())}
        conflicts = []
        for question in load_questions(shared_issp / "qa" / f"issp_qa_{slug}.json"):
            entry = entries[question.id.lower()]
            variable = Variable(question.id, entry["meaning"], {c: v for c, v in entry["content"].items()})
            if checked_decision(variable, question, {}, ()).conflicts:
                conflicts.append(question.id)
        found[slug] = len(conflicts)
    assert found == EXPECTED_CONFLICTS
