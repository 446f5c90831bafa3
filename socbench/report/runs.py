"""Reading result folders for the report: one ``ModelRun`` per run folder, one ``DomainRun``
per ``<Domain>_detailed.json``.

Runs are named by their folder, so two runs of one model (say with and without persona) sit
side by side while ``model`` stays the model asked. Each domain's items become one frame with
correctness, failure kinds, persona groups and each answer-free baseline's expectation
(recomputed from the codes the details carry), so the report can put a CI and a baseline on
any group of items. Older files without those fields still read (their baselines are NaN).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from socbench.domains import get_domain
from socbench.errors import DataError, SocbenchError
from socbench.metrics.baselines import BY_COUNTRY_QUESTION, BY_QUESTION, group_baseline, majority_item_scores
from socbench.metrics.persona_groups import ATTRIBUTES, UNKNOWN
from socbench.types import COUNTRY, ScoredItem

DETAILED_SUFFIX = "_detailed.json"
CIRCULAR_SUFFIX = "_metrics.json"
ITEM_BASELINES = ("uniform", "majority_question", group_baseline(), group_baseline("group"))


class DetailRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")
    person_id: int | str
    question_id: str
    country_code: str | None = None
    true_answer: str | None = None
    llm_answer: str | None = None
    correct: bool
    parse_error: str | None = None
    engine_error: str | None = None
    offered_codes: list[str] | None = None  # absent in files written before the report needed it
    option_distribution: dict[str, float] | None = None  # logprobs mode: each offered code's probability
    draws: list[str | None] | None = None  # --samples K: every draw's code, in draw order


class DetailedFile(BaseModel):
    """The parts of ``<Domain>_detailed.json`` the report reads."""

    model_config = ConfigDict(extra="ignore")
    domain: str
    domain_id: int | None = None  # absent in files written before it was recorded here
    grouping: str = COUNTRY  # what country_code holds: a country, or the study's grouping variable
    model: str
    run: str | None = None
    per_question_macro_f1: float | None = None
    baselines: dict[str, float | None] = {}
    breakdowns: dict[str, dict[str, dict[str, float | None]]] = {}
    distribution: dict[str, dict[str, float | None]] = {}
    alignment: dict[str, dict[str, float | None]] = {}
    questions: dict[str, dict[str, Any]] = {}
    persona_groups: dict[str, dict[str, str]] = {}
    complete: bool | None = None  # absent in files written before engine errors were counted apart
    engine_errors: int | None = None
    engine_error_reasons: dict[str, int] = {}
    weighted_metrics_off: str | None = None  # why the domain has no design-weighted metrics
    yardsticks: dict[str, Any] = {}  # socbench.yardsticks' record (absent in older files)
    draws: dict[str, float | None] = {}  # --samples K: samples, draw_agreement, draw_fleiss_kappa
    details: list[DetailRecord]


@dataclass(frozen=True)
class DomainRun:
    """One domain of one run: per-item frame plus the stored scores."""

    domain: str
    domain_id: int | None
    path: Path
    # person_id, question_id, country_code, correct, parse_failure, engine_error (reason), the
    # persona attributes (group or "unknown") and the per-item expectation of each baseline
    items: pd.DataFrame
    stored: DetailedFile


@dataclass(frozen=True)
class ModelRun:
    run: str  # folder name
    model: str
    folder: Path
    domains: tuple[DomainRun, ...]
    failed: dict[str, str] = field(default_factory=dict)
    circular: dict[str, dict[str, Any]] = field(default_factory=dict)  # file stem -> circular metrics JSON
    export_failed: tuple[str, ...] = ()  # summary.json: --export formats not written, one line why each
    study: str = ""  # the survey's own name (summary.json's data.study; "" when not recorded)
    usage: dict[str, int] = field(default_factory=dict)  # summary.json's totals.usage (pipeline.answer's)

    @property
    def grouping(self) -> str:
        """What the run's items are grouped by: "country", the grouping variable its domains share
        ("Region"), or "group" when they differ."""
        found = {d.stored.grouping for d in self.domains}
        return found.pop() if len(found) == 1 else "group"


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}:{exc.colno}: malformed JSON: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None


def _domain_id(name: str) -> int | None:
    try:
        return get_domain(name).id
    except SocbenchError:
        return None


def item_baselines(details: list[DetailRecord], grouping: str = COUNTRY) -> dict[str, np.ndarray]:
    """What each baseline expects on each item (NaN when the offered codes were not recorded, and
    for the majority in a group of the kind this domain does not have)."""
    found = dict.fromkeys(ITEM_BASELINES, np.full(len(details), math.nan))
    if not details or any(d.offered_codes is None or d.true_answer is None for d in details):
        return found
    items = [ScoredItem(0, d.question_id, d.country_code, str(d.true_answer), None, False, None, False,
                        tuple(d.offered_codes or ())) for d in details]
    return found | {"uniform": np.array([1.0 / len(d.offered_codes or ()) for d in details]),
                    "majority_question": majority_item_scores(items, BY_QUESTION),
                    group_baseline(grouping): majority_item_scores(items, BY_COUNTRY_QUESTION)}


def items_frame(stored: DetailedFile) -> pd.DataFrame:
    """The per-item frame of one detailed file."""
    details = stored.details
    people = [str(d.person_id) for d in details]
    groups = {attr: [stored.persona_groups.get(pid, {}).get(attr, UNKNOWN) for pid in people]
              for attr in ATTRIBUTES if any(attr in g for g in stored.persona_groups.values())}
    return pd.DataFrame({
        "person_id": people,
        "question_id": [d.question_id for d in details],
        "country_code": [d.country_code or "unmapped" for d in details],
        "correct": [d.correct for d in details],
        "parse_failure": [d.parse_error is not None and d.engine_error is None for d in details],
        "engine_error": [d.engine_error for d in details],
        **groups, **item_baselines(details, stored.grouping),
    })


def read_domain(path: Path) -> DomainRun:
    """One ``<Domain>_detailed.json``; schema problems are one-line DataErrors."""
    try:
        stored = TypeAdapter(DetailedFile).validate_python(read_json(path))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(map(str, err["loc"]))
        raise DataError(f"{path}: field '{where}': {err['msg']}") from None
    domain_id = stored.domain_id if stored.domain_id is not None else _domain_id(stored.domain)
    return DomainRun(stored.domain, domain_id, path, items_frame(stored), stored)


def read_circular(folder: Path) -> dict[str, dict[str, Any]]:
    """Every ``<Domain>_circular*_metrics.json`` of an ISSP run folder, by file stem."""
    found = {}
    for path in sorted(folder.glob(f"*_circular*{CIRCULAR_SUFFIX}")):
        payload = read_json(path)
        if isinstance(payload, dict) and isinstance(payload.get("metrics"), dict) and "domain" in payload:
            found[path.name.removesuffix(CIRCULAR_SUFFIX)] = payload
    return found


def read_run(folder: Path) -> ModelRun | None:
    """A run folder, or None when it holds no detailed results."""
    paths = sorted(folder.glob(f"*{DETAILED_SUFFIX}"))
    if not paths:
        return None
    domains = sorted((read_domain(p) for p in paths), key=lambda d: (d.domain_id or 99, d.domain))
    summary = read_json(folder / "summary.json") if (folder / "summary.json").is_file() else {}
    model = str(domains[0].stored.model or summary.get("model"))
    issp = all(_domain_id(d.domain) for d in domains)  # older results record no study
    study = (summary.get("data") or {}).get("study") or ("ISSP" if issp else "")
    return ModelRun(folder.name, model, folder, tuple(domains), dict(summary.get("failed_domains") or {}),
                    read_circular(folder), tuple(summary.get("export_failed") or ()), study,
                    dict((summary.get("totals") or {}).get("usage") or {}))


def load_runs(output_dir: str | Path) -> list[ModelRun]:
    """Every run under ``output_dir`` (or ``output_dir`` itself when it is a run folder)."""
    root = Path(output_dir).expanduser()
    if not root.is_dir():
        raise DataError(f"{root}: results folder not found")
    own = read_run(root)
    if own is not None:
        return [own]
    runs = [run for folder in sorted(root.iterdir())
            if folder.is_dir() and not folder.name.startswith(".") and (run := read_run(folder)) is not None]
    if not runs:
        raise DataError(f"{root}: no model results found (expected <model>/<Domain>{DETAILED_SUFFIX} files)")
    return runs


def pooled_items(run: ModelRun) -> pd.DataFrame:
    """Every item of a run with its domain, and a respondent key unique across domains."""
    frame = pd.concat([d.items.assign(domain=d.domain) for d in run.domains], ignore_index=True)
    return frame.assign(respondent=frame["domain"] + ":" + frame["person_id"])
