"""Loading a SocioBench dataset: records, normalisation, errors, and stratified sampling."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from fixtures.data_layer.issp_dataset import (
    FAMILY_CODES,
    FAMILY_QUESTIONS,
    NATID_CODES,
    family_respondents,
    person,
    write_dataset,
    write_json,
)
from socbench.data.loaders import load_codebook, load_domain, load_questions, normalize_code
from socbench.data.missing_labels import is_missing_label
from socbench.data.sampling import draw_order, stratified_sample
from socbench.domains import get_domain
from socbench.errors import ConfigError, DataError
from socbench.types import Respondent

FAMILY = get_domain(3)
NATID = get_domain(6)


def data_error(call, *args, **kwargs) -> str:
    """Run a call that must fail with a one-line DataError; return the message."""
    with pytest.raises(DataError) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message and message
    return message


# ------------------------------------------------------------------------- normalising


@pytest.mark.parametrize("raw, code", [
    (3, "3"), ("3", "3"), (3.0, "3"), (" 3", "3"), ("03", "3"), ("3.0", "3"), (-9, "-9"), (" -4 ", "-4"),
    (990, "990"), (None, None), ("", None), ("  ", None), (float("nan"), None), (3.5, "3.5"), ("abc", "abc"),
])
def test_normalize_code(raw, code):
    assert normalize_code(raw) == code


@pytest.mark.parametrize("raw", [True, [1], {"a": 1}])
def test_normalize_code_rejects_non_scalars(raw):
    with pytest.raises(ValueError):
        normalize_code(raw)


@pytest.mark.parametrize("label", [
    "No answer", "NAP, other countries", "NAP (code 3 in WORK)", "NAP (Code 3 in WORK)", "Not available",
    "Refused", "Don't know", "Don’t know", "Can't choose", "Not applicable",
    "Not applicable, other countries", "No answer, refused", "AT, CZ, FR: Not available", "IS: Don't know",
    "NAV: Other countries", "990", "9999",
    "999990", "-9", "-1", "", "No second ethnic group", "Refused to answer",
])
def test_missing_labels(label):
    assert is_missing_label(label)


@pytest.mark.parametrize("label", [
    "Navarra", "Napoli", "No religion", "No income", "No formal education", "Never", "45", "1975", "875",
    "Female", "Invalid ballot", "Not at all", "Nationalist Party", "None",
    "Don't know whether there is a God and no way to find out", "Norway", "98",
])
def test_real_values_are_not_missing(label):
    assert not is_missing_label(label)


# ---------------------------------------------------------------------------- loading


def test_load_domain_family(tmp_path):
    root = write_dataset(tmp_path)
    data = load_domain(root, FAMILY)
    assert (data.domain_id, data.domain_name) == (3, "Family")
    assert [q.id for q in data.questions] == ["V5", "V6", "v7"]
    assert data.questions[0].special["TW"] == {"5": "Taiwan-only answer"}
    assert [p.person_id for p in data.respondents] == list(range(30000001, 30000009))
    assert [p.country_code for p in data.respondents] == FAMILY_CODES
    assert data.respondents[1].country_name == "Taiwan, China"
    assert data.unmapped_countries == {"Narnia": 2}
    assert data.source == str(root / "A_GroundTruth_sampling500" / "issp_answer_family.json")
    first, second, third = data.respondents[:3]
    assert first.answers == {"V5": "5", "V6": "2", "v7": "-4"}
    assert second.answers == {"V5": "3", "V6": "2", "v7": None}  # "V7" matched case-insensitively
    assert third.answers == {"V5": "4", "V6": "-9"}
    assert data.respondents[7].answers["V5"] == "3"


def test_attributes_drop_missing_labels_only(tmp_path):
    data = load_domain(write_dataset(tmp_path), FAMILY)
    attrs = data.respondents[0].attributes
    assert attrs == {"Sex of Respondent": "Female", "Region": "Navarra", "Age of respondent": "45",
                     "Country Prefix ISO 3166 Code - alphanumeric": "Taiwan"}


def test_data_dir_may_be_dataset_all_or_its_parent(tmp_path):
    root = write_dataset(tmp_path)
    assert load_domain(root, FAMILY).respondents == load_domain(tmp_path, FAMILY).respondents


def test_subsamples_resolve(tmp_path):
    data = load_domain(write_dataset(tmp_path), NATID)
    assert [p.country_code for p in data.respondents] == NATID_CODES
    assert data.unmapped_countries == {}


@pytest.mark.parametrize("count, expected", [(3, 3), ("2", 2), ("all", 8), ("ALL", 8), (100, 8)])
def test_interview_sample_first_takes_first_respondents(tmp_path, count, expected):
    data = load_domain(write_dataset(tmp_path), FAMILY, interview_count=count, interview_sample="first")
    assert [p.person_id for p in data.respondents] == list(range(30000001, 30000001 + expected))
    assert data.sample["drawn"] == ("first" if expected < 8 else "all")


def test_unmapped_counted_for_selected_respondents_only(tmp_path):
    data = load_domain(write_dataset(tmp_path), FAMILY, interview_count=6, interview_sample="first")
    assert data.unmapped_countries == {"Narnia": 1}


def test_interview_count_draws_a_recorded_stratified_sample(tmp_path):
    """Issue 29: N below the domain's size is a seeded sample with one respondent of each of the 6 strata
    (Narnia by name, Taiwan twice in the file), in file order, the same on every load, and recorded."""
    root = write_dataset(tmp_path)
    data = load_domain(root, FAMILY, interview_count=6)
    assert len({p.country_code or p.country_name for p in data.respondents}) == 6
    ids = [p.person_id for p in data.respondents]
    assert ids == sorted(ids) and ids == [p.person_id for p in load_domain(root, FAMILY, 500, 6).respondents]
    assert data.unmapped_countries == {"Narnia": 1}
    assert data.sample == {"drawn": "stratified", "population": 8, "respondents": 6, "seed": 42,
                           "strata": {"DE": 1, "JP": 1, "KR": 1, "Narnia": 1, "TW": 1, "US": 1},
                           "stratified_by": "country, proportional (Huntington-Hill)", "person_ids": ids}
    assert load_domain(root, FAMILY).sample == {"drawn": "all", "population": 8, "respondents": 8,
                                                "strata": {"DE": 1, "JP": 1, "KR": 1, "Narnia": 2, "TW": 2,
                                                           "US": 1}}


@pytest.mark.parametrize("count", [0, -1, "some", True])
def test_bad_interview_count(tmp_path, count):
    with pytest.raises(ConfigError, match="--interview_count"):
        load_domain(write_dataset(tmp_path), FAMILY, interview_count=count)


def test_other_sample_size_is_read(tmp_path):
    root = write_dataset(tmp_path, sizes=(500,))
    write_json(root / "A_GroundTruth_sampling1000" / "issp_answer_family.json", family_respondents()[:2])
    assert len(load_domain(root, FAMILY, dataset_size=1000).respondents) == 2
    assert len(load_domain(root, FAMILY, dataset_size=500).respondents) == 8


def test_codebook_extends_country_table(tmp_path):
    rows = [*family_respondents(), person(30000009, "Kosovo", {"V5": 1})]
    root = write_dataset(tmp_path, family=rows)
    assert load_domain(root, FAMILY).unmapped_countries == {"Narnia": 2, "Kosovo": 1}
    assert load_codebook(root, FAMILY) is None
    table = {"domain": "C_ALPHAN", "meaning": "Country Prefix ISO 3166 Code - alphanumeric",
             "question": "", "content": {"TW": "Taiwan, China", "XK": "Kosovo"}, "special": {}}
    write_json(tmp_path / "issp_profile_FAMILY.json", [table])  # beside Dataset_all, other case
    entries = load_codebook(root, FAMILY)
    assert [e.domain for e in entries] == ["C_ALPHAN"]
    data = load_domain(root, FAMILY)
    assert data.respondents[-1].country_code == "XK"
    assert data.unmapped_countries == {"Narnia": 2}


def test_real_question_sets_load(shared_issp):
    files = sorted((shared_issp / "qa").glob("issp_qa_*.json"))
    assert len(files) == 10
    total = 0
    for path in files:
        raw = json.loads(path.read_text(encoding="utf-8"))
        questions = load_questions(path)
        assert [q.id for q in questions] == [r["question_id"] for r in raw]
        for q, r in zip(questions, raw):
            assert q.options == r["answer"] and q.special == r["special"]
            assert all(str(int(code)) == code for code in q.options)
        total += len(questions)
    assert total == 555


# ----------------------------------------------------------------------------- errors


def test_missing_data_dir(tmp_path):
    message = data_error(load_domain, tmp_path / "nope", FAMILY)
    assert "--data_dir" in message and "nope" in message


def test_data_dir_without_qa_folder(tmp_path):
    assert "q&a" in data_error(load_domain, tmp_path, FAMILY)


def test_missing_sample_size_never_falls_back(tmp_path):
    root = write_dataset(tmp_path, sizes=(500, 1000))
    message = data_error(load_domain, root, FAMILY, dataset_size=5000)
    assert "A_GroundTruth_sampling5000" in message and "sizes present: 500, 1000" in message


def test_missing_domain_files(tmp_path):
    root = write_dataset(tmp_path)
    (root / "A_GroundTruth_sampling500" / "issp_answer_family.json").unlink()
    assert "issp_answer_family.json" in data_error(load_domain, root, FAMILY)
    (root / "q&a" / "issp_qa_nationalidentity.json").unlink()
    assert "issp_qa_nationalidentity.json" in data_error(load_domain, root, NATID)


def test_malformed_json_names_line_and_column(tmp_path):
    root = write_dataset(tmp_path)
    path = root / "A_GroundTruth_sampling500" / "issp_answer_family.json"
    path.write_text('[\n {"person_id": 1,\n  }\n]\n', encoding="utf-8")
    message = data_error(load_domain, root, FAMILY)
    assert message.startswith(f"{path}:3:3: malformed JSON")


def test_wrong_top_level_type(tmp_path):
    root = write_dataset(tmp_path)
    write_json(root / "q&a" / "issp_qa_family.json", {"V5": {}})
    message = data_error(load_domain, root, FAMILY)
    assert "issp_qa_family.json" in message and "expected a JSON array" in message and "an object" in message


@pytest.mark.parametrize("record, field", [
    ({"person_id": 30000002, "questions_answer": {}}, "field 'attributes': Field required"),
    ({"attributes": {}, "questions_answer": {}}, "field 'person_id': Field required"),
    ({"person_id": "abc", "attributes": {}, "questions_answer": {}}, "field 'person_id'"),
    ({"person_id": 30000002, "attributes": {}, "questions_answer": {"V5": [1]}},
     "field 'questions_answer.V5'"),
    ("not a record", "respondent record 1: "),
])
def test_schema_errors_name_record_and_field(tmp_path, record, field):
    root = write_dataset(tmp_path, family=[family_respondents()[0], record])
    message = data_error(load_domain, root, FAMILY)
    assert "issp_answer_family.json" in message and "respondent record 1" in message and field in message


def test_question_schema_error(tmp_path):
    root = write_dataset(tmp_path)
    write_json(root / "q&a" / "issp_qa_family.json",
               [FAMILY_QUESTIONS[0], {"question_id": "V6", "question": "x"}])
    message = data_error(load_domain, root, FAMILY)
    assert "issp_qa_family.json: question record 1: field 'answer': Field required" in message


def test_duplicate_question_ids(tmp_path):
    path = write_json(tmp_path / "qa.json",
                      [FAMILY_QUESTIONS[0], {**FAMILY_QUESTIONS[1], "question_id": "v5"}])
    assert "'v5' repeats 'V5'" in data_error(load_questions, path)


def test_unknown_question_ids_are_named(tmp_path):
    rows = [*family_respondents(), person(30000009, "Japan", {"V99": 1, "Q1": 2})]
    message = data_error(load_domain, write_dataset(tmp_path, family=rows), FAMILY)
    assert "issp_answer_family.json" in message and "Q1, V99" in message


# --------------------------------------------------------------------------- sampling

SIZES = {"AT": 50, "TW": 40, "US": 33, "JP": 60, "DE-W": 45, "BE-FLA": 38, "ZA": 41}


def population(sizes: dict[str, int] = SIZES) -> list[Respondent]:
    people, pid = [], 1
    for code, n in sizes.items():
        for _ in range(n):
            people.append(Respondent(pid, code, code, {}, {}))
            pid += 1
    return people


def test_sample_is_stratified_by_country():
    people = population()
    for size in (70, 100, 203):
        counts = Counter(p.country_code for p in stratified_sample(people, size))
        assert sum(counts.values()) == size and len(counts) == len(SIZES)
        assert max(counts.values()) - min(counts.values()) <= 1


def test_sample_is_nested_reproducible_and_order_free():
    people = population()
    small, medium, large = (set(p.person_id for p in stratified_sample(people, n)) for n in (50, 100, 200))
    assert small < medium < large
    shuffled = people[:]
    random.Random(0).shuffle(shuffled)
    again = stratified_sample(shuffled, 100, seed=42)
    assert set(p.person_id for p in again) == medium
    assert set(p.person_id for p in stratified_sample(people, 100, seed=7)) != medium
    assert [p.person_id for p in stratified_sample(people, 100)] == sorted(medium)  # original order kept


def test_small_country_is_exhausted_others_stay_balanced():
    people = population({"AT": 50, "IS": 3, "JP": 40})
    counts = Counter(p.country_code for p in stratified_sample(people, 60))
    assert counts["IS"] == 3 and abs(counts["AT"] - counts["JP"]) <= 1 and sum(counts.values()) == 60
    assert len(draw_order(people)) == len(people)


def test_proportional_sample_has_every_country_then_their_shares():
    """A file sorted by country: every country in the first draws, then each near its quota (within one)."""
    sizes = {"US": 400, "AU": 100, "NO": 60, "SE": 40}
    people = population(sizes)
    samples = {n: stratified_sample(people, n, proportional=True) for n in (2, 4, 20, 60)}
    assert len({p.country_code for p in samples[2]}) == 2
    assert Counter(p.country_code for p in samples[4]) == dict.fromkeys(sizes, 1)
    for n in (20, 60):
        counts = Counter(p.country_code for p in samples[n])
        assert all(abs(counts[c] - n * k / 600) < 1 for c, k in sizes.items()), counts
    assert {id(p) for p in samples[20]} < {id(p) for p in samples[60]}  # nested
    assert {p.person_id for p in stratified_sample(people[::-1], 20, proportional=True)} == \
        {p.person_id for p in samples[20]}  # order free


@pytest.mark.parametrize("size", [0, 1000, "10"])
def test_bad_sample_size(size):
    with pytest.raises(ConfigError):
        stratified_sample(population(), size)


def test_sample_of_loaded_domain(tmp_path: Path):
    data = load_domain(write_dataset(tmp_path), FAMILY)
    sample = stratified_sample(data.respondents, 6)
    strata = Counter(p.country_code or p.country_name for p in sample)
    assert len(strata) == 6 and set(strata.values()) == {1}  # 6 strata (Narnia counted by name)


def test_a_validator_s_message_reads_without_pydantic_s_prefix(tmp_path):
    """Failed before errors.problem: the line read "field 'answer.1': Value error, expected a text label"."""
    path = write_json(tmp_path / "qa.json", [{**FAMILY_QUESTIONS[0], "answer": {"1": [1]}}])
    message = data_error(load_questions, path)
    assert "question record 0: field 'answer.1': expected a text label, got list" in message, message


def test_an_answer_record_s_id_is_its_person_id_unless_it_has_one() -> None:
    """``id`` is accepted for ``person_id`` (AliasChoices; a hand-written before-validator earlier)."""
    from socbench.data.loaders import AnswerRecord

    record = {"attributes": {}, "questions_answer": {"V5": 1}}
    assert AnswerRecord.model_validate({**record, "id": 5}).person_id == 5
    assert AnswerRecord.model_validate({**record, "id": 5, "person_id": 6}).person_id == 6
