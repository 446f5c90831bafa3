"""Label bias vs order bias in ISSP circular evaluation (issue 17).

Order-only (codes stay with their text) lets a model that always answers "1" look perfectly
consistent; relabelling (options numbered 1..n by position, the answer mapped back, as
OpenCompass does) scores it 0. Both through the real prompt, extraction and scoring code on
a fake engine, and relabel end to end through the CLI on the project's test server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from socbench.circular import issp_variants, reduce_domain
from socbench.extract import extract_all
from socbench.log.write import write_scored_domain
from socbench.prompts.persona import PromptSettings, build_prompts
from socbench.report.html import write_report
from socbench.report.markdown import write_run_summary
from socbench.scoring import score_domain
from socbench.types import CircularSettings, DomainData, EngineResult, Item, Question, Respondent
from support.fake_openai import FakeOpenAIServer

V5 = Question("V5", "How important is it to vote?",
              {"1": "Very", "2": "Fairly", "3": "Not very", "4": "Not at all"})
V9 = Question("V9", "Who should pay?", {"1": "Employers", "2": "Government", "8": "Both"})  # codes not 1..n


def always(code: str):
    """A fake engine: the same reply to every request, as a tiny model stuck on one code does."""
    return lambda prompts: [EngineResult(p.key, text=json.dumps({"answer": code})) for p in prompts]


def run(labels: str, answer, items: list[Item], mode: str = "circular"):
    people = {pid: Respondent(pid, "Japan", "JP", {"Country Prefix ISO 3166": "Japan"}, {})
              for pid in range(4)}
    settings = CircularSettings(mode, seed=1, labels=labels)
    prompts = build_prompts(items, people, {"V5": V5, "V9": V9}, PromptSettings(structured=True), settings)
    extractions = extract_all(prompts, answer(prompts))
    data = DomainData(1, "Citizenship", (V5, V9), tuple(people.values()), {}, "synthetic")
    return prompts, reduce_domain(score_domain(data, items, extractions, model="m"), settings)


ITEMS = [Item(pid, q.id, "JP", tuple(q.options.items()), true, False)
         for pid, (q, true) in enumerate([(V5, "1"), (V5, "3"), (V9, "1"), (V9, "8")])]


def test_always_one_is_perfectly_consistent_order_only_and_scores_zero_relabelled() -> None:
    _, order_only = run("order_only", always("1"), ITEMS)
    prompts, relabelled = run("relabel", always("1"), ITEMS)
    accuracy = order_only.result.metrics["accuracy"]
    assert accuracy == 0.5  # true code 1 in two of four items
    assert order_only.result.metrics["circular_perf"] == accuracy  # order bias only: looks consistent
    assert order_only.circular_scores.metrics["acc_origin"] == accuracy
    assert relabelled.result.metrics["circular_relabel_perf"] == 0.0  # always "1": never every order right
    assert relabelled.result.metrics["accuracy"] == accuracy  # the normal prompt is asked and scored as ever
    assert "circular_perf" not in relabelled.result.metrics
    # relabelled prompts number the options 1..n by position and accept exactly those numbers
    v9 = [p for p in prompts if p.item_id.startswith("3:V9--")]
    assert v9 and all(p.offered_codes == ("1", "2", "3") for p in v9)
    shown = v9[0].messages[1].content.split("Options:\n")[1].split("\n\n")[0]
    order = [v for v in issp_variants(ITEMS[3], CircularSettings("circular", seed=1, labels="relabel"))
             if v.request_id == v9[0].item_id][0].pattern
    assert shown.splitlines() == [f"{i}. {V9.options[code]}" for i, code in enumerate(order, 1)]
    normal = [p for p in prompts if p.item_id == "3:V9"]
    assert len(normal) == 1 and normal[0].offered_codes == ("1", "2", "8")  # the survey's own codes


def test_relabelled_answers_map_back_by_position_and_by_label() -> None:
    """A perfect model answers the position of the true option; by number or by its label."""
    settings = CircularSettings("circular", seed=1, labels="relabel")
    variants = {v.request_id: v for item in ITEMS for v in issp_variants(item, settings)}

    def perfect(prompts):
        def reply(p):
            variant = variants.get(p.item_id)
            if variant is None:  # the normal prompt
                item = next(i for i in ITEMS if i.item_id == p.item_id)
                return item.true_code
            label = dict(variant.options)[variant.gold]
            return label if len(p.item_id) % 2 else variant.gold  # some by label text, some by number
        return [EngineResult(p.key, text=json.dumps({"answer": reply(p)})) for p in prompts]

    _, scored = run("relabel", perfect, ITEMS)
    assert scored.result.metrics["circular_relabel_perf"] == 1.0
    assert all(v.correct and v.to_original(v.prediction) == v.gold_original for v in scored.variants)


def test_all_possible_sampled_relabelled_keeps_rotations_and_labels_the_sample() -> None:
    six = Question("V7", "Six options", {str(c): f"option {c}" for c in range(1, 7)})
    item = Item(0, "V7", "JP", tuple(six.options.items()), "2", False)
    settings = CircularSettings("all_possible", max_variants=8, seed=2, labels="relabel")
    people = {0: Respondent(0, "Japan", "JP", {}, {})}
    prompts = build_prompts([item], people, {"V7": six}, PromptSettings(), settings)
    extractions = extract_all(prompts, always("1")(prompts))
    data = DomainData(1, "Citizenship", (six,), (people[0],), {}, "synthetic")
    scored = reduce_domain(score_domain(data, [item], extractions, model="m"), settings)
    metrics = scored.result.metrics
    assert scored.circular_scores.questions == {"origin": 1, "circular": 1, "all_possible": 0, "sampled": 1}
    assert metrics["circular_relabel_perf"] != metrics["circular_relabel_perf"]  # no question has all 720
    assert metrics["circular_relabel_sampled_perf"] == 0.0 and "circular_relabel_sampled_acc" in metrics
    assert scored.circular_scores.metrics["perf_circular"] == 0.0  # the rotations are all there


def test_report_shows_both_label_modes_and_marks_sampled_orders(tmp_path: Path) -> None:
    for labels in ("order_only", "relabel"):
        _, scored = run(labels, always("1"), ITEMS)
        write_scored_domain(tmp_path, scored, CircularSettings("circular", seed=1, labels=labels))
    write_run_summary(tmp_path, "m", [scored.result])  # the run's end: the report reads runs that ended
    page = write_report(tmp_path).html.read_text()
    section = page.split("id='circular'", 1)[1].split("<h2", 1)[0]
    rows = [row.split("</td><td")[:8] for row in section.split("<tr>")[2:]]
    cells = [[c.rsplit(">", 1)[-1] for c in row] for row in rows]
    # domain, run, options shown, orders, questions, acc original order, acc over variants, perf
    assert cells == [["Citizenship", "m", "order-only (codes kept)", "rotations (n orders)", "4", "0.500",
                      "0.500", "0.500"],
                     ["Citizenship", "m", "relabelled 1..n", "rotations (n orders)", "4", "0.500", "0.286",
                      "0.000"]]
    six = Question("V7", "Six options", {str(c): f"option {c}" for c in range(1, 7)})
    item = Item(0, "V7", "JP", tuple(six.options.items()), "2", False)
    settings = CircularSettings("all_possible", max_variants=8, seed=2)
    prompts = build_prompts([item], {0: Respondent(0, "Japan", "JP", {}, {})}, {"V7": six}, PromptSettings(),
                            settings)
    data = DomainData(2, "Environment", (six,), (Respondent(0, "Japan", "JP", {}, {}),), {}, "synthetic")
    scored = reduce_domain(score_domain(data, [item], extract_all(prompts, always("2")(prompts)), model="m"),
                           settings)
    write_scored_domain(tmp_path, scored, settings)
    write_run_summary(tmp_path, "m", [scored.result])
    payload = json.loads((tmp_path / "m" / "Environment_circular_metrics.json").read_text())
    assert payload["sampled_questions"] == 1 and "not all n! orders" in payload["sampled"]
    assert "sampled orders (sampled: not all orders)" in write_report(tmp_path).html.read_text()


@pytest.mark.slow  # runs flows on the session's Prefect API
def test_cli_relabel_writes_labelled_files(tmp_path: Path, demo_data: Path, api_url: str,
                                           cli_in_process, capsys) -> None:
    out = tmp_path / "results"
    with FakeOpenAIServer(answer=lambda prompt, codes: json.dumps({"answer": "1"})) as server:
        args = ["issp", "--api_type", "config", "--api_base", server.url, "--model", "fake-model",
                "--data_dir", str(demo_data), "--domain_id", "1", "--interview_count", "3",
                "--output_dir", str(out), "--circular", "circular", "--circular_labels", "relabel"]
        assert cli_in_process(args) == 0
    folder = out / "fake-model"
    payload = json.loads((folder / "Citizenship_circular_relabel_metrics.json").read_text())
    assert payload["labels"] == "relabel" and payload["measures"].startswith("label and order bias")
    assert payload["metrics"]["perf_circular"] == 0.0 and payload["questions"]["circular"] > 0
    assert (folder / "circular_relabel_summary.md").read_text().count("relabelled") >= 1
    assert not (folder / "Citizenship_circular_metrics.json").exists()
    assert cli_in_process(["issp", "--circular_labels", "relabel"]) == 2
    assert "--circular_labels relabel applies only with --circular" in capsys.readouterr().err


@pytest.mark.parametrize("labels", ["order_only", "relabel"])
def test_identity_request_is_the_normal_one_when_labels_match(labels: str) -> None:
    """Codes 1..n in survey order: the identity variant is the normal prompt in both modes."""
    prompts, _ = run(labels, always("2"), ITEMS[:1])
    assert [p.item_id for p in prompts].count("0:V5") == 1 and len(prompts) == 4
