"""The words and the style of ``report.html``, kept as package data (``texts.json``, ``report.css``): what
each section answers, what every number means and is compared with (docs/results.md says the same)."""

from __future__ import annotations

import json
from importlib.resources import files

from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS as MIN_N

_HERE = files("socbench.report")
_TEXTS = json.loads(_HERE.joinpath("texts.json").read_text(encoding="utf-8"))
LEADS: dict[str, str] = {key: text.format(min_n=MIN_N) for key, text in _TEXTS["leads"].items()}
DEFINITIONS = tuple((term, text.format(min_n=MIN_N)) for term, text in _TEXTS["definitions"])
CSS = _HERE.joinpath("report.css").read_text(encoding="utf-8")
