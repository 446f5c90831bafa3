"""Numeric questions (issue 45) without a run: declared at import and in the manifest, asked with their
range, read as numbers, scored by error against a hand computation (the round trip through a file R's
haven wrote, a run, the estimates and the export is tests/test_numeric_e2e.py)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from scipy.stats import wasserstein_distance

from socbench.data.import_request import ImportRequest
from socbench.data.loaders import apply_numeric, load_questions
from socbench.data.options import OUT_OF_RANGE, build_items
from socbench.draws import DRAW_MARK, reduce_draws
from socbench.engines._chat import answer_schema, constraint_regex
from socbench.errors import DataError
from socbench.extract import NOT_A_NUMBER, extract
from socbench.metrics.numeric import numeric_scores
from socbench.prompts.persona import PromptSettings, build_prompt
from socbench.report.markdown import domain_markdown
from socbench.scoring import score_item, summarize_domain
from socbench.types import DomainData, EngineResult, Extraction, Item, Question, Respondent, ScoredItem
from support.cli import socbench

SPAN = (0.0, 100.0)
THERM = Question("therm", "Feeling thermometer", {}, missing={"-9": "Refused"}, numeric=SPAN)


def _person(pid: int, answer: str | None, sex: str = "Male") -> Respondent:
    return Respondent(pid, None, None, {"Sex": sex}, {"therm": answer})


def test_items_keep_numbers_in_range_and_exclude_missing_and_out_of_range() -> None:
    people = (_person(1, "37.5"), _person(2, "-9"), _person(3, "150"), _person(4, None))
    items = build_items(DomainData(1, "D", (THERM,), people, {}, "x"))
    assert [i.excluded_reason for i in items] == [None, "missing code -9 (Refused)", OUT_OF_RANGE,
                                                  "system-missing (no answer recorded)"]
    assert items[0].options == () and items[0].numeric == SPAN


def test_the_prompt_asks_for_a_number_in_range_and_the_schema_bounds_it() -> None:
    item = build_items(DomainData(1, "D", (THERM,), (_person(1, "40"),), {}, "x"))[0]
    request = build_prompt(item, _person(1, "40"), THERM, PromptSettings(structured=True))
    assert "Answer with a number from 0 to 100." in request.messages[1].content and request.structured
    assert request.numeric == SPAN and request.mode == "generate"
    schema = answer_schema(request)["properties"]["answer"]
    assert schema == {"type": "number", "minimum": 0.0, "maximum": 100.0}
    assert re.fullmatch(constraint_regex(request), '{"answer": 37.5}')
    assert request.key != replace(request, numeric=None).key  # the range is part of the cache key
    for mode in ("generate", "verbalized"):  # the persona is asked for a number, never to choose an option
        system = build_prompt(item, _person(1, "40"), THERM, PromptSettings(mode=mode)).messages[0].content
        assert "number they would give" in system and "offered options" not in system, mode
        assert "Personal information:" in system


def test_a_reply_is_read_as_a_number_and_a_bad_one_is_a_counted_failure() -> None:
    item = Item(1, "therm", None, (), "40", False, numeric=SPAN)
    request = build_prompt(item, _person(1, "40"), THERM, PromptSettings())
    good = extract(request, EngineResult(request.key, text='{"answer": 42}'))
    bad = extract(request, EngineResult(request.key, text='{"answer": "about forty"}'))
    assert (good.code, good.failure) == ("42", None) and (bad.code, bad.failure) == (None, NOT_A_NUMBER)
    assert score_item(item, good).parse_error is None and score_item(item, bad).parse_error == NOT_A_NUMBER
    drawn = replace(good, distribution={"42": 2 / 3, "40": 1 / 3}, draws=("42", "40", "42"))  # --samples 3
    assert score_item(item, drawn).distribution is None and score_item(item, drawn).draws == drawn.draws


def test_a_numeric_item_s_draws_reduce_to_the_median_draw() -> None:
    """--samples K: a number's answer is its median draw (the modal code of 40, 10, 90, 10, 50 is 10)."""
    numbers = ["40", "10", "90", "10", "50"]
    drawn = {f"1:therm{DRAW_MARK}{k}": Extraction(code) for k, code in enumerate(numbers)}
    drawn |= {f"1:q{DRAW_MARK}{k}": Extraction(code) for k, code in enumerate("12222")}
    reduced, record = reduce_draws(drawn, 5, 0, numeric={"1:therm"})
    assert reduced["1:therm"].code == "40" and reduced["1:therm"].draws == tuple(numbers)
    assert reduced["1:q"].code == "2" and record["draw_items"] == 1 and record["draw_agreement"] == 0.8
    drawn[f"1:therm{DRAW_MARK}4"] = Extraction("5")
    assert reduce_draws(drawn, 5, 0, numeric={"1:therm"})[0]["1:therm"].code == "10"  # 5 10 10 40 90


def _scored(truth: list[float], model: list[float | None], groups: list[str]) -> list[ScoredItem]:
    return [ScoredItem(i, "therm", g, str(t), None if m is None else str(m), False,
                       None if m is not None else NOT_A_NUMBER, False, (), numeric=SPAN)
            for i, (t, m, g) in enumerate(zip(truth, model, groups))]


def test_scores_equal_a_hand_computation_weighted_and_with_a_failure() -> None:
    truth, model = [10.0, 20.0, 60.0, 80.0, 90.0], [30.0, 30.0, None, 70.0, 50.0]
    groups = ["A", "A", "A", "B", "B"]
    weights = {0: 1.0, 1: 2.0, 2: 1.0, 3: 0.5, 4: 1.5}
    got = numeric_scores(_scored(truth, model, groups), weights=weights)["questions"]["therm"]
    on = [0, 1, 3, 4]  # the failure is counted apart, not scored as an error
    t, m, w = np.array(truth), np.array([30.0, 30.0, 0.0, 70.0, 50.0]), np.array(list(weights.values()))
    assert got["answered"] == 4 and got["mae"] == pytest.approx(np.abs(m[on] - t[on]).mean())
    assert got["wasserstein"] == pytest.approx(wasserstein_distance(m[on], t, w[on], w) / 100)
    medians = np.array([20.0, 20.0, 20.0, 85.0, 85.0])  # each group's median answer
    assert got["baselines"]["median_group"] == pytest.approx(np.abs(medians[on] - t[on]).mean())
    assert got["people_mean"] == pytest.approx(np.average(t, weights=w))


def test_a_domain_of_numeric_questions_only_scores_without_option_metrics() -> None:
    truth = [float(i % 7) for i in range(30)]
    scored = _scored(truth, [3.0] * 30, ["A"] * 30)
    items = [Item(s.person_id, "therm", None, (), s.true_code, False, numeric=SPAN) for s in scored]
    sexes = {i: {"Sex": "Male" if i % 2 else "Female"} for i in range(30)}
    result = summarize_domain(1, "D", "m", items, scored, {}, 30, attributes=sexes)
    assert np.isnan(result.metrics["accuracy"]) and result.total_items == 30
    assert result.numeric["mae"] == pytest.approx(np.abs(3 - np.array(truth)).mean())
    assert set(result.numeric["baselines"]) == {"median_group", "demographic"}
    assert re.search(r"\| numeric therm: MAE, W1 / range .*\| 1\.7667, 0\.0177 \(", domain_markdown(result))


def test_the_manifest_declares_a_numeric_question(tmp_path: Path) -> None:
    path = tmp_path / "qa.json"
    path.write_text(json.dumps([{"question_id": "Kids", "question": "Children", "answer": {}},
                                {"question_id": "q1", "question": "Trust", "answer": {"1": "Yes"}}]))
    with pytest.raises(DataError, match="needs at least one option"):
        load_questions(path)
    path.write_text(json.dumps([{"question_id": "Kids", "question": "Children", "answer": {"0": "None"}}]))
    assert apply_numeric(path, load_questions(path), {"kids": (0, 12)})[0].numeric == (0, 12)
    with pytest.raises(DataError, match="numeric names hours, no question"):
        apply_numeric(path, load_questions(path), {"hours": (0, 80)})


def test_numeric_flag_values() -> None:
    request = ImportRequest(source=Path("x.sav"), out=Path("o"), numeric="hours,therm=0:100")
    assert request.numeric == (("hours", None), ("therm", (0.0, 100.0)))
    for bad in ("therm=100:0", "therm=a:b", "=0:1"):
        with pytest.raises(ValueError):
            ImportRequest(source=Path("x.sav"), out=Path("o"), numeric=bad)


def test_an_import_of_a_numeric_item_without_numbers_is_one_line(tmp_path: Path) -> None:
    """A numeric item whose data hold one number (and missing codes) has no range to ask in."""
    frame = pd.DataFrame({"id": [1.0, 2.0, 3.0], "kids": [2.0, 2.0, -9.0], "q": [1.0, 2.0, 1.0]})
    pyreadstat.write_sav(frame, str(tmp_path / "s.sav"), variable_value_labels={"q": {1: "Yes", 2: "No"}},
                         missing_ranges={"kids": [-9]})
    done = socbench("data", "import", str(tmp_path / "s.sav"), "--out", str(tmp_path / "d"), "--numeric",
                    "kids", code=2)
    assert "kids: --numeric: the data hold 1 distinct number(s)" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    socbench("data", "import", str(tmp_path / "s.sav"), "--out", str(tmp_path / "d"), "--numeric",
             "kids=0:20", "--questions", "q")
    qa = tmp_path / "d" / "q&a" / "issp_qa_s.json"
    question = json.loads(qa.read_text())[1]
    assert question["numeric"] == [0, 20] and question["missing"] == {"-9": "user-missing"}
    socbench("data", "import", str(tmp_path / "s.sav"), "--out", str(tmp_path / "e"), "--qa", str(qa),
             "--roles", "country=none")
    again = json.loads((tmp_path / "e" / "q&a" / "issp_qa_s.json").read_text())
    assert again == json.loads(qa.read_text())  # a question set's numeric question imports as declared
