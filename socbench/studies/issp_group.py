"""Group-level runs (``socbench issp --unit group``), as SimBench's grouped split and OpinionQA ask: a group
is the respondents who share a value of each grouping attribute (and the country, or the study's grouping
variable), described from those values' labels in the survey's own words, and asked once per question for
the share of its members choosing each option (a verbalized distribution, ``socbench.verbalized``). Scored
against the group's weighted answer distribution with SimBench's score and the distribution metrics, beside
a per-respondent run's aggregate over the same groups when one is in the same output folder.

Why: a whole survey in thousands of requests instead of millions, and it asks whether the model knows the
group, not only the person. A (group, question) with fewer than ``--min_group_size`` answers is not asked:
its shares would be noise; what is left out is counted in the unit's record, never dropped silently."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, cast

from socbench import verbalized
from socbench.errors import ConfigError
from socbench.extract import squash
from socbench.log.read import read_domains
from socbench.metrics.distribution import human_distribution, level_scores
from socbench.metrics.persona_groups import ATTRIBUTES, ROLE_ATTRIBUTE, group_of, respondent_groups
from socbench.metrics.simbench import ROW_KEYS, row_score, simbench_score
from socbench.outcomes import UnitReport
from socbench.prompts.persona import PromptSettings, build_prompt, country_words, fill_placeholders
from socbench.report.output import model_dir
from socbench.scoring import design_weights, score_items
from socbench.studies.generic import StudyTask
from socbench.studies.issp import IsspSamples, IsspTask
from socbench.task import Prompts, Unit, UnitResult
from socbench.types import (
    COUNTRY,
    Answers,
    DomainData,
    Extraction,
    Item,
    PromptRequest,
    Question,
    Respondent,
    ScoredItem,
)

INSTRUCTION = ("You are estimating how a group of people answered a survey. The group is described below. "
               "For each question, estimate what percentage of the group's members chose each of the offered "
               "options.")


ROLES = tuple({v: k for k, v in ROLE_ATTRIBUTE.items()}.get(a, a) for a in ATTRIBUTES)  # sex, age, ...


@dataclass(frozen=True)
class Grouping:
    """One attribute that defines groups: the name a description shows (with ``role`` None, the attribute
    whose own label is the value), or a persona role whose group is (``metrics.persona_groups``)."""

    name: str
    role: str | None = None


@dataclass(frozen=True)
class Group:
    """Respondents who share every grouping value: its id (the labels joined), what the prompt shows."""

    id: str
    description: dict[str, str]
    members: tuple[int, ...]
    member: Respondent  # one of them: the country's words, for placeholders in ISSP labels


@dataclass(frozen=True)
class GroupSamples(IsspSamples):
    """A domain's groups, the (group, question) rows asked and the items of their members."""

    groups: tuple[Group, ...] = ()
    rows: tuple[tuple[Group, str, tuple[Item, ...]], ...] = ()  # asked: at least min_group_size answers
    left_out: tuple[tuple[str, str, int], ...] = ()  # (group, question, answers) under the minimum
    no_group: int = 0  # respondents without a value for a grouping attribute
    groupings: tuple[str, ...] = ()


def groupings(data: DomainData, asked: Sequence[str], roles_found: set[str]) -> list[Grouping]:
    """The attributes named by ``--groups`` (an attribute of the data, or a role: sex, age, ...), or every
    persona role the data has; a name that is neither is one ConfigError line naming what there is."""
    keys = {squash(k): k for person in data.respondents for k in person.attributes}
    declared = {ROLE_ATTRIBUTE.get(role, role): key for role, key in data.roles.items()}
    found = []
    for name in asked or [a for a in ATTRIBUTES if a in roles_found]:
        role = ROLE_ATTRIBUTE.get(name.lower(), name.lower())
        if squash(name) in keys and keys[squash(name)] != data.grouping:
            found.append(Grouping(keys[squash(name)]))
        elif role in ATTRIBUTES:
            found.append(Grouping(declared.get(role, role.replace("_", " ")), role))
        elif squash(name) not in keys:
            raise ConfigError(f"--groups {name}: not an attribute of {data.domain_name} nor a role "
                              f"({', '.join(ROLES)}); its attributes: "
                              f"{', '.join(sorted(keys.values())[:12])}")
    return found


def build_groups(data: DomainData, asked: Sequence[str]) -> tuple[list[Group], int, list[str]]:
    """(groups in first-seen order, respondents without a value for a grouping attribute, the names)."""
    roles = respondent_groups(data.respondents, data.roles, data.issp_vocabulary)
    chosen = groupings(data, asked, {a for groups in roles.values() for a in groups})
    place = "Country" if data.grouping == COUNTRY else data.grouping
    found: dict[str, Group] = {}
    missing = 0
    for person in data.respondents:
        values = [roles[person.person_id].get(g.role) if g.role else
                  group_of(g.name, str(person.attributes.get(g.name, "")), False) for g in chosen]
        if any(value is None for value in values):
            missing += 1
            continue
        where = [(place, country_words(person).name if data.grouping == COUNTRY else str(person.group))] \
            if person.group_code is not None else []
        description = dict([*where, *zip([g.name for g in chosen], cast("list[str]", values), strict=True)])
        gid = " | ".join(description.values()) or "everyone"
        group = found.setdefault(gid, Group(gid, description, (), person))
        found[gid] = replace(group, members=(*group.members, person.person_id))
    return list(found.values()), missing, [place, *(g.name for g in chosen)]


def group_samples(samples: IsspSamples, asked: Sequence[str], min_size: int) -> GroupSamples:
    """Every (group, question) with its members' scoreable items; those under ``min_size`` left out."""
    groups, missing, names = build_groups(samples.data, asked)
    scoreable = {(i.person_id, i.question_id): i for i in samples.items if i.excluded_reason is None}
    every = [(group, q.id, tuple(item for p in group.members if (item := scoreable.get((p, q.id)))))
             for group in groups for q in samples.data.questions]
    rows = tuple(row for row in every if len(row[2]) >= min_size)
    left_out = tuple((group.id, qid, len(items)) for group, qid, items in every if 0 < len(items) < min_size)
    return GroupSamples(samples.data, samples.items, tuple(groups), rows, left_out, missing, tuple(names))


def group_request(group: Group, question: Question, item: Item, settings: PromptSettings) -> PromptRequest:
    """One group's request for one question: the group's description (the persona's place), the question
    and its options as a member saw them, asked for the percentage choosing each (``--mode verbalized``'s
    reply, constrained where the engine can)."""
    words = country_words(group.member)
    shown = {fill_placeholders(k, words): fill_placeholders(v, words) for k, v in group.description.items()}
    system = f"{INSTRUCTION}\n\nThe group:\n{json.dumps(shown, ensure_ascii=False, indent=2)}"
    return replace(build_prompt(item, group.member, question, settings, system),
                   item_id=f"{group.id}:{question.id}")


def group_metrics(items: Sequence[ScoredItem], min_size: int, weights: Mapping[int, float] | None,
                  ) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """SimBench's score and the distribution metrics with a (group, question) as the row; each row's TVs."""
    simbench = simbench_score(items, min_size, weights)
    scores = level_scores(items, ROW_KEYS, min_size, weights)
    rows = [{"group": r.country_code, "question": r.question_id, "respondents": r.respondents,
             "tv_model": r.tv_model, "tv_uniform": r.tv_uniform, "simbench": row_score(r, simbench.norm)}
            for r in simbench.rows]
    scored, _ = scores.pop("groups"), scores.pop("min_respondents")
    return {"simbench": simbench.score, "simbench_norm": simbench.norm, "rows_scored": scored, **scores}, rows


def left_out_counts(samples: GroupSamples) -> tuple[dict[str, float], dict[str, Any]]:
    """(counts, what they count): the groups with no row asked, their respondents and those without a
    value for a grouping attribute, the (group, question) rows under the minimum."""
    kept = {g.id for g, _, _ in samples.rows}
    out = {g.id: len(g.members) for g in samples.groups if g.id not in kept}
    return ({"requests": len(samples.rows), "groups": len(kept), "groups_left_out": len(out),
             "respondents_left_out": sum(out.values()) + samples.no_group,
             "rows_left_out": len(samples.left_out)},
            {"left_out_groups": out, "left_out_rows": [list(row) for row in samples.left_out],
             "no_group_value": samples.no_group})


def as_groups(items: Sequence[ScoredItem], group_of_person: Mapping[int, str],
              asked: set[tuple[str, str]]) -> list[ScoredItem]:
    """Items with their respondent's group id as ``country_code``, only those of the rows asked."""
    found = [replace(i, country_code=group_of_person.get(i.person_id)) for i in items]
    return [i for i in found if (i.country_code, i.question_id) in asked]


@dataclass(frozen=True)
class IsspGroupTask(IsspTask):
    name: ClassVar[str] = "issp-group"

    def special_options(self, data: DomainData) -> GroupSamples:
        return group_samples(super().special_options(data), self.config.groups, self.config.min_group_size)

    def prompts(self, samples: GroupSamples) -> Prompts:
        c = self.config
        settings = PromptSettings(mode="verbalized", structured=c.use_structured, seed=c.seed,
                                  sampling=c.sampling)
        questions = {q.id: q for q in samples.data.questions}
        return Prompts(tuple(group_request(group, questions[qid], items[0], settings)
                             for group, qid, items in samples.rows))

    def extract(self, prompts: Prompts, answers: Answers) -> tuple[Extraction, ...]:
        """Each reply read as a stated distribution (``verbalized.extraction``), in row order."""
        c, requests = self.config, cast("tuple[PromptRequest, ...]", prompts.requests)
        return tuple(verbalized.extraction(r, a, c.verbalized_answer, c.seed)
                     for r, a in zip(requests, answers.results, strict=True))

    def score(self, samples: GroupSamples, plan: None, extracted: Sequence[Extraction]) -> UnitResult:
        """Each row's members scored with the group's distribution, against their weighted answers; each
        row's human and model shares beside its TVs; the per-respondent run's scores where there is one:
        the domain's scores and counts as its metrics, its rows and what was left out as its extras."""
        c, data = self.config, samples.data
        by_item = {i.item_id: e for (_, _, items), e in zip(samples.rows, extracted, strict=True)
                   for i in items}
        group_of_person = {p: g.id for g in samples.groups for p in g.members}
        asked = {(g.id, qid): items for g, qid, items in samples.rows}
        weights, weights_off = design_weights(data)
        scored = score_items([i for items in asked.values() for i in items], by_item)
        metrics, rows = group_metrics(as_groups(scored, group_of_person, set(asked)), c.min_group_size,
                                      weights)
        for row in rows:
            members = asked[row["group"], row["question"]]
            codes = members[0].offered_codes
            row["human"] = dict(zip(codes, human_distribution(members, codes, weights).tolist(), strict=True))
            row["model"] = by_item[members[0].item_id].distribution
        counts, left_out = left_out_counts(samples)
        answers = {"parse_failures": sum(e.failure is not None for e in extracted),
                   **verbalized.record(dict(zip(map(str, range(len(extracted))), extracted)),
                                       c.verbalized_answer, c.seed)}
        beside, run = self.per_respondent(data, group_of_person, set(asked), weights)
        extras = {"grouped_by": list(samples.groupings), "min_group_size": c.min_group_size,
                  "weights_off": weights_off, "rows": rows, **left_out, "per_respondent_run": run}
        return UnitResult(data.domain_id, data.domain_name, {**counts, **answers, **metrics, **beside},
                          extras=extras)

    def per_respondent(self, data: DomainData, group_of_person: Mapping[int, str],
                       asked: set[tuple[str, str]], weights: Mapping[int, float] | None,
                       ) -> tuple[dict[str, float], str | None]:
        """The same scores of this model's per-respondent run in the same output folder (its answers pooled
        by group, over the rows asked here), prefixed ``respondent_``, and its name; none without one."""
        run = self.config.model_copy(update={"unit": "respondent"}).run_name
        folder = model_dir(self.config.output_dir, run)
        found = [d for d in read_domains(folder) if d.domain_id == data.domain_id]
        if not found:
            return {}, None
        items = as_groups(found[0].scored(), group_of_person, asked)
        metrics, _ = group_metrics(items, self.config.min_group_size, weights)
        return {f"respondent_{k}": v for k, v in metrics.items()}, run

    def result(self, unit: Unit, scored: UnitResult, incomplete: str | None) -> UnitResult:
        return replace(scored, incomplete_reason=incomplete)

    record = StudyTask.record  # type: ignore[assignment]

    def report(self, scored: UnitResult, seconds: float) -> UnitReport:  # type: ignore[override]
        m = scored.metrics
        return UnitReport(f"{scored.unit}: SimBench {m['simbench']:.1f} over {m['requests']} group x "
                          f"question rows ({m['groups']} groups; {m['groups_left_out']} under "
                          f"{self.config.min_group_size} left out)", (), ())

    finish = StudyTask.finish  # type: ignore[assignment]
