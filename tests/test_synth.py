"""The synthetic respondent generator and the demo dataset it wrote."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from socbench.cli import main
from socbench.data import build_items, load_domain, summarize_items
from socbench.data.options import INVALID_CODE, NO_ANSWER, effective_options
from socbench.data.synth import COUNTRY_KEYS, SAMPLE_DIR, synthesize, write_dataset
from socbench.data.synth_model import DEMO_COUNTRIES, MISSING_CODES, demo_question_set
from socbench.domains import DOMAINS, get_domain
from socbench.types import Question

DEMO_SEED = 20261122


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _code(value) -> str | None:
    """Independent normalisation of an answer value: 3, "3", 3.0 -> "3"."""
    return None if value is None else str(int(float(value)))


def _offered(question: dict, country_code: str) -> set[str]:
    return set(question["answer"]) | set(question["special"].get(country_code, {}))


def _demo_country_codes(domain_id: int) -> dict[str, str]:
    return {name: code for code, name in DEMO_COUNTRIES[domain_id]}


# ------------------------------------------------------------------ determinism


def test_same_seed_same_bytes_other_seed_differs(tmp_path: Path) -> None:
    domains = [get_domain(3), get_domain(6)]
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        write_dataset(tmp_path / name, domains, 12, seed)
    a, b, c = (_files(tmp_path / n) for n in "abc")
    assert a == b
    answers = f"{SAMPLE_DIR}/issp_answer_family.json"
    assert a[answers] != c[answers]
    assert a["q&a/issp_qa_family.json"] == c["q&a/issp_qa_family.json"]  # questions do not depend on the seed
    assert json.loads(a["synth_info.json"])["seed"] == 5


def test_one_domain_alone_equals_that_domain_in_a_full_run(tmp_path: Path) -> None:
    write_dataset(tmp_path / "one", [get_domain(7)], 10, 3)
    write_dataset(tmp_path / "two", [get_domain(1), get_domain(7)], 10, 3)
    name = f"{SAMPLE_DIR}/issp_answer_religion.json"
    assert _files(tmp_path / "one")[name] == _files(tmp_path / "two")[name]


def test_demo_folder_equals_what_the_generator_writes_now(tmp_path: Path, demo_data: Path) -> None:
    assert main(["data", "synth", "--out", str(tmp_path / "Dataset_all")]) == 0
    fresh, shipped = _files(tmp_path / "Dataset_all"), _files(demo_data)
    assert sorted(fresh) == sorted(shipped)
    changed = [name for name in fresh if fresh[name] != shipped[name]]
    assert not changed, f"demo data drifted from the generator; rerun `socbench data synth`: {changed}"
    info = json.loads(shipped["synth_info.json"])
    assert (info["seed"], info["respondents_per_domain"], info["questions"]) == (DEMO_SEED, 40, "demo")


# ------------------------------------------------------------------- structure


def test_demo_question_sets_cover_the_required_shapes() -> None:
    sets = {d.slug: demo_question_set(d.slug) for d in DOMAINS}
    assert all(5 <= len(qs) <= 6 for qs in sets.values())
    everything = [q for qs in sets.values() for q in qs]
    assert all(re.fullmatch(r"-?\d+", c) for q in everything for c in [*q["answer"], *(
        k for o in q["special"].values() for k in o)])
    ids = {q["question_id"][0] for q in everything}
    assert ids == {"V", "v"}
    specials = [(q, o) for q in everything for o in q["special"].values()]
    assert any(set(o) <= set(q["answer"]) for q, o in specials)  # relabels
    assert any(set(o) - set(q["answer"]) for q, o in specials)  # adds a code
    texts = " ".join(q["question"] for q in everything)
    assert "[COUNTRY]" in texts and "[NATIONALITY]" in texts
    assert any({"0", "95"} <= set(q["answer"]) for q in everything)
    for domain in DOMAINS:  # every override country has respondents in the demo
        codes = {code for code, _ in DEMO_COUNTRIES[domain.id]}
        assert all(c in codes for q in sets[domain.slug] for c in q["special"])


@pytest.mark.parametrize("n", [40, 37])
def test_countries_balanced_and_named_as_issp_does(n: int) -> None:
    names = set()
    for domain in DOMAINS:
        records = synthesize(demo_question_set(domain.slug), domain, n, 11)
        counts = Counter(r["attributes"][COUNTRY_KEYS[domain.id]] for r in records)
        assert 6 <= len(counts) <= 10
        assert max(counts.values()) - min(counts.values()) <= 1 and sum(counts.values()) == n
        assert [r["person_id"] for r in records] == [int(f"{domain.id}{i:07d}") for i in range(1, n + 1)]
        names |= set(counts)
    assert {"Taiwan", "Taiwan, China", "United Stated", "Germany (West)", "Israel – Jews",
            "Belgium–Flanders"} <= names


def test_attributes_carry_demographics_and_missing_labels() -> None:
    records = [r for d in DOMAINS for r in synthesize(demo_question_set(d.slug), d, 60, 2)]
    keys = Counter(k for r in records for k in r["attributes"])
    for key in ("Sex of Respondent", "Age of respondent", "Main status", "Weighting factor",
                "Date of interview: year of interview; YYYY (four digits)", "ID Number of Respondent",
                "Administrative mode of data-collection", "Attendance of religious services"):
        assert keys[key] == len(records), key
    values = Counter(v for r in records for v in r["attributes"].values())
    assert values["No answer"] and values["Refused"] and values["NAP, other countries"]
    ages = [r["attributes"]["Age of respondent"] for r in records]
    assert all(re.fullmatch(r"\d+ years", a) for a in ages if a != "No answer")
    assert all(10 <= len(r["attributes"]) <= 16 for r in records)


# --------------------------------------------------------------------- answers


def test_missing_codes_not_among_options_and_value_types_mixed() -> None:
    kinds, missing, total = Counter(), 0, 0
    for domain in DOMAINS:
        questions = demo_question_set(domain.slug)
        codes = _demo_country_codes(domain.id)
        for r in synthesize(questions, domain, 150, 4):
            country = codes[r["attributes"][COUNTRY_KEYS[domain.id]]]
            for q in questions:
                value = r["questions_answer"][q["question_id"]]
                kinds[type(value).__name__] += 1
                total += 1
                if value is None:
                    continue
                if _code(value) not in _offered(q, country):
                    missing += 1
                    assert int(value) in MISSING_CODES
    assert 0.015 < missing / total < 0.05
    assert kinds["NoneType"] > 0 and kinds["str"] > 0 and kinds["float"] > 0
    assert kinds["int"] > 0.7 * total


def _features(record: dict) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in record["attributes"].items():
        if key.startswith(("ID Number", "Weighting")):
            continue
        if key == "Age of respondent" and value[0].isdigit():
            out["age"] = int(value.split()[0]) / 50
        else:
            out[f"{key}={value}"] = 1.0
    return out


@pytest.mark.parametrize("domain_id", [7, 11, 10])
def test_persona_aware_classifier_beats_majority_out_of_sample(domain_id: int) -> None:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    domain = get_domain(domain_id)
    questions = demo_question_set(domain.slug)
    records = synthesize(questions, domain, 600, 99)
    X = DictVectorizer(sparse=False).fit_transform([_features(r) for r in records])
    gains = []
    for q in questions:
        rows = [i for i, r in enumerate(records)
                if _code(r["questions_answer"][q["question_id"]]) in q["answer"]]
        y = np.array([_code(records[i]["questions_answer"][q["question_id"]]) for i in rows])
        train, test = slice(0, 400), slice(400, None)
        majority = Counter(y[train]).most_common(1)[0][0]
        model = LogisticRegression(C=0.3, max_iter=2000).fit(X[rows][train], y[train])
        gains.append(np.mean(model.predict(X[rows][test]) == y[test]) - np.mean(y[test] == majority))
    assert np.mean(gains) > 0.06, gains


def test_religion_answers_follow_religiosity() -> None:
    domain = get_domain(7)
    records = synthesize(demo_question_set(domain.slug), domain, 400, 8)
    belief = {True: [], False: []}  # v1: higher code = firmer belief in God
    for r in records:
        value = _code(r["questions_answer"]["v1"])
        if value in {"1", "2", "3", "4", "5", "6"}:
            attendance = r["attributes"]["Attendance of religious services"]
            belief[attendance in ("Once a week", "Several times a week or more often")].append(int(value))
    assert np.mean(belief[True]) > np.mean(belief[False]) + 1.5


# ------------------------------------------------------------------ real inputs


def test_real_question_sets_and_codebooks(shared_issp: Path, tmp_path: Path) -> None:
    out = tmp_path / "Dataset_all"
    write_dataset(out, DOMAINS, 16, 1, qa_dir=shared_issp / "qa", codebook_dir=shared_issp / "codebooks")
    for domain in DOMAINS:
        source = shared_issp / "qa" / domain.qa_file
        assert (out / "q&a" / domain.qa_file).read_bytes() == source.read_bytes()
        book = next(p for p in (shared_issp / "codebooks").iterdir()
                    if p.name.lower() == domain.profile_file.lower())
        entries = json.loads(book.read_text(encoding="utf-8"))
        meanings = {e["meaning"] for e in entries}
        table = next(e["content"] for e in entries if e["domain"].lower() == "c_alphan")
        names = {v: k for k, v in table.items()} | {"Taiwan": "TW"}
        questions = [Question(q["question_id"], q["question"], q["answer"], q["special"])
                     for q in json.loads(source.read_text(encoding="utf-8"))]
        records = json.loads((out / SAMPLE_DIR / domain.answer_name).read_text(encoding="utf-8"))
        assert len(records) == 16
        for r in records:
            assert set(r["attributes"]) <= meanings
            country = names[r["attributes"][COUNTRY_KEYS[domain.id]]]
            for q in questions:
                value = r["questions_answer"][q.id]
                offered = {c for c, _ in effective_options(q, country)[0]}
                assert value is None or _code(value) in offered or (
                    int(value) in MISSING_CODES and str(int(value)) not in offered)


def test_demo_reads_through_loader_with_expected_exclusions(demo_data: Path) -> None:
    for domain in DOMAINS:
        data = load_domain(demo_data, domain)
        assert data.unmapped_countries == {} and len(data.respondents) == 40
        raw_q = json.loads((demo_data / "q&a" / domain.qa_file).read_text(encoding="utf-8"))
        raw_r = json.loads((demo_data / SAMPLE_DIR / domain.answer_name).read_text(encoding="utf-8"))
        codes = _demo_country_codes(domain.id)
        expected = Counter()
        for r in raw_r:
            country = codes[r["attributes"][COUNTRY_KEYS[domain.id]]]
            for q in raw_q:
                value = _code(r["questions_answer"][q["question_id"]])
                if value is None:
                    expected[NO_ANSWER] += 1
                elif value not in _offered(q, country):
                    expected[INVALID_CODE] += 1
        summary = summarize_items(build_items(data))
        assert summary["excluded_by_reason"] == dict(expected)
        assert summary["total"] == 40 * len(raw_q)
        assert {p.country_code for p in data.respondents} == set(codes.values())


# ------------------------------------------------------------------------- CLI


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "qa"
    bad.mkdir()
    (bad / "issp_qa_family.json").write_text('[{"question_id": "V5",\n "question": }]', encoding="utf-8")
    cases = [
        (["--qa_dir", str(tmp_path / "nope")], "--qa_dir"),
        (["--qa-dir", str(bad), "--domain-id", "1"], "issp_qa_citizenship.json"),
        (["--qa_dir", str(bad), "--domain_id", "3"], "issp_qa_family.json:2"),
        (["--domain_id", "5"], "Leisure"),
        (["--respondents", "0"], "--respondents"),
        (["--codebook_dir", str(bad), "--domain_id", "2"], "issp_profile_Environment.json"),
    ]
    for extra, needle in cases:
        assert main(["data", "synth", "--out", str(tmp_path / "out"), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and "\n" not in err, err
    assert not (tmp_path / "out").exists()  # nothing written on error
