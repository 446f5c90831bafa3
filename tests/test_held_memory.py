"""What a whole survey holds per item (issue 43: ~2.8 million items at 50,000 respondents): the records are
slots, what many items show is one object, and a unit's stages are not remembered once its flow has them."""

from __future__ import annotations

from pathlib import Path

from socbench import pipeline
from socbench.config import make_config
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
