"""The demo's question sets and vocabulary, written for socbench (not ISSP text), in ``demo_questions.json``.

Each question's drivers say which traits (age, female, edu, relig, work, urban, married) push an
answer up (ordinal) or towards one option (categorical); ``synth`` reads them, files do not carry them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

_DATA = json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8"))
_FILE_KEYS = ("question_id", "question", "answer", "special")

# domain id -> (C_ALPHAN code, display name as ISSP spells it in that module)
DEMO_COUNTRIES: dict[int, tuple[tuple[str, str], ...]] = {
    int(domain): tuple((code, name) for code, name in pairs) for domain, pairs in _DATA["countries"].items()}
# domain id -> attribute key of the country variable (C_ALPHAN's label in that module)
COUNTRY_KEYS: dict[int, str] = {int(domain): key for domain, key in _DATA["country_keys"].items()}
# Names ISSP used in one module that differ from that module's code table.
NAME_QUIRKS: dict[tuple[int, str], str] = {(d, code): name for d, code, name in _DATA["name_quirks"]}
# ISSP variable -> (attribute key, code -> value label, missing-value label); used when no
# codebook is given, and as the fallback for labels a codebook lacks.
VOCABULARY: dict[str, tuple[str, dict[str, str], str]] = {
    name: (v["key"], v["labels"], v["missing"]) for name, v in _DATA["vocabulary"].items()}
NATIONAL_RELIGION_KEY: str = _DATA["national_religion_key"]
NAP_LABEL: str = _DATA["nap_label"]


def demo_question_set(slug: str) -> list[dict[str, Any]]:
    """The demo questions of one domain in the ``issp_qa_*.json`` layout."""
    return [{key: copy.deepcopy(q[key]) for key in _FILE_KEYS} for q in _DATA["sets"][slug]]


def demo_drivers(slug: str) -> dict[str, tuple[str, dict]]:
    """question id -> (question text, drivers) for the demo questions of ``slug``."""
    return {q["question_id"]: (q["question"], q["drivers"]) for q in _DATA["sets"].get(slug, [])}


def religion_profile(code: str) -> tuple[dict[int, float], float]:
    """(RELIGGRP code -> probability, mean religiosity) for a C_ALPHAN code or its nation's."""
    found = next((group for prefix in (code, code.split("-")[0]) for group in _DATA["religion"]
                  if prefix in group["codes"]), _DATA["default_religion"])
    total = sum(found["mix"].values())
    return {int(k): v / total for k, v in found["mix"].items()}, float(found["mean"])
