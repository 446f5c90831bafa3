"""A domain record for tests that need exact items: the shape ``socbench.log.write`` gives a real scored
domain, with the details and questions a test names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from socbench.files import json_safe, write_json
from socbench.log.read import DETAILED_SUFFIX, ITEMS_SUFFIX, RESPONDENTS_SUFFIX
from socbench.log.records import FORMAT
from socbench.log.write import domain_record, write_jsonl
from socbench.scoring import score_items, summarize_domain
from socbench.types import Extraction, Item


def detailed_record(details: list[dict[str, Any]], questions: dict[str, Any], domain: str = "Citizenship",
                    model: str = "m") -> dict[str, Any]:
    """A domain's log in one dict, as ``read_detailed`` gives it: a one-item domain's record with
    ``questions``, ``details`` (its items) and ``persona_groups`` (none), as ``write_detailed`` takes it."""
    items = [Item(1, "V1", "DE", (("1", "Yes"), ("2", "No")), "1", False)]
    scored = score_items(items, {items[0].item_id: Extraction("1")})
    result = summarize_domain(1, domain, model, items, scored, {}, 1)
    record = domain_record(result, scored, "2025-01-01T00:00:00+00:00").model_dump()
    return json_safe({**record, "persona_groups": {}, "details": details, "questions": questions,
                      "total_count": len(details)})


def write_detailed(path: Path, log: dict[str, Any]) -> Path:
    """``log`` (``detailed_record``'s shape) as a run writes it: ``path`` (``<Domain>_detailed.json``) the
    record, its ``details`` in ``<Domain>_items.jsonl`` and ``persona_groups`` in ``_respondents.jsonl``."""
    stem = path.name.removesuffix(DETAILED_SUFFIX)
    record = {k: v for k, v in log.items() if k not in ("details", "persona_groups")}
    write_jsonl(path.with_name(stem + ITEMS_SUFFIX), log["details"])
    write_jsonl(path.with_name(stem + RESPONDENTS_SUFFIX),
                ({"person_id": pid, **groups} for pid, groups in log.get("persona_groups", {}).items()))
    return write_json(path, record)


def read_detailed(path: Path) -> dict[str, Any]:
    """A domain's record (``<Domain>_detailed.json``) with its items as ``details`` and each respondent's
    groups (by id as text) as ``persona_groups``: every field a run wrote of it, in one dict."""
    stem = path.name.removesuffix(DETAILED_SUFFIX)

    def lines(suffix: str) -> list[dict[str, Any]]:
        text = path.with_name(stem + suffix).read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    groups = {str(row.pop("person_id")): row for row in lines(RESPONDENTS_SUFFIX)}
    return {**json.loads(path.read_text(encoding="utf-8")), "details": lines(ITEMS_SUFFIX),
            "persona_groups": groups}


def summary_record(data: dict[str, Any], model: str = "m") -> dict[str, Any]:
    """``summary.json``'s content as far as a reader of ``data`` needs it (no domain pooled)."""
    return {"format": FORMAT, "task": "issp", "model": model, "failed_domains": {}, "pooled": {},
            "data": data}
