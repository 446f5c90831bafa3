"""Issue 31, "where a user looks": what the answers are worth as respondents, in the run's results
(``summary.json``, each domain's record), in ``report.html`` ("Could these answers stand in for
respondents?", read in chromium) and in the leaderboard, computed once by the run's score stage
and equal to what ``socbench estimate`` gives with the same labelled fraction, seed and repeats.
Results written before the run recorded it still report, saying what to do.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

import socbench.scoring as scoring
from socbench.estimates.items import domain_frame
from socbench.estimates.study import DEFAULT_FRACTION, RUN_REPEATS, Settings, estimate_items
from socbench.report.html import write_report
from socbench.report.stand_in import GAINS
from socbench.scoring import score_domain
from socbench.types import DomainData, Extraction, Item, Respondent
from support import FakeOpenAIServer
from support.browser import browser, needs_browser
from support.cli import socbench
from tests.test_estimates_cli import QUESTIONS, N, planted_server, write_data
from tests.test_report_html import OPTS, make_run


def _csv(path: Path) -> dict[tuple[str, str], dict]:
    with path.open() as handle:
        return {(row["run"], row["domain"]): row for row in csv.DictReader(handle)}


@pytest.mark.slow  # a run against the test server, `socbench estimate`, and chromium
@needs_browser
def test_a_run_records_the_gain_per_question_and_the_report_shows_it(api_url: str, tmp_path: Path) -> None:
    data, truth = write_data(tmp_path)
    out = tmp_path / "out"
    with FakeOpenAIServer(answer=planted_server(truth)) as server:
        socbench("issp", "--api_type", "config", "--api_base", server.url, "--model", "fake-model",
                 "--data_dir", str(data), "--domain_id", "1", "--output_dir", str(out),
                 "--concurrent_requests", "16")
    run = out / "fake-model"
    summary = json.loads((run / "summary.json").read_text())
    record = summary["estimates"]["Citizenship"]
    assert record == json.loads((run / "Citizenship_metrics.json").read_text())["estimates"]
    assert (record["fraction"], record["repeats"], record["labelled"], record["respondents"]) == (
        DEFAULT_FRACTION, RUN_REPEATS, N // 10, N)
    assert set(record["questions"]) == set(QUESTIONS)
    gains = {qid: q["gain"] for qid, q in record["questions"].items()}
    assert gains["V3"] > gains["V1"] and gains["V4"] == pytest.approx(1, abs=0.05)
    (row,) = summary["domains"]
    assert row["median_gain"] == record["median_gain"]
    assert [row["median_gain_ci_low"], row["median_gain_ci_high"]] == record["median_gain_ci"]

    # `socbench estimate` at the same defaults gives the same numbers: the run computed them once
    socbench("estimate", str(run), "--repeats", str(RUN_REPEATS))
    (domain,) = json.loads((run / "estimates.json").read_text())["domains"]
    for question in domain["questions"]:
        head, ours = question["estimates"][0], record["questions"][question["question_id"]]
        assert (ours["gain"], ours["rho"]) == pytest.approx((head["gain"], head["rho"]), rel=1e-9)
    assert record["median_gain"] == pytest.approx(domain["gain"]["median"], rel=1e-9)
    assert record["median_gain_ci"] == pytest.approx(domain["gain"]["median_spread"], rel=1e-9)

    board, median = _csv(out / "report" / "leaderboard.csv"), pytest.approx(record["median_gain"], rel=1e-5)
    assert float(board["fake-model", "Citizenship"]["median_gain"]) == median  # written to 6 digits
    assert float(board["fake-model", "ALL"]["median_gain"]) == median  # the mean over its one domain
    assert "median gain (PPI) [spread over splits]" in (out / "report" / "leaderboard.md").read_text()
    assert (out / "report" / GAINS).read_bytes().startswith(b"\x89PNG")

    with browser(tmp_path / "chromium") as chromium:
        chromium.open((out / "report" / "report.html").as_uri(), "stand in for respondents?", "V4")
        section = chromium.driver.execute_script(
            "document.querySelectorAll('details').forEach(d => d.open = true);"
            "const h = document.getElementById('standin'); let text = '', images = 0;"
            "for (let e = h; e && !(e !== h && e.tagName === 'H2'); e = e.nextElementSibling) {"
            "  text += e.innerText + '\\n'; images += e.tagName === 'IMG' ? 1 : 0; }"
            "return [text, images];")
    text, images = section
    assert images == 1
    assert "random sample of the same population" in text and "does not assume that the model is good" in text
    assert "docs/estimates.md" in text
    assert f"Citizenship: these answers are worth {record['median_gain']:.1f} x your sample" in text
    lines = text.splitlines()
    for qid, q in record["questions"].items():  # the table row of each question: id, target, n, gain, rho
        assert f"{qid}\tmean\t{q['labelled']}\t{q['gain']:.2f}\t{q['rho']:.2f}" in lines, qid


def _strip_estimates(run: Path) -> None:
    """Make a run folder as socbench wrote it before the gain was recorded."""
    for path in [*run.glob("*_detailed.json"), *run.glob("*_metrics.json"), run / "summary.json"]:
        record = json.loads(path.read_text())
        record.pop("estimates", None)
        for row in [record.get("summary", {}), *record.get("domains", [])]:
            for key in ("median_gain", "median_gain_ci_low", "median_gain_ci_high"):
                row.pop(key, None)
        path.write_text(json.dumps(record))


def test_older_results_and_small_domains_still_report_and_say_why_there_is_no_gain(
        tmp_path: Path, memo_cache: Path) -> None:
    make_run(tmp_path, "org/Model-1.7B", 0.6, seed=1, cache=memo_cache)
    make_run(tmp_path, "org/Model-135M", 0.3, seed=2, cache=memo_cache)
    _strip_estimates(tmp_path / "org_Model-1.7B")
    record = json.loads((tmp_path / "org_Model-135M" / "summary.json").read_text())["estimates"]["Family"]
    assert record["note"].startswith("Family: left out: 30 respondents, 3 labelled")
    paths = write_report(tmp_path)
    page = paths.html.read_text()
    assert "Could these answers stand in for respondents?" in page
    assert "Citizenship: no gain in these results (written before socbench recorded it): run the same " \
           "command again to re-score" in page
    assert "Family: left out: 30 respondents, 3 labelled, fewer than the 10 an interval needs" in page
    assert "gains" not in paths.figures and not (paths.out_dir / GAINS).exists()
    board = _csv(paths.leaderboard_csv)
    assert board["org_Model-1.7B", "Family"]["median_gain"] == ""  # written before
    assert board["org_Model-135M", "Family"]["median_gain"] == ""  # too few respondents


def test_a_rerun_reads_the_record_back_and_it_equals_socbench_estimate_on_the_same_items(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    people = [Respondent(i, "DE", "DE", {"Sex of Respondent": ("Male", "Female")[i % 2]}, {},
                         weight=1 + i % 3) for i in range(120)]
    items = [Item(p.person_id, q, "DE", OPTS, str(rng.randint(1, 4)), False)
             for p in people for q in ("V1", "V2")]
    answers = {i.item_id: Extraction(i.true_code if rng.random() < 0.7 else "1") for i in items}
    data = DomainData(1, "Citizenship", (), tuple(people), {}, "synthetic")
    scored = score_domain(data, items, answers, model="m", cache=tmp_path)
    first = scored.result.estimates
    assert (first["labelled"], set(first["questions"])) == (12, {"V1", "V2"})
    monkeypatch.setattr(scoring, "gain_record", lambda *args: pytest.fail("computed again"))
    assert score_domain(data, items, answers, model="m", cache=tmp_path).result.estimates == first
    frame = domain_frame("Citizenship", scored.items, {str(p.person_id): p.weight for p in people}, {})
    (domain,) = estimate_items(frame, Settings(repeats=RUN_REPEATS))["domains"]
    for question in domain["questions"]:
        head = question["estimates"][0]
        assert first["questions"][question["question_id"]]["gain"] == pytest.approx(head["gain"], rel=1e-9)
