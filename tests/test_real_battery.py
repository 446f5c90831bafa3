"""Issue 42's battery: real public survey files (Debian's r-cran-cardata, written by R's haven) through
every step a user takes, each in the survey's own words.

CES11 (a design weight, provinces), GSSvocab (29,000 rows by year; its ``.dta`` questions stored as
doubles with system-missing), WVS (a real country variable), BEPS (one country) and Chile (regions; also
a ``;`` CSV with decimal commas) are written by ``tests/fixtures/cardata.R`` as ``.sav`` and ``.dta``,
plain, with user-missing "Don't know"/"Refused" and with Stata's tagged ``.a``/``.b`` (each imported whole,
its counts R's ``table()``'s: ``test_real_battery_import.py``). One data folder holds each study as a domain;
it is run once against a server that answers one question by one persona attribute (a planted rule)
and once against a server that gives everyone the same answer, then estimated, reported and exported.
The category labels everywhere must be the source's, a province, a year or a region is never called a
country, the planted structure is found, a constant model gets a PPI correlation of 0 and a gain of 1
(weighted CES11 too), and the exports read back by haven equal the source.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from fixtures.cardata import (
    COUNTRY,
    ISSP_WORDS,
    STUDIES,
    Battery,
    Study,
    constant_answer,
    import_args,
    planted_answer,
    read_with_haven,
)
from support.cli import socbench
from support.fake_openai import FakeOpenAIServer
from support.records import read_detailed

pytestmark = pytest.mark.slow  # Rscript writes and reads the files; runs flows on the session's Prefect API
GROUPED = [s for s in STUDIES if s.group]
INTERVIEWS = 200  # respondents per domain in a run (GSSvocab's 29,000 are imported whole, sampled to 500)
NOT_RECORDED = re.compile(r"^unknown$|not recorded|no .* recorded|missing", re.IGNORECASE)  # a group for none
ROLE_ATTRIBUTE = {"sex": "sex", "age": "age_group", "education": "education", "religion": "religion"}


def roles(study: Study) -> dict[str, str]:
    """The ``--roles`` a study declares: role -> variable."""
    declared = study.flags[study.flags.index("--roles") + 1]
    return dict(pair.split("=") for pair in declared.split(","))


def labels(battery: Battery, file: str, variable: str) -> list[str]:
    """A variable's value labels in the source, in code order (tagged and user-missing ones too)."""
    return list(battery.reference.files[file][variable].value_labels.values())


# --------------------------------------------------------------------------- one run per server


@pytest.fixture(scope="module")
def study_runs(battery: Battery, api_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Each study's run file imported into one folder; a planted and a constant run over all of them, each
    estimated and reported; the planted one exported."""
    folder = tmp_path_factory.mktemp("battery-runs")
    data = folder / "Dataset_all"
    rules = {}  # the planted server's: question text -> (persona key, its labels in code order)
    for study in STUDIES:
        socbench("data", "import", *import_args(study, battery, study.run_file), "--out", str(data),
                 "--slug", study.slug, "--name", study.name, "--sizes", "500")
        source, (attribute, question) = battery.reference.files[study.run_file], study.planted
        rules[source[question].label] = (source[attribute].label, labels(battery, study.run_file, attribute))
    runs, failed, shown = {}, {}, {}
    for name, answer in (("planted", planted_answer(rules, shown)), ("constant", constant_answer)):
        with FakeOpenAIServer(model=name, answer=answer) as server:
            socbench("issp", "--api_type", "config", "--api_base", server.url, "--model", name,
                     "--data_dir", str(data), "--domain_id", "all", "--interview_count", str(INTERVIEWS),
                     "--output_dir", str(folder / name), "--concurrent_requests", "16")
        run = folder / name / name
        steps = {"estimate": ("estimate", str(run), "--fraction", "0.25", "--repeats", "20"),
                 "report": ("report", str(folder / name))}
        if name == "planted":
            steps |= {f"export {fmt}": ("export", str(run), "--format", fmt) for fmt in ("csv", "sav", "dta")}
            steps |= {f"export --wide {fmt}": ("export", str(run), "--wide", "--format", fmt)
                      for fmt in ("sav", "dta")}
        for step, argv in steps.items():  # each step's failure fails the tests that read what it writes
            try:
                socbench(*argv)
            except Exception as exc:  # noqa: BLE001 -- recorded; ``after`` fails the tests that need it
                failed[(name, step)] = f"socbench {' '.join(argv[:1])} failed: {type(exc).__name__}: {exc}"
        runs[name] = run
    return {"data": data, "runs": runs, "folder": folder, "failed": failed, "shown": shown}


def after(study_runs: dict, kind: str, *steps: str) -> None:
    """Fail (not error) a test whose input a step of the ``kind`` run could not write."""
    problems = [why for (name, step), why in study_runs["failed"].items() if name == kind and step in steps]
    if problems:
        pytest.fail("; ".join(problems)[:2000])


def detailed(run: Path, study: Study) -> dict:
    return read_detailed(run / f"{study.name}_detailed.json")


def _source_labels(battery: Battery, study: Study) -> dict[str, set[str]]:
    """Per persona group attribute whose role names a labelled variable: the source's labels."""
    found = {}
    for role, variable in roles(study).items():
        values = battery.reference.files[study.run_file][variable].value_labels
        if role in ROLE_ATTRIBUTE and values:
            found[ROLE_ATTRIBUTE[role]] = set(values.values())
    return found


@pytest.mark.parametrize("study", STUDIES, ids=[s.name for s in STUDIES])
def test_persona_groups_are_the_source_s_labels(battery: Battery, study_runs: dict, study: Study) -> None:
    record = detailed(study_runs["runs"]["planted"], study)
    own = _source_labels(battery, study)
    seen: dict[str, set[str]] = {}
    for groups in record["persona_groups"].values():
        for attribute, group in groups.items():
            seen.setdefault(attribute, set()).add(group)
    for attribute, words in own.items():
        assert seen.get(attribute) and seen[attribute] <= words, (attribute, seen.get(attribute), words)
    for attribute, rows in record["breakdowns"].items():  # the breakdown tables name them the same
        if attribute in own:
            named = {group for group in rows if not NOT_RECORDED.search(group)}
            assert named <= own[attribute], (attribute, named - own[attribute])
    report = (study_runs["data"] / f"import_report_{study.slug}.md").read_text()
    for band in seen.get("age_group", set()) - own.get("age_group", set()):  # bands socbench made itself
        assert band in report, f"{study.name}: age band {band!r} is not stated in the import report"


@pytest.mark.parametrize("study", STUDIES, ids=[s.name for s in STUDIES])
def test_the_import_report_shows_what_the_prompt_holds(battery: Battery, study_runs: dict,
                                                       study: Study) -> None:
    """The persona the import report says the model is shown is the one the prompts hold (never the id,
    the weight or another question's answer)."""
    source = battery.reference.files[study.run_file]
    prompted = study_runs["shown"][source[study.planted[1]].label]
    report = (study_runs["data"] / f"import_report_{study.slug}.md").read_text()
    listed = re.search(r"^- shown: (.*)$", report, re.M)
    assert listed and prompted, study.name
    renamed = set(re.findall(r'shown as "([^"]+)"', report))  # a country variable: socbench's "Country" line
    assert set(re.findall(r'"([^"]+)"', listed.group(1))) | renamed == prompted
    for name in (v for v in (study.weight, roles(study).get("respondent_id"), *study.questions) if v):
        assert source[name].label not in prompted, name


@pytest.mark.parametrize("study", STUDIES, ids=[s.name for s in STUDIES])
def test_the_planted_structure_is_found_and_a_constant_model_has_none(study_runs: dict, study: Study) -> None:
    """The planted server answers one question by one attribute: its persona groups must each get one
    answer, different between groups (a renamed or merged category mixes them); the structure figures see
    differences in the planted answers and none in the constant ones."""
    attribute = ROLE_ATTRIBUTE[next(role for role, var in roles(study).items() if var == study.planted[0])]
    record = detailed(study_runs["runs"]["planted"], study)
    groups = record["persona_groups"]
    answers: dict[str, set[str]] = {}
    for item in record["details"]:
        group = groups.get(str(item["person_id"]), {}).get(attribute)
        if item["question_id"] == study.planted[1] and group is not None and item["llm_answer"] is not None:
            answers.setdefault(group, set()).add(item["llm_answer"])
    assert len(answers) >= 2 and all(len(given) == 1 for given in answers.values()), answers
    assert len(set.union(*answers.values())) >= 2, answers
    assert record["yardsticks"]["structure"]["model"]["mean_simulated_v"] > 0
    constant = detailed(study_runs["runs"]["constant"], study)["yardsticks"]["structure"]["model"]
    assert constant["pairs"] and constant["mean_simulated_v"] == 0


def _estimates(study_runs: dict, kind: str, study: Study) -> dict:
    after(study_runs, kind, "estimate")
    record = json.loads((study_runs["runs"][kind] / "estimates.json").read_text())
    (domain,) = [d for d in record["domains"] if d.get("domain") in (study.name, study.slug)]
    return domain


@pytest.mark.parametrize("study", STUDIES, ids=[s.name for s in STUDIES])
def test_a_constant_model_gets_correlation_0_and_gain_1(study_runs: dict, study: Study) -> None:
    domain = _estimates(study_runs, "constant", study)
    notes = json.loads((study_runs["runs"]["constant"] / "estimates.json").read_text())["notes"]
    assert bool(study.weight) != any(n.startswith(f"{study.name}: unweighted") for n in notes)  # CES11's used
    assert domain["gain"]["median"] == pytest.approx(1, abs=1e-9)
    for question in domain["questions"]:
        regression = question.get("regression") or {}
        for est in [*question["estimates"], *regression.get("terms", [])]:
            where = (question["question_id"], est.get("target"), est.get("group"), est.get("term"))
            assert est["rho"] == pytest.approx(0, abs=1e-9), where
            assert est["lambda"] == pytest.approx(0, abs=1e-9), where
            if est["classical_ci"][0] == est["classical_ci"][1]:  # every labelled answer alike: no gain
                assert est["gain"] is None, where  # is defined (0 / 0), and none is claimed
            else:
                assert est["gain"] == pytest.approx(1, abs=1e-9), where
        for gap in question["gaps"]:
            assert gap["gain"] == pytest.approx(1, abs=1e-9), (question["question_id"], gap["groups"])


def _words(value: object) -> list[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, dict):
        return [w for k, v in value.items() for w in (str(k), *_words(v))]
    if isinstance(value, list):
        return [w for v in value for w in _words(v)]
    return [value] if isinstance(value, str) else []


@pytest.mark.parametrize("study", STUDIES, ids=[s.name for s in STUDIES])
def test_estimates_use_the_source_s_labels(battery: Battery, study_runs: dict, study: Study) -> None:
    domain = _estimates(study_runs, "planted", study)
    own = _source_labels(battery, study)
    words = _words(domain)
    for attribute, values in own.items():  # "education=bachelors", "age_group=60+": the source's labels
        named = {w.split("=", 1)[1] for w in words if w.startswith(f"{attribute}=")}
        for question in domain["questions"]:
            regression = question.get("regression") or {}
            named |= {v for a, v in (regression.get("reference") or {}).items() if a == attribute}
            named |= {g for gap in question["gaps"] if gap["attribute"] == attribute for g in gap["groups"]}
        assert named <= values, (attribute, named - values)
    if study.group:  # not "country=AB": the grouping variable is named as what it is
        assert not any(COUNTRY.search(w) for w in words), [w for w in words if COUNTRY.search(w)][:5]
    assert not any(ISSP_WORDS.search(w) for w in words)


ISSP_EDUCATION = ("tertiary", "primary or less", "lower secondary", "upper secondary",
                  "post-secondary non-tertiary")


def _page_text(path: Path) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", path.read_text())))


def _leads(page: str) -> dict[str, str]:
    """Each domain's opening paragraph in the report ("The answer, domain by domain")."""
    section = page.split("The answer, domain by domain", 1)[-1].split("1. Is the model better", 1)[0]
    starts = sorted((m.start(), s.name) for s in STUDIES for m in re.finditer(rf"\b{s.name} —", section))
    ends = [start for start, _ in starts[1:]] + [len(section)]
    return {name: section[start:end] for (start, name), end in zip(starts, ends, strict=True)}


@pytest.mark.parametrize("kind", ["planted", "constant"])
def test_the_report_speaks_each_survey_s_words(battery: Battery, study_runs: dict, kind: str) -> None:
    """No ISSP vocabulary (its education levels, C_ALPHAN) for these studies; a domain grouped by province,
    year or region is not said to have countries; the planted run's persona groups under their own labels."""
    after(study_runs, kind, "report")
    folder = study_runs["folder"] / kind / "report"
    page, board = _page_text(folder / "report.html"), (folder / "leaderboard.md").read_text()
    for text in (page, board):
        assert not ISSP_WORDS.search(text)
        assert not [word for word in ISSP_EDUCATION if word in text]
    leads = _leads(page)
    assert set(leads) == {s.name for s in STUDIES}
    for study in GROUPED:
        assert not COUNTRY.search(leads[study.name]), leads[study.name]
    if kind == "planted":
        for study in STUDIES:
            own = _source_labels(battery, study)
            shown = {g for groups in detailed(study_runs["runs"][kind], study)["persona_groups"].values()
                     for a, g in groups.items() if a in own}
            missing = [g for g in shown if not re.search(rf"(?<!\w){re.escape(g)}(?!\w)", page)]
            assert shown and not missing, (study.name, missing)


def test_the_long_export_names_each_grouping_as_the_source_does(battery: Battery, study_runs: dict) -> None:
    after(study_runs, "planted", "export csv", "export sav", "export dta")
    run = study_runs["runs"]["planted"]
    frame = pd.read_csv(run / "export" / "answers_long.csv", dtype=str)
    for study in STUDIES:  # every answer under the source's own label (a scale's unlabelled point: its code)
        rows = frame[frame["domain"] == study.name]
        for question in study.questions:
            own = set(labels(battery, study.run_file, question))
            asked = rows[rows["question_id"] == question]
            for code, label in (("true_code", "true_label"), ("model_code", "model_label")):
                shown = asked[[code, label]].dropna()
                wrong = shown[~shown[label].isin(own) & (shown[label] != shown[code])]
                assert wrong.empty, (study.name, question, wrong.head(3).to_dict("records"))
    got, _ = read_with_haven(run / "export", [run / "export" / "answers_long.sav",
                                              run / "export" / "answers_long.dta"])
    for variables in got.files.values():
        assert not any(ISSP_WORDS.search(v.label) for v in variables.values())
    for study in GROUPED:
        rows = frame[frame["domain"] == study.name]
        values = set(labels(battery, study.run_file, study.group))
        variable_label = battery.reference.files[study.run_file][study.group].label
        held = {c: set(rows[c].dropna()) for c in frame.columns}
        holding = [c for c, found in held.items() if found and found <= values]
        assert holding, f"{study.name}: no column holds its {study.group}"
        for name, file in got.files.items():
            for column in holding:
                assert column in file, (name, column)
                named = f"{column} {file[column].label}"
                assert not COUNTRY.search(named) or variable_label in named, (study.name, named)


@pytest.mark.parametrize("study", STUDIES, ids=[s.name for s in STUDIES])
def test_the_wide_export_reads_back_by_haven_as_the_source(battery: Battery, study_runs: dict,
                                                            study: Study, tmp_path: Path) -> None:
    """Names, variable and value labels, SPSS missing codes and every value (merged back by ``source_row``)
    equal the source's as haven reads both; values and value labels where the format is the source's own
    (a CSV's: its data as R wrote it to ``.sav``)."""
    after(study_runs, "planted", "export --wide sav", "export --wide dta")
    run = study_runs["runs"]["planted"]
    source_file = study.run_file.replace(".csv", ".sav")
    paths = [run / "export" / f"answers_{study.name}_real.{fmt}" for fmt in ("sav", "dta")]
    got, values = read_with_haven(tmp_path, [*paths, battery.file(source_file)])
    source = got.files[source_file]
    for path in paths:
        exported, same_format = got.files[path.name], path.suffix == Path(source_file).suffix
        for name in (*study.questions, *([study.weight] if study.weight else [])):
            assert name in exported and exported[name].label == source[name].label, (path.name, name)
            if same_format:
                assert exported[name].value_labels == source[name].value_labels, (path.name, name)
                assert exported[name].na_values == source[name].na_values, (path.name, name)
        if same_format:
            rows = values[source_file]
            for row in values[path.name]:
                back = rows[int(row["source_row"]) - 1]
                assert all(row[q] == back[q] for q in study.questions), (path.name, row["source_row"])
