"""The words and the style of ``report.html``, kept as package data (``texts.json``, ``report.css``): what
each section answers, what every number means and is compared with (docs/results.md says the same)."""

from __future__ import annotations

import json
from importlib.resources import files

from socbench.estimates.study import DEFAULT_FRACTION
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS as MIN_N


def _fill(text: str) -> str:
    return text.format(min_n=MIN_N, fraction=DEFAULT_FRACTION)


_HERE = files("socbench.report")
_TEXTS = json.loads(_HERE.joinpath("texts.json").read_text(encoding="utf-8"))
LEADS, NOTES = ({key: _fill(text) for key, text in _TEXTS[part].items()} for part in ("leads", "notes"))
DEFINITIONS = tuple((term, _fill(text)) for term, text in _TEXTS["definitions"])
CSS = _HERE.joinpath("report.css").read_text(encoding="utf-8")
