"""Synthetic ISSP respondents and datasets: ``synthesize`` and ``write_dataset``.

Why: the real answer files cannot ship, yet the pipeline needs data on which a persona-aware
predictor beats the majority. Written atomically and byte-reproducibly (same seed, same bytes).
"""

from __future__ import annotations

import re
from collections import Counter, namedtuple
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from socbench.data import synth_model as demo
from socbench.data.loaders import CodebookEntry, QuestionRecord, load_codebook, load_questions
from socbench.data.synth_model import COUNTRY_KEYS, Person, answer, make_person
from socbench.domains import DOMAINS, DomainSpec
from socbench.errors import ConfigError, DataError
from socbench.files import json_bytes, read_json, write_atomic
from socbench.types import Question

SYNTH_VERSION = "1"
INFO_FILE = "synth_info.json"
SAMPLE_DIR = "A_GroundTruth_sampling500"
_MISSING_ATTR = dict(SEX=0.01, AGE=0.02, DEGREE=0.03, WORK=0.01, MAINSTAT=0.02, MARITAL=0.02,
                     RELIGGRP=0.03, ATTEND=0.04, URBRURAL=0.04)
_CODEBOOK_ALIASES = {"DEGREE": ("DEGREE", "EDULEVEL"), "WEIGHT": ("WEIGHT", "WEIGHT_COM")}
_EDULEVEL_CODE = {"5": "6", "6": "7"}  # DEGREE 5/6 are EDULEVEL 6/7 (BA, MA)
_MISSING_LABEL = re.compile(r"^(no answer|refused|don't know|dont know)", re.I)


@dataclass(frozen=True)
class Variable:
    """One attribute: its key and value labels (from the codebook or the default vocabulary)."""

    key: str
    labels: dict[str, str]
    missing: str
    code_map: dict[str, str]

    def label(self, code: int | str) -> str:
        code = self.code_map.get(str(code), str(code))
        return self.labels.get(code, code)


def _variable(name: str, index: dict[str, CodebookEntry]) -> Variable | None:
    """The attribute for ISSP variable ``name``; None when a given codebook lacks it."""
    key, labels, missing = demo.VOCABULARY[name]
    if not index:
        return Variable(key, dict(labels), missing, {})
    entry = next((index[a] for a in _CODEBOOK_ALIASES.get(name, (name,)) if a in index), None)
    if entry is None:
        return None
    code_map = _EDULEVEL_CODE if entry.domain.upper() == "EDULEVEL" else {}
    missing = next((v for v in entry.content.values() if _MISSING_LABEL.match(v)), missing)
    return Variable(entry.meaning, {**labels, **entry.content}, missing, code_map)


def _choose_countries(domain: DomainSpec, questions: Sequence[Question], index: dict[str, CodebookEntry],
                      n: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    """Demo countries, or (with a codebook) 8 from its C_ALPHAN table, favouring override countries."""
    entry = index.get("C_ALPHAN")
    if entry is None:
        chosen = list(demo.DEMO_COUNTRIES[domain.id])
    else:
        table = entry.content
        overridden = sorted({c for q in questions for c in q.special} & set(table))
        first = [overridden[i] for i in rng.permutation(len(overridden))[:3]]
        rest = [c for c in table if c not in first]
        picks = first + [rest[i] for i in rng.permutation(len(rest))[: 8 - len(first)]]
        chosen = [(c, table[c]) for c in table if c in picks]
    chosen = chosen[: max(1, min(len(chosen), n))]
    return [(c, demo.NAME_QUIRKS.get((domain.id, c), name)) for c, name in chosen]


def _national_religion(countries: Sequence[tuple[str, str]],
                       index: dict[str, CodebookEntry]) -> tuple[str, str, dict]:
    """(country code, attribute key, code -> label) of one country-specific religion variable
    (other countries hold "NAP, other countries" there, as in ISSP files)."""
    if not index:
        code, name = countries[0]
        return code, demo.NATIONAL_RELIGION_KEY.format(name=name), {}
    for code, _ in countries:
        entry = index.get(f"{code.split('-')[0]}_RELIG")
        if entry is not None:
            return code, entry.meaning, entry.content
    return "", "", {}


def _denomination(group_label: str, labels: dict[str, str]) -> str:
    """The national label matching a religion group (first word), else the first substantive one."""
    word = group_label.split()[0].lower()
    substantive = [v for k, v in labels.items() if not k.startswith("-") and not _MISSING_LABEL.match(v)
                   and "NAP" not in v]
    if word == "no":
        return next((v for v in substantive if v.lower() in ("no religion", "none")), group_label)
    fallback = substantive[0] if substantive else group_label
    return next((v for v in substantive if word[:5] in v.lower()), fallback)


_Admin = namedtuple("_Admin", "year mode weighted first_case")  # one country's fieldwork


def _admin(countries: Sequence[tuple[str, str]], domain: DomainSpec, vocab: dict[str, Variable],
           rng: np.random.Generator) -> dict[str, _Admin]:
    module_year = int(found.group()) if (found := re.search(r"\d{4}", domain.module)) else 2016
    year_var, mode_var = vocab.get("DATEYR"), vocab.get("MODE")
    years = sorted(int(k) for k in (year_var.labels if year_var else {}) if re.fullmatch(r"(19|20)\d\d", k))
    near = [y for y in years if module_year <= y <= module_year + 1]
    years = near or years or [module_year, module_year + 1]
    modes = [k for k, v in (mode_var.labels if mode_var else {}).items()
             if k.isdigit() and len(k) == 2 and not _MISSING_LABEL.match(v)] or ["10"]
    admin = {}
    for code, _ in countries:
        year = years[int(rng.integers(len(years)))]
        admin[code] = _Admin(year_var.labels.get(str(year), f"Year {year}") if year_var else str(year),
                             mode_var.label(modes[int(rng.integers(len(modes)))]) if mode_var else "",
                             bool(rng.random() < 0.5), int(rng.integers(1, 900)) * 10)
    return admin


def _values(person: Person, number: int, admin: _Admin, vocab: dict[str, Variable],
            rng: np.random.Generator) -> dict[str, str]:
    """ISSP variable -> value label for the country's ``number``-th person (missing-value labels sprinkled
    in)."""
    codes = dict(SEX=person.sex, DEGREE=person.degree, WORK=person.work, MAINSTAT=person.mainstat,
                 MARITAL=person.marital, RELIGGRP=person.religion, ATTEND=person.attend,
                 URBRURAL=person.urbrural)
    values = {name: var.label(codes[name]) for name, var in vocab.items() if name in codes}
    if "AGE" in vocab:
        old = any(re.match(r"^\d+ years old", v) for v in vocab["AGE"].labels.values())
        values["AGE"] = f"{person.age} years old" if old else f"{person.age} years"
    values.update(CASEID=str(admin.first_case + number), DATEYR=admin.year, MODE=admin.mode)
    if "WEIGHT" in vocab:
        values["WEIGHT"] = f"{rng.uniform(0.55, 1.75):.4f}" if admin.weighted else vocab["WEIGHT"].label("1")
    for name, rate in _MISSING_ATTR.items():
        if name in vocab and rng.random() < rate:
            values[name] = vocab[name].missing
    return values


def _attributes(person: Person, values: dict[str, str], vocab: dict[str, Variable], country_key: str,
                national: tuple[str, str, dict]) -> dict[str, str]:
    """Attribute dict in codebook order: ID, country, demographics, administration."""
    attrs: dict[str, str] = {}
    if "CASEID" in vocab:
        attrs[vocab["CASEID"].key] = values["CASEID"]
    attrs[country_key] = person.name
    for name, var in vocab.items():
        attrs.setdefault(var.key, values[name])
        if name == "RELIGGRP" and national[1]:
            own = person.code == national[0]
            nap = next((v for v in national[2].values() if v.startswith("NAP")), demo.NAP_LABEL)
            attrs[national[1]] = _denomination(var.label(person.religion), national[2]) if own else nap
    return attrs


def synthesize(questions: Sequence[Question | dict], domain: DomainSpec, n_respondents: int, seed: int,
               codebook: Sequence[CodebookEntry] | None = None) -> list[dict]:
    """Answer-file records for one domain; ``codebook`` (an ``issp_profile_<Domain>.json``) names the
    attributes and supplies the countries (demo countries without one)."""
    if n_respondents < 1:
        raise ConfigError(f"--respondents must be a positive integer, got {n_respondents}")
    if seed < 0:
        raise ConfigError(f"--seed must be a non-negative integer, got {seed}")
    qs = [q if isinstance(q, Question) else QuestionRecord.model_validate(q).to_question() for q in questions]
    index = {e.domain.upper(): e for e in codebook or ()}
    rng = np.random.default_rng([seed, domain.id])
    countries = _choose_countries(domain, qs, index, n_respondents, rng)
    # country slots, counts differing by at most one, in a seeded random order
    slots = [countries[i % len(countries)] for i in range(n_respondents)]
    people = [make_person(*slots[i], rng) for i in rng.permutation(n_respondents)]
    # ISSP variable name -> Variable, in attribute order (the demo's vocabulary, or the codebook's entries)
    vocab = {name: var for name in demo.VOCABULARY if (var := _variable(name, index)) is not None}
    admin = _admin(countries, domain, vocab, rng)
    national = _national_religion(countries, index)
    country_key = index["C_ALPHAN"].meaning if "C_ALPHAN" in index else COUNTRY_KEYS[domain.id]
    models = [demo.question_model(q, domain, seed) for q in qs]
    seen: Counter[str] = Counter()
    records = []
    for i, person in enumerate(people, 1):
        seen[person.code] += 1
        values = _values(person, seen[person.code], admin[person.code], vocab, rng)
        records.append({"person_id": int(f"{domain.id}{i:07d}"),
                        "attributes": _attributes(person, values, vocab, country_key, national),
                        "questions_answer": {q.id: answer(m, q, person, rng) for q, m in zip(qs, models)}})
    return records


def read_questions(path: Path) -> tuple[Question, ...]:
    """Questions of an ``issp_qa_*.json`` file (via the loader); codes must be integer strings."""
    questions = load_questions(path)
    for q in questions:
        for code in [*q.options, *(c for o in q.special.values() for c in o)]:
            if not code.lstrip("-").isdigit():
                raise DataError(f"{path}: question {q.id}: option code {code!r} is not an integer")
    return questions


def _check_dir(path: Path | str | None, flag: str) -> Path | None:
    if path is None or str(path) == "":
        return None
    if not Path(path).is_dir():
        raise DataError(f"{flag} {path}: no such directory")
    return Path(path)


def _domain_files(domain: DomainSpec, qa: Path | None, books: Path | None, n_respondents: int,
                  seed: int) -> tuple[bytes, list[dict]]:
    """(question file bytes, answer records) of one domain; the user's question file is kept as is."""
    if qa is not None:
        questions: Sequence[Question | dict] = read_questions(qa / domain.qa_file)
        qa_bytes = (qa / domain.qa_file).read_bytes()
    else:
        questions = demo.demo_question_set(domain.slug)
        qa_bytes = json_bytes(questions, indent=1)
    codebook = load_codebook(books, domain) if books else None  # issp_profile_<Domain>.json, any case
    if books and codebook is None:
        raise DataError(f"--codebook_dir {books}: no {domain.profile_file} (any case) for domain {domain.id}")
    return qa_bytes, synthesize(questions, domain, n_respondents, seed, codebook)


def write_dataset(out_dir: Path | str, domains: Iterable[DomainSpec], n_respondents: int, seed: int,
                  qa_dir: Path | str | None = None, codebook_dir: Path | str | None = None) -> dict:
    """Write ``q&a/``, ``A_GroundTruth_sampling500/`` and ``synth_info.json`` (returned); every domain is
    generated before anything is written, so a bad input leaves ``out_dir`` untouched."""
    out = Path(out_dir)
    qa = _check_dir(qa_dir, "--qa_dir")
    books = _check_dir(codebook_dir, "--codebook_dir")
    generated = [(domain, *_domain_files(domain, qa, books, n_respondents, seed)) for domain in domains]
    info: dict[str, Any] = {"note": "SYNTHETIC respondents, not ISSP data",
                            "generator": "socbench data synth", "version": SYNTH_VERSION, "seed": seed,
                            "respondents_per_domain": n_respondents, "questions": str(qa) if qa else "demo",
                            "codebooks": str(books) if books else None, "domains": {}}
    for domain, qa_bytes, records in generated:
        write_atomic(out / "q&a" / domain.qa_file, qa_bytes)
        write_atomic(out / SAMPLE_DIR / domain.answer_name, json_bytes(records, indent=1))
        key = COUNTRY_KEYS[domain.id].lower()
        counts = sorted(Counter(next((v for k, v in r["attributes"].items() if k.lower() == key), "?")
                                for r in records).items())
        info["domains"][domain.slug] = {"respondents": len(records), "countries": dict(counts)}
    info["domains"] = _merged_domains(out / INFO_FILE, info)
    write_atomic(out / INFO_FILE, json_bytes(info, indent=1))
    return info


def _merged_domains(path: Path, info: dict) -> dict:
    """Keep other domains' entries of an earlier run with the same settings; order by domain id."""
    merged = dict(info["domains"])
    old: dict = {}
    with suppress(DataError):  # none yet, or unreadable: nothing to keep
        old = read_json(path)
    if all(old.get(k) == info[k] for k in ("version", "seed", "respondents_per_domain", "questions",
                                           "codebooks")):
        merged = {**old.get("domains", {}), **merged}
    order = {d.slug: d.id for d in DOMAINS}
    return {slug: merged[slug] for slug in sorted(merged, key=lambda s: order.get(s, 99))}
