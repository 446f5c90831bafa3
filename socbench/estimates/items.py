"""A run's items as the estimators read them: the ONE place that knows how results are stored, for the
score stage's just-scored items (``domain_frame``) and a results log's (``run_items``, with the design
weights of the data folder the run read, found as the export finds it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from socbench.export.source import domain_source, run_data, run_folder
from socbench.log.read import DomainRun, ModelRun
from socbench.metrics.baselines import UNMAPPED
from socbench.metrics.persona_groups import ATTRIBUTES, UNKNOWN
from socbench.types import COUNTRY, ScoredItem
from socbench.weights import weights_off_reason

# one row per scored item (respondent x question); attrs: run, model, notes (what is missing and why)
COLUMNS = ("domain", "grouping", "person_id", "question_id", "country_code", "weight", "true_code",
           "model_code", "model_shares", "offered_codes")


def _shares(item: ScoredItem) -> dict[str, float] | None:
    """The model's answer distribution when the run has one (logprobs mode, or K draws)."""
    if item.distribution:
        return dict(item.distribution)
    drawn = [code for code in item.draws or () if code is not None]
    return {code: k / len(drawn) for code, k in Counter(drawn).items()} if drawn else None


def domain_frame(domain: str, scored: Sequence[ScoredItem], weights: Mapping[str, float] | None,
                 questions: Mapping[str, Mapping[str, Any]], grouping: str = COUNTRY) -> pd.DataFrame:
    """One domain's rows: ``COLUMNS`` plus the persona groups its items carry; ``weights`` by person
    id as text (None: unweighted); ``questions``: the per-question view (its offered options);
    ``grouping``: what ``country_code`` holds (a country, or the study's grouping variable)."""
    options = {qid: [str(code) for code, _ in view.get("options", [])] for qid, view in questions.items()}
    people = [str(item.person_id) for item in scored]
    present = [a for a in ATTRIBUTES if any(a in item.groups for item in scored)]
    return pd.DataFrame({
        "domain": domain, "grouping": grouping, "person_id": people,
        "question_id": [item.question_id for item in scored],
        "country_code": [item.country_code or UNMAPPED for item in scored],
        "weight": [weights[p] if weights else float("nan") for p in people],
        "true_code": [str(item.true_code) for item in scored],
        "model_code": [None if item.predicted_code is None or item.engine_error else str(item.predicted_code)
                       for item in scored],
        "model_shares": [_shares(item) for item in scored],
        "offered_codes": [tuple(item.offered_codes or options.get(item.question_id, ())) for item in scored],
        **{a: [item.groups.get(a, UNKNOWN) for item in scored] for a in present}})


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
        frames.append(domain_frame(domain.domain, list(domain.scored()), weights, domain.stored.questions,
                                   domain.stored.grouping))
    items = pd.concat(frames, ignore_index=True)
    items.attrs.update(run=run.run, model=run.model, notes=notes)
    return items
