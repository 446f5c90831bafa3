"""Persona groups found under the real ISSP codebook labels and the demo data's attributes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from socbench.data import build_items, load_domain
from socbench.domains import DOMAINS, get_domain
from socbench.metrics.baselines import item_baselines
from socbench.metrics.persona_groups import (
    AGE_GROUP,
    ATTRIBUTES,
    EDUCATION,
    EMPLOYMENT,
    RELIGION,
    SEX,
    UNKNOWN,
    age_group,
    classify_key,
    group_of,
    persona_breakdowns,
    persona_groups,
    respondent_groups,
)
from socbench.scoring import score_domain
from socbench.types import Extraction, ScoredItem

EDUCATION_LEVELS = {"primary or less", "lower secondary", "upper secondary", "post-secondary non-tertiary",
                    "tertiary"}
EMPLOYMENT_GROUPS = {"in paid work", "unemployed", "in education", "apprentice or trainee",
                     "sick or disabled",
                     "retired", "domestic work", "military or community service", "other",
                     "not in paid work, worked before", "never in paid work"}


def find_persona_keys(keys: list[str]) -> dict[str, str]:
    """``{attribute: key}``: the best-priority key per persona attribute (ties: sorted order)."""
    best: dict[str, tuple[int, str]] = {}
    for key in keys:
        found = classify_key(key)
        if found is not None:
            attribute, priority = found
            if attribute not in best or (priority, key) < best[attribute]:
                best[attribute] = (priority, key)
    return {attr: best[attr][1] for attr in ATTRIBUTES if attr in best}


def _codebook(path: Path) -> dict[str, dict]:
    """ISSP variable name (upper case) -> codebook entry."""
    return {entry["domain"].upper(): entry for entry in json.loads(path.read_text(encoding="utf-8"))}


def test_real_codebook_keys_are_found(shared_issp: Path) -> None:
    paths = sorted((shared_issp / "codebooks").glob("issp_profile_*.json"))
    assert len(paths) == 10
    for path in paths:
        entries = _codebook(path)
        meaning_to_var = {e["meaning"]: var for var, e in entries.items()}
        found = {attr: meaning_to_var[key] for attr, key in find_persona_keys(list(meaning_to_var)).items()}
        education = "EDULEVEL" if "DEGREE" not in entries else "DEGREE"  # 2020/2021 modules have no DEGREE
        assert found == {SEX: "SEX", AGE_GROUP: "AGE", EDUCATION: education, RELIGION: "RELIGGRP",
                         "party": "PARTY_LR", EMPLOYMENT: "MAINSTAT"}, path.name  # never "Belgium: Party"


def test_real_codebook_value_labels_map_to_few_groups(shared_issp: Path) -> None:
    for path in sorted((shared_issp / "codebooks").glob("issp_profile_*.json")):
        entries = _codebook(path)
        education = entries.get("DEGREE") or entries["EDULEVEL"]
        for attribute, entry, allowed in ((SEX, entries["SEX"], {"male", "female"}),
                                          (EDUCATION, education, EDUCATION_LEVELS),
                                          (EMPLOYMENT, entries["MAINSTAT"], EMPLOYMENT_GROUPS),
                                          (EMPLOYMENT, entries["WORK"], EMPLOYMENT_GROUPS)):
            groups = {group_of(attribute, label) for label in entry["content"].values()} - {None}
            assert groups <= allowed, (path.name, attribute, groups - allowed)
        religions = {group_of(RELIGION, label) for label in entries["RELIGGRP"]["content"].values()}
        assert {"No religion", "Catholic", "Protestant", "Islamic"} <= religions


@pytest.mark.parametrize("value, band", [
    ("14", "under 15"), ("15 years", "15-29"), ("29 years", "15-29"), ("30", "30-44"),
    ("44 years old", "30-44"), ("45", "45-59"), ("59 years", "45-59"), ("60 years old", "60+"),
    ("89 years old; US: 89 years or more", "60+"),
    ("102 years", "60+"), ("Age in years", None),
])
def test_age_bands(value: str, band: str | None) -> None:
    assert age_group(value) == band


BANDS = ("(0,19]", "(19,39]", "(39,59]", "(59,Inf]")


def test_a_survey_keeps_its_own_categories() -> None:
    """Issue 42: outside ISSP data a group is the source's label verbatim. Before: "(59,Inf]" became
    "45-59" (its first number), "bachelors" became "tertiary" while "higher" stayed."""
    roles = {"sex": "gender", "age": "agegroup", "education": "education"}
    for band in BANDS:
        person = {"gender": "Female", "agegroup": band, "education": "bachelors"}
        assert persona_groups(person, roles, issp=False) == {SEX: "Female", AGE_GROUP: band,
                                                             EDUCATION: "bachelors"}
    assert {group_of(AGE_GROUP, label, False) for label in ("30-39", "40-49", "50-59")} == {
        "30-39", "40-49", "50-59"}  # never merged into 30-44
    assert group_of(EDUCATION, "higher", False) == "higher"
    assert group_of(EDUCATION, "Don't know", False) is None
    raw = ("84", "14", "30.0", "44.5")
    assert [group_of(AGE_GROUP, age, False) for age in raw] == ["60+", "under 15", "30-44", "30-44"]
    assert persona_groups({"gender": "Female", "agegroup": "(59,Inf]"}, roles) == {  # ISSP data: its words
        SEX: "female", AGE_GROUP: "45-59"}


def test_which_domains_speak_issp() -> None:
    """The ten modules and a folder without persona roles: ISSP; declared persona roles: the file's words;
    ``vocabulary`` (``data import`` writes it: issp for --qa, source for --questions) decides first."""
    from socbench.manifest import DomainSpec, Roles

    assert all(domain.issp_vocabulary for domain in DOMAINS)
    spec = DomainSpec(id=1, name="Ces", slug="ces", roles=Roles(group="province"))
    assert spec.issp_vocabulary  # a group alone names no category
    assert not spec.model_copy(update={"roles": Roles(age="agegroup")}).issp_vocabulary
    assert spec.model_copy(update={"roles": Roles(age="agegroup"), "vocabulary": "issp"}).issp_vocabulary
    assert not spec.model_copy(update={"vocabulary": "source"}).issp_vocabulary


def test_fallbacks_exclusions_and_missing_values() -> None:
    groups = persona_groups({
        "Sex of respondent": "Female",
        "Age of respondent": "No answer",                                # missing: no age group
        "Country specific highest completed degree of education: Germany": "Abitur",  # never used
        "Spouse, partner: main status": "Retired",                       # never used
        "Currently, formerly, or never in paid work":
            "I am currently not in paid work but I had paid work in the past",
        "Country specific religious affiliation or denomination: Austria": "Roman Catholic",
    })
    assert groups == {SEX: "female", RELIGION: "Roman Catholic",
                      EMPLOYMENT: "not in paid work, worked before"}
    preferred = persona_groups({"Main status": "Unemployed and looking for a job, HR: incl never had a job",
                                "Currently, formerly, or never in paid work": "Currently in paid work,",
                                "Groups of religious affiliations (derived from nat_RELIG)": "Refused",
                                "Country specific religious affiliation or denomination: Spain":
                                    "No religion"})
    assert preferred == {EMPLOYMENT: "unemployed", RELIGION: "No religion"}  # "Refused" falls back


def test_demo_respondents_get_all_groups(demo_data: Path) -> None:
    raw = json.loads((demo_data / "A_GroundTruth_sampling500" / "issp_answer_citizenship.json").read_text())
    data = load_domain(demo_data, get_domain(1))
    groups = respondent_groups(data.respondents)
    first = groups[raw[0]["person_id"]]
    # Demo respondent 1: Male, 31 years, post-secondary, Protestant, in paid work.
    assert first == {SEX: "male", AGE_GROUP: "30-44", EDUCATION: "post-secondary non-tertiary",
                     RELIGION: "Protestant", EMPLOYMENT: "in paid work"}
    for domain in DOMAINS:
        people = load_domain(demo_data, domain).respondents
        found = respondent_groups(people).values()
        for attribute in (SEX, EDUCATION, RELIGION, EMPLOYMENT):
            assert sum(attribute in g for g in found) >= len(people) - 3, (domain.name, attribute)
        assert sum(AGE_GROUP in g for g in found) >= len(people) * 0.8


def test_persona_breakdowns_by_hand() -> None:
    def item(pid: int, correct: bool, groups: dict[str, str]) -> ScoredItem:
        return ScoredItem(pid, "V5", "DE", "1", "1" if correct else "2", correct, None, False, ("1", "2"),
                          groups=groups)

    items = [item(1, True, {SEX: "female"}), item(2, False, {SEX: "female"}), item(3, True, {SEX: "male"}),
             item(4, True, {})]
    table = persona_breakdowns(items, item_baselines(items))
    assert set(table) == {SEX}
    female = table[SEX]["female"]
    assert {k: female[k] for k in ("n", "accuracy", "parse_failure_rate", "respondents")} == pytest.approx(
        {"n": 2, "accuracy": 0.5, "parse_failure_rate": 0.0, "respondents": 2})
    assert female["baselines"]["uniform"] == 0.5 and female["margin_over_best_baseline"] <= 0
    assert table[SEX]["male"]["accuracy"] == 1.0 and table[SEX][UNKNOWN]["n"] == 1


def test_score_domain_attaches_groups(demo_data: Path) -> None:
    data = load_domain(demo_data, get_domain(7))
    items = build_items(data)
    extractions = {i.item_id: Extraction(i.offered_codes[0]) for i in items if i.excluded_reason is None}
    domain = score_domain(data, items, extractions, model="m")
    scored, result = domain.items, domain.result
    expected = respondent_groups(data.respondents)
    assert all(s.groups == expected[s.person_id] for s in scored)
    assert set(result.breakdowns) == {SEX, AGE_GROUP, EDUCATION, RELIGION, EMPLOYMENT}
    females = [s for s in scored if s.groups.get(SEX) == "female"]
    assert result.breakdowns[SEX]["female"]["n"] == len(females)
    assert result.breakdowns[SEX]["female"]["accuracy"] == pytest.approx(
        sum(s.correct for s in females) / len(females))


def test_an_imported_survey_keeps_its_bands_and_says_which_it_made(tmp_path: Path, capsys) -> None:
    """Issue 42 through ``data import``: a banded age variable keeps its bands ("(59,Inf]" was "45-59") and
    education its labels; a raw numeric age is banded by socbench and the import report says how."""
    import pandas as pd
    import pyreadstat

    from socbench.cli import main

    n = 40
    frame = pd.DataFrame({"q1": [1.0, 2.0] * (n // 2), "agecat": [1.0, 2.0, 3.0, 4.0] * (n // 4),
                          "age": [18.0, 35.0, 50.0, 77.0] * (n // 4), "educ": [1.0, 2.0] * (n // 2)})
    labels = {"q1": {1: "Yes", 2: "No"}, "agecat": dict(enumerate(BANDS, start=1)),
              "educ": {1: "bachelors", 2: "higher"}}
    pyreadstat.write_sav(frame, str(tmp_path / "poll.sav"), variable_value_labels=labels)
    for age, slug in (("agecat", "banded"), ("age", "raw")):
        out = tmp_path / slug
        assert main(["data", "import", str(tmp_path / "poll.sav"), "--out", str(out), "--questions", "q1",
                     "--slug", slug, "--roles", f"age={age},education=educ"]) == 0, capsys.readouterr().err
        data = load_domain(out, get_domain(slug, out), 500)
        found = respondent_groups(data.respondents, data.roles, data.issp_vocabulary).values()
        report = (out / f"import_report_{slug}.md").read_text()
        assert {g[EDUCATION] for g in found} == {"bachelors", "higher"}
        if slug == "banded":
            assert {g[AGE_GROUP] for g in found} == set(BANDS) and "## Age bands" not in report
        else:
            assert {g[AGE_GROUP] for g in found} == {"15-29", "30-44", "45-59", "60+"}
            assert ("- age: age holds unlabelled ages, so persona groups band them (socbench's bands; "
                    "labelled values stay as labelled): 15-29: 10 respondents aged 18-18; 30-44: 10 "
                    "respondents aged 35-35; 45-59: 10 respondents aged 50-50; 60+: 10 respondents aged "
                    "77-77") in report
