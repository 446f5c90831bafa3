"""A small synthetic non-ISSP study as an SPSS file: the example behind "Your own survey".

Why: the importer's whole path needs a study anyone may redistribute; answers depend on the
persona, so a model that reads it can beat the majority. ``data/example_study/make_example.py``
writes the ``.sav`` with this module and imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

SAV_NAME = "wellbeing_survey.sav"
QUESTIONS_FILE = "questions.txt"
DEFAULT_RESPONDENTS = 300
EXAMPLE_SEED = 20261123
MISSING_LABELS = {-9: "No answer", -8: "Don't know"}
AGREE = {
    1: "Strongly agree",
    2: "Agree",
    3: "Neither agree nor disagree",
    4: "Disagree",
    5: "Strongly disagree",
}

# name -> (label, value labels, weights on (age, education, urban, employed), ordinal?)
QUESTIONS: dict[str, tuple[str, dict[int, str], tuple[float, float, float, float], bool]] = {
    "Q1": (
        "All things considered, how satisfied are you with your life as a whole these days?",
        {1: "Very satisfied", 2: "Fairly satisfied", 3: "Not very satisfied", 4: "Not at all satisfied"},
        (-0.3, -0.6, 0.1, -0.9),
        True,
    ),
    "Q2": (
        "How much do you trust the people in your neighbourhood?",
        {1: "Completely", 2: "Somewhat", 3: "Not very much", 4: "Not at all"},
        (-0.8, -0.2, 0.7, 0.0),
        True,
    ),
    "Q3": (
        "Public transport in this area should receive more public funding.",
        AGREE,
        (0.4, -0.5, -0.8, 0.1),
        True,
    ),
    "Q4": (
        "How safe do you feel walking alone in your area after dark?",
        {1: "Very safe", 2: "Fairly safe", 3: "A bit unsafe", 4: "Very unsafe"},
        (0.6, -0.3, 0.8, -0.2),
        True,
    ),
    "Q5": (
        "In the past twelve months, have you done any unpaid voluntary work?",
        {1: "Yes", 2: "No"},
        (-0.3, -0.8, 0.3, 0.2),
        True,
    ),
    "Q6": (
        "Local councils should spend more on parks and green spaces, even if taxes rise.",
        AGREE,
        (0.3, -0.7, -0.4, 0.2),
        True,
    ),
    "Q7": (
        "Where do you get most of your news about local affairs?",
        {
            1: "Television",
            2: "Newspapers",
            3: "Websites and social media",
            4: "Radio",
            5: "Friends and family",
        },
        (1.0, 0.5, -0.3, 0.2),
        False,
    ),
    "Q8": (
        "How likely is it that you will move away from this area in the next five years?",
        {1: "Very likely", 2: "Fairly likely", 3: "Not very likely", 4: "Not at all likely"},
        (1.1, -0.3, -0.4, 0.2),
        True,
    ),
}
PERSONA = {  # name -> (label, value labels); AGE and RESPID carry no value labels
    "SEX": ("Sex of respondent", {1: "Male", 2: "Female"}),
    "EDUC": (
        "Highest completed education level",
        {
            1: "Primary school or less",
            2: "Lower secondary",
            3: "Upper secondary",
            4: "Post-secondary, non-university",
            5: "University degree",
        },
    ),
    "MAINSTAT": (
        "Main status",
        {1: "In paid work", 2: "Unemployed", 3: "In education", 4: "Retired", 5: "Looking after the home"},
    ),
    "COMMUNITY": (
        "Type of community",
        {1: "A big city", 2: "The suburbs of a big city", 3: "A small town", 4: "A country village or farm"},
    ),
}


@dataclass(frozen=True)
class Study:
    frame: pd.DataFrame
    labels: dict[str, str]
    value_labels: dict[str, dict[int, str]]
    missing_ranges: dict[str, list[int]]


def _persona(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    age = rng.integers(18, 90, n)
    educ = np.clip(np.round(rng.normal(3.6 - (age - 50) / 35, 1.0)), 1, 5)
    status = np.where(
        age >= 66,
        4,
        np.where(
            age <= 23, rng.choice([1, 3], n, p=[0.4, 0.6]), rng.choice([1, 2, 5], n, p=[0.78, 0.08, 0.14])
        ),
    )
    return {
        "RESPID": np.arange(1001, 1001 + n),
        "SEX": rng.choice([1, 2], n),
        "AGE": age,
        "EDUC": educ,
        "MAINSTAT": status,
        "COMMUNITY": rng.choice([1, 2, 3, 4], n, p=[0.35, 0.25, 0.25, 0.15]),
    }


def _answers(
    rng: np.random.Generator,
    persona: dict[str, np.ndarray],
    weights: tuple[float, ...],
    codes: list[int],
    ordinal: bool,
) -> np.ndarray:
    traits = np.stack(
        [
            (persona["AGE"] - 50) / 18,
            (persona["EDUC"] - 3) / 1.2,
            (persona["COMMUNITY"] - 2.5) / 1.1,
            (persona["MAINSTAT"] == 1) - 0.5,
        ]
    )
    latent = np.asarray(weights) @ traits
    if ordinal:
        value = latent + rng.logistic(0, 0.6, latent.size)
        cuts = np.quantile(value, np.linspace(0, 1, len(codes) + 1)[1:-1])
        picked = np.asarray(codes)[np.searchsorted(cuts, value)]
    else:
        utilities = np.outer(latent, np.linspace(-1, 1, len(codes))) + rng.gumbel(
            0, 0.7, (latent.size, len(codes))
        )
        picked = np.asarray(codes)[utilities.argmax(axis=1)]
    gaps = rng.random(latent.size)
    return np.where(gaps < 0.02, -9, np.where(gaps < 0.05, -8, picked))


def build_study(n: int = DEFAULT_RESPONDENTS, seed: int = EXAMPLE_SEED) -> Study:
    """The study's columns, labels, value labels and SPSS user-missing codes."""
    rng = np.random.default_rng(seed)
    persona = _persona(rng, n)
    columns: dict[str, np.ndarray] = {name: values.astype(float) for name, values in persona.items()}
    labels = {
        "RESPID": "Respondent ID number",
        "AGE": "Age of respondent",
        **{name: label for name, (label, _) in PERSONA.items()},
    }
    value_labels: dict[str, dict[int, str]] = {name: dict(vl) for name, (_, vl) in PERSONA.items()}
    for name, (label, options, weights, ordinal) in QUESTIONS.items():
        columns[name] = _answers(rng, persona, weights, list(options), ordinal).astype(float)
        labels[name] = label
        value_labels[name] = {**options, **MISSING_LABELS}
    urban = np.where(persona["COMMUNITY"] <= 2, 0.8, 1.3)
    columns["WTFINAL"] = np.round(
        urban * np.where(persona["AGE"] >= 60, 1.2, 0.95) * rng.uniform(0.85, 1.15, n), 4
    )
    labels["WTFINAL"] = "Final design weight"
    missing = {name: sorted(MISSING_LABELS) for name in QUESTIONS}
    return Study(pd.DataFrame(columns), labels, value_labels, missing)


def write_study(folder: Path, n: int = DEFAULT_RESPONDENTS, seed: int = EXAMPLE_SEED) -> Path:
    """Write ``wellbeing_survey.sav`` (with labels and user-missing codes) and the question list."""
    import pyreadstat

    study = build_study(n, seed)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SAV_NAME
    pyreadstat.write_sav(
        study.frame,
        path,
        column_labels=study.labels,
        variable_value_labels=study.value_labels,
        missing_ranges=study.missing_ranges,
        file_label="Community Wellbeing Survey (synthetic)",
    )
    (folder / QUESTIONS_FILE).write_text("\n".join(QUESTIONS) + "\n", encoding="utf-8")
    return path
