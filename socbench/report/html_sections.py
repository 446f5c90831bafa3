"""The building blocks of ``report.html``: Jinja2 templates (``templates/``, autoescaped), their macros
(``table``, ``note``, ``details``, ``lead``) and the rows they show. A negative margin has class ``neg``, a
group below ``MIN_RESPONDENTS`` respondents is greyed (``few``) without a CI, long parts sit in ``<details>``.
Its words and style are package data (``texts.json``, ``templates/report.css``): what each section
answers, what every number means and is compared with (docs/results.md says the same)."""

from __future__ import annotations

import re
from typing import Any

from jinja2 import Environment, PackageLoader
from markupsafe import Markup, escape

from socbench.estimates.study import DEFAULT_FRACTION
from socbench.log.read import DomainRun, ModelRun
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS as MIN_RESPONDENTS
from socbench.report.figures import heat_rows
from socbench.report.labels import (
    accuracy_text,
    baseline_label,
    country_label,
    domain_label,
    grouping_words,
    p_text,
    signed,
)
from socbench.report.output import HEADS, LABELS, TEXTS, fmt
from socbench.shuffle import option_text
from socbench.types import COUNTRY


def _fill(text: str) -> str:
    return text.format(min_n=MIN_RESPONDENTS, fraction=DEFAULT_FRACTION)


LEADS, NOTES = ({key: _fill(text) for key, text in TEXTS[part].items()} for part in ("leads", "notes"))
DEFINITIONS = tuple((term, _fill(text)) for term, text in TEXTS["definitions"])


def code(text: str) -> Markup:
    """`command` as <code>command</code> (the markdown and the terminal keep the backticks)."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text))))


def enough(row: dict[str, Any]) -> bool:
    """A group with a CI and a colour: ``MIN_RESPONDENTS`` respondents or more."""
    return row["respondents"] >= MIN_RESPONDENTS


def run_heading(run: ModelRun) -> str:
    return f"{run.run} (model {run.model})" if run.run != run.model else run.run


def _group_cells(row: dict[str, Any]) -> list[str]:
    """A ``metrics.grouped.group_row`` pooled over a run's domains (with its CI)."""
    return [str(row["respondents"]), str(int(row["n"])), accuracy_text(row),
            baseline_label(row["best_baseline"]), fmt(row["best_baseline_accuracy"]),
            signed(row["margin_over_best_baseline"])]


def country_table(rows: dict[str, dict[str, Any]], grouping: str = COUNTRY) -> str:
    """Per country (or group of the study's ``grouping`` variable), pooled over domains."""
    order = sorted(rows, key=lambda c: (not enough(rows[c]), country_label(c, grouping)))
    return table((grouping, *HEADS["country"][1:]), [[country_label(c, grouping), *_group_cells(rows[c])]
                                                 for c in order],
                 ["few" if not enough(rows[c]) else "" for c in order])


def persona_table(groups: dict[str, dict[str, dict[str, Any]]]) -> str:
    found = [(name, group, row) for name, by_group in groups.items() for group, row in by_group.items()]
    return table(HEADS["persona"], [[a.replace("_", " "), g, *_group_cells(row)] for a, g, row in found],
                 ["" if enough(row) else "few" for *_, row in found])


def _modal(shares: dict[str, float] | None, options: dict[str, str]) -> str:
    if not shares:
        return "n/a"
    code = max(shares, key=lambda c: shares[c])
    return f"{option_text(code, options.get(code, ''))} ({100 * shares[code]:.0f}%)"


def _view_cells(view: dict[str, Any], human: dict[str, float] | None, model: dict[str, float] | None,
                options: dict[str, str]) -> list[str]:
    """A question's (or one country's) respondents, accuracy, both modal answers, agreement and tau."""
    return [str(view["respondents"]), fmt(view.get("accuracy")), _modal(human, options),
            _modal(model, options), fmt(view.get("modal_agreement")), fmt(view.get("kendall_tau"))]


def shares(view: dict[str, Any]) -> tuple[dict[str, float], dict[str, float] | None, str]:
    """The human and model shares to show: survey-weighted ones when the data has weights."""
    if view.get("weighted_human"):
        return view["weighted_human"], view.get("weighted_model"), "weighted "
    return view["human"], view.get("model"), ""


def question_rows(dom: DomainRun) -> list[list[str]]:
    """One summary row per question of a domain."""
    return [[f"{qid}: {view.get('text', '')}"[:140], *_view_cells(view, *shares(view)[:2], _options(view)),
             p_text(view.get("kendall_tau_p")), fmt(view.get("js")), fmt(view.get("uniform_js"))]
            for qid, view in dom.stored.questions.items()]


def _options(view: dict[str, Any]) -> dict[str, str]:
    return dict(map(tuple, view.get("options", [])))


def bar_caption(view: dict[str, Any]) -> str:
    """What a question's bars rest on: respondents, accuracy, agreement, unreadable answers left out."""
    caption = (f"{view['respondents']} respondents; accuracy {fmt(view.get('accuracy'))}; modal agreement "
               f"{fmt(view.get('modal_agreement'))}; Kendall tau {fmt(view.get('kendall_tau'))}")
    if not view.get("enough_respondents", True):
        caption += f" (fewer than {MIN_RESPONDENTS} respondents: no alignment)"
    if view.get("no_answer"):
        caption += f"; {100 * view['no_answer']:.0f}% unreadable answers left out of the model's shares"
    return caption


def alignment(view: dict[str, Any], grouping: str) -> str:
    """A question's figures by country (or group), folded; "" when none were stored."""
    countries = view.get("countries") or {}
    if not countries:
        return ""
    rows = [[country_label(c, grouping), *_view_cells(r, r.get("human"), r.get("model"), _options(view))]
            for c, r in countries.items()]
    return details(f"by {grouping} ({len(rows)} with at least {MIN_RESPONDENTS} respondents)",
                   table((grouping, *HEADS["alignment"][1:]), rows))


ENV = Environment(loader=PackageLoader("socbench.report"), autoescape=True, trim_blocks=True,
                  lstrip_blocks=True, keep_trailing_newline=True)
ENV.tests["numeric"] = re.compile(r"^(?:[-+]?\d|n/a)").match
ENV.filters["code"] = code
ENV.globals.update(LABELS=LABELS, HEADS=HEADS, NOTES=NOTES, DEFINITIONS=DEFINITIONS, COUNTRY=COUNTRY,
                   MIN_RESPONDENTS=MIN_RESPONDENTS, fmt=fmt, option_text=option_text, enough=enough,
                   run_heading=run_heading, domain_label=domain_label, grouping_words=grouping_words,
                   signed=signed, country_table=country_table, persona_table=persona_table,
                   heat_rows=heat_rows, shares=shares, question_rows=question_rows, bar_caption=bar_caption,
                   alignment=alignment, LEADS=LEADS)
MACROS = ENV.get_template("macros.html.j2").module
table, note, details, lead = MACROS.table, MACROS.note, MACROS.details, MACROS.lead  # markup, from Python
