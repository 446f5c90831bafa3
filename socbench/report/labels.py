"""Names people read: result files keep their stable keys (``RoleofGovernment``, ``DE``), every table and
page goes through these ("Role of Government", "Germany (DE)")."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from socbench.data.countries import country_info
from socbench.domains import DOMAINS
from socbench.metrics.baselines import UNMAPPED
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS as MIN_RESPONDENTS
from socbench.models import model_slug
from socbench.report.output import LABELS, fmt
from socbench.types import COUNTRY

_TITLES = {d.name: d.display_name for d in DOMAINS}


def baseline_label(name: str | None, short: bool = False) -> str:
    """A baseline's name for people: "majority_country_question" -> "Majority answer in the
    respondent's country" (``short``: "majority in country"); ``_weighted`` ones say so."""
    if not name:
        return "n/a" if not short else "none"
    base, weighted = (name.removesuffix("_weighted"), name.endswith("_weighted"))
    label = LABELS["baselines_short" if short else "baselines"].get(base, base.replace("_", " "))
    return label + ((" (weighted)" if short else " (survey-weighted)") if weighted else "")


def domain_label(name: str) -> str:
    """An ISSP domain's title ("Role of Government"); a manifest's names are display names already."""
    return _TITLES.get(name, name)


def country_label(code: str | None, grouping: str = COUNTRY) -> str:
    """"DE" -> "Germany (DE)"; an unmapped country stays "unmapped"; a group of a study grouped by
    another variable (``grouping``: "Region") is named as the data names it."""
    if code is None or code == UNMAPPED:
        return "country unknown (unmapped)" if grouping == COUNTRY else f"no {grouping} recorded"
    if grouping != COUNTRY:
        return code
    info = country_info(code)
    return code if info.name == info.code else f"{info.name} ({info.code})"


_COUNTRY_WORDS = re.compile(r"\b([Cc])ountr(y|ies)\b")


def grouping_words(text: str, grouping: str = COUNTRY) -> str:
    """The report's texts, worded for countries, for a study grouped by another variable (a province is
    no country): "country" -> "province", "countries" -> "province groups"."""
    if grouping == COUNTRY:
        return text

    def word(match: re.Match[str]) -> str:
        name = grouping if match.group(2) == "y" else f"{grouping} groups"
        return name[:1].upper() + name[1:] if match.group(1) == "C" else name

    return _COUNTRY_WORDS.sub(word, text)


def runs_grouping(runs: Iterable[Any]) -> str:
    """What the runs' items are grouped by (``ModelRun.grouping``): the one they share, else "group"."""
    found = {run.grouping for run in runs}
    return found.pop() if len(found) == 1 else COUNTRY if not found else "group"


def study_title(studies: Iterable[Any]) -> str:
    """The name titles give the results: the study they share (``summary.json``'s ``data.study``:
    the survey's own name), else "Survey" (several studies, or none recorded)."""
    found = {str(s) for s in studies if s}
    return found.pop() if len(found) == 1 else "Survey"


def variant_label(run: str, model: str) -> str:
    """What a run folder adds to its model ("no persona (control), log-prob answers"; "main run")."""
    slug = model_slug(model)
    if run == slug or not run.startswith(f"{slug}-"):
        return "main run" if run == slug else "-"
    return ", ".join(LABELS["variants"].get(part, part) for part in run.removeprefix(f"{slug}-").split("-"))


def signed(value: Any, digits: int = 3) -> str:
    """A margin with its sign: "+0.031", "-0.052 (below baseline)", "n/a"."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" + (" (below baseline)" if value < 0 else "")


def p_text(value: Any) -> str:
    """A p-value: "<0.001" below that, else three decimals; "n/a" when undefined."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def accuracy_text(row: dict[str, Any]) -> str:
    """"0.412 [0.380, 0.441]", or the accuracy with why there is no interval (too few respondents)."""
    if row["respondents"] < MIN_RESPONDENTS:
        return f"{fmt(row['accuracy'])} n/a (n < {MIN_RESPONDENTS})"
    return f"{fmt(row['accuracy'])} [{fmt(row['accuracy_ci_low'])}, {fmt(row['accuracy_ci_high'])}]"


def weights_off_text(domains: Iterable[tuple[str, str | None]]) -> str:
    """``"<reason>: Domain A, Domain B; <reason>: ..."``: why weighted metrics are off, grouped by reason."""
    found = list(domains)
    return "; ".join(f"{reason}: {', '.join(name for name, why in found if why == reason)}"
                     for reason in dict.fromkeys(reason for _, reason in found if reason))
