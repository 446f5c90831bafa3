"""A run's items as the estimators read them: the ONE place that knows how results are stored, for the
score stage's just-scored items (``domain_frame``) and a results log's (``run_items``, with the design
weights of the data folder the run read, found as the export finds it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from socbench.data.options import code_order
from socbench.export.source import domain_source, run_data, run_folder
from socbench.log.read import DomainRun, ModelRun
from socbench.metrics.baselines import UNMAPPED
from socbench.metrics.persona_groups import ATTRIBUTES, UNKNOWN
from socbench.types import COUNTRY, ScoredItem
from socbench.weights import weights_off_reason

MEAN = "mean"  # the mean answer's target (a scale's mean code, a numeric question's mean)
# one row per scored item (respondent x question); attrs: run, model, notes (what is missing and why)
COLUMNS = ("domain", "grouping", "person_id", "question_id", "country_code", "weight", "true_code",
           "model_code", "model_shares", "offered_codes")


FIELDS = ("person_id", "question_id", "country_code", "true_answer", "llm_answer", "engine_error",
          "option_distribution", "offered_codes")  # the item fields (``log.lines``) read


def _category(values: Iterable[Any]) -> pd.Categorical:
    """A column of repeated values (ids, groups) as codes into them: as text, a whole survey's 2.1 million
    rows took ~1 GB at the score stage's peak (issue 43)."""
    return pd.Categorical(list(values))


def _objects(values: Iterable[Any]) -> pd.Series:
    """Python objects as they are (codes, None, dicts, tuples): pointers to the items' own."""
    return pd.Series(list(values), dtype=object)


def columns_frame(domain: str, c: Mapping[str, Sequence[Any]], groups: Mapping[str, Mapping[str, str]],
                  weights: Mapping[str, float] | None, questions: Mapping[str, Mapping[str, Any]],
                  grouping: str = COUNTRY) -> pd.DataFrame:
    """One domain's rows from its items' ``FIELDS`` as columns and each respondent's persona groups (by
    person id as text); ``weights`` by person id as text (None: unweighted); ``questions``: the
    per-question view (its offered options); ``grouping``: what ``country_code`` holds."""
    options = {qid: [str(code) for code, _ in view.get("options", [])] for qid, view in questions.items()}
    text = {p: str(p) for p in dict.fromkeys(c["person_id"])}  # one string a person, not one an item
    people = [text[p] for p in c["person_id"]]
    present = [a for a in ATTRIBUTES if any(a in found for found in groups.values())]
    return pd.DataFrame({
        "domain": _category([domain] * len(people)), "grouping": _category([grouping] * len(people)),
        "person_id": _category(people), "question_id": _category(c["question_id"]),
        "country_code": _category(code or UNMAPPED for code in c["country_code"]),
        "weight": np.array([weights[p] if weights else float("nan") for p in people], dtype=float),
        "true_code": _objects(str(code) for code in c["true_answer"]),
        "model_code": _objects(None if code is None or error else str(code)
                               for code, error in zip(c["llm_answer"], c["engine_error"], strict=True)),
        # the model's answer distribution where the run has one: logprobs mode, or K draws' shares
        "model_shares": _objects(dict(d) if d else None for d in c["option_distribution"]),
        "offered_codes": _objects(tuple(offered or options.get(qid, ()))
                                  for offered, qid in zip(c["offered_codes"], c["question_id"], strict=True)),
        **{a: _category(groups.get(p, {}).get(a, UNKNOWN) for p in people) for a in present}})


def _indicators(codes: list[str], answers: pd.Series, shares: pd.Series | None = None) -> np.ndarray:
    """Respondents x codes: 1 at the answer (or the model's shares); a row of 0 for no answer."""
    at = pd.Categorical(answers.astype(object), categories=codes).codes
    out = np.vstack([np.eye(len(codes)), np.zeros(len(codes))])[at]  # code -1 (none): the zero row
    for row in np.flatnonzero(shares.notna()) if shares is not None else ():
        out[row] = [shares.iloc[row].get(code, 0.0) for code in codes]
    return out


def targets(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """A question's targets: people's, the model's, which the model answered, their names. Each option's
    share and, on a scale, the mean code; where no option was offered (a numeric question) its one target,
    the mean answer (the model's numbers NaN where it gave none), named ``MEAN`` as a scale's mean code."""
    if not any(len(offered) for offered in frame["offered_codes"]):
        y, yhat = (pd.to_numeric(frame[c]).to_numpy(dtype=float, copy=True)[:, None]
                   for c in ("true_code", "model_code"))
        return y, yhat, ~np.isnan(yhat[:, 0]), (MEAN,)
    codes = sorted({c for offered in frame["offered_codes"] for c in offered} | set(frame["true_code"]),
                   key=code_order)
    y = _indicators(codes, frame["true_code"])
    yhat = _indicators(codes, frame["model_code"], frame["model_shares"])
    answered, names = yhat.sum(1) > 0, tuple(f"share {c}" for c in codes)
    if len(codes) >= 3 and all(code_order(c)[0] == 0 for c in codes):
        values = np.array([float(c) for c in codes])
        y, yhat = np.column_stack([y @ values, y]), np.column_stack([yhat @ values, yhat])
        names = (MEAN, *names)
    return y, yhat, answered, names


def domain_frame(domain: str, scored: Sequence[ScoredItem], weights: Mapping[str, float] | None,
                 questions: Mapping[str, Mapping[str, Any]], grouping: str = COUNTRY) -> pd.DataFrame:
    """``columns_frame`` of the score stage's just-scored items."""
    names = ("person_id", "question_id", "country_code", "true_code", "predicted_code", "engine_error",
             "distribution", "offered_codes")  # each of ``FIELDS`` as a scored item names it
    c = {field: [getattr(i, name) for i in scored] for field, name in zip(FIELDS, names, strict=True)}
    groups = {str(i.person_id): i.groups for i in scored}
    return columns_frame(domain, c, groups, weights, questions, grouping)


def _weights(run: ModelRun, domain: DomainRun) -> tuple[dict[str, float] | None, str | None]:
    """(person id -> design weight, None), or (None, why the domain is unweighted)."""
    if domain.stored.weighted_metrics_off:
        return None, domain.stored.weighted_metrics_off
    data = run_data(run, None)
    if data is None:
        return None, f"{run.folder}/summary.json names no data folder that exists, so no design weights"
    people = domain_source(data, domain, need_variables=False).respondents
    records = [people[pid] for pid in sorted(domain.people)]
    reason = weights_off_reason([r.weight for r in records], [r.person_id for r in records])
    return (None, reason) if reason else ({str(r.person_id): float(r.weight or 0) for r in records}, None)


def run_items(run_dir: str | Path) -> pd.DataFrame:
    """Every scored item of a run: ``COLUMNS`` plus the persona groups (``ATTRIBUTES`` the run has)."""
    run = run_folder(Path(run_dir).expanduser())
    frames, notes = [], []
    for domain in run.domains:
        weights, why = _weights(run, domain)
        if why:
            notes.append(f"{domain.domain}: unweighted ({why})")
        frames.append(columns_frame(domain.domain, domain.columns(FIELDS), domain.groups, weights,
                                    domain.stored.questions, domain.stored.grouping))
    items = pd.concat(frames, ignore_index=True)
    items.attrs.update(run=run.run, model=run.model, notes=notes)
    return items
