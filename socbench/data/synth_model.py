"""The answer model behind ``socbench data synth``: synthetic people and how they answer, and the demo's
question sets and vocabulary, written for socbench (not ISSP text), in ``demo_questions.json``.

Traits are correlated as in real surveys; each answer is an ordered (or multinomial) logit over
a country effect plus weighted traits plus noise, so reading the persona beats the majority while
answers stay noisy. A demo question's drivers say which traits (age, female, edu, relig, work, urban,
married) push an answer up (ordinal) or towards one option (categorical); files do not carry them.
All draws come from Generators seeded by (seed, domain, question, country).
"""

from __future__ import annotations

import copy
import json
import math
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from socbench.data.options import effective_options
from socbench.domains import DomainSpec
from socbench.types import Question

_DATA = json.loads(Path(__file__).with_name("demo_questions.json").read_text(encoding="utf-8"))
_FILE_KEYS = ("question_id", "question", "answer", "special")

# domain id -> (C_ALPHAN code, display name as ISSP spells it in that module)
DEMO_COUNTRIES: dict[int, tuple[tuple[str, str], ...]] = {
    int(domain): tuple((code, name) for code, name in pairs) for domain, pairs in _DATA["countries"].items()}
# domain id -> attribute key of the country variable (C_ALPHAN's label in that module)
COUNTRY_KEYS: dict[int, str] = {int(domain): key for domain, key in _DATA["country_keys"].items()}
# Names ISSP used in one module that differ from that module's code table.
NAME_QUIRKS: dict[tuple[int, str], str] = {(d, code): name for d, code, name in _DATA["name_quirks"]}
# ISSP variable -> (attribute key, code -> value label, missing-value label); used when no
# codebook is given, and as the fallback for labels a codebook lacks.
VOCABULARY: dict[str, tuple[str, dict[str, str], str]] = {
    name: (v["key"], v["labels"], v["missing"]) for name, v in _DATA["vocabulary"].items()}
NATIONAL_RELIGION_KEY: str = _DATA["national_religion_key"]
NAP_LABEL: str = _DATA["nap_label"]


def demo_question_set(slug: str) -> list[dict[str, Any]]:
    """The demo questions of one domain in the ``issp_qa_*.json`` layout."""
    return [{key: copy.deepcopy(q[key]) for key in _FILE_KEYS} for q in _DATA["sets"][slug]]


def religion_profile(code: str) -> tuple[dict[int, float], float]:
    """(RELIGGRP code -> probability, mean religiosity) for a C_ALPHAN code or its nation's."""
    found = next((group for prefix in (code, code.split("-")[0]) for group in _DATA["religion"]
                  if prefix in group["codes"]), _DATA["default_religion"])
    total = sum(found["mix"].values())
    return {int(k): v / total for k, v in found["mix"].items()}, float(found["mean"])


MISSING_CODES = (-9, -8, 8, 9, 98, 99)
TRAITS = ("age", "female", "edu", "relig", "work", "urban", "married")
_FOCUS = {  # trait -> (keyword pattern in the question text, domain ids where it always applies)
    "relig": (re.compile(r"god|relig|church|pray|faith|spiritual|after ?life|after death|heaven|worship",
                         re.I), {7}),
    "work": (re.compile(r"\bjob|\bwork|employ|wage|salary|career|occupation|trade union", re.I), {11}),
}
_RATES = dict(missing=0.03, none=0.005, extra=0.06, as_str=0.08, as_float=0.05)


@dataclass(frozen=True)
class Person:
    """One synthetic respondent's true traits (the attributes are labels of these)."""

    code: str
    name: str
    sex: int
    age: int
    degree: int
    religion: int
    religiosity: float
    attend: int
    mainstat: int
    work: int
    marital: int
    urbrural: int

    def traits(self) -> np.ndarray:
        """Standardised traits in ``TRAITS`` order: what the answer model reads."""
        return np.array([(self.age - 51) / 19, 1.0 if self.sex == 2 else -1.0, (self.degree - 3) / 1.6,
                         self.religiosity, 1.0 if self.mainstat == 1 else -1.0, (3 - self.urbrural) / 1.2,
                         1.0 if self.marital in (1, 2) else -1.0])


@dataclass(frozen=True)
class QuestionModel:
    """Answer model of one question: ordinal cut points or per-option utilities."""

    base: tuple[str, ...]
    categorical: bool
    betas: np.ndarray  # (T,) ordinal; (K, T) categorical
    intercepts: np.ndarray  # K-1 cut points (ordinal) or K option intercepts
    seed_key: tuple[int, ...]


def _pick(rng: np.random.Generator, weights: dict[int, float]) -> int:
    probs = np.array(list(weights.values()), dtype=float)
    return int(list(weights)[rng.choice(len(probs), p=probs / probs.sum())])


def _main_status(age: int, sex: int, degree: int, rng: np.random.Generator) -> int:
    if age >= 66:
        return _pick(rng, {6: 0.85, 1: 0.1, 7: 0.05})
    if age < 25:
        return _pick(rng, {3: 0.5, 1: 0.35, 2: 0.15})
    weights = {1: 0.62 + 0.05 * (degree - 3), 2: 0.08, 7: 0.10 if sex == 2 else 0.03, 5: 0.05, 9: 0.03}
    if age >= 58:
        weights[6] = 0.2
    return _pick(rng, weights)


def _marital(age: int, rng: np.random.Generator) -> int:
    if age < 30:
        return _pick(rng, {6: 0.7, 1: 0.25, 2: 0.05})
    if age < 65:
        return _pick(rng, {1: 0.58, 6: 0.2, 4: 0.12, 3: 0.03, 5: 0.04, 2: 0.03})
    return _pick(rng, {1: 0.55, 5: 0.3, 4: 0.08, 6: 0.07})


def make_person(code: str, name: str, rng: np.random.Generator) -> Person:
    """Draw one respondent of country ``code``; traits are correlated as in real surveys."""
    mix, mean_relig = religion_profile(code)
    age = int(rng.integers(18, 86))
    sex = 2 if rng.random() < 0.52 else 1
    degree = int(np.clip(np.rint(3 + 1.4 * rng.normal(-0.018 * (age - 50), 1.0)), 0, 6))
    religion = _pick(rng, mix)
    if religion == 0:
        religiosity = float(rng.normal(-1.3, 0.4))
    else:
        religiosity = float(rng.normal(mean_relig + 0.012 * (age - 50) + 0.2 * (sex == 2), 0.8))
    attend = int(np.clip(np.rint(5.5 - 2.2 * religiosity), 1, 8))
    mainstat = _main_status(age, sex, degree, rng)
    work = 1 if mainstat == 1 else (3 if age < 25 and rng.random() < 0.7 else 2)
    urbrural = _pick(rng, {1: 0.25, 2: 0.2, 3: 0.3, 4: 0.18, 5: 0.07})
    return Person(code, name, sex, age, degree, religion, religiosity, attend, mainstat, work,
                  _marital(age, rng), urbrural)


def _stable(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def _generic_betas(question: Question, domain: DomainSpec, rng: np.random.Generator) -> np.ndarray:
    """Small random effects, plus strong ones where the text (or domain) names religion or work."""
    betas = rng.normal(0.0, 0.5, len(TRAITS))
    for trait, (pattern, domain_ids) in _FOCUS.items():
        if pattern.search(question.text) or domain.id in domain_ids:
            betas[TRAITS.index(trait)] = rng.choice([-1.0, 1.0]) * rng.uniform(1.4, 2.2)
    return betas


def _trait_vector(drivers: dict[str, float], rng: np.random.Generator) -> np.ndarray:
    return rng.normal(0.0, 0.15, len(TRAITS)) + np.array([drivers.get(t, 0.0) for t in TRAITS])


def question_model(question: Question, domain: DomainSpec, seed: int) -> QuestionModel:
    """The answer model of one question, seeded by (seed, domain, question id) only."""
    from scipy.stats import norm  # here: a run's preflight imports this module (synth.INFO_FILE)

    key = (seed, domain.id, _stable(question.id))
    rng = np.random.default_rng(key)
    base = tuple(sorted(question.options, key=int))
    demo = {q["question_id"]: q for q in _DATA["sets"].get(domain.slug, [])}.get(question.id, {})
    drivers = demo.get("drivers") if demo.get("question") == question.text else None
    if drivers and all(k.lstrip("-").isdigit() for k in drivers):
        betas = np.stack([_trait_vector(drivers.get(c, {}), rng) for c in base])
        return QuestionModel(base, True, betas, rng.normal(0.0, 0.5, len(base)), key)
    betas = _trait_vector(drivers, rng) if drivers else _generic_betas(question, domain, rng)
    spread = math.sqrt(float(betas @ betas) + 0.8**2 + math.pi**2 * 0.9**2 / 3)
    cum = np.cumsum(rng.dirichlet(np.full(len(base), 2.5)))[:-1]
    return QuestionModel(base, False, betas, spread * norm.ppf(cum), key)


def _substantive(model: QuestionModel, person: Person, offered: Sequence[str],
                 rng: np.random.Generator) -> str:
    extras = [c for c in offered if c not in model.base]
    base = [c for c in model.base if c in offered]
    if extras and (not base or rng.random() < _RATES["extra"]):
        return extras[int(rng.integers(len(extras)))]
    country = np.random.default_rng((*model.seed_key, _stable(person.code)))  # the country's own effect
    x, effect = person.traits(), country.normal(0.0, 0.8, len(model.base) if model.categorical else 1)
    if model.categorical:
        utility = model.intercepts + model.betas @ x + effect + 0.9 * rng.gumbel(size=len(model.base))
        ranked = [model.base[i] for i in np.argsort(-utility)]
        return next(c for c in ranked if c in offered)
    latent = float(model.betas @ x + effect[0] + rng.logistic(0.0, 0.9))
    index = min(int(np.searchsorted(model.intercepts, latent)), len(model.base) - 1)
    return model.base[index] if model.base[index] in offered else base[min(index, len(base) - 1)]


def answer(model: QuestionModel, question: Question, person: Person, rng: np.random.Generator) -> Any:
    """One answer value as the real files hold it: mostly int, some str/float, missing codes, None."""
    offered = [code for code, _ in effective_options(question, person.code)[0]]
    roll = rng.random()
    if roll < _RATES["none"]:
        return None
    if roll < _RATES["none"] + _RATES["missing"]:
        candidates = [m for m in MISSING_CODES if str(m) not in offered]
        return int(candidates[int(rng.integers(len(candidates)))])
    code = int(_substantive(model, person, offered, rng))
    style = rng.random()
    if style < _RATES["as_str"]:
        return str(code)
    if style < _RATES["as_str"] + _RATES["as_float"]:
        return float(code)
    return code
