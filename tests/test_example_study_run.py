"""Done-when: a non-ISSP ``.sav`` -> ``socbench data import`` -> one ``socbench issp`` run, and every
headline number equals an independent computation from the same ``.sav`` and the model's answers.

The study is the shipped example (one country, SPSS user-missing codes, a design weight),
written afresh by its code; nothing is written by hand. The independent side reads the
``.sav`` with pyreadstat and recomputes with pandas/scipy: the scoreable items (declared
missing codes and blanks left out), accuracy, the uniform and leave-one-out majority
baselines (plain and weighted) and the per-question distribution scores (plain and weighted).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import wasserstein_distance

from socbench.cli import main
from socbench.data.example_study import QUESTIONS_FILE, write_study
from support.records import read_detailed

pytestmark = pytest.mark.slow  # runs the study's flow on a Prefect API
ID_BASE = 10**7  # person_id = domain id (1) x 10^7 + row number (documented in docs/own-survey.md)


@pytest.fixture(scope="module")
def run(api_url: str, engine_pool, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("wellbeing")
    sav = write_study(folder)
    data_dir, results = folder / "Dataset_all", folder / "results"
    assert (
        main(
            [
                "data",
                "import",
                str(sav),
                "--out",
                str(data_dir),
                "--questions",
                f"@{folder / QUESTIONS_FILE}",
                "--weight",
                "WTFINAL",
                "--sizes",
                "500",
            ]
        )
        == 0
    )
    with engine_pool.installed():  # the session's vLLM engine for the tiny model
        code = main(["issp", "--data_dir", str(data_dir), "--model", str(tiny_model),
                     "--engine", '{"dtype": "float32"}', "--output_dir", str(results)])
    assert code == 0
    (detailed,) = results.rglob("*_detailed.json")
    return {
        "sav": sav,
        "detailed": read_detailed(detailed),
        "metrics": json.loads(detailed.with_name(detailed.name.replace("_detailed", "_metrics")).read_text()),
    }


def _independent_items(sav: Path, detailed: dict) -> pd.DataFrame:
    """One row per scoreable (respondent, question) of the .sav, with the model's answer."""
    frame, meta = pyreadstat.read_sav(sav, user_missing=True)
    answers = {(d["person_id"], d["question_id"]): d for d in detailed["details"]}
    rows = []
    for question, ranges in meta.missing_ranges.items():
        missing = {r["lo"] for r in ranges}
        options = [code for code in sorted(meta.variable_value_labels[question]) if code not in missing]
        for index, value in frame[question].items():
            if pd.isna(value) or value in missing:
                continue
            given = answers.get((ID_BASE + index + 1, question), {})
            rows.append(
                {
                    "pid": ID_BASE + index + 1,
                    "q": question,
                    "true": str(int(value)),
                    "k": len(options),
                    "options": [str(int(c)) for c in options],
                    "w": frame.loc[index, "WTFINAL"],
                    "llm": given.get("llm_answer") if given.get("parse_error") is None else None,
                }
            )
    return pd.DataFrame(rows)


def _loo_majority(items: pd.DataFrame, weighted: bool) -> float:
    scores = []
    for _, group in items.groupby("q"):
        weights = group["w"] if weighted else pd.Series(1.0, index=group.index)
        totals = weights.groupby(group["true"]).sum()
        for index, row in group.iterrows():
            others = totals.copy()
            others[row["true"]] -= weights[index]
            if len(group) == 1 or others.sum() <= 1e-12:
                scores.append(1 / row["k"])
                continue
            top = others[np.isclose(others, others.max())].index
            scores.append(1 / len(top) if row["true"] in top else 0.0)
    return float(np.mean(scores))


def _distribution(items: pd.DataFrame, weighted: bool) -> dict[str, float]:
    js, ws = [], []
    for _, group in items.groupby("q"):
        codes = group["options"].iloc[0]
        w = group["w"] if weighted else pd.Series(1.0, index=group.index)
        human = np.array([w[group["true"] == c].sum() for c in codes]) / w.sum()
        answered = group[group["llm"].isin(codes)]
        wa = w[answered.index]
        model = np.array([wa[answered["llm"] == c].sum() for c in codes]) / wa.sum()
        positions = np.arange(len(codes))
        ws.append(1 - wasserstein_distance(positions, positions, model, human) / (len(codes) - 1))
        js.append(1 - jensenshannon(model, human, base=2))
    return {"wasserstein": float(np.mean(ws)), "js": float(np.mean(js))}


def test_metrics_equal_an_independent_computation_from_the_sav(run: dict) -> None:
    detailed, metrics = run["detailed"], run["metrics"]
    items = _independent_items(run["sav"], detailed)
    assert detailed["domain"] == "WellbeingSurvey" and metrics["domain_id"] == 1
    assert detailed["total_count"] == metrics["total_count"] == len(items) == len(detailed["details"])
    assert detailed["excluded_count"] == 300 * 8 - len(items)
    correct = int((items["llm"] == items["true"]).sum())
    assert detailed["correct_count"] == metrics["correct_count"] == correct
    assert detailed["accuracy"] == pytest.approx(correct / len(items)) == metrics["accuracy"]
    baselines = detailed["baselines"]
    assert baselines["uniform"] == pytest.approx(float(np.mean(1 / items["k"])))
    assert baselines["majority_question"] == pytest.approx(_loo_majority(items, weighted=False))
    assert baselines["majority_question_weighted"] == pytest.approx(_loo_majority(items, weighted=True))
    assert baselines["majority_country_question"] == pytest.approx(baselines["majority_question"])
    for level in ("question", "country_question"):  # one country: both levels are per question
        scores = detailed["distribution"][level]
        for weighted in (False, True):
            expected = _distribution(items, weighted)
            prefix = "weighted_" if weighted else ""
            assert scores[f"{prefix}wasserstein"] == pytest.approx(expected["wasserstein"])
            assert scores[f"{prefix}js"] == pytest.approx(expected["js"])
    assert detailed["per_country"] == {} and metrics["unmapped_countries"] == {}
