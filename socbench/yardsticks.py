"""The yardsticks of one scored domain, as ``DomainResult.yardsticks`` carries them. Here, not in
``scoring``, because the demographic model may use exactly the attributes the prompts showed (none for a
``--no_persona`` run: then it knows only the answer shares). One JSON-ready record (NaN written as null):

    {"demographic_model": {"accuracy", "macro_f1", "per_question_macro_f1", "learner", "folds",
                           "fallbacks": {reason: n}, "distributions": {qid: {code: p}},
                           "per_question": {qid: {"n", "accuracy", "macro_f1"}}},
     "simbench": {"model": score, "demographic_model": score, "questions": rows, "norm": ...},
     "structure": {"model": S, "demographic_model": S, "comparison": C}}

with S = {"profile_correlation", "mean_real_v", "mean_simulated_v", "gaps", "gaps_same_sign",
"sign_agreement", "heterogeneity_ratio", "pairs"} (``pairs``: how many qualified) and C the model's
profile correlation minus the classifier's with its paired-bootstrap CI ({"difference", "ci_low", "ci_high",
"resamples", "level", "method"}, ``metrics.structure_difference``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from socbench.background import Beside
from socbench.memo import content_key, memo
from socbench.metrics.classification import seed_macro_f1
from socbench.metrics.demographic import DEFAULT_FOLDS, SOLVER, Learner, fit_demographic
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS
from socbench.metrics.simbench import SimBenchRow, simbench_of, simbench_rows, simbench_score
from socbench.metrics.structure import Structure, structure
from socbench.metrics.structure_difference import difference_record, profile_resamples
from socbench.types import DomainData, ScoredItem

DEMOGRAPHIC = "demographic_model"  # its key in DomainResult.baselines and in the yardsticks
LEARNER: Learner = "logistic"
APART_ITEMS = 20_000  # a domain this large fits its demographic model in a process of its own (~2 s to start)
ALONE_ITEMS = 1_000_000  # up to this size: the process's copy of the items (~0.3 KB each) is worth its core
Attributes = dict[int, dict[str, str]]


def shown_attributes(data: DomainData, include_persona: bool = True) -> Attributes:
    """Person id -> the persona attributes the prompts showed (the same function builds both);
    every respondent is present, with none when the run showed no persona."""
    from socbench.prompts.persona import country_words, persona_attributes  # here: the classifier's process
    # (which imports this module) needs neither them nor the data modules they import (0.1 s)

    return {person.person_id: persona_attributes(person, country_words(person)) if include_persona else {}
            for person in data.respondents}


def structure_record(found: Structure) -> dict[str, Any]:
    """A predictor's structure figures, without the per-pair detail."""
    return {k: v for k, v in vars(found).items() if k not in ("pairs", "heterogeneity")} | {
        "pairs": len(found.pairs)}


def domain_yardsticks(scored: Sequence[ScoredItem], attributes: Mapping[int, Mapping[str, str]], *,
                      weights: Mapping[int, float] | None = None,
                      min_respondents: int = DEFAULT_MIN_RESPONDENTS, seed: int = 0,
                      folds: int = DEFAULT_FOLDS, cache: Path | None = None,
                      begun: Beside[dict[str, Any]] | None = None, answers: str | None = None,
                      ) -> dict[str, Any]:
    """The JSON record of every yardstick (the demographic model's accuracy a baseline too) of a complete
    domain's ``scored`` items (the LLM's answers) beside the
    demographic model fitted on ``attributes`` (with the survey's design ``weights``, if any).
    ``cache``: the run's cache folder; the demographic model's side depends on the data alone
    (any model's run on it reads it back), the LLM's side on its answers too (``socbench.memo``).
    ``begun``: that side as ``begin_demographic`` started it with the same arguments; ``answers``: the
    content key of the items ``scored`` came from, if the caller has one."""
    begun = begun or begin_demographic(scored, attributes, weights=weights, min_respondents=min_respondents,
                                       seed=seed, folds=folds, cache=cache, apart=False)
    key = content_key("model", answers or scored, min_respondents) if cache is not None else ""
    model = memo(cache, key, lambda: _model_side(scored, min_respondents))
    demographic = begun.result()
    comparison = difference_record(np.array(model["profiles"], dtype=float)
                                   - np.array(demographic["profiles"], dtype=float))
    return {
        DEMOGRAPHIC: demographic["record"],
        "simbench": {"model": model["simbench"], DEMOGRAPHIC: demographic["simbench"],
                     "questions": model["questions"], "norm": model["norm"]},
        "structure": {"model": model["structure"], DEMOGRAPHIC: demographic["structure"],
                      "comparison": comparison},
    }


def begin_demographic(scored: Sequence[ScoredItem], attributes: Mapping[int, Mapping[str, str]], *,
                      apart: bool | None = None, **settings: Any) -> Beside[dict[str, Any]]:
    """``demographic_side``, begun in a process of its own for a domain of ``APART_ITEMS`` to ``ALONE_ITEMS``
    items (``apart`` decides otherwise), while the caller scores the rest. A larger one (a whole module: ~2
    million items) is fitted in the caller after the rest: the process's copy of its items and interpreter
    (~1 GB at 50,000 respondents) would cost more memory than the second core saves time."""
    apart = APART_ITEMS <= len(scored) <= ALONE_ITEMS if apart is None else apart
    return Beside(apart, demographic_side, scored, attributes, **settings)


def demographic_side(scored: Sequence[ScoredItem], attributes: Mapping[int, Mapping[str, str]], *,
                     weights: Mapping[int, float] | None = None,
                     min_respondents: int = DEFAULT_MIN_RESPONDENTS, seed: int = 0,
                     folds: int = DEFAULT_FOLDS, cache: Path | None = None) -> dict[str, Any]:
    """The demographic model's yardsticks (``record``, ``simbench``, ``structure``) and its half of the
    paired comparison of structure (``profiles``): the data's alone (who answered what, the attributes
    shown), never the LLM's answers, so a run with other answers (another model, a rerun) reads them from
    the ``cache``. Its half is computed here, beside the fit: handing the caller the classifier's answers
    instead (a code an item, and a copy of every item to compare them) was ~0.5 GB at 50,000 respondents."""
    people = {item.person_id for item in scored}
    shown = {pid: attributes.get(pid, {}) for pid in people}
    data = [(i.person_id, i.question_id, i.country_code, i.true_code, i.offered_codes, i.country_specific,
             i.groups) for i in scored]

    def fit() -> dict[str, Any]:
        parts: list[list[SimBenchRow]] = []
        found = fit_demographic(scored, shown, weights=weights, k=folds, seed=seed, learner=LEARNER).result(
            lean=True, each=lambda group: parts.append(simbench_rows(group, min_respondents)))
        items = found.items  # each question's SimBench rows made while its distributions were at hand
        record = {"accuracy": found.metrics["accuracy"], "macro_f1": seed_macro_f1(items),
                  "per_question_macro_f1": found.metrics["macro_f1"], "learner": LEARNER, "folds": folds,
                  "fallbacks": dict(sorted(found.fallbacks.items())),
                  "distributions": found.distributions, "per_question": found.per_question}
        return {"record": record, "simbench": simbench_of(parts).score,
                "structure": structure_record(structure(list(items))),
                "profiles": profile_resamples(items).tolist()}

    key = content_key(DEMOGRAPHIC, data, shown, weights, min_respondents, seed, folds, LEARNER, SOLVER)
    del data  # one tuple an item (~250 MB at 50,000 respondents): not held through the fit
    return memo(cache, key, fit)


def _model_side(scored: Sequence[ScoredItem], min_respondents: int) -> dict[str, Any]:
    """The LLM's yardsticks, and its half of the structure comparison (``profiles``), while the classifier
    is still fitted."""
    found = simbench_score(scored, min_respondents)
    return {"simbench": found.score, "questions": len(found.rows), "norm": found.norm,
            "structure": structure_record(structure(scored)), "profiles": profile_resamples(scored).tolist()}


def yardstick(record: Mapping[str, Any], *path: str) -> float:
    """One number of a (possibly empty, older or JSON-read) yardsticks record; NaN when absent."""
    value: Any = record
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return math.nan if value is None else float(value)


def headline(record: Mapping[str, Any]) -> dict[str, float]:
    """The summary's and leaderboard's yardstick columns of one domain."""
    return {"simbench_score": yardstick(record, "simbench", "model"),
            "simbench_questions": yardstick(record, "simbench", "questions"),
            "demographic_model_accuracy": yardstick(record, DEMOGRAPHIC, "accuracy"),
            "structure_correlation": yardstick(record, "structure", "model", "profile_correlation"),
            "heterogeneity_ratio": yardstick(record, "structure", "model", "heterogeneity_ratio")}


HEADLINE_KEYS = ("simbench_score", "demographic_model_accuracy", "structure_correlation",
                 "heterogeneity_ratio")


def pooled_simbench(rows: Iterable[Mapping[str, Any]]) -> float:
    """SimBench's score across domains, as SimBench averages across datasets: every row counts once,
    each scored with its own domain's normaliser, so a domain weighs by its rows (its score is the
    mean of its rows' scores)."""
    pairs = [(row["simbench_score"], row["simbench_questions"]) for row in rows]
    pairs = [(s, n) for s, n in pairs if not (math.isnan(s) or math.isnan(n)) and n > 0]
    total = sum(n for _, n in pairs)
    return sum(s * n for s, n in pairs) / total if total else math.nan
