"""What a whole survey holds per item (issue 43: ~2.8 million items at 50,000 respondents): the records are
slots, what many items show is one object, and a unit's stages are not remembered once its flow has them."""

from __future__ import annotations

from pathlib import Path

from socbench import pipeline
from socbench.config import make_config
from socbench.estimates.items import columns_frame
from socbench.studies import task_for
from socbench.types import EngineResult, Extraction, Item, PromptRequest, ScoredItem


def test_per_item_records_have_no_instance_dict() -> None:
    for record in (Item, PromptRequest, EngineResult, Extraction, ScoredItem):
        assert "__slots__" in vars(record), record  # no dict per instance: ~60 bytes an item each


def test_items_and_prompts_share_what_they_show(tmp_path: Path) -> None:
    """Items showing the same options share one codes tuple; a respondent's prompts one system Message, a
    question's (in one country) one user Message; an unshuffled order is the codes' own tuple."""
    task = task_for(make_config(domain_id=3, interview_count=4, output_dir=tmp_path))
    (unit,) = task.units()
    found = pipeline.plan(task, unit)
    items, requests = found.samples.items, found.prompts.requests
    assert len({id(i.offered_codes) for i in items}) == len({i.options for i in items})
    by_person: dict[str, set[int]] = {}
    for request in requests:
        by_person.setdefault(request.item_id.split(":")[0], set()).add(id(request.messages[0]))
        assert request.option_order is request.offered_codes
    assert all(len(ids) == 1 for ids in by_person.values()) and len(by_person) == 4
    users = {(r.item_id.split(":")[1], r.messages[1].content): id(r.messages[1]) for r in requests}
    assert len(set(users.values())) == len({r.messages[1].content for r in requests})
    pipeline.release(task, unit)
    assert pipeline.plan(task, unit).prompts is not found.prompts  # built again: nothing was held
    pipeline.forget()


def test_the_estimates_frame_holds_repeated_text_once() -> None:
    """The score stage's estimates frame: ids and groups as categories, codes as the items' own strings (as
    pandas 3's default text columns, every cell was a copy: ~1 GB at 50,000 respondents)."""
    columns = {"person_id": [7, 7, 8], "question_id": ["q1", "q2", "q1"], "country_code": ["DE", "DE", None],
               "true_answer": ["1", "2", "1"], "llm_answer": ["1", None, "2"], "engine_error": [None] * 3,
               "option_distribution": [None] * 3, "offered_codes": [("1", "2")] * 3}
    frame = columns_frame("Work", columns, {"7": {"sex": "Female"}, "8": {"sex": "Male"}}, None, {})
    categories = ("domain", "grouping", "person_id", "question_id", "country_code", "sex")
    objects = ("true_code", "model_code", "model_shares", "offered_codes")
    assert frame.dtypes.to_dict() == {**dict.fromkeys(categories, "category"), "weight": "float64",
                                      **dict.fromkeys(objects, "object")}
    assert frame["true_code"][0] is columns["true_answer"][0]
    assert frame["model_code"].tolist() == ["1", None, "2"]
