"""A domain record for tests that need exact items: the shape ``socbench.log.write`` gives a real scored
domain, with the details and questions a test names."""

from __future__ import annotations

from typing import Any

from socbench.files import json_safe
from socbench.log.records import FORMAT
from socbench.log.write import domain_record
from socbench.scoring import score_items, summarize_domain
from socbench.types import Extraction, Item


def detailed_record(details: list[dict[str, Any]], questions: dict[str, Any], domain: str = "Citizenship",
                    model: str = "m") -> dict[str, Any]:
    """``<Domain>_detailed.json``'s content: a one-item domain's record with ``details`` and ``questions``."""
    items = [Item(1, "V1", "DE", (("1", "Yes"), ("2", "No")), "1", False)]
    scored = score_items(items, {items[0].item_id: Extraction("k", "1")})
    result = summarize_domain(1, domain, model, items, scored, {}, 1)
    record = domain_record(result, scored, "2025-01-01T00:00:00+00:00").model_dump()
    return json_safe({**record, "persona_groups": {}, "details": details, "questions": questions})


def summary_record(data: dict[str, Any], model: str = "m") -> dict[str, Any]:
    """``summary.json``'s content as far as a reader of ``data`` needs it (no domain pooled)."""
    return {"format": FORMAT, "task": "issp", "model": model, "failed_domains": {}, "pooled": {},
            "data": data}
