"""Read a SocioBench ``Dataset_all`` folder into typed records (pydantic at the file boundary).

Every problem with the user's files is a one-line ``DataError`` naming the file and, where
it applies, the line/column (malformed JSON) or the record index and field (schema).
"""

from __future__ import annotations

import functools
import math
import numbers
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import pydantic
from pydantic import BaseModel, BeforeValidator, Field, TypeAdapter, ValidationError, model_validator

from socbench.data.countries import codebook_country_table, country_attribute_key, resolve_country
from socbench.data.layout import dataset_root, inside_folder, parse_interview_count, sample_dir
from socbench.data.missing_labels import is_missing_label
from socbench.data.sampling import sample_record, stratified_sample
from socbench.domains import DomainSpec
from socbench.errors import DataError, problem
from socbench.files import read_json
from socbench.manifest import AUTO_COUNTRY
from socbench.types import COUNTRY, DomainData, MultiOption, Question, Respondent

NO_COUNTRY = "(no country attribute)"


def normalize_code(value: Any) -> str | None:
    """An answer code as the one canonical string the benchmark compares: 3, "3", 3.0, numpy's 3, " 03"
    -> "3"; 1.5 -> "1.5"; None, NaN, "" -> None. Other strings are kept as written (excluded later as
    "not offered", never coerced)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise ValueError(f"expected an integer code, a numeric string or null, got {type(value).__name__}")
    if isinstance(value, numbers.Integral):  # interned: one string per code, not one per answer
        return sys.intern(str(int(value)))
    if isinstance(value, numbers.Real):
        number = float(value)
        return None if math.isnan(number) else sys.intern(str(int(number))) if number.is_integer() \
            else repr(number)
    text = value.strip()
    if not text:
        return None
    with suppress(ValueError):
        return sys.intern(str(int(text)))  # exact, however long
    with suppress(ValueError):
        number = float(text)
        return str(int(number)) if number.is_integer() else text
    return text


def _option_key(value: Any) -> str:
    code = normalize_code(value)
    if code is None:
        raise ValueError("an option code is empty")
    return code


def _label(value: Any) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"expected a text label, got {type(value).__name__}")


OptionCode = Annotated[str, BeforeValidator(_option_key)]
AnswerCode = Annotated[str | None, BeforeValidator(normalize_code)]
Label = Annotated[str, BeforeValidator(_label)]


def _none_to_dict(value: Any) -> Any:
    return {} if value is None else value


class QuestionRecord(BaseModel):
    """One entry of ``issp_qa_<slug>.json`` (other keys ignored, as pydantic does by default)."""

    question_id: Annotated[str, BeforeValidator(lambda v: _label(v).strip()), Field(min_length=1)]
    question: Label
    answer: dict[OptionCode, Label]  # {} for a numeric question
    special: Annotated[dict[str, dict[OptionCode, Label]], BeforeValidator(_none_to_dict)] = {}
    missing: Annotated[dict[OptionCode, Label], BeforeValidator(_none_to_dict)] = {}  # optional
    multi: MultiOption | None = None  # one option of a multi-select set (socbench.multi_select)
    numeric: tuple[float, float] | None = None  # [lowest, highest]: asked for a number, no options

    @model_validator(mode="after")
    def _options_or_range(self) -> QuestionRecord:
        """A question offers options or, numeric, a range with its lowest below its highest."""
        if self.numeric is None and not self.answer:
            raise ValueError("'answer' needs at least one option (or 'numeric': [lowest, highest])")
        if self.numeric is not None and not self.numeric[0] < self.numeric[1]:
            raise ValueError(f"'numeric' {list(self.numeric)}: the lowest must be below the highest")
        return self

    def to_question(self) -> Question:
        special = {country.strip(): dict(options) for country, options in self.special.items()}
        offered = set(self.answer).union(*self.special.values())
        missing = {code: label for code, label in self.missing.items() if code not in offered}
        return Question(id=self.question_id, text=self.question, options=dict(self.answer),
                        special=special, missing=missing, multi=self.multi, numeric=self.numeric)


class AnswerRecord(BaseModel):
    """One respondent of ``issp_answer_<slug>.json``; ``id`` is accepted for ``person_id``; other keys
    ignored."""

    person_id: int = Field(validation_alias=pydantic.AliasChoices("person_id", "id"))
    attributes: dict[str, Any]
    questions_answer: dict[str, AnswerCode]
    weight: float | None = None  # the survey's design weight, when the importer kept one
    source_row: int | None = None  # row in the imported file (1 = first respondent), for exports


class CodebookEntry(BaseModel):
    """One variable of an ``issp_profile_<Domain>.json`` codebook (other keys ignored)."""

    domain: Label
    meaning: Label
    question: Annotated[str, BeforeValidator(lambda v: "" if v is None else _label(v))] = ""
    content: Annotated[dict[str, Label], BeforeValidator(_none_to_dict)] = {}
    special: Annotated[dict[str, dict[str, Label]], BeforeValidator(_none_to_dict)] = {}


_JSON_TYPES = {dict: "an object", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def _records(path: Path, model: type[BaseModel], what: str) -> list[Any]:
    """Every record of a JSON array file, validated; the first failure names record index, field and
    person (errors reading the JSON: file, line and column)."""
    raw = read_json(path, what)
    if not isinstance(raw, list):
        kind = "null" if raw is None else _JSON_TYPES.get(type(raw), type(raw).__name__)
        raise DataError(f"{path}: expected a JSON array of {what} records at the top level, got {kind}")
    try:
        return TypeAdapter(list[model]).validate_python(raw)
    except ValidationError as exc:
        index = exc.errors()[0]["loc"][0]
        where = f"{what} record {index}"
        record = raw[index] if isinstance(index, int) and index < len(raw) else None
        if isinstance(record, dict) and ("person_id" in record or "id" in record):
            where += f" (person_id {record.get('person_id', record.get('id'))})"
        raise DataError(f"{path}: {where}: {problem(exc, skip=1)}") from None


def load_questions(path: Path) -> tuple[Question, ...]:
    """Questions in survey order; ids kept as written, unique case-insensitively."""
    records = _records(path, QuestionRecord, "question")
    first: dict[str, QuestionRecord] = {}
    for rec in records:
        if (earlier := first.setdefault(rec.question_id.lower(), rec)) is not rec:
            raise DataError(f"{path}: question id {rec.question_id!r} repeats {earlier.question_id!r} "
                            "(ids are case-insensitive)")
    return tuple(rec.to_question() for rec in records)


def load_answer_records(path: Path) -> list[AnswerRecord]:
    """Respondent records of one answer file, validated."""
    return _records(path, AnswerRecord, "respondent")


def load_codebook(data_dir: Path, domain: DomainSpec) -> list[CodebookEntry] | None:
    """The optional ``issp_profile_<Domain>.json`` beside (or above) the dataset, any case."""
    data_dir = Path(data_dir).expanduser()
    wanted = domain.profile_file.lower()
    folders = [f for f in dict.fromkeys([data_dir, data_dir / "Dataset_all", data_dir.parent]) if f.is_dir()]
    matches = (sorted(p for p in f.iterdir() if p.name.lower() == wanted and p.is_file()) for f in folders)
    found = next((files[0] for files in matches if files), None)
    return _records(found, CodebookEntry, "codebook") if found else None


# What a domain's manifest entry changes, and why: a non-ISSP study names its own country attribute,
# persona attributes and missing codes; applied here, at the file boundary, so prompts, scoring and
# reports need no change.


def _norm(key: str) -> str:
    return " ".join(str(key).split()).lower()


def country_key_function(country_attribute: str | None) -> Callable[[Mapping[str, object]], str | None]:
    """How to find the country attribute: ``"auto"`` the ISSP country table by its label; None no
    country; otherwise that key, matched case- and space-insensitively."""
    if country_attribute == AUTO_COUNTRY:
        return country_attribute_key
    if country_attribute is None:
        return lambda attributes: None
    wanted = _norm(country_attribute)

    def named(attributes: Mapping[str, object]) -> str | None:
        exact = country_attribute if country_attribute in attributes else None
        return exact or next((key for key in attributes if _norm(key) == wanted), None)

    return named


def persona_keep(domain: DomainSpec) -> Callable[[str], bool]:
    """Whether an attribute key stays in a respondent's attributes: the manifest's include and exclude,
    never the respondent id or the weight (roles), nor a named country attribute (the persona shows it as
    "Country", never twice)."""
    roles, persona, named = domain.roles, domain.persona_attributes, domain.country_attribute
    keep = {_norm(k) for k in persona.include}
    hidden = (*persona.exclude, roles.respondent_id, roles.weight, None if named == AUTO_COUNTRY else named)
    drop = {_norm(k) for k in hidden if k}

    @functools.cache  # asked for every attribute of every respondent: a few distinct keys
    def kept(key: str) -> bool:
        norm = _norm(key)
        return norm not in drop and (not keep or norm in keep)

    return kept


def apply_missing_codes(questions: tuple[Question, ...], missing: Iterable[str]) -> tuple[Question, ...]:
    """Questions with the manifest's ``missing_codes`` (the user's override) taken out of their options
    and made missing codes of every question, each option label kept as the reason."""
    codes = [str(code) for code in missing]
    if not codes:
        return questions

    def strip(options: Mapping[str, str]) -> dict[str, str]:
        return {code: label for code, label in options.items() if code not in codes}

    def declared(q: Question) -> dict[str, str]:
        labels = {**{c: label for o in q.special.values() for c, label in o.items()}, **q.options}
        return {**q.missing, **{c: labels.get(c, f"{c}, manifest missing_codes") for c in codes}}

    return tuple(replace(q, options=strip(q.options), special={c: strip(o) for c, o in q.special.items()},
                         missing=declared(q)) for q in questions)


def apply_numeric(path: Path, questions: tuple[Question, ...],
                  numeric: Mapping[str, tuple[float, float]]) -> tuple[Question, ...]:
    """Questions the manifest's ``numeric`` names (case-insensitively) asked for a number in its range."""
    spans = {qid.lower(): span for qid, span in numeric.items()}
    unknown = sorted(set(spans) - {q.id.lower() for q in questions})
    if unknown:
        raise DataError(f"{path}: the manifest's numeric names {unknown[0]}, no question of this set")
    return tuple(replace(q, numeric=spans[q.id.lower()]) if q.id.lower() in spans else q for q in questions)


def _text(attributes: Mapping[str, Any], key: str | None) -> str | None:
    raw = attributes.get(key) if key else None
    return " ".join(str(raw).split()) or None if raw is not None else None


def _weight(rec: AnswerRecord, weight_key: Callable[[Mapping[str, Any]], str | None]) -> float | None:
    """The record's weight, else the value of the declared weight attribute (a hand-made file)."""
    text = _text(rec.attributes, weight_key(rec.attributes)) if rec.weight is None else None
    try:
        return rec.weight if text is None else float(text)
    except ValueError:
        return None  # counted where weights are checked (``socbench.weights``)


def build_respondents(records: list[AnswerRecord], questions: tuple[Question, ...],
                      countries: dict[str, str] | None, domain: DomainSpec) -> tuple[Respondent, ...]:
    """The respondents; ``domain`` names the country attribute, the roles and the persona attributes to
    keep."""
    roles = domain.roles
    resolve = functools.lru_cache(maxsize=None)(lambda name: resolve_country(name, countries))
    country_key, group_key, weight_key = map(country_key_function,
                                             (domain.country_attribute, roles.group, roles.weight))
    keep = persona_keep(domain)
    ids = {q.id.lower(): q.id for q in questions}
    respondents = []
    for rec in records:
        name = _text(rec.attributes, country_key(rec.attributes)) or domain.country or None
        group = _text(rec.attributes, group_key(rec.attributes))
        group = None if group is None or is_missing_label(group) else group
        attributes = {k: str(v).strip() for k, v in rec.attributes.items()
                      if v is not None and not is_missing_label(str(v)) and keep(k)}
        answers = {ids[qid.strip().lower()]: code for qid, code in rec.questions_answer.items()}
        respondents.append(Respondent(rec.person_id, name, resolve(name) if name else None, attributes,
                                      answers, _weight(rec, weight_key), group))
    return tuple(respondents)


def count_unmapped(respondents: Sequence[Respondent], domain: DomainSpec) -> dict[str, int]:
    """``{name: count}`` of the respondents in no group: whose country could not be mapped, or who have no
    value of the grouping variable."""
    country_attribute, group = domain.country_attribute, domain.roles.group
    unmapped: Counter[str] = Counter()
    for person in respondents:
        if group and person.group is None:
            unmapped[f"(no {group})"] += 1
        elif not group and person.country_code is None and (country_attribute or person.country_name):
            unmapped[person.country_name or NO_COUNTRY] += 1
    return dict(unmapped)


def unmapped_line(data: DomainData) -> str | None:
    """One line when respondents pool into one unknown group (a country name that maps to no country,
    or no value of the grouping variable): they are kept, and counted where the run is watched."""
    if not data.unmapped_countries:
        return None
    ordered = sorted(data.unmapped_countries.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{name!r} ({n})" for name, n in ordered[:5]) + (", ..." if len(ordered) > 5 else "")
    what = "country unknown" if data.grouping == COUNTRY else f"no {data.grouping}"
    return (f"domain {data.domain_id} {data.domain_name}: {sum(data.unmapped_countries.values())} "
            f"respondents pooled into one '{what}' group (baselines, breakdowns): {shown}")


def load_domain(data_dir: Path, domain: DomainSpec, dataset_size: int | str = 500,
                interview_count: int | str = "all", interview_sample: str = "stratified") -> DomainData:
    """Questions and respondents of one domain and sample size. With ``interview_count`` N below the
    file's respondents: a seeded sample stratified by country, proportional with every country in it
    where N allows (the same respondents for every model and rerun), or the first N in file order
    (``interview_sample`` ``"first"``, the original system's); ``sample`` records which and how."""
    root = dataset_root(data_dir)
    limit = parse_interview_count(interview_count)
    qa_path = root / domain.qa_path
    answer_path = sample_dir(root, dataset_size) / domain.answer_name
    for path, what in ((qa_path, "question"), (answer_path, "answer")):
        if not path.is_file():
            raise DataError(f"{path}: {what} file of domain {domain.id} ({domain.name}) not found")
        inside_folder(root, path)
    missing = (code for code in map(normalize_code, domain.missing_codes) if code is not None)
    questions = apply_numeric(qa_path, apply_missing_codes(load_questions(qa_path), missing), domain.numeric)
    records = load_answer_records(answer_path)
    known = {q.id.lower() for q in questions}
    unknown = sorted({qid for rec in records for qid in rec.questions_answer
                      if qid.strip().lower() not in known})
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" ... ({len(unknown)} in all)" if len(unknown) > 5 else "")
        raise DataError(f"{answer_path}: question ids in questions_answer match no question of the domain: "
                        f"{shown}")
    countries = codebook_country_table(load_codebook(data_dir, domain) or []) or None
    read = records[:limit] if interview_sample == "first" else records
    respondents = build_respondents(read, questions, countries, domain)
    drawn = "all" if limit is None or limit >= len(records) else interview_sample
    if drawn == "stratified":
        respondents = stratified_sample(respondents, limit, proportional=True)
    grouping = domain.roles.group or COUNTRY
    return DomainData(domain_id=domain.id, domain_name=domain.name, questions=questions,
                      respondents=respondents, source=str(answer_path), grouping=grouping,
                      unmapped_countries=count_unmapped(respondents, domain),
                      sample=sample_record(respondents, drawn, len(records), grouping),
                      roles=domain.roles.declared(), issp_vocabulary=domain.issp_vocabulary)
