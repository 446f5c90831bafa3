"""The answer first: each run x domain opens with its lead sentence, whether its simulated population keeps
the survey's structure beside the demographic model's (does the LLM add structure its attributes alone do
not carry?) and both SimBench scores; then, beside a ``--no_persona`` control run, whether the persona
helped. Read from each domain's stored ``yardsticks``; older results have none, and the lines say so."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from socbench.log.read import DomainRun, ModelRun
from socbench.metrics.headline import lead_sentence, small_run_note, stored_figures, structure_sentence
from socbench.metrics.persona_groups import persona_effect, verdict
from socbench.metrics.structure_difference import measurable
from socbench.metrics.uncertainty import PairedComparison
from socbench.report.labels import domain_label, p_text
from socbench.report.leaderboard import MIN_RESPONDENTS, Leaderboard
from socbench.report.output import HEADS, LABELS, fmt, markdown_table
from socbench.types import COUNTRY, ScoredItem

MAJORITY_BASELINES = ("majority_question", "majority_country_question", "majority_group_question")
PREDICTORS = (("model", "This model", "the model"),
              ("demographic_model", "A classifier on the same attributes", "the classifier"))
SIMBENCH_BEST = 40.8  # SimBench's best published model (arXiv 2510.17516); 12.7 the mean of 45
NO_PERSONA = "no_persona"  # the run-name part of a control run (``Config.run_name``)
VERDICTS = {int(side): text for side, text in LABELS["structure_verdicts"].items()}  # measurable()'s sides


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def majority_accuracy(baselines: Mapping[str, float | None]) -> float:
    """The stronger of the two majority-answer baselines (NaN when neither was computed)."""
    return max((v for k in MAJORITY_BASELINES if math.isfinite(v := _number(baselines.get(k)))),
               default=math.nan)


def demographic_accuracy(dom: DomainRun) -> float:
    stored = dom.stored.yardsticks.get("demographic_model") or {}
    return _number(stored.get("accuracy", dom.stored.baselines.get("demographic_model")))


@dataclass(frozen=True)
class DomainAnswer:
    """What one run x domain section says, in order: title, lead, structure lines, figures."""
    title: str
    lead: str
    lines: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]  # HEADS["structure"] rows: the model's, the demographic model's
    few: tuple[int, int | None] | None = None  # too few to compare groups: (respondents, in the data)


def _structure_row(label: str, simbench: Any, figures: Mapping[str, Any]) -> tuple[str, ...]:
    found = figures.get("gaps")
    gaps = f"{figures.get('gaps_same_sign') or 0} of {found}" if found else "no clear gap"
    return (label, fmt(_number(simbench), 1), fmt(_number(figures.get("profile_correlation"))),
            f"{fmt(_number(figures.get('mean_simulated_v')))} / {fmt(_number(figures.get('mean_real_v')))}",
            gaps, fmt(_number(figures.get("heterogeneity_ratio"))))


def _correlation(figures: Mapping[str, Any]) -> float:
    """The profile correlation; 0 for answers that do not differ between groups at all (no structure)."""
    r = _number(figures.get("profile_correlation"))
    return 0.0 if math.isnan(r) and figures.get("mean_simulated_v") == 0 else r


def comparison_lines(structure: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Does the model follow the survey's group differences more closely than the classifier? Said only
    where the stored paired-bootstrap CI of the difference lies wholly on one side of 0."""
    model, demographic = (_correlation(structure.get(k) or {}) for k, *_ in PREDICTORS)
    if not (math.isfinite(model) and math.isfinite(demographic)):
        return []
    shown = [fmt(_number((structure.get(k) or {}).get("profile_correlation"))) for k, *_ in PREDICTORS]
    both = "correlation {} vs {}".format(*(text if text != "n/a" else "n/a: no differences between groups"
                                           for text in shown))  # as the table shows them
    found = structure.get("comparison") or {}
    low, high = _number(found.get("ci_low")), _number(found.get("ci_high"))
    if not (math.isfinite(low) and math.isfinite(high)):
        return [LABELS["structure_no_verdict"].format(both)]
    level = f"{_number(found.get('level', 0.95)):.0%}"
    difference = (f"{both}; difference {_number(found.get('difference')):+.3f}, {level} CI [{low:+.3f}, "
                  f"{high:+.3f}], paired bootstrap over respondents")
    return [VERDICTS[measurable(found)].format(difference)]


def domain_answer(row: Mapping[str, Any], dom: DomainRun) -> DomainAnswer:
    """The lead sentence and the structure figures of one leaderboard row (run x domain)."""
    lead = lead_sentence(row["accuracy"], (row["accuracy_ci_low"], row["accuracy_ci_high"]),
                         demographic_accuracy(dom), majority_accuracy(dom.stored.baselines))
    title = f"{domain_label(dom.domain)} — {row['run']}"
    found = dom.stored.yardsticks
    structure, simbench = found.get("structure") or {}, found.get("simbench") or {}
    if not found:
        return DomainAnswer(title, lead, (LABELS["no_demographic_model"],), ())
    if not any(stored_figures(structure.get(key) or {}).pairs for key, *_ in PREDICTORS):
        few = (int(row["respondents"]), (row.get("sample") or {}).get("population"))
        shown = (*_distributions(row), *_simbench(simbench, dom.stored.grouping))
        return DomainAnswer(title, lead, shown, (), few)
    lines = [f"{label}: {structure_sentence(structure[key], who)}"  # one at least: one has pairs
             for key, label, who in PREDICTORS if key in structure]
    rows = tuple(_structure_row(label.lower().removeprefix("a "), simbench.get(key), structure[key])
                 for key, label, _ in PREDICTORS if key in structure)
    lines += [*comparison_lines(structure), *_simbench(simbench, dom.stored.grouping)]
    return DomainAnswer(title, lead, tuple(lines), rows)


def _distributions(row: Mapping[str, Any]) -> list[str]:
    """How the answers are distributed beside people's (what a run too small to compare groups shows)."""
    if not math.isfinite(_number(row.get("js_score"))):
        return []
    return [f"Answer distributions beside people's: 1-JS {fmt(_number(row['js_score']))} (uniform "
            f"answers {fmt(_number(row.get('uniform_js_score')))}), modal agreement "
            f"{fmt(_number(row.get('modal_agreement')))} (uniform answers "
            f"{fmt(_number(row.get('uniform_modal_agreement')))})."]


def small_note(answers: Sequence[DomainAnswer]) -> str | None:
    """The one note for every run x domain too small to compare groups (None: there is none)."""
    return small_run_note([answer.few for answer in answers if answer.few is not None])


def _simbench(simbench: Mapping[str, Any], grouping: str = COUNTRY) -> list[str]:
    """Where the answer distribution sits on SimBench's published scale (``grouping``: its groups')."""
    model, demographic = _number(simbench.get("model")), _number(simbench.get("demographic_model"))
    if math.isnan(model):
        return []
    groups = simbench.get("questions")
    return [f"On SimBench's scale (0 = uniform answers, 100 = people's distribution; SimBench's best "
            f"published model scores {SIMBENCH_BEST}) the model scores {fmt(model, 1)}, the classifier "
            f"{fmt(demographic, 1)}" + (f", over {groups} question x {grouping} groups." if groups else ".")]


def domain_answers(board: Leaderboard) -> list[tuple[ModelRun, list[DomainAnswer]]]:
    """Per complete run (ranked order), its domains' answers."""
    rows = {(r["run"], r["domain"]): r for r in board.domains}
    return [(run, [domain_answer(rows[run.run, d.domain], d) for d in run.domains]) for run in board.ranked()]


def persona_pairs(runs: Sequence[ModelRun]) -> list[tuple[ModelRun, ModelRun]]:
    """(persona run, its ``-no_persona`` control run) for every control run whose partner is here."""
    by_name = {run.run: run for run in runs}
    return [(by_name[name], control) for control in runs if NO_PERSONA in (parts := control.run.split("-"))
            and (name := "-".join(p for p in parts if p != NO_PERSONA)) in by_name]


def run_items(run: ModelRun) -> list[ScoredItem]:
    """A run's items as the paired comparison reads them: keys unique across domains (the person id is
    ``<domain>:<id>``, a string: pairing and clustering need only equal keys), persona groups."""
    return [replace(item, person_id=f"{d.domain}:{item.person_id}",
                    question_id=f"{d.domain}:{item.question_id}")
            for d in run.domains for item in d.scored()]


def _effect_cells(comparison: PairedComparison) -> list[str]:
    """A group's cells; below ``MIN_RESPONDENTS`` respondents no CI and no verdict, as everywhere."""
    low, high = comparison.difference_ci
    few = comparison.n_respondents < MIN_RESPONDENTS
    ci = (f" n/a (n < {MIN_RESPONDENTS})" if few
          else "" if math.isnan(low) else f" [{low:+.3f}, {high:+.3f}]")
    return [str(comparison.n_respondents), str(comparison.n_items), fmt(comparison.accuracy_a),
            fmt(comparison.accuracy_b), f"{comparison.difference:+.3f}{ci}", p_text(comparison.mcnemar_p),
            "too few respondents to tell" if few else verdict(comparison).split(":")[0]]


def persona_answers(runs: Sequence[ModelRun]) -> list[tuple[str, list[list[str]], list[str]]]:
    """Per persona run with its control here: the one line, and HEADS["persona_effect"] rows (every group
    of every attribute) with their classes (``few``)."""
    return [_persona_answer(persona, control) for persona, control in persona_pairs(runs)]


def _persona_answer(persona: ModelRun, control: ModelRun) -> tuple[str, list[list[str]], list[str]]:
    try:
        effect = persona_effect(run_items(persona), run_items(control))
    except ValueError:
        return (f"{persona.run} and its run without persona ({control.run}) share no answered items.", [], [])
    both = effect.overall
    line = (f"{persona.run} against its run without persona ({control.run}): {verdict(both)} (accuracy "
            f"{fmt(both.accuracy_a)} with, {fmt(both.accuracy_b)} without, on {both.n_items} items "
            "answered in both).")
    groups = [(attribute, group, c) for attribute, by in effect.groups.items() for group, c in by.items()]
    return (line, [[attribute.replace("_", " "), group, *_effect_cells(c)] for attribute, group, c in groups],
            ["few" if c.n_respondents < MIN_RESPONDENTS else "" for *_, c in groups])


def answer_markdown(board: Leaderboard) -> list[str]:
    """The same section for ``leaderboard.md``."""
    found = [answer for _, answers in domain_answers(board) for answer in answers]
    small = small_note(found)
    lines = ["## The answer, domain by domain", "", *([small, ""] if small else [])]
    for answer in found:
        lines += [f"### {answer.title}", "", answer.lead, "", *(f"{text}\n" for text in answer.lines)]
        lines += [*markdown_table(HEADS["structure"], answer.rows), ""] if answer.rows else []
    effects = persona_answers(board.runs)
    lines += ["## Did the persona help?", ""] + ([LABELS["no_control_run"], ""] if not effects else [])
    for line, rows, _ in effects:
        lines += [line, "", *([*markdown_table(HEADS["persona_effect"], rows), ""] if rows else [])]
    return lines[:-1]  # no blank line at its end
