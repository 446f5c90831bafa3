"""The results log's items as JSON Lines (issue 43): a line per scored item and per respondent beside a
small record, read back line by line; a log of the older one-document format is named to re-score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from socbench.errors import DataError
from socbench.log.read import ITEMS_SUFFIX, RESPONDENTS_SUFFIX, load_runs, read_domain
from socbench.log.records import detail_row
from socbench.log.summary import pooled
from socbench.log.write import write_domain_files
from socbench.scoring import score_items, summarize_domain
from socbench.types import Extraction, Item
from support.cli import socbench

OPTS = (("1", "Agree"), ("2", "Disagree"))


def write_domain(out: Path, people: int = 12) -> Path:
    """A scored domain of ``people`` respondents x 2 questions with persona groups; its record's path."""
    items = [Item(p, q, "DE" if p % 2 else "JP", OPTS, str(1 + (p + len(q)) % 2), False)
             for p in range(people) for q in ("V1", "V22")]
    extractions = {i.item_id: Extraction("1", raw_reply=f"reply {i.item_id}") for i in items}
    groups = {p: {"sex": ("female", "male")[p % 2], "age_group": "18-29"} for p in range(people)}
    scored = score_items(items, extractions, groups)
    result = summarize_domain(1, "Family", "m", items, scored, {}, people)
    detailed, _ = write_domain_files(out, result, scored)
    return detailed


def test_items_and_respondents_are_lines_beside_a_small_record(tmp_path: Path) -> None:
    """Fails before the JSON Lines log: the items were ``details`` inside ``_detailed.json``."""
    path = write_domain(tmp_path)
    record = json.loads(path.read_text())
    assert "details" not in record and "persona_groups" not in record and record["format"] == 3
    lines = path.with_name("Family" + ITEMS_SUFFIX).read_text().splitlines()
    respondents = path.with_name("Family" + RESPONDENTS_SUFFIX).read_text().splitlines()
    people = [json.loads(line) for line in respondents]
    assert len(lines) == record["total_count"] == 24
    assert people[1] == {"person_id": 1, "sex": "male", "age_group": "18-29"} and len(people) == 12
    domain = read_domain(path)
    scored = domain.scored(raw_reply=True)
    assert [json.loads(line) for line in lines] == [detail_row(item) for item in scored]
    assert scored[3].groups == {"sex": "male", "age_group": "18-29"} and scored[3].raw_reply == "reply 1:V22"
    assert domain.scored()[3].raw_reply is None  # what no reader of the items needs is not read
    assert pooled([domain])["line"]["items"] == 24


def test_an_items_file_that_does_not_match_its_record_is_one_line(tmp_path: Path) -> None:
    path = write_domain(tmp_path)
    items = path.with_name("Family" + ITEMS_SUFFIX)
    lines = items.read_text().splitlines()
    items.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(DataError, match=r"Family_items.jsonl: 23 items, but its record counts 24: re-score"):
        read_domain(path).scored()
    items.write_text("\n".join([*lines[:4], '{"person_id": 1}', *lines[5:]]) + "\n")
    with pytest.raises(DataError, match=r"Family_items.jsonl:5: not a scored item record"):
        read_domain(path).scored()


def test_a_log_of_the_one_document_format_is_named_to_re_score(tmp_path: Path) -> None:
    """Fails before the format was bumped: a format-2 ``_detailed.json`` (items inside) was read."""
    path = write_domain(tmp_path)
    record = json.loads(path.read_text())
    lines = path.with_name("Family" + ITEMS_SUFFIX).read_text().splitlines()
    path.write_text(json.dumps({**record, "format": 2, "persona_groups": {},
                                "details": [json.loads(line) for line in lines]}))
    path.with_name("Family" + ITEMS_SUFFIX).unlink()
    with pytest.raises(DataError, match="written by an older socbench .* re-score it"):
        load_runs(path.parent)
    done = socbench("report", str(path.parent), code=2)
    assert "re-score it by running the same command again" in done.stderr
