"""What each variable of an imported file is: its roles, and whether it belongs in the persona.

Why: strata, baselines, persona groups and structure figures need the country (or a grouping variable
that is not one: region, wave), respondent id, weight, sex, age, education, religion, party and
employment. The user declares them (``--roles``); the rest are proposed from the labels (English, German,
French, Spanish, Italian, Dutch, Portuguese), and the import report lists every choice. A variable whose
label carries a questionnaire item number ("Q6 Ideal number of children") answers another question: it
stays out of the persona unless it plays a role or the user asks for it (``--persona``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from socbench.data.countries import resolve_country
from socbench.data.import_request import ALL, BACKGROUND, IMPORT_ROLES
from socbench.data.loaders import persona_keep
from socbench.data.missing_labels import is_missing_label
from socbench.data.survey_file import SurveyFile, Variable
from socbench.errors import ConfigError, DataError
from socbench.manifest import DomainSpec
from socbench.prompts.persona import UNKNOWN_COUNTRY, persona_attributes
from socbench.types import Respondent

ISSP_COUNTRY, ISSP_WEIGHT = "C_ALPHAN", "WEIGHT"  # taken by name when present and not declared
NONE = "none"  # a role declared absent: nothing is proposed for it
ITEM_NUMBER = re.compile(r"^\s*[QO]\d{1,3}[a-z]{0,2}\b")  # "Q16a ...", "O4b ...": a questionnaire item
# Per role, patterns in priority order over the lower-cased label (or name when unlabelled); "others":
# someone else's attribute, or a per-country version of one, never a role of the respondent (roles.json).
_TABLES = json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8"))
_OTHERS = re.compile("|".join(_TABLES["others"]))
_COMPILED = {role: tuple(re.compile(p) for p in patterns) for role, patterns in _TABLES["roles"].items()}
# Why a variable is not a trait of the respondent: the case, the weights, the sample's design, the interview,
# the study (roles.json "not_persona", over the label and the name); left out of the persona unless asked.
_NOT_PERSONA = {why: re.compile("|".join(patterns)) for why, patterns in _TABLES["not_persona"].items()}
ITEM = "answers another questionnaire item"


def is_item(variable: Variable) -> bool:
    """A questionnaire item by its label's item number (ISSP codebooks number every module item)."""
    return bool(ITEM_NUMBER.match(variable.label or ""))


def left_out_reason(variable: Variable, questions_asked: bool = False) -> str | None:
    """Why ``variable`` is not the respondent's own trait (None: it is): a questionnaire item (numbered,
    or, with ``questions_asked``, a label that asks a question), else the first of roles.json's
    "not_persona" kinds its label or its name (``_`` and ``.`` read as spaces) matches."""
    label = " ".join((variable.label or "").split()).lower()
    if is_item(variable) or (questions_asked and label.endswith("?")):
        return ITEM
    texts = [text for text in (label, re.sub(r"[_.]+", " ", variable.name).strip().lower()) if text]
    return next((why for why, pattern in _NOT_PERSONA.items() if any(pattern.search(t) for t in texts)), None)


def _rank(role: str, variable: Variable) -> int | None:
    """The priority of the first of ``role``'s patterns the variable's label matches (0 = best)."""
    text = " ".join((variable.label or variable.name).split()).lower()
    head, colon, _ = text.partition(":")
    if is_item(variable) or _OTHERS.search(text) or (colon and resolve_country(head)):  # "Belgium: Party"
        return None
    return next((i for i, pattern in enumerate(_COMPILED[role]) if pattern.search(text)), None)


def propose_roles(survey: SurveyFile, candidates: Sequence[str],
                  declared: Mapping[str, str | None]) -> dict[str, tuple[str | None, str]]:
    """``{role: (variable or None, how)}``: declared ones as given (``none``: no variable), else the
    candidate whose label matches the role's highest-priority pattern, first in file order; a
    variable plays one role. ``how`` is "declared", "proposed from its label" (its name,
    when unlabelled) or ""."""
    chosen = {role: (None if name == NONE else name, "declared") for role, name in declared.items() if name}
    taken = {name for name, _ in chosen.values()}
    for role in (r for r in IMPORT_ROLES if r not in chosen):
        ranked = [(rank, index, name) for index, name in enumerate(candidates) if name not in taken
                  and (rank := _rank(role, survey.variables[name])) is not None]
        name = min(ranked)[2] if ranked else None
        how = "proposed from its label" if name and survey.variables[name].label else "proposed from its name"
        chosen[role] = (name, how if name else "")
        taken.add(name)
    return {role: chosen[role] for role in IMPORT_ROLES}


def _flag(role: str, name: str = "") -> str:
    """The flag that declares ``role`` (``--country``, ``--roles sex``), with the variable named."""
    flag = f"--{role} " if role in ("country", "weight") else f"--roles {role}="
    return (flag + name).rstrip(" =")


Asked = Sequence[tuple[str, str | None]]  # (role, variable) as the user named them


def _declared(survey: SurveyFile, questions: set[str], asked: Asked) -> dict[str, str]:
    """The roles the user named (``asked``: ``--roles``, then ``--country`` and ``--weight`` as their
    roles; else ISSP's C_ALPHAN and WEIGHT by name), each checked against the file; ``none``
    declares a role absent."""
    declared: dict[str, str] = {}
    for role, value in asked:
        if value and declared.setdefault(role, value) != value:
            raise ConfigError(f"--{role} {value} and --roles {role}={declared[role]}: give one")
    for role, default in (("country", ISSP_COUNTRY), ("weight", ISSP_WEIGHT)):
        if role not in declared and survey.find(default):
            declared[role] = default
    for role, wanted in declared.items():  # each as the file spells it
        name = NONE if wanted.lower() == NONE else survey.find(wanted)
        if name is None:
            raise DataError(f"{survey.path}: {role} variable {wanted} ({_flag(role)}) is not in the file")
        if name in questions:
            raise ConfigError(f"{_flag(role, name)}: that variable is one of the questions")
        problem = _unusable(role, survey.variables[name]) if name != NONE else None
        if problem:
            raise DataError(f"{survey.path}: {role} variable {name} is {problem}")
        declared[role] = name
    return declared


def _unusable(role: str, variable: Variable) -> str | None:
    """Why a variable cannot play ``role`` (None: it can)."""
    if role == "weight" and variable.is_string:
        return "text, not a number"
    if role == "country" and not variable.is_string and not variable.value_labels:
        return ("unlabelled: its numeric codes name no country (add value labels, or pick another "
                "variable with --country)")
    return None  # a group may be unlabelled: its codes name its groups (wave 1, 2, 3)


def plan_roles(survey: SurveyFile, questions: set[str], asked: Asked,
               issp: bool) -> dict[str, tuple[str | None, str]]:
    """Every role's variable: declared, else proposed from the labels; a proposal that cannot play its
    role is dropped, and a grouping variable is only proposed for a study without country. ``issp``
    (a ``--qa`` question set) needs a country variable unless declared absent."""
    declared = _declared(survey, questions, asked)
    roles = propose_roles(survey, [n for n in survey.variables if n not in questions], declared)
    for role, (name, how) in roles.items():
        unusable = how != "declared" and name and _unusable(role, survey.variables[name])
        if unusable or (role == "group" and how != "declared" and roles["country"][0]):
            roles[role] = (None, "")
    if issp and roles["country"][0] is None and declared.get("country") != NONE:
        raise DataError(f"{survey.path}: country variable {ISSP_COUNTRY} is not in the file "
                        f"(name the country variable with --country VAR)")
    return roles


def country_or_group(survey: SurveyFile, roles: dict[str, tuple[str | None, str]],
                     counts: Mapping[str, Counter[str]],
                     study_country: str | None) -> tuple[str | None, str | None, list[str]]:
    """(country variable, grouping variable, notices): a country variable whose values name no
    countries ("North", "Santiago") groups the respondents instead, said in one line."""
    country, group = roles["country"][0], roles["group"][0]
    if country is None:
        return None, group, []
    # respondents per label of the variable's values (missing labels left out); it names countries when more
    # than half of its distinct labels do ("Australien", "NOR", "27601 DE-W-Germany-West")
    labels: Counter[str] = Counter()
    for code, n in counts[country].items():
        label = " ".join(str(survey.variables[country].value_labels.get(code, code)).split())
        if label and not is_missing_label(label):
            labels[label] += n
    if 2 * sum(resolve_country(label) is not None for label in labels) > len(labels) or group is not None:
        unknown = {label: n for label, n in labels.items() if resolve_country(label) is None}
        ordered = sorted(unknown.items(), key=lambda kv: -kv[1])[:6]
        shown = ", ".join(f"{label!r} ({n})" for label, n in ordered)
        return country, group, [f"country variable {country}: {sum(unknown.values())} respondents under "
                                f"labels that name no country ({shown}): kept, with their country unknown "
                                "(one group in baselines and breakdowns)"] if unknown else []
    roles["group"], roles["country"] = (country, "its values name no country"), (None, "")
    shown = ", ".join(sorted(labels)[:5]) + (", ..." if len(labels) > 5 else "")
    where = (f"the study's country in the prompts: {study_country}" if study_country
             else "--study_country NAME names the study's country in the prompts")
    return None, country, [f"variable {country}: its values ({shown}) name no country: it groups the "
                           f"respondents (strata, baselines, breakdowns) instead of a country; {where}"]


def persona_variables(survey: SurveyFile, names: Sequence[str], roles: set[str],
                      asked: str | tuple[str, ...]) -> tuple[list[str], list[tuple[str, str]]]:
    """(persona variables, those left out with why): ``asked`` is ``background`` (every role, and every
    variable that is the respondent's own: not an id, weight, design or interview variable, study
    metadata or another questionnaire item: ``left_out_reason``), ``all``, or the variables named."""
    if asked == ALL:
        return list(names), []
    if asked == BACKGROUND:  # a file that numbers no item (ISSP numbers them all): labels that ask are items
        asks = not any(is_item(variable) for variable in survey.variables.values())
        why = {n: reason for n in names
               if n not in roles and (reason := left_out_reason(survey.variables[n], asks))}
    else:
        absent = next((n for n in asked if survey.find(n) not in names), None)
        if absent is not None:
            raise DataError(f"{survey.path}: variable {absent} (--persona) is not in the file, or is a "
                            "question or the weight")
        named = {survey.find(n) for n in asked} | roles
        why = {n: "not named in --persona" for n in names if n not in named}
    return [n for n in names if n not in why], list(why.items())


def shown_attributes(attributes: Sequence[tuple[str, str]],
                     domain: DomainSpec) -> tuple[list[str], list[tuple[str, str]]]:
    """(variables a prompt shows, those kept in the data but not shown, with why), computed by the code
    the prompts use: the loader's persona filter (``persona_keep``), then ``persona_attributes``."""
    keep = persona_keep(domain)
    why = {domain.country_attribute: 'the country, shown as "Country"',
           domain.roles.respondent_id: "the respondent id, never shown"}
    shown = {name for name, key in attributes
             if keep(key) and persona_attributes(Respondent(0, None, None, {key: "x"}, {}), UNKNOWN_COUNTRY)}
    never = ("never shown by the prompt: an identifier, a weight, interview metadata or a country code table "
             "(socbench/prompts/persona.json)")
    return ([name for name, _ in attributes if name in shown],
            [(name, why.get(key, never)) for name, key in attributes if name not in shown])


def role_lines(survey: SurveyFile, roles: Mapping[str, tuple[str | None, str]],
               left_out: Sequence[tuple[str, str]], unassigned: Sequence[str], shown: Sequence[str],
               hidden: Sequence[tuple[str, str]]) -> list[str]:
    """The import report's section on roles and the persona: what the prompt shows, each variable left out
    of the data written, and each written (for a role, or asked for) but not shown; with why."""
    def quoted(name: str) -> str:  # a label on one line, as the prompts show it
        label = " ".join((survey.variables[name].label or "").split())
        return f'{name} "{label}"' if label and label != name else name

    def grouped(what: str, pairs: Sequence[tuple[str, str]]) -> list[str]:
        by_reason: dict[str, list[str]] = {}
        for name, why in pairs:
            by_reason.setdefault(why, []).append(quoted(name))
        return [f"- {what}, {why} ({len(names)}): {', '.join(names)}" for why, names in by_reason.items()]

    lines = ["## Roles", "", "Declare or change them with --roles ROLE=VAR,... (ROLE=none: no such "
             "variable), --country and --weight; they are written to the manifest's roles.", ""]
    lines += [f"- {role.replace('_', ' ')}: {quoted(name) + f' ({how})' if name else 'none'}"
              for role, (name, how) in roles.items()]
    lines += [f"- not assigned a role ({len(unassigned)}): {', '.join(unassigned) or 'none'}", "",
              f"## Persona ({len(shown)} attributes shown)", "",
              "The respondent's own background variables, shown in every prompt. Ids, weights, survey design "
              "(PSU, strata, cluster), interview and study metadata and answers to other questionnaire items "
              "are left out unless they play a role (--persona all, or --persona V1,V2,... names them).", "",
              f"- shown: {', '.join(quoted(n) for n in shown) or 'none'}"]
    return [*lines, *grouped("left out", left_out), *grouped("not shown", hidden), ""]
