"""Roles declared or proposed, a grouping variable that is not a country, and the study's own name.

Two hostile-but-real files: a poll shaped like the 1988 Chilean plebiscite survey (Spanish variable
labels, a region variable whose values are not countries, one country the file never names) and a
four-country file sorted by country whose country labels are German ("Australien", "Norwegen"), its
roles labelled in German and English ("Member of a religion", "Holds a university degree"), with a
numbered questionnaire item beside the background variables. Each is written by pyreadstat (and, in
the slow test, the poll by R's haven), imported, and followed through prompts, baselines, breakdowns,
``data validate`` and the report; the slow test runs the poll through the flow on the tiny model.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
import yaml

from socbench.cli import main
from socbench.data import build_items, load_domain
from socbench.data.loaders import unmapped_line
from socbench.data.roles import propose_roles
from socbench.data.survey_file import SurveyFile, Variable
from socbench.domains import get_domain, study_name
from socbench.log.write import write_scored_domain
from socbench.metrics.persona_groups import respondent_groups
from socbench.report.html import write_report
from socbench.report.markdown import write_run_summary
from socbench.scoring import score_domain
from socbench.types import Extraction

REGIONS = {1: "Central", 2: "Metropolitan Santiago", 3: "North", 4: "South", 5: "City of Santiago"}
POLL_LABELS = {"folio": "Identificador del entrevistado", "region": "Región", "sexo": "Sexo", "edad": "Edad",
               "educ": "Nivel educativo", "ingreso": "Ingreso mensual del hogar", "voto": "Intención de voto",
               "confianza": "Confianza en el gobierno"}
POLL_VALUES = {"region": REGIONS, "sexo": {1: "Hombre", 2: "Mujer"},
               "educ": {1: "Primaria", 2: "Secundaria", 3: "Postsecundaria"},
               "voto": {1: "Sí", 2: "No", 3: "Indeciso", 4: "Abstención", 9: "No responde"},
               "confianza": {1: "Mucha", 2: "Algo", 3: "Poca", 4: "Ninguna", 9: "No responde"}}
COUNTRIES_DE = {36: "Australien", 578: "Norwegen", 752: "Schweden", 840: "Vereinigte Staaten",
                999: "Atlantis"}
WORLD_LABELS = {"idnr": "Befragten-ID", "land": "Land", "geschl": "Geschlecht", "alter": "Alter",
                "degree": "Holds a university degree", "relig": "Member of a religion",
                "partei": "Parteipräferenz", "gew": "Gewichtungsfaktor",
                "kinder": "Q6 Ideal number of children",
                "q1": "Q1 Trust in parliament", "q2": "Q2 Trust in the courts"}


def poll_frame(n: int = 300, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    region = rng.integers(1, 6, n)
    return pd.DataFrame({"folio": np.arange(1001, 1001 + n), "region": region, "sexo": rng.integers(1, 3, n),
                         "edad": rng.integers(18, 80, n), "educ": rng.integers(1, 4, n),
                         "ingreso": rng.integers(2, 200, n) * 1000,
                         "voto": np.where(rng.random(n) < 0.05, 9,
                                          np.where(region == 3, 1, rng.integers(1, 5, n))),
                         "confianza": rng.choice([1, 2, 3, 4, 9], n)}).astype(float)


def write_poll(folder: Path) -> Path:
    path = folder / "plebiscito.sav"
    pyreadstat.write_sav(poll_frame(), path, column_labels=POLL_LABELS, variable_value_labels=POLL_VALUES,
                         missing_ranges={"voto": [9], "confianza": [9]})
    return path


def write_world(folder: Path, n: int = 240, seed: int = 9) -> Path:
    """Four countries (and 6 respondents of a land that is none), sorted by country."""
    rng = np.random.default_rng(seed)
    land = np.sort(np.r_[rng.choice([36, 578, 752, 840], n - 6), [999] * 6])
    frame = pd.DataFrame({"idnr": np.arange(1, n + 1), "land": land, "geschl": rng.integers(1, 3, n),
                          "alter": rng.integers(18, 90, n), "degree": rng.integers(0, 2, n),
                          "relig": rng.integers(0, 2, n), "partei": rng.integers(1, 4, n),
                          "gew": rng.uniform(0.5, 2.0, n), "kinder": rng.integers(0, 5, n),
                          "q1": rng.integers(1, 5, n), "q2": rng.integers(1, 5, n)}).astype(float)
    yes_no = {0: "No", 1: "Yes"}
    trust = {1: "Complete trust", 2: "Some trust", 3: "Little trust", 4: "No trust"}
    values = {"land": COUNTRIES_DE, "geschl": {1: "männlich", 2: "weiblich"}, "degree": yes_no,
              "relig": yes_no,
              "partei": {1: "SPD", 2: "CDU/CSU", 3: "Grüne"}, "q1": trust, "q2": trust}
    path = folder / "world.dta"
    pyreadstat.write_dta(frame, path, column_labels=WORLD_LABELS, variable_value_labels=values)
    return path


def _import(capsys, source: Path, out: Path, *argv: str) -> tuple[str, str]:
    """stdout, and stderr (the report's summary) followed by the import report (its roles and persona)."""
    code = main(["data", "import", str(source), "--out", str(out), "--sizes", "500", *argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = "".join(path.read_text(encoding="utf-8") for path in out.glob("import_report_*.md"))
    return captured.out, captured.err + report


def _constant_run(out: Path, results: Path, slug: str) -> dict:
    """Score a model answering "1" to everything (no engine) and write its files and the report."""
    domain = get_domain(slug, out)
    data = load_domain(out, domain, 500)
    items = build_items(data)
    extractions = {i.item_id: Extraction("1") for i in items if i.excluded_reason is None}
    scored = score_domain(data, items, extractions, model="constant-one")
    write_scored_domain(results, scored)
    write_run_summary(results, "constant-one", [scored.result], data={"study": study_name(out)})
    return {"data": data, "result": scored.result, "report": write_report(results)}


def test_a_region_is_a_grouping_variable_everywhere(tmp_path: Path, capsys) -> None:
    source, out = write_poll(tmp_path), tmp_path / "poll"
    printed, err = _import(capsys, source, out, "--questions", "voto,confianza", "--country", "region",
                           "--study_country", "Chile", "--name", "Plebiscite")
    assert "variable region: its values (Central, City of Santiago, Metropolitan Santiago, North, South) " \
           "name no country: it groups the respondents" in err
    assert "5 groups of region" in printed and "5 countries" not in printed
    for line in ('- group: region "Región" (its values name no country)',
                 '- respondent id: folio "Identificador del entrevistado" (proposed from its label)',
                 '- sex: sexo "Sexo" (proposed', '- age: edad "Edad" (proposed',
                 '- education: educ "Nivel educativo" (proposed', "- not assigned a role (1): ingreso"):
        assert line in err
    (entry,) = yaml.safe_load((out / "socbench.yaml").read_text())["domains"]
    assert entry["country_attribute"] is None and entry["country"] == "Chile"
    assert entry["roles"] == {"respondent_id": "Identificador del entrevistado", "group": "Región",
                              "sex": "Sexo", "age": "Edad", "education": "Nivel educativo"}
    stats = json.loads((out / "A_GroundTruth_sampling500" / "sampling_stats_plebiscito.json").read_text())
    assert set(stats["group_distribution"]) == set(REGIONS.values()) and stats["stratified_by"] == "region"

    # prompts: the country is the study's, the region stays the respondent's own attribute
    assert main(["issp", "prompts", "--data_dir", str(out), "--domain_id", "plebiscito", "--limit", "1"]) == 0
    prompt = capsys.readouterr().out
    assert '"Country": "Chile"' in prompt and '"Región": "' in prompt and "Identificador" not in prompt
    assert not any(f'"Country": "{name}"' in prompt for name in REGIONS.values())

    # data validate: grouped by region, nothing "not mapped"
    assert main(["data", "validate", "--data_dir", str(out), "--dataset_size", "500"]) == 0
    table = capsys.readouterr().out
    assert "grouped by Región (5 groups" in table and "not mapped" not in table

    run = _constant_run(out, tmp_path / "results", "plebiscito")
    data, result = run["data"], run["result"]
    assert {p.group for p in data.respondents} == set(REGIONS.values())
    assert {p.country_code for p in data.respondents} == {"CL"} and data.unmapped_countries == {}
    assert unmapped_line(data) is None
    assert "majority_group_question" in result.baselines
    assert "majority_country_question" not in result.baselines
    assert set(result.per_country) == set(REGIONS.values()) and result.grouping == "Región"
    assert {"sex", "age_group", "education"} <= set(result.breakdowns)
    html = run["report"].html.read_text()
    board = run["report"].leaderboard_md.read_text()
    assert board.startswith("# Plebiscite leaderboard") and "ISSP" not in board + html
    assert "By Región (pooled over domains)" in html
    assert "Majority answer in the respondent&#39;s group" in html
    assert "(n/a)" not in board and "Plebiscite (1)" in board
    assert "country unknown" not in html and "Niger" not in html


def test_proposed_roles_from_german_and_english_labels(tmp_path: Path, capsys) -> None:
    source, out = write_world(tmp_path), tmp_path / "world"
    printed, err = _import(capsys, source, out, "--questions", "q1,q2")
    assert "4 countries" not in printed and "5 countries" in printed  # Atlantis counts, as itself
    assert "country variable land: 6 respondents under labels that name no country ('Atlantis' (6))" in err
    for line in ('- country: land "Land" (proposed', '- weight: gew "Gewichtungsfaktor" (proposed',
                 '- respondent id: idnr "Befragten-ID" (proposed', '- sex: geschl "Geschlecht" (proposed',
                 '- age: alter "Alter" (proposed',
                 '- education: degree "Holds a university degree" (proposed',
                 '- religion: relig "Member of a religion" (proposed',
                 '- party: partei "Parteipräferenz" (proposed',
                 '- left out, answers another questionnaire item (1): kinder "Q6 Ideal number of children"',
                 '- not shown, the respondent id, never shown (1): idnr "Befragten-ID"'):
        assert line in err
    stats = json.loads((out / "A_GroundTruth_sampling500" / "sampling_stats_world.json").read_text())
    assert set(stats["country_distribution"]) == {"AU", "NO", "SE", "US", "Atlantis"}
    data = load_domain(out, get_domain("world", out), 500)
    assert {p.country_code for p in data.respondents} == {"AU", "NO", "SE", "US", None}
    assert all("Q6 Ideal number of children" not in p.attributes for p in data.respondents)
    assert all(p.weight is not None for p in data.respondents)
    groups = respondent_groups(data.respondents, data.roles)
    assert {g["education"] for g in groups.values()} == {"Yes", "No"}  # usable, though no ISSP label
    assert {g["religion"] for g in groups.values()} == {"Yes", "No"}
    assert {g["party"] for g in groups.values()} == {"SPD", "CDU/CSU", "Grüne"}
    assert unmapped_line(data) == ("domain 1 World: 6 respondents pooled into one 'country unknown' group "
                                   "(baselines, breakdowns): 'Atlantis' (6)")
    assert main(["issp", "prompts", "--data_dir", str(out), "--domain_id", "world", "--limit", "1"]) == 0
    prompt = capsys.readouterr().out
    assert '"Country": "Australia"' in prompt and "Befragten-ID" not in prompt and "Gewicht" not in prompt

    run = _constant_run(out, tmp_path / "results", "world")
    result = run["result"]
    assert set(result.per_country) == {"AU", "NO", "SE", "US", "unmapped"}
    assert {"sex", "age_group", "education", "religion", "party"} <= set(result.breakdowns)
    board = run["report"].leaderboard_md.read_text()
    assert board.startswith("# World leaderboard") and "World (1)" in board and "ISSP" not in board
    html = run["report"].html.read_text()
    assert "Norway (NO)" in html and "country unknown (unmapped)" in html


def test_declared_roles_win_and_none_declares_a_role_absent(tmp_path: Path, capsys) -> None:
    source = write_world(tmp_path)
    _, err = _import(capsys, source, tmp_path / "out", "--questions", "q1,q2", "--roles",
                     "education=relig,religion=none,group=none", "--persona", "all")
    assert '- education: relig "Member of a religion" (declared)' in err and "- religion: none" in err
    assert "- left out" not in err and 'kinder "Q6' in err.split("- shown: ")[1]  # --persona all: items too
    (entry,) = yaml.safe_load((tmp_path / "out" / "socbench.yaml").read_text())["domains"]
    assert entry["roles"]["education"] == "Member of a religion" and "religion" not in entry["roles"]
    code = main(["data", "import", str(source), "--out", str(tmp_path / "bad"), "--questions", "q1",
                 "--roles", "sex=nosuch"])
    assert code == 2 and "sex variable nosuch (--roles sex) is not in the file" in capsys.readouterr().err


@pytest.mark.slow  # R's haven writes the poll; the flow runs it on the session's tiny vLLM engine
def test_a_haven_written_poll_runs_grouped_by_region(api_url: str, tiny_model: Path, tmp_path: Path,
                                                     capsys, shared_engines) -> None:
    if shutil.which("Rscript") is None or subprocess.run(["Rscript", "-e", "library(haven)"],
                                                         capture_output=True).returncode != 0:
        pytest.skip("R's haven not found: install Debian's r-cran-haven (`make setup` does as root)")
    frame = poll_frame()
    frame.to_csv(tmp_path / "poll.csv", index=False)

    def labelled(name: str) -> str:
        labels = ", ".join(f'"{label}" = {code}' for code, label in POLL_VALUES[name].items())
        na = ", na_values = 9" if name in ("voto", "confianza") else ""
        return f"d${name} <- labelled_spss(d${name}, c({labels}){na}, label = \"{POLL_LABELS[name]}\")"

    script = "\n".join(["library(haven)", f'd <- read.csv("{tmp_path / "poll.csv"}", encoding = "UTF-8")',
                        *(labelled(name) for name in POLL_VALUES),
                        *(f'attr(d${n}, "label") <- "{POLL_LABELS[n]}"'
                          for n in POLL_LABELS if n not in POLL_VALUES),
                        f'write_sav(d, "{tmp_path / "plebiscito.sav"}")'])
    (tmp_path / "write.R").write_text(script, encoding="utf-8")
    subprocess.run(["Rscript", str(tmp_path / "write.R")], check=True, capture_output=True)
    out, results = tmp_path / "poll", tmp_path / "results"
    _import(capsys, tmp_path / "plebiscito.sav", out, "--questions", "voto,confianza", "--country", "region",
            "--name", "Plebiscite")
    assert main(["issp", "--data_dir", str(out), "--dataset_size", "500", "--model", str(tiny_model),
                 "--engine", '{"dtype": "float32"}', "--output_dir", str(results)]) == 0
    err = capsys.readouterr().err
    assert "pooled into one" not in err  # every respondent has a region: nothing pooled
    (metrics,) = results.rglob("*_metrics.json")
    stored = json.loads(metrics.read_text())
    assert stored["grouping"] == "Región" and "majority_group_question" in stored["baselines"]
    html = (results / "report" / "report.html").read_text()
    assert "By Región (pooled over domains)" in html and "ISSP" not in html
    summary = (next(results.rglob("summary.md"))).read_text()
    assert summary.startswith("# Plebiscite results")


LANGUAGE_LABELS = {  # respondent_id, country, weight, sex, age, education, religion, party
    "fr": ("Identifiant du répondant", "Pays", "Pondération", "Sexe", "Âge du répondant", "Niveau d'études",
           "Religion", "Parti politique"),
    "es": ("Identificador del entrevistado", "País", "Ponderación", "Sexo", "Edad", "Nivel educativo",
           "Religión", "Partido político"),
    "it": ("Identificativo intervistato", "Paese", "Fattore di ponderazione", "Sesso", "Età",
           "Titolo di studio", "Religione", "Partito votato"),
    "nl": ("Respondentnummer", "Land", "Weegfactor", "Geslacht", "Leeftijd", "Hoogst voltooide opleiding",
           "Religie", "Partij"),
    "pt": ("Identificador do inquirido", "País", "Ponderação", "Sexo", "Idade", "Nível de escolaridade",
           "Religião", "Partido"),
    "de": ("Befragten-ID", "Erhebungsland", "Gewichtungsfaktor", "Geschlecht", "Alter",
           "Höchster Schulabschluss", "Konfession", "Parteipräferenz"),
}


@pytest.mark.parametrize("language", sorted(LANGUAGE_LABELS))
def test_roles_proposed_from_labels_in_other_languages(language: str) -> None:
    roles = ("respondent_id", "country", "weight", "sex", "age", "education", "religion", "party")
    names = [f"v{i}" for i in range(len(roles))]
    labels = dict(zip(names, LANGUAGE_LABELS[language], strict=True))
    labels |= {"q1": "Q1 Confiance dans le gouvernement", "x": "Ingreso"}  # an item and an unassigned one
    survey = SurveyFile(Path("f.sav"), "SPSS", {n: Variable(n, label) for n, label in labels.items()}, 1)
    found = propose_roles(survey, list(labels), {})
    assert {role: found[role][0] for role in roles} == dict(zip(roles, names, strict=True))
    assert found["group"] == (None, "") and found["employment"] == (None, "")


def test_issp_codebooks_propose_the_background_block(shared_issp: Path) -> None:
    """The real codebooks: the comparative variables, never a country's own version ("Belgium: Party
    voted for") nor a spouse's; the simplified ISCED where a module has no DEGREE."""
    for path in sorted((shared_issp / "codebooks").glob("*.json")):
        book = json.loads(path.read_text())
        variables = {e["domain"]: Variable(e["domain"], e["meaning"]) for e in book}
        survey = SurveyFile(path, "Stata", variables, 1)
        found = {role: name for role, (name, _) in propose_roles(survey, list(survey.variables), {}).items()}
        education = "EDULEVEL" if "EDULEVEL" in survey.variables else "DEGREE"
        assert found == {"respondent_id": "CASEID", "country": found["country"], "group": None,
                         "weight": found["weight"], "sex": "SEX", "age": "AGE", "education": education,
                         "religion": "RELIGGRP", "party": "PARTY_LR", "employment": "MAINSTAT"}, path.name
        assert found["country"].lower() in ("c_alphan", "v3", "country", "c_sample"), path.name


DESIGN_LABELS = {"resp": "Respondent ID", "psu": "Pseudo-PSU", "strat": "Pseudo-stratum", "sdmvpsu": None,
                 "repwt1": "Replicate weight 1", "fecha": "Fecha de la entrevista",
                 "intnr": "Interviewer number", "dauer": "Interviewdauer in Minuten",
                 "studie": "Studiennummer", "vers": "Archive version", "strate": "Strate d'échantillonnage",
                 "punto": "Punto de muestreo",
                 "sex": None, "edad": "Edad", "ingreso": "Ingreso mensual del hogar",
                 "relimp": "How important is God in your life?", "wt": "Design weight",
                 "q1": "Trust in the government"}
LEFT_OUT = {"survey design (PSU, stratum, cluster, sampling point)": "psu strat sdmvpsu strate punto",
            "a weight (design, post-stratification, replicate)": "repwt1",
            "interview metadata (date, time, duration, mode, interviewer)": "fecha dauer",
            "an identifier (respondent, case, household, interviewer)": "intnr",
            "study metadata (study number, archive version, DOI)": "studie vers",
            "answers another questionnaire item": "relimp"}


def write_design_survey(folder: Path, n: int = 60) -> Path:
    """A complex sample's file: design variables, interview and study metadata beside three traits."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({name: rng.integers(1, 4, n) for name in DESIGN_LABELS}).astype(float)
    frame["wt"] = rng.uniform(0.5, 2.0, n)
    path = folder / "design.sav"
    pyreadstat.write_sav(frame, path, column_labels={k: v for k, v in DESIGN_LABELS.items() if v},
                         variable_value_labels={"q1": {1: "High", 2: "Some", 3: "None"},
                                                "sex": {1: "Male", 2: "Female", 3: "Other"}})
    return path


def test_the_persona_is_the_respondent_not_the_design(tmp_path: Path, capsys) -> None:
    """Ids, weights, PSU/strata, interview and study metadata and other questions (by label or name, in
    several languages) are left out, each listed with why; the prompt holds exactly what the report says
    is shown; --persona all keeps them (issue 42: pseudo-PSU and pseudo-stratum reached the model)."""
    out = tmp_path / "design"
    _, err = _import(capsys, write_design_survey(tmp_path), out, "--questions", "q1", "--weight", "wt")
    for why, names in LEFT_OUT.items():
        line = next(line for line in err.splitlines() if line.startswith(f"- left out, {why} ("))
        assert sorted(re.findall(r"(?:^|, )(\w+)", line.split("): ", 1)[1])) == sorted(names.split()), line
    assert "- shown: sex, edad \"Edad\", ingreso \"Ingreso mensual del hogar\"" in err
    assert "- sex: sex (proposed from its name)" in err  # unlabelled: never "from its label"
    assert '- respondent id: resp "Respondent ID" (proposed from its label)' in err
    assert main(["issp", "prompts", "--data_dir", str(out), "--domain_id", "design", "--limit", "1"]) == 0
    persona = json.loads(capsys.readouterr().out.split("Personal information:\n")[1].split("\n--- user")[0])
    assert list(persona) == ["sex", "Edad", "Ingreso mensual del hogar"]
    _, err = _import(capsys, write_design_survey(tmp_path), tmp_path / "all", "--questions", "q1",
                     "--weight", "wt", "--persona", "all")
    assert "- left out" not in err and 'psu "Pseudo-PSU"' in err.split("- shown: ")[1].splitlines()[0]
