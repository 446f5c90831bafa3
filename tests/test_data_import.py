"""``socbench data import`` on files written by pyreadstat and pandas: labels, codebooks, errors.

Every bad input is one stderr line naming the file and the variable, exit 2, and nothing
is written. The example study in ``data/example_study`` is regenerated from its code and
re-imported byte for byte.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from socbench.cli import main
from socbench.data.example_study import MISSING_LABELS, QUESTIONS, SAV_NAME, write_study
from socbench.data.loaders import load_domain
from socbench.domains import DOMAINS, domain_table, get_domain, select_domains
from socbench.errors import ConfigError, DataError
from socbench.manifest import read_manifest
from tests.conftest import ROOT

EXAMPLE = ROOT / "data" / "example_study"


def _small_frame(n: int = 60, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "region": rng.choice(["North", "South"], n),
            "age": rng.integers(18, 90, n),
            "q1": rng.choice([1, 2, 3, -9], n),
            "q2": rng.choice([1, 2, 98], n),
        }
    )


CSV_BOOK = [
    ("id", "Respondent ID number", "", ""),
    ("region", "Region", "", ""),
    ("age", "Age of respondent", "", ""),
    ("q1", "How satisfied are you with your life?", "1", "Very"),
    ("q1", "", "2", "Fairly"),
    ("q1", "", "3", "Not very"),
    ("q1", "", "-9", "Refused"),
    ("q2", "Do you trust the government?", "1", "Yes"),
    ("q2", "", "2", "No"),
    ("q2", "", "98", "Don't know"),
]


def _run(capsys, *argv: str) -> tuple[int, list[str]]:
    code = main(["data", "import", *argv])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return code, err


# ----------------------------------------------------------------------------- CSV


@pytest.mark.parametrize("book_format", ["csv", "json"])
def test_csv_with_a_codebook(tmp_path: Path, capsys, book_format: str) -> None:
    frame = _small_frame()
    frame.to_csv(tmp_path / "life.csv", index=False)
    if book_format == "csv":
        pd.DataFrame(CSV_BOOK, columns=["variable", "label", "code", "value_label"]).to_csv(
            tmp_path / "book.csv", index=False
        )
    else:
        entries: dict[str, dict] = {}
        for name, label, code, value in CSV_BOOK:
            entry = entries.setdefault(name, {"domain": name, "meaning": label, "content": {}})
            if code:
                entry["content"][code] = value
        (tmp_path / "book.json").write_text(json.dumps(list(entries.values())))
    out = tmp_path / "out"
    code, err = _run(
        capsys,
        str(tmp_path / "life.csv"),
        "--codebook",
        str(tmp_path / f"book.{book_format}"),
        "--out",
        str(out),
        "--questions",
        "q1,Q2",
        "--sizes",
        "20,100",
        "--name",
        "Life",
    )
    assert code == 0, err
    qa = json.loads((out / "q&a" / "issp_qa_life.json").read_text())
    assert qa == [
        {
            "question_id": "q1",
            "question": "How satisfied are you with your life?",
            "answer": {"1": "Very", "2": "Fairly", "3": "Not very"},
            "special": {},
            "missing": {"-9": "Refused"},
        },
        {
            "question_id": "q2",
            "question": "Do you trust the government?",
            "answer": {"1": "Yes", "2": "No"},
            "special": {},
            "missing": {"98": "Don't know"},
        },
    ]
    manifest = read_manifest(out / "socbench.yaml")
    (domain,) = manifest.domains
    assert (domain.id, domain.name, domain.slug, domain.country_attribute) == (1, "Life", "life", None)
    assert domain.missing_codes == ()  # each question carries its own missing codes
    records = json.loads((out / "A_GroundTruth_sampling100" / "issp_answer_life.json").read_text())
    assert len(records) == 60  # a size above the respondent count keeps them all
    for record in records:
        row = frame.iloc[record["person_id"] - 10_000_001]
        assert record["attributes"] == {
            "Respondent ID number": str(row["id"]),
            "Region": row["region"],
            "Age of respondent": str(row["age"]),
        }
        assert record["questions_answer"] == {"q1": int(row["q1"]), "q2": int(row["q2"])}
    data = load_domain(out, get_domain("life", out), 20)
    assert len(data.respondents) == 20 and data.unmapped_countries == {}
    assert all(set(q.options) <= {"1", "2", "3"} for q in data.questions)


# --------------------------------------------------------------------------- errors


def _sav(
    path: Path, frame: pd.DataFrame, labels: dict | None = None, value_labels: dict | None = None
) -> Path:
    pyreadstat.write_sav(frame, path, column_labels=labels, variable_value_labels=value_labels)
    return path


@pytest.fixture
def survey(tmp_path: Path) -> Path:
    frame = pd.DataFrame(
        {
            "C_ALPHAN": ["DE", "FR", "JP"] * 4,
            "V5": [1.0, 2.0, 8.0] * 4,
            "V6": [1.0, 2.0, 2.0] * 4,
            "NUMCTRY": [276.0, 250.0, 392.0] * 4,
            "NOTE": ["a", "b", "c"] * 4,
            "AGE": [30.0] * 12,
        }
    )
    return _sav(
        tmp_path / "survey.sav",
        frame,
        {"C_ALPHAN": "Country", "V5": "Question five", "V6": "Question six"},
        {"V5": {1: "Yes", 2: "No", 8: "Can't choose"}, "V6": {1: "Yes", 2: "No"}},
    )


def _qa(path: Path, ids: list[str]) -> Path:
    path.write_text(
        json.dumps([{"question_id": q, "question": q, "answer": {"1": "Yes", "2": "No"}} for q in ids])
    )
    return path


@pytest.mark.parametrize(
    "case, needles",
    [
        ("garbage", ["broken.dta", "cannot read as a Stata file"]),
        ("extension", ["survey.xlsx", "unknown survey format"]),
        ("absent", ["nothere.sav", "survey file not found"]),
        ("questions", ["survey.sav", "variable V99 (--questions) is not in the file"]),
        ("qa", ["survey.sav", "variable V77 of the question set", "issp_qa_x.json"]),
        ("country", ["survey.sav", "country variable CNTRY (--country) is not in the file"]),
        ("no_c_alphan", ["nocountry.sav", "country variable C_ALPHAN is not in the file"]),
        ("unlabelled", ["survey.sav", "country variable NUMCTRY is unlabelled"]),
        ("no_labels", ["survey.sav", "variable AGE has 0 labelled answer option(s)", "--numeric"]),
        ("weight", ["survey.sav", "weight variable NOTE is text"]),
        ("csv_book", ["life.csv", "needs --codebook"]),
        ("manifest", ["socbench.yaml", "field 'domains.0.slug'"]),
        ("slug", ["--slug 'Bad Slug'"]),
        ("both", ["--qa and --questions"]),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    case: str, needles: list[str], survey: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "out"
    qa = _qa(tmp_path / "issp_qa_x.json", ["V5", "V77"])
    args = {
        "garbage": [str((tmp_path / "broken.dta").resolve()), "--questions", "V5"],
        "extension": [str(tmp_path / "survey.xlsx"), "--questions", "V5"],
        "absent": [str(tmp_path / "nothere.sav"), "--questions", "V5"],
        "questions": [str(survey), "--questions", "V5,V99"],
        "qa": [str(survey), "--qa", str(qa)],
        "country": [str(survey), "--questions", "V5", "--country", "CNTRY"],
        "no_c_alphan": [
            str(_sav(tmp_path / "nocountry.sav", pd.DataFrame({"V5": [1.0, 2.0]}))),
            "--qa",
            str(_qa(tmp_path / "issp_qa_y.json", ["V5"])),
        ],
        "unlabelled": [str(survey), "--questions", "V5", "--country", "NUMCTRY"],
        "no_labels": [str(survey), "--questions", "V5,AGE"],
        "weight": [str(survey), "--questions", "V5", "--weight", "NOTE"],
        "csv_book": [str(tmp_path / "life.csv"), "--questions", "q1"],
        "manifest": [str(survey), "--questions", "V5"],
        "slug": [str(survey), "--questions", "V5", "--slug", "Bad Slug"],
        "both": [str(survey), "--questions", "V5", "--qa", str(qa)],
    }[case]
    (tmp_path / "broken.dta").write_bytes(b"this is not a Stata file")
    _small_frame().to_csv(tmp_path / "life.csv", index=False)
    if case == "manifest":
        out.mkdir()
        (out / "socbench.yaml").write_text("domains:\n  - {id: 1, name: X, slug: 'Not OK'}\n")
    code, err = _run(capsys, *args, "--out", str(out))
    assert code == 2 and len(err) == 1, err
    assert all(needle in err[0] for needle in needles), err[0]
    assert not list(out.glob("A_GroundTruth_sampling*")) and not (out / "q&a").exists()


@pytest.mark.parametrize("flag, value, says", [
    ("--sizes", "500,0,all", "expected a positive integer or 'all', got '0'"),
    ("--roles", "sex", "expected ROLE=VAR,... with ROLE one of respondent_id"),
    ("--missing", ",", "expected comma-separated codes"),
    ("--bad-weights", "maybe", "Input should be 'error', 'drop' or 'unweighted'"),
    ("--seed", "-1", "greater than or equal to 0"),
    ("--qa", "nothere.json", "question set not found"),
])
def test_a_bad_flag_value_is_one_line_naming_the_flag(flag: str, value: str, says: str, tmp_path: Path,
                                                      capsys) -> None:
    """The flags come from ImportRequest's fields (cli.add_config_flags): a bad value reads as a study's."""
    code, err = _run(capsys, str(tmp_path / "survey.sav"), "--out", str(tmp_path / "out"), flag, value)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"socbench: error: --{flag[2:].replace('-', '_')} ") and says in err[0], err[0]
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------- manifest


def test_without_a_manifest_the_ten_issp_domains(demo_data: Path) -> None:
    assert domain_table(demo_data) == DOMAINS == domain_table(None)
    assert [d.id for d in select_domains("all", 7, demo_data)] == [7, 8, 9, 10, 11]
    with pytest.raises(ConfigError, match="--domain_id 5 .Leisure"):
        get_domain(5, demo_data)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("domains: []\n", "field 'domains'"),
        (
            "domains:\n  - {id: 1, name: A, slug: a}\n  - {id: 1, name: B, slug: b}\n",
            "domains.1.id 1 repeats",
        ),
        ("domains:\n  - {id: 1, name: A, slug: a, colour: red}\n", "field 'domains.0.colour'"),
        ("domains:\n  - {id: 0, name: A, slug: a}\n", "field 'domains.0.id'"),
        ("domains:\n  - {id: 1, name: 'A/B', slug: a}\n", "field 'domains.0.name'"),
        (
            "domains:\n  - {id: 1, name: A, slug: a, answer_file: ../x.json}\n",
            "field 'domains.0.answer_file'",
        ),
        ("domains: [\n", "malformed YAML"),
        ("- 1\n", "expected a mapping"),
    ],
)
def test_bad_manifest_is_one_line_naming_the_field(tmp_path: Path, text: str, needle: str) -> None:
    (tmp_path / "q&a").mkdir()
    (tmp_path / "socbench.yaml").write_text(text)
    with pytest.raises(DataError, match=".*") as info:
        select_domains("all", data_dir=tmp_path)
    assert str(tmp_path / "socbench.yaml") in str(info.value) and needle in str(info.value)
    assert "\n" not in str(info.value)


def test_manifest_rules_at_load_time(tmp_path: Path) -> None:
    """Persona include/exclude, declared missing codes and a named country attribute."""
    shutil.copytree(EXAMPLE / "Dataset_all", tmp_path / "d")
    path = tmp_path / "d" / "socbench.yaml"
    text = path.read_text().replace(
        "    include: []", "    include: [Sex of respondent, main status, AGE OF RESPONDENT]"
    )
    path.write_text(text.replace("    exclude: []", "    exclude: [Age of respondent]"))
    data = load_domain(tmp_path / "d", get_domain("Wellbeing", tmp_path / "d"), 100)
    assert {key for r in data.respondents for key in r.attributes} == {"Sex of respondent", "Main status"}
    assert all(not set(q.options) & {"-9", "-8"} for q in data.questions)
    assert all(r.country_code is None and r.weight is not None for r in data.respondents)


def test_import_into_a_sociobench_folder_keeps_its_issp_domains(
    tmp_path: Path, demo_data: Path, capsys
) -> None:
    target = tmp_path / "Dataset_all"
    shutil.copytree(demo_data, target)
    code, err = _run(
        capsys,
        str(EXAMPLE / SAV_NAME),
        "--out",
        str(target),
        "--questions",
        "Q1,Q2",
        "--slug",
        "wellbeing",
        "--sizes",
        "500",
    )
    assert code == 0, err
    table = domain_table(target)
    assert [d.id for d in table] == [d.id for d in DOMAINS] + [12]
    assert table[-1].name == "Wellbeing" and table[0].country_attribute == "auto"
    assert main(["data", "validate", "--data_dir", str(target)]) == 0


# -------------------------------------------------------------------- example study


def test_example_study_is_the_code_s_output(tmp_path: Path, capsys) -> None:
    """The shipped .sav holds exactly what ``write_study`` draws, and importing it again
    reproduces the shipped Dataset_all byte for byte."""
    frame, meta = pyreadstat.read_sav(EXAMPLE / SAV_NAME, user_missing=True)
    fresh, drawn = pyreadstat.read_sav(write_study(tmp_path / "drawn"), user_missing=True)
    pd.testing.assert_frame_equal(frame, fresh, check_dtype=False)
    assert meta.column_names_to_labels == drawn.column_names_to_labels
    assert meta.variable_value_labels == drawn.variable_value_labels
    assert meta.missing_ranges == drawn.missing_ranges
    assert set(meta.missing_ranges) == set(QUESTIONS) and all(
        sorted(r["lo"] for r in ranges) == sorted(MISSING_LABELS) for ranges in meta.missing_ranges.values()
    )
    from importlib import util

    spec = util.spec_from_file_location("make_example", EXAMPLE / "make_example.py")
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "Dataset_all"
    code, err = _run(capsys, str(EXAMPLE / SAV_NAME), "--out", str(out), *module.IMPORT_ARGS)
    assert code == 0, err
    shipped = sorted(
        p.relative_to(EXAMPLE / "Dataset_all") for p in (EXAMPLE / "Dataset_all").rglob("*") if p.is_file()
    )
    assert shipped == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    for rel in shipped:
        assert (out / rel).read_bytes() == (EXAMPLE / "Dataset_all" / rel).read_bytes(), rel


def test_spss_missing_range_and_a_text_country_in_a_csv(tmp_path: Path, capsys) -> None:
    frame = pd.DataFrame({"q": [1.0, 2.0, 97.0, 99.0] * 3, "c": ["NA", "DE", "AT", "JP"] * 3})
    pyreadstat.write_sav(
        frame,
        tmp_path / "r.sav",
        column_labels={"q": "Question"},
        variable_value_labels={"q": {1: "One", 2: "Two", 97: "Refused", 98: "DK", 99: "Gone"}},
        missing_ranges={"q": [{"lo": 97, "hi": 99}]},
    )
    same = ("--questions", "q", "--country", "c", "--sizes", "8")
    code, err = _run(capsys, str(tmp_path / "r.sav"), "--out", str(tmp_path / "a"), *same)
    assert code == 0, err
    (domain,) = read_manifest(tmp_path / "a" / "socbench.yaml").domains
    assert domain.missing_codes == () and domain.country_attribute == "c"
    (record,) = json.loads((tmp_path / "a" / "q&a" / "issp_qa_r.json").read_text())
    assert record["answer"] == {"1": "One", "2": "Two"}
    assert record["missing"] == {"97": "Refused", "98": "DK", "99": "Gone"}  # the declared range
    frame.to_csv(tmp_path / "r.csv", index=False)
    (tmp_path / "book.csv").write_text(
        "variable,label,code,value_label\nq,Question,1,One\nq,,2,Two\nc,Country,,\n"
    )
    code, err = _run(capsys, str(tmp_path / "r.csv"), "--codebook", str(tmp_path / "book.csv"),
                     "--out", str(tmp_path / "b"), *same)
    assert code == 0, err  # a text country column needs no labels; "NA" (Namibia) is not a blank
    stats = json.loads((tmp_path / "b" / "A_GroundTruth_sampling8" / "sampling_stats_r.json").read_text())
    assert stats["country_distribution"] == {"AT": 2, "DE": 2, "JP": 2, "NA": 2}
