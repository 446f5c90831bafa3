"""Issue 42's battery, imported: every real public survey file (``fixtures/cardata.py``: R's haven wrote
them; ``.sav`` and ``.dta``, plain, user-missing, Stata's tagged ``.a``/``.b``, a ``;`` CSV) imported whole,
its counts equal to R's ``table()``, each missing code named by its own label, a grouping variable never
called a country. The runs on them: ``test_real_battery.py``."""

from __future__ import annotations

import json
import re

import pytest

from fixtures.cardata import COUNTRY, FILES, ISSP_WORDS, Battery, Study, import_args
from support.cli import socbench

pytestmark = pytest.mark.slow  # Rscript writes the files; each import runs the CLI


def expected_exclusions(battery: Battery, file: str, question: str) -> dict[str, int]:
    """What socbench must count as not scored, by reason, from R's table() of the file."""
    variable = battery.reference.files[file][question]
    reasons = {}
    for code, n in variable.counts.items():
        label = variable.value_labels.get(code)
        if code == "NA":
            reasons["system-missing (no answer recorded)"] = n
        elif code.startswith("."):
            reasons[f"Stata missing {code} ({label})"] = n
        elif code in variable.na_values or label in ("Don't know", "Refused"):
            reasons[f"missing code {code} ({label})"] = n
    return reasons



# --------------------------------------------------------------------------- every file, imported whole


@pytest.fixture(scope="module")
def imported(battery: Battery, tmp_path_factory: pytest.TempPathFactory):
    """``imported(study, file)``: the file imported whole into a folder of its own (once), its import report,
    what the import printed and ``data validate --json``'s record of it."""
    done: dict[str, dict] = {}

    def get(study: Study, file: str) -> dict:
        if file not in done:
            out = tmp_path_factory.mktemp(file.replace(".", "_")) / "Dataset_all"
            printed = socbench("data", "import", *import_args(study, battery, file), "--out", str(out),
                               "--sizes", "all")
            (report,) = out.glob("import_report_*.md")
            checked = json.loads(socbench("data", "validate", "--data_dir", str(out), "--dataset_size", "all",
                                          "--json").stdout)
            (domain,) = checked["domains"].values()
            done[file] = {"out": out, "stderr": printed.stderr, "report": report.read_text(),
                          "domain": domain}
        return done[file]

    return get


def _totals(battery: Battery, study: Study, file: str) -> dict[str, int]:
    totals: dict[str, int] = {}
    for question in study.questions:
        for reason, n in expected_exclusions(battery, file, question).items():
            totals[reason] = totals.get(reason, 0) + n
    return totals


@pytest.mark.parametrize(("study", "file"), FILES, ids=[f for _, f in FILES])
def test_every_file_imports_with_r_s_counts(battery: Battery, imported, study: Study, file: str) -> None:
    """Respondents and the answers not scored, per question and reason, as R's table() counts them."""
    domain, rows = imported(study, file)["domain"], battery.reference.rows[file]
    assert domain["respondents"] == rows
    expected = {q: expected_exclusions(battery, file, q) for q in study.questions}
    assert {q: domain["excluded_by_question"].get(q, {}) for q in study.questions} == expected
    totals = _totals(battery, study, file)
    assert domain["excluded_by_reason"] == totals
    assert domain["scoreable_items"] == rows * len(study.questions) - sum(totals.values())


@pytest.mark.parametrize(("study", "file"), FILES, ids=[f for _, f in FILES])
def test_the_import_summary_says_what_validate_counts(battery: Battery, imported, study: Study,
                                                     file: str) -> None:
    """Each missing code by its own label, with R's count, in the summary the import prints and writes;
    no ISSP vocabulary in a study that is not ISSP."""
    got = imported(study, file)
    summary = got["report"].split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert summary.strip() in got["stderr"]
    rows = battery.reference.rows[file]
    for question in study.questions:  # each question's own line, as validate counts it
        line = re.search(rf"^- {question}:.*?(?=^- |\Z)", got["report"], re.M | re.S)
        assert line, question
        excluded = expected_exclusions(battery, file, question)
        scored = rows - sum(excluded.values())
        assert re.search(rf"answers scored (?:{scored}|{scored:,})\b", line.group()), (question, line.group())
        for reason, n in excluded.items():
            assert re.search(rf"{re.escape(reason)}: (?:{n}|{n:,})\b", line.group()), (reason, line.group())
    assert f"{battery.reference.rows[file]:,} respondents" in summary
    for reason, n in _totals(battery, study, file).items():
        assert re.search(rf"{re.escape(reason)}:? {n:,}\b", summary), (reason, summary)
    assert not ISSP_WORDS.search(got["report"] + json.dumps(got["domain"]))


GROUPED_FILES = [(s, f) for s, f in FILES if s.group]


def _dicts(value: object) -> list[dict]:
    """Every dict in a JSON value, nested ones included."""
    if isinstance(value, dict):
        return [value, *(d for v in value.values() for d in _dicts(v))]
    return [d for v in value for d in _dicts(v)] if isinstance(value, list) else []


@pytest.mark.parametrize(("study", "file"), GROUPED_FILES, ids=[f for _, f in GROUPED_FILES])
def test_a_grouping_variable_is_counted_and_never_called_a_country(battery: Battery, imported, study: Study,
                                                                   file: str) -> None:
    """A province, a year or a region: counted per value as R counts it (the sampling record), named by
    its own label, never a country (``data validate``, the sampling record)."""
    got = imported(study, file)
    variable = battery.reference.files[file][study.group]
    assert got["domain"]["grouping"] == variable.label
    (stats_path,) = got["out"].glob("A_GroundTruth_samplingall/sampling_stats_*.json")
    stats = json.loads(stats_path.read_text())
    r_counts = {label: n for label, n in variable.labelled().items() if n}
    assert r_counts in _dicts(stats), (r_counts, stats)
    assert not COUNTRY.search(json.dumps(got["domain"])), got["domain"]  # data validate's record
    assert not COUNTRY.search(json.dumps(stats)), stats  # the sampling record
