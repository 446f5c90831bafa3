"""What an imported question offers and excludes: its whole scale, its own missing codes.

Each case is a small file written with pyreadstat (.sav, .dta) or pandas (.csv + codebook),
imported with ``socbench data import`` and read back through the loader and the item
builder, asserting what a social scientist needs: no valid answer excluded, one question's
missing code never removes another question's answers, missing labels recognised in the
file's language, and every decision and exclusion in the import report.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from socbench.cli import main
from socbench.data.loaders import load_domain
from socbench.data.missing_labels import is_missing_label
from socbench.data.options import INVALID_CODE, build_items
from socbench.domains import get_domain
from socbench.manifest import read_manifest
from tests.conftest import ROOT

AGREE = {1: "Strongly agree", 2: "Agree", 3: "Neither agree nor disagree", 4: "Disagree",
         5: "Strongly disagree"}
ENDS = {0: "Completely dissatisfied", 10: "Completely satisfied"}


def _write(path: Path, frame: pd.DataFrame, labels: dict, value_labels: dict) -> Path:
    writer = pyreadstat.write_dta if path.suffix == ".dta" else pyreadstat.write_sav
    writer(frame, path, column_labels=labels, variable_value_labels=value_labels)
    return path


def _import(capsys, source: Path, out: Path, *argv: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["data", "import", str(source), "--out", str(out), *argv])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def _qa(out: Path, slug: str) -> dict[str, dict]:
    return {r["question_id"]: r for r in json.loads((out / "q&a" / f"issp_qa_{slug}.json").read_text())}


def _items(out: Path, slug: str, size: int) -> dict[str, list]:
    by_question: dict[str, list] = {}
    for item in build_items(load_domain(out, get_domain(slug, out), size)):
        by_question.setdefault(item.question_id, []).append(item)
    return by_question


# ------------------------------------------------------- the reproduction (1, 2)


@pytest.fixture(params=["sav", "dta"])
def two_questions(request, tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    """q1: agree/disagree with 8 "Can't choose"; q2: 0-10 labelled only at its ends."""
    rng = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame({
        "q1": rng.choice([1, 2, 3, 4, 5, 8], n).astype(float),
        "q2": rng.integers(0, 11, n).astype(float),
        "region": rng.choice([1.0, 2.0], n),
    })
    source = _write(
        tmp_path / f"survey.{request.param}", frame,
        {"q1": "Women should work", "q2": "How satisfied are you with your life", "region": "Region"},
        {"q1": {**AGREE, 8: "Can't choose"}, "q2": ENDS, "region": {1: "North", 2: "South"}},
    )
    return source, frame


def test_endpoint_scale_offers_every_point_and_missing_codes_stay_per_question(
    two_questions: tuple[Path, pd.DataFrame], tmp_path: Path, capsys
) -> None:
    source, frame = two_questions
    out = tmp_path / "out"
    code, err = _import(capsys, source, out, "--questions", "q1,q2", "--sizes", "400")
    assert code == 0, err
    qa = _qa(out, "survey")
    assert qa["q2"]["answer"] == {"0": ENDS[0], **{str(c): str(c) for c in range(1, 10)}, "10": ENDS[10]}
    assert qa["q2"]["missing"] == {}
    assert qa["q1"]["answer"] == {str(c): label for c, label in AGREE.items()}
    assert qa["q1"]["missing"] == {"8": "Can't choose"}
    assert read_manifest(out / "socbench.yaml").domains[0].missing_codes == ()
    items = _items(out, "survey", 400)
    assert len(items["q2"]) == 400 and all(i.excluded_reason is None for i in items["q2"])  # 1-9 kept
    assert all(len(i.options) == 11 and ("8", "8") in i.options for i in items["q2"])
    eights = [i for i in items["q2"] if i.true_code == "8"]
    assert len(eights) == int((frame["q2"] == 8).sum()) > 0  # q2's 8 is an answer, not q1's missing code
    excluded = Counter(i.excluded_reason for i in items["q1"] if i.excluded_reason)
    assert excluded == {"missing code 8 (Can't choose)": int((frame["q1"] == 8).sum())}
    report = (out / "import_report_survey.md").read_text()
    assert "q2: 11 options" in report and "filled in by the scale rule" in report
    assert "1, 2, 3, 4, 5, 6, 7, 8, 9" in report and "8 \"Can't choose\" (value label)" in report
    assert any("filled in by the scale rule" in line for line in err)  # the same report on stderr
    capsys.readouterr()
    assert main(["data", "validate", "--data_dir", str(out), "--dataset_size", "400", "--json"]) == 0
    validated = json.loads(capsys.readouterr().out)["domains"]["1"]
    assert validated["excluded_by_question"] == {"q1": dict(excluded)}


def test_missing_flag_never_excludes_a_questions_own_option(
    two_questions: tuple[Path, pd.DataFrame], tmp_path: Path, capsys
) -> None:
    source, frame = two_questions
    out = tmp_path / "out"
    code, err = _import(capsys, source, out, "--questions", "q1,q2,region", "--sizes", "400",
                        "--missing", "8,2")
    assert code == 0, err
    qa = _qa(out, "survey")
    assert set(qa["q2"]["answer"]) == {str(c) for c in range(11)} and qa["q2"]["missing"] == {}
    assert qa["q1"]["missing"] == {"8": "Can't choose"} and "2" in qa["q1"]["answer"]
    assert qa["region"]["answer"] == {"1": "North", "2": "South"}
    assert qa["region"]["missing"] == {"8": "8, named by --missing"}  # not an option there
    items = _items(out, "survey", 400)
    assert all(i.excluded_reason is None for i in items["q2"])


def test_v59_like_labelled_set_is_not_filled_and_strays_are_reported(tmp_path: Path, capsys) -> None:
    v59 = {1: "Yes, she worked for pay", 2: "No", 6: "Doesn't apply, mother not present",
           8: "Don't know, KR: don't know, refused", 9: "No answer"}
    frame = pd.DataFrame({"V59": [1.0, 2.0, 6.0, 8.0, 9.0] * 20 + [7.0] * 3})
    source = _write(tmp_path / "family.sav", frame, {"V59": "Mother worked"}, {"V59": v59})
    out = tmp_path / "out"
    code, err = _import(capsys, source, out, "--questions", "V59")
    assert code == 0, err
    (record,) = _qa(out, "family").values()
    assert record["answer"] == {"1": v59[1], "2": v59[2], "6": v59[6]}
    assert record["missing"] == {"8": v59[8], "9": v59[9]}
    report = (out / "import_report_family.md").read_text()
    assert "0 filled in by the scale rule" in report and "- filled in by the scale rule" not in report
    assert "neither offered nor missing (kept as recorded, excluded at scoring): 7 (3)" in report
    answers = json.loads((out / "A_GroundTruth_sampling500" / "issp_answer_family.json").read_text())
    assert sum(r["questions_answer"]["V59"] == 7 for r in answers) == 3  # kept as recorded


# ------------------------------------------------------------- languages (issue item 5)


def test_german_labels_without_declared_missing_values(tmp_path: Path, capsys) -> None:
    zustimmung = {1: "Stimme voll und ganz zu", 2: "Stimme eher zu", 3: "Stimme eher nicht zu",
                  4: "Stimme überhaupt nicht zu", -9: "Weiß nicht", -8: "Keine Angabe"}
    trifft = {1: "Trifft voll zu", 2: "Trifft nicht zu", -1: "Verweigert"}
    frame = pd.DataFrame({"F1": [1.0, 2.0, 3.0, 4.0, -9.0, -8.0] * 10, "F2": [1.0, 2.0, -1.0] * 20})
    source = _write(tmp_path / "allbus.dta", frame, {"F1": "Frage eins", "F2": "Frage zwei"},
                    {"F1": zustimmung, "F2": trifft})
    out = tmp_path / "out"
    code, err = _import(capsys, source, out, "--questions", "F1,F2", "--sizes", "60")
    assert code == 0, err
    qa = _qa(out, "allbus")
    assert qa["F1"]["missing"] == {"-9": "Weiß nicht", "-8": "Keine Angabe"} and len(qa["F1"]["answer"]) == 4
    assert qa["F2"]["answer"] == {"1": "Trifft voll zu", "2": "Trifft nicht zu"}  # an answer, not NAP
    assert qa["F2"]["missing"] == {"-1": "Verweigert"}
    items = _items(out, "allbus", 60)
    assert Counter(i.excluded_reason for i in items["F1"]) == {
        None: 40, "missing code -9 (Weiß nicht)": 10, "missing code -8 (Keine Angabe)": 10}


@pytest.mark.parametrize("label", [
    "Weiß nicht", "Weiss nicht", "Keine Angabe", "Verweigert", "k.A.", "Ne sait pas", "NSP", "Refus",
    "Sans réponse", "No sabe", "No contesta", "NS/NC", "Non so", "Nessuna risposta", "Não sabe",
    "Sem resposta", "Weet niet", "Geen antwoord", "Nie wiem", "Trudno powiedzieć", "Odmowa",
    "Nevím", "Vet inte", "Ved ikke", "Vet ikke", "En osaa sanoa", "わからない", "無回答",
    "Can't choose, CA:can't choose+no answer", "NAP, other countries", "System missing",
])
def test_missing_labels_in_the_issp_languages(label: str) -> None:
    assert is_missing_label(label)


@pytest.mark.parametrize("label", [
    "Trifft nicht zu", "Stimme überhaupt nicht zu", "No sabe leer ni escribir", "Nevada", "Refuse to pay",
    "Doesn't apply, mother not present", "NC", "Nie", "Non", "Jamais", "Nunca", "Keine Religion",
])
def test_answers_in_other_languages_are_not_missing(label: str) -> None:
    assert not is_missing_label(label)


# ------------------------------------------------------------ accepted without notice (6)


def test_zero_row_file_is_one_line_and_writes_nothing(tmp_path: Path, capsys) -> None:
    pd.DataFrame({"q": pd.Series([], dtype=float)}).to_csv(tmp_path / "empty.csv", index=False)
    (tmp_path / "book.csv").write_text("variable,label,code,value_label\nq,Q,1,Yes\nq,,2,No\n")
    out = tmp_path / "out"
    code, err = _import(capsys, tmp_path / "empty.csv", out, "--codebook", str(tmp_path / "book.csv"),
                        "--questions", "q")
    assert code == 2 and len(err) == 1 and "empty.csv" in err[0] and "0 rows" in err[0], err
    assert not out.exists()


def test_question_without_a_substantive_answer_is_an_error(tmp_path: Path, capsys) -> None:
    frame = pd.DataFrame({"q1": [1.0, 2.0] * 5, "q2": [8.0, 9.0] * 5})
    labels = {1: "Yes", 2: "No", 8: "Can't choose", 9: "No answer"}
    source = _write(tmp_path / "s.sav", frame, {}, {"q1": labels, "q2": labels})
    code, err = _import(capsys, source, tmp_path / "out", "--questions", "q1,q2")
    assert code == 2 and len(err) == 1 and "variable q2 has no substantive answer" in err[0], err
    assert not (tmp_path / "out").exists()


def test_non_integer_and_unlabelled_codes_are_counted_and_kept(tmp_path: Path, capsys) -> None:
    frame = pd.DataFrame({"q": ["1", "2", "3", "1.5", "7"] * 4})
    frame.to_csv(tmp_path / "s.csv", index=False)
    book = "variable,label,code,value_label\n" + "".join(f"q,Q,{c},{AGREE[c]}\n" for c in AGREE)
    (tmp_path / "book.csv").write_text(book)
    out = tmp_path / "out"
    code, err = _import(capsys, tmp_path / "s.csv", out, "--codebook", str(tmp_path / "book.csv"),
                        "--questions", "q")
    assert code == 0, err
    report = (out / "import_report_s.md").read_text()
    assert "non-integer code: 4" in report
    assert "code without a label (not in the question's options): 4" in report
    assert "1.5 (4), 7 (4)" in report
    answers = json.loads((out / "A_GroundTruth_sampling500" / "issp_answer_s.json").read_text())
    held = Counter(str(r["questions_answer"]["q"]) for r in answers)
    assert held == {"1": 4, "2": 4, "3": 4, "1.5": 4, "7": 4}
    items = _items(out, "s", 500)
    assert Counter(i.excluded_reason for i in items["q"]) == {None: 12, INVALID_CODE: 8}


def test_unlabelled_country_codes_warn(tmp_path: Path, capsys) -> None:
    frame = pd.DataFrame({"q": [1.0, 2.0, 1.0] * 4, "cntry": [1.0, 2.0, 7.0] * 4})
    source = _write(tmp_path / "s.sav", frame, {"cntry": "Country"},
                    {"q": {1: "Yes", 2: "No"}, "cntry": {1: "Germany", 2: "France"}})
    code, err = _import(capsys, source, tmp_path / "out", "--questions", "q", "--country", "cntry")
    assert code == 0, err
    (warning,) = [line for line in err if "without a label" in line]
    assert "cntry" in warning and "7 (4 respondents)" in warning


@pytest.mark.parametrize("where", ["option", "attribute"])
def test_oversized_label_is_one_line(where: str, tmp_path: Path, capsys) -> None:
    pd.DataFrame({"q": [1, 2] * 3, "note": [1, 1] * 3}).to_csv(tmp_path / "s.csv", index=False)
    huge = "x" * 1_000_001
    rows = [("q", "Q", "1", huge if where == "option" else "Yes"), ("q", "", "2", "No"),
            ("note", huge if where == "attribute" else "Note", "", "")]
    book = pd.DataFrame(rows, columns=["variable", "label", "code", "value_label"])
    book.to_csv(tmp_path / "b.csv", index=False)
    code, err = _import(capsys, tmp_path / "s.csv", tmp_path / "out", "--codebook", str(tmp_path / "b.csv"),
                        "--questions", "q")
    assert code == 2 and len(err) == 1 and "1,000,001 characters" in err[0], err
    named = "variable q: value label of code 1" if where == "option" else "variable note: variable label"
    assert named in err[0]


def test_manifest_missing_codes_stay_an_explicit_override(tmp_path: Path) -> None:
    """The domain-level list, written only by a user, still applies to every question."""
    shutil.copytree(ROOT / "data" / "example_study" / "Dataset_all", tmp_path / "d")
    path = tmp_path / "d" / "socbench.yaml"
    path.write_text(path.read_text().replace("missing_codes: []", "missing_codes: [3]"))
    items = _items(tmp_path / "d", "wellbeing", 100)
    q1 = items["Q1"]
    assert all("3" not in dict(i.options) for i in q1)
    threes = [i for i in q1 if i.true_code == "3"]
    assert threes and all(i.excluded_reason == "missing code 3 (Not very satisfied)" for i in threes)
    assert {i.excluded_reason for i in q1 if i.true_code == "-9"} == {"missing code -9 (No answer)"}
