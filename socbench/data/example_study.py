"""A small synthetic non-ISSP study as an SPSS file: the example behind "Your own survey".

Why: the importer's whole path needs a study anyone may redistribute; answers depend on the
persona, so a model that reads it can beat the majority. ``data/example_study/make_example.py``
writes the ``.sav`` with this module and imports it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

SAV_NAME = "wellbeing_survey.sav"
QUESTIONS_FILE = "questions.txt"
DEFAULT_RESPONDENTS = 300
EXAMPLE_SEED = 20261123
MISSING_LABELS = {-9: "No answer", -8: "Don't know"}
_TABLES = json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8"))
# name -> (label, value labels, weights on (age, education, urban, employed), ordinal?)
QUESTIONS: dict[str, tuple[str, dict[int, str], tuple[float, float, float, float], bool]] = {
    name: (q["label"], {int(k): v for k, v in q["options"].items()}, tuple(q["weights"]), q["ordinal"])
    for name, q in _TABLES["questions"].items()}
PERSONA = {  # name -> (label, value labels); AGE and RESPID carry no value labels
    name: (v["label"], {int(k): label for k, label in v["options"].items()})
    for name, v in _TABLES["persona"].items()}


def _persona(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    age = rng.integers(18, 90, n)
    educ = np.clip(np.round(rng.normal(3.6 - (age - 50) / 35, 1.0)), 1, 5)
    young, adult = rng.choice([1, 3], n, p=[0.4, 0.6]), rng.choice([1, 2, 5], n, p=[0.78, 0.08, 0.14])
    status = np.where(age >= 66, 4, np.where(age <= 23, young, adult))
    return {"RESPID": np.arange(1001, 1001 + n), "SEX": rng.choice([1, 2], n), "AGE": age, "EDUC": educ,
            "MAINSTAT": status, "COMMUNITY": rng.choice([1, 2, 3, 4], n, p=[0.35, 0.25, 0.25, 0.15])}


def _answers(rng: np.random.Generator, persona: dict[str, np.ndarray], weights: tuple[float, ...],
             codes: list[int], ordinal: bool) -> np.ndarray:
    traits = np.stack([(persona["AGE"] - 50) / 18, (persona["EDUC"] - 3) / 1.2,
                       (persona["COMMUNITY"] - 2.5) / 1.1, (persona["MAINSTAT"] == 1) - 0.5])
    latent = np.asarray(weights) @ traits
    if ordinal:
        value = latent + rng.logistic(0, 0.6, latent.size)
        cuts = np.quantile(value, np.linspace(0, 1, len(codes) + 1)[1:-1])
        picked = np.asarray(codes)[np.searchsorted(cuts, value)]
    else:
        noise = rng.gumbel(0, 0.7, (latent.size, len(codes)))
        utilities = np.outer(latent, np.linspace(-1, 1, len(codes))) + noise
        picked = np.asarray(codes)[utilities.argmax(axis=1)]
    gaps = rng.random(latent.size)
    return np.where(gaps < 0.02, -9, np.where(gaps < 0.05, -8, picked))


def write_study(folder: Path, n: int = DEFAULT_RESPONDENTS, seed: int = EXAMPLE_SEED) -> Path:
    """Write ``wellbeing_survey.sav`` (the study's columns, labels, value labels and SPSS user-missing
    codes) and the question list."""
    import pyreadstat

    rng = np.random.default_rng(seed)
    persona = _persona(rng, n)
    columns: dict[str, np.ndarray] = {name: values.astype(float) for name, values in persona.items()}
    labels = {"RESPID": "Respondent ID number", "AGE": "Age of respondent",
              **{name: label for name, (label, _) in PERSONA.items()}}
    value_labels: dict[str, dict[int, str]] = {name: dict(vl) for name, (_, vl) in PERSONA.items()}
    for name, (label, options, weights, ordinal) in QUESTIONS.items():
        columns[name] = _answers(rng, persona, weights, list(options), ordinal).astype(float)
        labels[name] = label
        value_labels[name] = {**options, **MISSING_LABELS}
    urban = np.where(persona["COMMUNITY"] <= 2, 0.8, 1.3)
    older = np.where(persona["AGE"] >= 60, 1.2, 0.95)
    columns["WTFINAL"] = np.round(urban * older * rng.uniform(0.85, 1.15, n), 4)
    labels["WTFINAL"] = "Final design weight"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SAV_NAME
    pyreadstat.write_sav(pd.DataFrame(columns), path, column_labels=labels,
                         variable_value_labels=value_labels,
                         missing_ranges={name: sorted(MISSING_LABELS) for name in QUESTIONS},
                         file_label="Community Wellbeing Survey (synthetic)")
    (folder / QUESTIONS_FILE).write_text("\n".join(QUESTIONS) + "\n", encoding="utf-8")
    return path
