"""The building blocks of ``report.html`` (plain HTML): a negative margin has class ``neg``, a group below
``MIN_RESPONDENTS`` respondents is greyed (``few``) without a CI, long parts sit in ``<details>``. Its words
and style are package data (``texts.json``, ``report.css``): what each section answers, what every number
means and is compared with (docs/results.md says the same)."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

from socbench.estimates.study import DEFAULT_FRACTION
from socbench.log.read import DomainRun, ModelRun
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS as MIN_RESPONDENTS
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
CSS = files("socbench.report").joinpath("report.css").read_text(encoding="utf-8")
COUNTRY_HEAD, PERSONA_HEAD, QUESTION_HEAD = (HEADS[name] for name in ("country", "persona", "question"))


def esc(text: Any) -> str:
    return html.escape(str(text))


_NUMERIC = re.compile(r"^(?:[-+]?\d|n/a)")


def _cell(text: str) -> str:
    """A cell; numbers right-aligned, words left, a negative margin and n/a marked by class."""
    classes = " ".join(c for c in ("neg" if "below baseline" in text else "",
                                   "na" if text.startswith("n/a") else "",
                                   "" if _NUMERIC.match(text) else "txt") if c)
    return f"<td class='{classes}'>{esc(text)}</td>" if classes else f"<td>{esc(text)}</td>"


def table(head: Sequence[str], rows: Sequence[Sequence[str]], row_classes: Sequence[str] = ()) -> str:
    """A scrollable table; ``row_classes`` (e.g. ``few``) per row."""
    header = "".join(f"<th>{esc(h)}</th>" for h in head)
    classes = row_classes or [""] * len(rows)
    body = "".join((f"<tr class='{cls}'>" if cls else "<tr>") + "".join(_cell(c) for c in row) + "</tr>"
                   for cls, row in zip(classes, rows))
    return (f"<div class='scroll'><table><thead><tr>{header}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def lead(key: str, grouping: str = COUNTRY) -> str:
    """A section's opening paragraph (``texts.LEADS``), worded for the results' ``grouping``."""
    return f"<p class='lead'>{esc(grouping_words(LEADS[key], grouping))}</p>"


def note(text: str) -> str:
    return f"<p class='note'>{esc(text)}</p>"


def details(summary: str, body: str, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{esc(summary)}</summary>{body}</details>"


def enough(row: dict[str, Any]) -> bool:
    """A group with a CI and a colour: ``MIN_RESPONDENTS`` respondents or more."""
    return row["respondents"] >= MIN_RESPONDENTS


def _group_cells(row: dict[str, Any]) -> list[str]:
    """A ``metrics.grouped.group_row`` pooled over a run's domains (with its CI)."""
    return [str(row["respondents"]), str(int(row["n"])), accuracy_text(row),
            baseline_label(row["best_baseline"]), fmt(row["best_baseline_accuracy"]),
            signed(row["margin_over_best_baseline"])]


def country_table(rows: dict[str, dict[str, Any]], grouping: str = COUNTRY) -> str:
    """Per country (or group of the study's ``grouping`` variable), pooled over domains."""
    order = sorted(rows, key=lambda c: (not enough(rows[c]), country_label(c, grouping)))
    return table((grouping, *COUNTRY_HEAD[1:]), [[country_label(c, grouping), *_group_cells(rows[c])]
                                                 for c in order],
                 ["few" if not enough(rows[c]) else "" for c in order])


def persona_table(groups: dict[str, dict[str, dict[str, Any]]]) -> str:
    rows, classes = [], []
    for attribute, by_group in groups.items():
        for group, row in by_group.items():
            rows.append([attribute.replace("_", " "), group, *_group_cells(row)])
            classes.append("" if enough(row) else "few")
    return table(PERSONA_HEAD, rows, classes)


def _heat_style(row: dict[str, Any]) -> str:
    """Background by margin: green above the baseline, red below, paler when close to it."""
    margin = row["margin_over_best_baseline"]
    if not enough(row) or margin != margin:
        return ""
    strength = min(1.0, abs(margin) / 0.2)
    hue = 130 if margin >= 0 else 0
    return f" style='background: hsl({hue}, 60%, {96 - 30 * strength:.0f}%)'"


def heat_table(cells: dict[tuple[str, str], dict[str, Any]], domains: Sequence[str],
               grouping: str = COUNTRY) -> str:
    """Country (or group) x domain: accuracy, margin and respondents per cell; thin cells greyed."""
    countries = sorted({c for c, _ in cells}, key=lambda c: country_label(c, grouping))
    shown = [c for c in countries if any(enough(cells[c, d]) for d in domains if (c, d) in cells)]
    head = "".join(f"<th>{esc(domain_label(d))}</th>" for d in domains)
    body = []
    for country in shown:
        tds = []
        for domain in domains:
            row = cells.get((country, domain))
            if row is None:
                tds.append("<td class='empty'></td>")
            elif not enough(row):
                tds.append(f"<td class='few'>n={row['respondents']}</td>")
            else:
                margin = signed(row["margin_over_best_baseline"])
                text = f"{fmt(row['accuracy'])} ({margin}) n={row['respondents']}"
                tds.append(f"<td class='heat{' neg' if 'below baseline' in margin else ''}'"
                           f"{_heat_style(row)}>{esc(text)}</td>")
        name = esc(country_label(country, grouping))
        body.append(f"<tr><th class='rowhead'>{name}</th>{''.join(tds)}</tr>")
    hidden = len(countries) - len(shown)
    if not shown:
        return note(f"No {grouping} has {MIN_RESPONDENTS} or more respondents in any one domain of this run: "
                    f"no {grouping} x domain grid (see the pooled table above).")
    lead = note(f"Accuracy (margin over the strongest baseline on the same items) and respondents per "
                f"{grouping} and domain; green above the baseline, red below. Cells with fewer than "
                f"{MIN_RESPONDENTS} respondents show only n, greyed."
                + (f" {hidden} of them with fewer than {MIN_RESPONDENTS} respondents in every domain "
                   "are left out of this grid (they are in the table above)." if hidden else ""))
    return (lead + f"<div class='scroll'><table class='heatmap'><thead><tr><th>{esc(grouping)}</th>"
            f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def _modal(shares: dict[str, float] | None, labels: dict[str, str]) -> str:
    if not shares:
        return "n/a"
    code = max(shares, key=lambda c: shares[c])
    return f"{option_text(code, labels.get(code, ''))} ({100 * shares[code]:.0f}%)"


def _shares(view: dict[str, Any]) -> tuple[dict[str, float], dict[str, float] | None, str]:
    """The human and model shares to show: survey-weighted ones when the data has weights."""
    if view.get("weighted_human"):
        return view["weighted_human"], view.get("weighted_model"), "weighted "
    return view["human"], view.get("model"), ""


def question_rows(dom: DomainRun) -> list[list[str]]:
    """One summary row per question of a domain."""
    rows = []
    for qid, view in dom.stored.questions.items():
        human, model, _ = _shares(view)
        labels = dict(map(tuple, view.get("options", [])))
        text = f"{qid}: {view.get('text', '')}"
        rows.append([text[:140], str(view["respondents"]), fmt(view.get("accuracy")), _modal(human, labels),
                     _modal(model, labels), fmt(view.get("modal_agreement")), fmt(view.get("kendall_tau")),
                     p_text(view.get("kendall_tau_p")), fmt(view.get("js")), fmt(view.get("uniform_js"))])
    return rows


def _bars(view: dict[str, Any]) -> str:
    human, model, weighted = _shares(view)
    rows = []
    for code, label in view.get("options", []):
        people, answered = human.get(code, 0.0), (model or {}).get(code, 0.0)
        rows.append(
            f"<tr><td class='opt'>{esc(option_text(code, label))}</td>"
            f"<td class='share'><span class='bar people' style='width:{100 * people:.1f}%'></span>"
            f"<span class='pct'>{100 * people:.1f}%</span></td>"
            f"<td class='share'><span class='bar model' style='width:{100 * answered:.1f}%'></span>"
            f"<span class='pct'>{100 * answered:.1f}%</span></td></tr>")
    caption = (f"{view['respondents']} respondents; accuracy {fmt(view.get('accuracy'))}; modal agreement "
               f"{fmt(view.get('modal_agreement'))}; Kendall tau {fmt(view.get('kendall_tau'))}")
    if not view.get("enough_respondents", True):
        caption += f" (fewer than {MIN_RESPONDENTS} respondents: no alignment)"
    if view.get("no_answer"):
        caption += f"; {100 * view['no_answer']:.0f}% unreadable answers left out of the model's shares"
    return (f"<table class='dist'><thead><tr><th>option</th><th>people ({weighted}share)</th>"
            f"<th>model ({weighted}share)</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            + note(caption))


def _country_alignment(view: dict[str, Any], grouping: str) -> str:
    countries = view.get("countries") or {}
    if not countries:
        return ""
    labels = dict(map(tuple, view.get("options", [])))
    rows = [[country_label(c, grouping), str(r["respondents"]), fmt(r.get("accuracy")),
             _modal(r.get("human"), labels),
             _modal(r.get("model"), labels), fmt(r.get("modal_agreement")), fmt(r.get("kendall_tau"))]
            for c, r in countries.items()]
    head = (grouping, "respondents", "accuracy", "people's most chosen", "model's most chosen",
            "modal agreement", "Kendall tau")
    return details(f"by {grouping} ({len(rows)} with at least {MIN_RESPONDENTS} respondents)",
                   table(head, rows))


def distribution_blocks(dom: DomainRun) -> str:
    """Per question: people's and the model's option shares side by side, then by country."""
    return "".join(f"<div class='question'><h4>{esc(qid)}: {esc(view.get('text', ''))}</h4>"
                   f"{_bars(view)}{_country_alignment(view, dom.stored.grouping)}</div>"
                   for qid, view in dom.stored.questions.items())


def run_heading(run: ModelRun) -> str:
    return f"{run.run} (model {run.model})" if run.run != run.model else run.run


def exports_section(runs: Sequence[ModelRun], out_dir: Path) -> list[str]:
    """Links to each run's exported answers (``socbench export`` / ``--export``), when it has any, and
    the ``--export`` formats that could not be written, with why."""
    items = []
    for run in runs:
        files = [p for p in sorted((run.folder / "export").glob("*")) if p.is_file() and p.name[0] != "."]
        links = ", ".join(f"<a href='{esc(Path(os.path.relpath(p, out_dir)).as_posix())}'>{esc(p.name)}</a>"
                          for p in files)
        failures = "".join(f"<br><b>export failed</b>: {esc(why)}" for why in run.export_failed)
        items += [f"<li>{esc(run.run)}: {links}{failures}</li>"] if files or failures else []
    if not items:
        return []
    return ["<h2 id='exports'>Answers as files</h2>", LABELS["exports"], "<ul>", *items, "</ul>"]
