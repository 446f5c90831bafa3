"""Result files read back by content: seed keys, recomputed accuracy, atomicity, summary, plots."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from socbench.files import atomic_open, write_json
from socbench.log.write import write_domain_files
from socbench.models import model_slug
from socbench.report.figures import draw_figures, parameter_count
from socbench.report.leaderboard import leaderboard
from socbench.report.markdown import write_run_summary
from socbench.report.output import model_dir
from socbench.scoring import score_items, summarize_domain
from socbench.types import Extraction, Item
from support.records import read_detailed

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
OPTS = (("1", "Agree"), ("2", "Neither"), ("3", "Disagree"))
SEED_DETAILED = {"domain", "timestamp", "model", "correct_count", "total_count", "accuracy", "macro_f1",
                 "micro_f1", "parse_failures", "excluded_count", "details"}
SEED_DETAIL = {"person_id", "question_id", "country_code", "true_answer", "llm_answer", "correct",
               "is_country_specific", "parse_error"}
SEED_METRICS = {"domain", "domain_id", "model", "timestamp", "accuracy", "macro_f1", "micro_f1",
                "interview_count", "total_count", "correct_count", "parse_failures", "excluded_count"}


def domain(domain_id: int, name: str, model: str, answers: list[tuple[str, str | None]], unmapped=None):
    """A small scored domain: one item per (true, predicted) pair, plus one excluded item."""
    items = [Item(i, "V5", "DE" if i % 2 else "JP", OPTS, true, False) for i, (true, _) in enumerate(answers)]
    items.append(Item(99, "V5", "DE", OPTS, None, False, "missing code -9"))
    extractions = {f"{i}:V5": Extraction(pred, None if pred else "no JSON object",
                                         {"1": 0.5, "2": 0.5} if i == 0 else None)
                   for i, (_, pred) in enumerate(answers)}
    scored = score_items(items, extractions)
    result = summarize_domain(domain_id, name, model, items, scored, unmapped or {}, len(answers) + 1)
    return result, scored


ANSWERS = [("1", "1"), ("2", "1"), ("3", "3"), ("1", None), ("2", "2")]


def test_domain_files_have_seed_keys_and_consistent_counts(tmp_path: Path) -> None:
    result, scored = domain(1, "Citizenship", "HuggingFaceTB/SmolLM2-135M-Instruct", ANSWERS, {"Taiwan": 3})
    detailed_path, metrics_path = write_domain_files(tmp_path, result, scored, timestamp="2025-01-01T00:00")
    assert detailed_path == tmp_path / "HuggingFaceTB_SmolLM2-135M-Instruct" / "Citizenship_detailed.json"
    detailed = read_detailed(detailed_path)
    assert SEED_DETAILED <= set(detailed)
    assert {"per_question_macro_f1", "baselines", "per_country"} <= set(detailed)
    details = detailed["details"]
    assert all(SEED_DETAIL <= set(d) for d in details)
    # Recompute from details alone, independently of the metric code.
    correct = sum(d["true_answer"] == d["llm_answer"] for d in details)
    assert correct == detailed["correct_count"] == 3 == sum(d["correct"] for d in details)
    assert detailed["total_count"] == len(details) == 5
    assert detailed["accuracy"] == pytest.approx(correct / len(details))
    assert detailed["excluded_count"] == 1 and detailed["parse_failures"] == 1
    assert details[0]["option_distribution"] == {"1": 0.5, "2": 0.5}
    assert "option_distribution" not in details[1]
    assert details[3] == {"person_id": 3, "question_id": "V5", "country_code": "DE", "true_answer": "1",
                          "llm_answer": None, "correct": False, "is_country_specific": False,
                          "parse_error": "no JSON object", "engine_error": None, "raw_reply": None,
                          "offered_codes": ["1", "2", "3"]}
    metrics = json.loads(metrics_path.read_text())
    assert SEED_METRICS <= set(metrics)
    assert metrics["domain_id"] == 1 and metrics["interview_count"] == 6
    assert {k: metrics[k] for k in ("correct_count", "total_count", "accuracy")} == {
        "correct_count": 3, "total_count": 5, "accuracy": detailed["accuracy"]}
    assert metrics["unmapped_countries"] == {"Taiwan": 3}


def test_empty_domain_writes_null_metrics(tmp_path: Path) -> None:
    result, scored = domain(3, "Family", "m", [])
    _, metrics_path = write_domain_files(tmp_path, result, scored)
    metrics = json.loads(metrics_path.read_text())  # strict JSON: no NaN tokens
    assert metrics["accuracy"] is None and metrics["total_count"] == 0 and metrics["excluded_count"] == 1


def test_atomic_write_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "out" / "Citizenship_detailed.json"
    with pytest.raises(RuntimeError):
        with atomic_open(target) as handle:
            handle.write('{"domain": "Citizenship", "details": [')
            raise RuntimeError("killed mid-way")
    assert not target.exists() and list(target.parent.iterdir()) == []
    write_json(target, {"ok": 1})
    with pytest.raises(TypeError):  # json.dump fails after writing part of the payload
        write_json(target, {"a": 1, "b": object()})
    assert json.loads(target.read_text()) == {"ok": 1}
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def test_model_names_stay_inside_the_output_dir(tmp_path: Path) -> None:
    for name in ("../../etc/passwd", "..", "/abs/path/model", "org/../../x", "a\\..\\b", "...", ""):
        folder = model_dir(tmp_path, name)
        assert folder.parent == tmp_path.resolve() and folder.name not in ("", ".", "..")
        assert ".." not in model_slug(name) and "/" not in model_slug(name)
    result, scored = domain(1, "Citizenship", "../../evil/..//x", ANSWERS)
    paths = write_domain_files(tmp_path / "results", result, scored)
    assert all((tmp_path / "results").resolve() in p.resolve().parents for p in paths)


def test_summary_files(tmp_path: Path) -> None:
    model = "org/SmolLM2-135M"
    a, _ = domain(1, "Citizenship", model, ANSWERS, {"Taiwan": 3})
    b, _ = domain(7, "Religion", model, [("1", "1"), ("2", "2")], {"Taiwan": 1, "Kosovo": 2})
    summary = write_run_summary(tmp_path, model, [b, a], failed={4: "engine crashed"})
    payload = json.loads(summary.path.read_text())
    assert [row["domain"] for row in payload["domains"]] == ["Citizenship", "Religion"]
    assert payload["mean"]["accuracy"] == pytest.approx((3 / 5 + 1.0) / 2)
    assert payload["unmapped_countries"] == {"Kosovo": 2, "Taiwan": 4}
    assert payload["totals"] == {"scoreable_items": 7, "parse_failures": 1, "engine_errors": 0,
                                 "excluded_count": 2, "usage": {}}  # results built here: no engine asked
    assert payload["complete"] and payload["incomplete_domains"] == {}
    row = payload["domains"][0]
    assert row["margin_over_best_baseline"] == pytest.approx(row["accuracy"] - row["best_baseline_accuracy"])
    md = summary.markdown.read_text()
    assert "| Citizenship (1) | 0.6000 |" in md and "| Religion (7) | 1.0000 |" in md
    assert "| **mean** | 0.8000 |" in md
    assert "Kosovo (2), Taiwan (4)" in md and "4: engine crashed" in md
    assert summary.plot is not None and summary.plot.read_bytes()[:8] == PNG_MAGIC
    assert summary.rows[0]["domain"] == "Citizenship"


def incomplete_domain(domain_id: int = 3, name: str = "Family", model: str = "m"):
    """ANSWERS, with two items the engine could not answer."""
    items = [Item(i, "V5", "DE", OPTS, true, False) for i, (true, _) in enumerate(ANSWERS)]
    extractions = {f"{i}:V5": Extraction(pred, None if pred else "no JSON object", raw_reply=f"r{i}")
                   for i, (_, pred) in enumerate(ANSWERS)}
    extractions["1:V5"] = extractions["4:V5"] = Extraction(None, engine_error="HTTP 500: boom")
    scored = score_items(items, extractions)
    return summarize_domain(domain_id, name, model, items, scored, {}, len(items)), scored


def test_incomplete_domain_files_say_so_and_hold_no_score(tmp_path: Path) -> None:
    """Issue 12, seen 2 and 8: engine errors apart from parse failures, raw replies kept."""
    result, scored = incomplete_domain()
    detailed_path, metrics_path = write_domain_files(tmp_path, result, scored)
    for payload in (json.loads(detailed_path.read_text()), json.loads(metrics_path.read_text())):
        assert payload["complete"] is False
        assert payload["incomplete_reason"] == "2 engine errors, first: HTTP 500: boom"
        assert (payload["engine_errors"], payload["parse_failures"]) == (2, 1)
        assert payload["engine_error_reasons"] == {"HTTP 500: boom": 2}
        assert payload["parse_failure_reasons"] == {"no JSON object": 1}
        assert payload["accuracy"] is None and payload["macro_f1"] is None and payload["micro_f1"] is None
    details = read_detailed(detailed_path)["details"]
    assert [d["engine_error"] for d in details] == [None, "HTTP 500: boom", None, None, "HTTP 500: boom"]
    assert [d["parse_error"] for d in details] == [None, None, None, "no JSON object", None]
    assert [d["raw_reply"] for d in details] == ["r0", None, "r2", "r3", None]
    complete, _ = domain(1, "Citizenship", "m", ANSWERS)
    summary = write_run_summary(tmp_path, "m", [complete, result])
    payload = json.loads(summary.path.read_text())
    assert payload["complete"] is False and payload["incomplete_domains"] == {"3": result.incomplete_reason}
    assert payload["mean"]["accuracy"] is None and payload["totals"]["engine_errors"] == 2
    md = summary.markdown.read_text()
    assert "| Family (3) | incomplete |" in md and "| **mean** | n/a |" in md
    assert "Incomplete run: not a result" in md and "domain 3: 2 engine errors, first: HTTP 500: boom" in md


@pytest.mark.parametrize("name, params", [
    ("HuggingFaceTB/SmolLM2-135M-Instruct", 135e6), ("SmolLM2-1.7B", 1.7e9), ("llama-2-7b-chat", 7e9),
    ("Qwen2.5-0.5B-Instruct", 0.5e9), ("gpt-4o", None), ("Phi-3-mini-128k-instruct", None),
    ("Mixtral-8x7B", None), ("model-4bit", None),
])
def test_parameter_count(name: str, params: float | None) -> None:
    assert parameter_count(name) == params


def _scored_run(out: Path, model: str, answers: list[tuple[str, str | None]]) -> None:
    result, scored = domain(1, "Citizenship", model, answers)
    write_domain_files(out, result, scored)
    write_run_summary(out, model, [result])


def test_model_scale_plot(tmp_path: Path) -> None:
    for model, acc in (("org/SmolLM2-135M", ANSWERS), ("org/SmolLM2-1.7B", [("1", "1")] * 4),
                       ("gpt-4o", ANSWERS)):
        _scored_run(tmp_path, model, acc)
    figures = draw_figures(leaderboard(tmp_path), tmp_path)
    assert figures.paths["model_scale"].read_bytes()[:8] == PNG_MAGIC
    assert any("gpt-4o" in note and "left out of the scale plot" in note for note in figures.notes)


def test_model_scale_plot_needs_two_sized_models(tmp_path: Path) -> None:
    _scored_run(tmp_path, "org/SmolLM2-135M", ANSWERS)
    figures = draw_figures(leaderboard(tmp_path), tmp_path)
    assert "model_scale" not in figures.paths and not (tmp_path / "model_scale.png").exists()
    assert any("every run is of one model size (135M)" in note for note in figures.notes)


def test_a_study_grouped_by_province_is_no_country_in_its_summary(tmp_path: Path) -> None:
    """Issue 42: summary.md said "per country x question" and "Respondents in no country" of a study
    grouped by province; summary.json's rows record the grouping."""
    a, _ = domain(1, "Ces", "m", ANSWERS, {})
    summary = write_run_summary(tmp_path, "m", [replace(a, grouping="province")])
    md = summary.markdown.read_text()
    assert "country" not in md.lower() and "per province x question" in md
    assert json.loads(summary.path.read_text())["domains"][0]["grouping"] == "province"
