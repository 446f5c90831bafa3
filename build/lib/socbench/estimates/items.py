"""A run's items as the estimators read them: the ONE place that knows how results are stored.

Why one function: everything in ``socbench.estimates`` reads a run through ``run_items``, so a
change of the result files (one results log per run) changes this body only. Today it reads the
``<Domain>_detailed.json`` files (``socbench.report.runs``) and, for design weights, the data
folder the run read (``socbench.export.source``, as the export does).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd

from socbench.export.source import domain_source, run_data, run_folder
from socbench.metrics.persona_groups import ATTRIBUTES
from socbench.report.runs import DetailRecord, DomainRun, ModelRun
from socbench.weights import weights_off_reason

# one row per scored item (respondent x question); attrs: run, model, notes (what is missing and why)
COLUMNS = ("domain", "person_id", "question_id", "country_code", "weight", "true_code", "model_code",
           "model_shares", "offered_codes")


def _shares(item: DetailRecord) -> dict[str, float] | None:
    """The model's answer distribution when the run has one (logprobs mode, or K draws)."""
    if item.option_distribution:
        return dict(item.option_distribution)
    drawn = [code for code in item.draws or () if code is not None]
    return {code: k / len(drawn) for code, k in Counter(drawn).items()} if drawn else None


def _weights(run: ModelRun, domain: DomainRun) -> tuple[dict[str, float] | None, str | None]:
    """(person id -> design weight, None), or (None, why the domain is unweighted)."""
    if domain.stored.weighted_metrics_off:
        return None, domain.stored.weighted_metrics_off
    data = run_data(run, None)
    if data is None:
        return None, f"{run.folder}/summary.json names no data folder that exists, so no design weights"
    people = domain_source(data, domain, need_variables=False).respondents
    records = [people[pid] for pid in sorted(set(domain.items["person_id"]))]
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
        details, views = domain.stored.details, domain.stored.questions
        options = {qid: [str(code) for code, _ in view.get("options", [])] for qid, view in views.items()}
        frame = pd.DataFrame({
            "domain": domain.domain,
            "person_id": domain.items["person_id"],
            "question_id": [d.question_id for d in details],
            "country_code": domain.items["country_code"],
            "weight": [weights[str(d.person_id)] if weights else float("nan") for d in details],
            "true_code": [str(d.true_answer) for d in details],
            "model_code": [None if d.llm_answer is None or d.engine_error else str(d.llm_answer)
                           for d in details],
            "model_shares": [_shares(d) for d in details],
            "offered_codes": [tuple(d.offered_codes or options.get(d.question_id, ())) for d in details],
        })
        frames.append(frame.join(domain.items[[a for a in ATTRIBUTES if a in domain.items]]))
    items = pd.concat(frames, ignore_index=True)
    items.attrs.update(run=run.run, model=run.model, notes=notes)
    return items
