"""The export's tables. Long: a row per scored item (labels, design weight, source row), then a row per
draw and per circular variant (``row_kind``): a tidy table R, Stata and pandas read as is. Wide: the
survey's own shape and labels, the model's answers and the real ones in two tables to analyse side by
side; ``source_row`` merges either back onto the archive file.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from socbench.data.missing_labels import STATA_MISSING
from socbench.data.variables import SourceVariable, SourceVariables
from socbench.errors import DataError
from socbench.export.fit import TEXTS, Labels, code_number
from socbench.export.source import DomainSource
from socbench.log.read import DETAILED_SUFFIX, DomainRun, read_variants
from socbench.types import COUNTRY, VariantResult

LONG_LABELS: dict[str, str] = TEXTS["long_labels"]
COUNTRY_CODE, GROUP = "country_code", "group"


def numeric_codes(values: Sequence[str | None]) -> pd.Series:
    """Codes as numbers when every one is a number (SPSS/Stata/R then sort and label them), else text."""
    series = pd.Series(list(values), dtype=object)
    numbers = pd.to_numeric(series, errors="coerce")
    if numbers[series.notna()].isna().any():
        return series
    return numbers.astype("Int64") if (numbers.dropna() % 1 == 0).all() else numbers


def probability_column(code: str) -> str:
    """``p_<code>`` as a name every format takes: "-9" -> ``p_m9``, "2.5" -> ``p_2_5``."""
    return "p_" + code.replace("-", "m").replace(".", "_")


def _code_order(column: str) -> tuple[float, str]:
    number = pd.to_numeric(column[2:].replace("m", "-").replace("_", "."), errors="coerce")
    return (float("inf") if pd.isna(number) else float(number), column)


ANSWER_FIELDS = ("person_id", "question_id", "country_code", "true_answer", "llm_answer", "correct",
                 "parse_error", "engine_error", "option_distribution", "draws")


def _labelled(codes: Sequence[str | None], qids: Sequence[str], labels: dict[str, dict[str, str]]) -> list:
    return [None if code is None else labels.get(qid, {}).get(str(code)) for code, qid in zip(codes, qids)]


def domain_long(domain: DomainRun, source: DomainSource | None) -> pd.DataFrame:
    """The long rows of one domain: the detailed file's items in its order, then their draws and
    circular variants (the item's respondent fields, that draw's or variant's answer). Column by column:
    a whole survey's millions of items."""
    stored, c = domain.stored, domain.columns(ANSWER_FIELDS)
    labels = {qid: {str(code): str(label) for code, label in view.get("options", [])}
              for qid, view in stored.questions.items()}
    names = {q.question_id: q.name for q in source.variables.questions} if source and source.variables else {}
    people = source.respondents if source else {}
    persons, qids = [people.get(str(p)) for p in c["person_id"]], c["question_id"]
    nothing = [None] * len(qids)
    frame = pd.DataFrame({
        "row_kind": "answer", "draw": nothing, "order": nothing, "domain": stored.domain,
        "person_id": c["person_id"], "source_row": [p.source_row if p else None for p in persons],
        "country_code": c["country_code"], "weight": [p.weight if p else None for p in persons],
        "question_id": qids, "variable": [names.get(q, q) for q in qids], "true_code": c["true_answer"],
        "true_label": _labelled(c["true_answer"], qids, labels), "model_code": c["llm_answer"],
        "model_label": _labelled(c["llm_answer"], qids, labels), "correct": [int(x) for x in c["correct"]],
        "parse_error": c["parse_error"], "engine_error": c["engine_error"]})
    if any(d for d in c["option_distribution"]):
        shares = pd.DataFrame.from_records([{probability_column(code): p for code, p in (d or {}).items()}
                                            for d in c["option_distribution"]])
        frame = pd.concat([frame, shares], axis=1)
    extra = _extra_rows(domain, frame, c["draws"], labels)
    return pd.concat([frame, pd.DataFrame(extra)], ignore_index=True) if extra else frame


KEPT = ("domain", "person_id", "source_row", "country_code", "weight", "question_id", "variable", "true_code",
        "true_label")  # an item row's respondent and question fields, for its draw and variant rows


def _extra_rows(domain: DomainRun, frame: pd.DataFrame, draws: list, labels: dict) -> list[dict]:
    """A row per draw of a --samples item and per circular variant asked apart from the item's prompt:
    (item row, its own fields, the answer, correct, parse error) each."""
    extra = [(i, {"row_kind": "draw", "draw": k}, code,
              int(code is not None and str(code) == str(frame.at[i, "true_code"])),
              None if code is not None else "no readable code in this draw")
             for i, found in enumerate(draws) if found for k, code in enumerate(found, start=1)]
    variants = circular_variants(domain)
    pairs = zip(frame.person_id, frame.question_id) if variants else ()
    keys = {f"{p}:{q}": i for i, (p, q) in enumerate(pairs)}
    extra += [(keys[v.qid], {"row_kind": "variant", "order": " ".join(v.pattern)},
               v.to_original(v.prediction), int(v.correct), v.parse_error)
              for v in variants if v.qid in keys and v.request_id != v.qid]  # else: the item's own prompt
    return [{**dict.fromkeys(frame.columns), **{key: frame.at[i, key] for key in KEPT}, **own,
             "model_code": code, "correct": correct, "parse_error": error, "model_label":
             None if code is None else labels.get(frame.at[i, "question_id"], {}).get(str(code))}
            for i, own, code, correct, error in extra]


def circular_variants(domain: DomainRun) -> list[VariantResult]:
    """The domain's ``<Domain>_circular*.jsonl`` variants beside its detailed file (none: [])."""
    stem = domain.path.name.removesuffix(DETAILED_SUFFIX)
    files = sorted(domain.path.parent.glob(f"{stem}_circular*.jsonl"))
    return [variant for path in files for variant in read_variants(path)]


def grouping_column(domain: DomainRun, source: DomainSource | None) -> tuple[str, str]:
    """The name and label of the column a domain's ``country_code`` becomes: the country code, or the
    study's grouping variable as the file names and labels it (``province``), never called a country."""
    if domain.stored.grouping == COUNTRY:
        return COUNTRY_CODE, LONG_LABELS[COUNTRY_CODE]
    variable = source.variables.group if source and source.variables else None
    grouping = domain.stored.grouping
    name, label = (variable.name, variable.label or variable.name) if variable else (grouping, grouping)
    return (GROUP if name in LONG_LABELS else name), label


def long_table(domains: Sequence[tuple[DomainRun, DomainSource | None]]) -> tuple[pd.DataFrame, Labels]:
    """Every domain's rows in one table, probability columns (logprobs mode) last. Each domain's
    grouping is a column of its own, named and labelled as what it holds (``grouping_column``): a
    study's provinces and another's survey years are never one column under one label."""
    named = [grouping_column(domain, source) for domain, source in domains]
    groups: dict[str, str] = {}
    for name, label in named:  # each name's first label, in the order first seen
        groups.setdefault(name, label)
    frame = pd.concat([domain_long(domain, source).rename(columns={COUNTRY_CODE: name})
                       for (domain, source), (name, _) in zip(domains, named)], ignore_index=True)
    heads = [c for head in LONG_LABELS for c in (groups if head == COUNTRY_CODE else (head,))]
    probabilities = sorted((c for c in frame.columns if c not in heads), key=_code_order)
    frame = frame[[*heads, *probabilities]]
    for column in ("true_code", "model_code"):
        frame[column] = numeric_codes(frame[column].tolist())
    frame["person_id"] = numeric_codes([str(p) for p in frame["person_id"]])
    for column in ("source_row", "draw", "weight", *probabilities):
        frame[column] = pd.to_numeric(frame[column])
    frame[["source_row", "draw"]] = frame[["source_row", "draw"]].astype("Int64")
    column_labels = {**{c: label for c, label in LONG_LABELS.items() if c != COUNTRY_CODE}, **groups,
                     **{c: f"Model's probability of code {c[2:].replace('m', '-')}" for c in probabilities}}
    return frame, Labels(columns=column_labels)


def wide_labels(variables: SourceVariables) -> Labels:
    """Each column's label, value labels (numeric codes and Stata's ``.a``-``.z``) and SPSS missing
    declarations, as imported."""
    kept = [v for v in (variables.weight, *variables.questions) if v is not None]
    return Labels(
        columns={"source_row": f"Row in {variables.source_file} (1 = first respondent)",
                 "person_id": "socbench respondent id", **{v.name: v.label for v in kept if v.label}},
        values={v.name: {code_number(code): label for code, label in v.value_labels.items()}
                for v in kept if v.value_labels and not v.is_string and _numeric(v.value_labels)},
        missing={v.name: list(v.missing_ranges) for v in kept if v.missing_ranges})


def _numeric(labels: dict[str, str]) -> bool:
    """Numeric codes (Stata's ``.a``-``.z`` among them): what .sav and .dta label."""
    codes = [code for code in labels if not STATA_MISSING.match(code)]
    return not pd.to_numeric(pd.Series(codes, dtype=object), errors="coerce").isna().any()


def _column(variable: SourceVariable, codes: list[str | None]) -> pd.Series:
    return pd.Series(codes, dtype=object) if variable.is_string else numeric_codes(codes)


def wide_tables(domain: DomainRun, source: DomainSource) -> tuple[pd.DataFrame, pd.DataFrame, Labels]:
    """(model's answers, real answers, their labels) for the respondents of the run, by source row; the
    model's answer is blank where it was unreadable, missing or not asked (a missing real answer)."""
    variables = source.variables
    if variables is None:  # domain_source reads them for --wide
        raise DataError(f"{domain.path}: no import metadata for {domain.domain}")
    c = domain.columns(("person_id", "question_id", "llm_answer", "parse_error", "engine_error"))
    people = list(source.respondents)  # everyone the run read, asked or not (every answer missing)
    unrowed = [p for p in people if source.respondents[p].source_row is None]
    if unrowed:
        raise DataError(f"{source.answer_file}: respondent {unrowed[0]} has no source_row (imported before "
                        "exports existed): run `socbench data import` again with --replace")
    people.sort(key=lambda p: source.respondents[p].source_row or 0)
    answers = {(str(p), q.lower()): code for p, q, code, parse, engine
               in zip(c["person_id"], c["question_id"], c["llm_answer"], c["parse_error"], c["engine_error"])
               if parse is None and engine is None}
    records = [source.respondents[p] for p in people]
    head = {"source_row": [r.source_row for r in records],
            "person_id": numeric_codes([str(r.person_id) for r in records])}
    if variables.weight is not None:
        head[variables.weight.name] = [r.weight for r in records]
    model, real = dict(head), dict(head)
    for variable in variables.questions:
        qid = str(variable.question_id)
        model[variable.name] = _column(variable, [answers.get((p, qid.lower())) for p in people])
        real[variable.name] = _column(variable, [_real_code(r.questions_answer, qid) for r in records])
    return pd.DataFrame(model), pd.DataFrame(real), wide_labels(variables)


def _real_code(answers: dict[str, str | None], qid: str) -> str | None:
    """The record's code for ``qid`` (ids match case-insensitively, as the loaders match them)."""
    return answers[qid] if qid in answers else next(
        (code for key, code in answers.items() if key.lower() == qid.lower()), None)
