"""`socbench report` end to end on result folders written by the real scoring and file writers."""

from __future__ import annotations

import base64
import csv
import json
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest

from socbench.cli import main
from socbench.log.write import write_domain_files
from socbench.report import html_sections as page
from socbench.report.html import write_report
from socbench.report.leaderboard import leaderboard, leaderboard_rows
from socbench.report.markdown import write_run_summary
from socbench.scoring import score_domain
from socbench.types import DomainData, Extraction, Item, Respondent
from support.records import read_detailed

OPTS = (("1", "Agree"), ("2", "Neither"), ("3", "Disagree"), ("4", "Strongly disagree"))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DOMAINS = ((1, "Citizenship"), (3, "Family"))
A, B = "org/Model-1.7B", "org/Model-135M"


def make_run(out: Path, model: str, p_right: float, seed: int, cache: Path, logprobs: bool = False) -> None:
    """Two domains x 30 respondents (3 countries) x 3 questions, scored and written for real; ``cache``:
    the session's memo folder: the demographic model (the same people and answers in every run) is
    fitted once per domain and read back by the other runs, as on a real rerun."""
    rng = random.Random(seed)
    truth = random.Random(99)  # the same human answers for every model
    results = []
    for domain_id, name in DOMAINS:
        people, items, extractions = [], [], {}
        for i in range(30):
            pid, country = domain_id * 1000 + i, ("DE", "JP", "US")[i % 3]
            people.append(Respondent(pid, country, country, {
                "Sex of Respondent": ("Male", "Female")[i % 2],
                "Age of respondent": f"{20 + i * 2} years"}, {}))
            for q in ("V1", "V2", "V3"):
                item = Item(pid, q, country, OPTS, str(truth.randint(1, 4)), False)
                items.append(item)
                roll = rng.random()
                pred = None if roll > 0.95 else item.true_code if roll < p_right else str(rng.randint(1, 4))
                dist = {"1": 0.4, "2": 0.3, "3": 0.2, "4": 0.1} if logprobs else None
                extractions[item.item_id] = Extraction(pred, None if pred else "no JSON object", dist)
        data = DomainData(domain_id, name, (), tuple(people), {}, "synthetic")
        domain = score_domain(data, items, extractions, model=model, cache=cache)
        scored, result = domain.items, domain.result
        write_domain_files(out, result, scored)
        results.append(result)
    write_run_summary(out, model, results)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, memo_cache: Path) -> Path:
    out = tmp_path_factory.mktemp("results")
    make_run(out, A, 0.6, seed=1, cache=memo_cache)
    make_run(out, B, 0.3, seed=2, cache=memo_cache, logprobs=True)
    return out


def details(folder: Path) -> dict[str, dict]:
    return {p.name.removesuffix("_detailed.json"): read_detailed(p)
            for p in sorted(folder.glob("*_detailed.json"))}


def bootstrap_by_hand(correct: list[bool], people: list, n: int = 4000, seed: int = 5) -> tuple[float, float]:
    """Resample respondents with replacement in a plain loop; percentile CI of pooled accuracy."""
    rng = np.random.default_rng(seed)
    by_person: dict = {}
    for ok, person in zip(correct, people, strict=True):
        by_person.setdefault(person, []).append(ok)
    groups = list(by_person.values())
    stats = []
    for _ in range(n):
        draw = [groups[j] for j in rng.integers(0, len(groups), len(groups))]
        stats.append(sum(map(sum, draw)) / sum(map(len, draw)))
    return float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5))


def test_report_cli_leaderboard_matches_details(results: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "site"
    assert main(["report", str(results), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"report: {out / 'report.html'}" in printed
    with (out / "leaderboard.csv").open() as handle:
        rows = {(r["run"], r["domain"]): r for r in csv.DictReader(handle)}
    for model in (A, B):
        run = model.replace("/", "_")
        accs, margins = [], []
        for domain, detailed in details(results / run).items():
            items = detailed["details"]
            acc = sum(d["correct"] for d in items) / len(items)
            margin = acc - max(v for v in detailed["baselines"].values() if v is not None)
            row = rows[(run, domain)]
            assert float(row["accuracy"]) == pytest.approx(acc, abs=1e-5)
            assert float(row["margin_over_best_baseline"]) == pytest.approx(margin, abs=1e-5)
            assert float(row["parse_failure_rate"]) == pytest.approx(
                sum(d["parse_error"] is not None for d in items) / len(items), abs=1e-5)
            assert float(row["per_question_macro_f1"]) == pytest.approx(detailed["per_question_macro_f1"],
                                                                        abs=1e-5)
            assert float(row["js_score"]) == pytest.approx(detailed["distribution"]["country_question"]["js"],
                                                           abs=1e-5)
            assert int(row["respondents"]) == 30 and int(row["items"]) == 90
            low, high = bootstrap_by_hand([d["correct"] for d in items], [d["person_id"] for d in items])
            assert float(row["accuracy_ci_low"]) == pytest.approx(low, abs=0.03)
            assert float(row["accuracy_ci_high"]) == pytest.approx(high, abs=0.03)
            accs.append(acc)
            margins.append(margin)
        overall = rows[(run, "ALL")]
        assert float(overall["accuracy"]) == pytest.approx(sum(accs) / 2, abs=1e-5)
        assert float(overall["margin_over_best_baseline"]) == pytest.approx(sum(margins) / 2, abs=1e-5)
        assert float(overall["accuracy_ci_low"]) < float(overall["accuracy"])
        assert float(overall["accuracy"]) < float(overall["accuracy_ci_high"])
    markdown = (out / "leaderboard.md").read_text()
    assert "| 1 | org_Model-1.7B | org/Model-1.7B | main run | 2 |" in markdown
    assert "## Paired comparisons" in markdown


def test_html_is_self_contained_with_images_and_tables(results: Path, tmp_path: Path) -> None:
    paths = write_report(results, tmp_path / "site")
    page = paths.html.read_text()
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 2  # bars, model scale (two sized models); the heatmap is a table on the page
    assert all(base64.b64decode(img)[:8] == PNG_MAGIC for img in images)
    assert set(paths.figures) == {"domain_bars", "heatmap", "model_scale"}
    assert all(p.read_bytes()[:8] == PNG_MAGIC for p in paths.figures.values())
    top = paths.leaderboard.overall[0]
    accuracy = f"{top['accuracy']:.3f} [{top['accuracy_ci_low']:.3f}, {top['accuracy_ci_high']:.3f}]"
    assert "<table>" in page and f"<td>{accuracy}</td>" in page and ">org_Model-135M</td>" in page
    assert "Persona groups" in page and ">female</td>" in page
    assert not re.search(r"<script|<link|https?://|src=\"(?!data:)", page)


def test_the_templates_escape_a_surveys_words_and_keep_their_markup() -> None:
    """Autoescaping is on: a label's <, & and quotes show as text; a macro's own markup stays markup;
    numbers right-aligned (no class), words ``txt``, n/a ``na``, a row's class kept."""
    assert page.table(["<th>"], [["<b>x</b> & 'y'", "0.5", "n/a"]], ["few"]) == (
        "<div class='scroll'><table><thead><tr><th>&lt;th&gt;</th></tr></thead><tbody><tr class='few'>"
        "<td class='txt'>&lt;b&gt;x&lt;/b&gt; &amp; &#39;y&#39;</td><td>0.5</td><td class='na'>n/a</td></tr>"
        "</tbody></table></div>")
    assert page.details("<s>", page.note("<i>"), open_=True) == (
        "<details open><summary>&lt;s&gt;</summary><p class='note'>&lt;i&gt;</p></details>")


def test_compare_flag_matches_mcnemar_by_hand(results: Path, capsys) -> None:
    a, b = details(results / "org_Model-1.7B"), details(results / "org_Model-135M")
    right_a, right_b = ({(dom, d["person_id"], d["question_id"]): d["correct"]
                         for dom, f in run.items() for d in f["details"]} for run in (a, b))
    a_only = sum(right_a[k] and not right_b[k] for k in right_a)
    b_only = sum(right_b[k] and not right_a[k] for k in right_a)
    n = a_only + b_only
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1)) / 2 ** n)
    assert main(["report", str(results), "--compare", "org_Model-1.7B", "org/Model-135M"]) == 0
    text = capsys.readouterr().out
    assert f"| {a_only} / {b_only} | {p:.3g} |" in text
    assert "180 shared items from 60 respondents" in text
    argv = ["report", str(results), "--compare", "org_Model-1.7B", "org_Model-135M", "--domain_id", "3"]
    assert main(argv) == 0
    assert "90 shared items from 30 respondents in Family" in capsys.readouterr().out


def test_rows_for_an_artifact_are_strict_json(results: Path) -> None:
    rows = leaderboard_rows(leaderboard(results))
    assert [r["domain"] for r in rows[:2]] == ["ALL", "ALL"] and len(rows) == 2 + 4
    json.dumps(rows, allow_nan=False)


def test_scale_plot_left_out_with_one_sized_model(tmp_path: Path, memo_cache: Path, capsys) -> None:
    make_run(tmp_path, "org/Model-135M", 0.5, seed=3, cache=memo_cache)
    assert main(["report", str(tmp_path)]) == 0
    assert "no scale plot" in capsys.readouterr().out
    assert (tmp_path / "report" / "report.html").is_file()
    assert not (tmp_path / "report" / "model_scale.png").exists()
    make_run(tmp_path, "other/Model-135M", 0.4, seed=4, cache=memo_cache)  # two runs, one size
    assert main(["report", str(tmp_path)]) == 0  # the report folder itself is not mistaken for a run
    assert "every run is of one model size (135M): no scale plot" in capsys.readouterr().out
    assert not (tmp_path / "report" / "model_scale.png").exists()


@pytest.mark.parametrize("argv, message", [
    (["missing"], "results folder not found"),
    (["empty"], "no results of a run here"),
    (["results", "--compare", "org_Model-1.7B", "nope"], "--compare 'nope': no such run"),
    (["results", "--domain_id", "3"], "--domain_id applies only with --compare"),
])
def test_cli_errors_are_one_line_exit_2(results: Path, tmp_path: Path, capsys, argv, message) -> None:
    (tmp_path / "empty" / "some_model").mkdir(parents=True)
    where = {"missing": tmp_path / "missing", "empty": tmp_path / "empty", "results": results}
    assert main(["report", str(where[argv[0]]), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("socbench: error: ") and message in err
