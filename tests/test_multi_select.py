"""Multi-select questions (issue 45): a block of dichotomies written by R's haven (user-missing 9 per
variable), declared with ``--multi``, asked once per respondent ("select all that apply"), scored per
option (shares, F1) and per respondent (Jaccard), estimated, and exported back as the block it came from.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from fixtures.cardata import read_with_haven, unavailable
from socbench.data.import_request import ImportRequest
from socbench.data.question_labels import _stem
from socbench.multi_select import Member, chosen, extract_with_sets, set_rows, set_scores
from socbench.types import EngineResult, MultiOption, PromptRequest, Question, ScoredItem
from support.cli import socbench
from support.fake_openai import FakeOpenAIServer

WRITE = r"""
library(haven)
n <- 120
sex <- rep(c(1, 2), length.out = n)
tv <- ifelse(sex == 2, 1, 0); tv[c(5, 17)] <- 9
radio <- ifelse(sex == 1, 1, 0); radio[8] <- 9
yn <- c("Not mentioned" = 0, "Mentioned" = 1, "No answer" = 9)
d <- data.frame(id = seq_len(n))
d$sex <- labelled(sex, c(Male = 1, Female = 2), label = "Sex of respondent")
d$years <- structure(seq_len(n), label = "Years at this address")  # every persona differs
d$news_tv <- labelled_spss(tv, yn, na_values = 9, label = "News source: Television")
d$news_radio <- labelled_spss(radio, yn, na_values = 9, label = "News source: Radio")
d$news_web <- labelled_spss(rep(c(0, 1, 1, 0, 1), length.out = n), yn, na_values = 9,
                            label = "News source: Internet")
d$trust <- labelled_spss(rep(c(1, 2, 3, 2), length.out = n), c(High = 1, Some = 2, Low = 3, "No answer" = 9),
                         na_values = 9, label = "Trust in the news")
write_sav(d, commandArgs(trailingOnly = TRUE)[1])
"""
BLOCK = ("news_tv", "news_radio", "news_web")


def _option(label: str) -> MultiOption:
    return MultiOption("NEWS", "News source", label, "1")


def test_a_reply_names_its_options_by_text_or_id() -> None:
    options = (("1", "Television"), ("2", "Radio"), ("3", "Internet"))
    assert chosen('{"answer": ["television", "3"]}', options) == ({"1", "3"}, None)
    assert chosen('Sure: ["Radio"]', options) == ({"2"}, None)
    assert chosen('{"answer": []}', options) == (set(), None)
    assert chosen('{"answer": ["Newspaper"]}', options)[1] is not None  # not an option: the set failed
    assert chosen("I read the news", options)[1] is not None


def test_labels_share_a_stem_the_question_and_options_are_split_at() -> None:
    assert _stem(["News: Television", "News: Radio"]) == ("News", ["Television", "Radio"])
    assert _stem(["Which? TV", "Which? Radio"]) == ("Which?", ["TV", "Radio"])
    assert _stem(["Television", "Radio"]) == ("", ["Television", "Radio"])


def test_multi_flag_parses_sets_and_file_sets() -> None:
    request = ImportRequest(source="x.sav", out="o", multi="NEWS=a,b,c; $HELP")
    assert request.multi == (("NEWS", ("a", "b", "c")), ("HELP", ()))
    with pytest.raises(ValueError, match="two variables or more"):
        ImportRequest(source="x.sav", out="o", multi="NEWS=a")


def test_set_scores_by_hand() -> None:
    """Two respondents: shares, F1 and Jaccard computed by hand; an unreadable reply's Jaccard is 0."""
    questions = [Question(v, v, {"0": "no", "1": "yes"}, multi=_option(v.upper())) for v in ("tv", "radio")]
    rows = [(1, "tv", "1", "1"), (1, "radio", "0", "1"), (2, "tv", "1", "0"), (2, "radio", "1", "1"),
            (3, "tv", "0", None), (3, "radio", "1", None)]
    items = [ScoredItem(p, q, None, t, m, t == m, None if m else "no JSON answer found", False, ("0", "1"))
             for p, q, t, m in rows]
    scores = set_scores(questions, items)
    assert scores["multi NEWS: TV share (people)"] == pytest.approx(2 / 3)
    assert scores["multi NEWS: TV share (model)"] == pytest.approx(1 / 3)
    assert scores["multi NEWS: RADIO share (model)"] == pytest.approx(2 / 3)
    assert scores["multi NEWS: TV F1"] == pytest.approx(2 * 1 / (2 * 1 + 0 + 1))  # tp 1, fp 0, fn 1
    # respondent 1: {tv} vs {tv, radio} = 1/2; 2: {tv, radio} vs {radio} = 1/2; 3: unreadable = 0
    assert scores["multi NEWS: Jaccard (per respondent)"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    rows = set_rows({"accuracy": 0.5, **scores})  # the report's table: an option a row, then the Jaccard
    assert rows[0] == ["NEWS", "TV", pytest.approx(1 / 3), pytest.approx(2 / 3), pytest.approx(2 / 3)]
    assert rows[-1] == ["NEWS", "Jaccard (per respondent)", None, None, pytest.approx(1 / 3)]
    assert len(rows) == 3


def _planted(prompt: str, codes: tuple[str, ...]) -> str:
    """Women name Television, men Radio, in one list; a single question gets its first option."""
    if "select all that apply" not in prompt:
        return json.dumps({"answer": codes[0]})
    return json.dumps({"answer": ["Television"] if '"Female"' in prompt else ["Radio"]})


@pytest.fixture(scope="module")
def multi_run(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    why = unavailable()
    if why:
        pytest.skip(why)
    folder = tmp_path_factory.mktemp("multi")
    source, script = folder / "news.sav", folder / "news.R"
    script.write_text(WRITE, encoding="utf-8")
    written = subprocess.run(["Rscript", str(script), str(source)], capture_output=True, text=True,
                             timeout=300)
    assert written.returncode == 0, written.stderr
    data = folder / "data"
    socbench("data", "import", str(source), "--out", str(data), "--questions", "trust", "--multi",
             f"NEWS={','.join(BLOCK)}", "--roles", "respondent_id=id,sex=sex", "--sizes", "all")
    with FakeOpenAIServer(model="planted", answer=_planted) as server:
        socbench("issp", "--api_type", "config", "--api_base", server.url, "--model", "planted",
                 "--data_dir", str(data), "--dataset_size", "all", "--interview_count", "all",
                 "--output_dir", str(folder / "runs"))
    run = folder / "runs" / "planted"
    estimate = socbench("estimate", str(run), "--fraction", "0.5", "--repeats", "5")
    socbench("export", str(run), "--wide", "--format", "sav")
    return {"folder": folder, "source": source, "data": data, "run": run,
            "estimate": estimate.stdout}


@pytest.mark.slow  # runs Rscript, a flow against the fake server, estimate and export
def test_a_block_is_asked_once_and_scored_per_option_and_respondent(multi_run: dict) -> None:
    record = json.loads((multi_run["run"] / "News_metrics.json").read_text(encoding="utf-8"))
    assert record["usage"]["requests"] == 120 + 120  # trust, and the block once a respondent (not 3 times)
    imported = next(multi_run["data"].glob("import_report_*.md")).read_text(encoding="utf-8")
    sets = imported[imported.index("## Multi-select sets (1"):]  # where the user looks
    assert "- NEWS: " in sets and all(f"{name} = " in sets for name in BLOCK), sets
    found = record["metrics"]
    women = np.arange(120) % 2 == 1  # R's rep(c(1, 2)): every second respondent
    tv = women.astype(int)
    tv[[4, 16]] = 9  # user-missing: not scored
    kept = tv != 9
    assert found["multi NEWS: Television share (people)"] == pytest.approx(tv[kept].mean())
    assert found["multi NEWS: Television share (model)"] == pytest.approx(women[kept].mean())
    assert found["multi NEWS: Television F1"] == pytest.approx(1.0)
    assert found["multi NEWS: Internet share (model)"] == 0.0
    assert found["multi NEWS: Internet F1"] == 0.0
    web = [[0, 1, 1, 0, 1][i % 5] for i in range(120)]
    page = (multi_run["folder"] / "runs" / "report" / "report.html").read_text(encoding="utf-8")
    assert "Multi-select questions" in page and "Jaccard (per respondent)" in page and "Television" in page
    # planted {own medium} against the true {own medium, Internet if named}: the missing 9s fall on the
    # medium a respondent did not name, so each respondent's Jaccard is 1 / (1 + web)
    assert found["multi NEWS: Jaccard (per respondent)"] == pytest.approx(sum(1 / (1 + w) for w in web) / 120)


@pytest.mark.slow  # runs Rscript, a flow against the fake server, estimate and export
def test_a_block_is_estimated_and_exported_back_as_its_dichotomies(multi_run: dict) -> None:
    assert all(name in multi_run["estimate"] for name in BLOCK), multi_run["estimate"][-2000:]
    exported = next((multi_run["run"] / "export").glob("*.sav"))
    reference, _ = read_with_haven(multi_run["folder"], [multi_run["source"], exported])
    source, back = reference.files[multi_run["source"].name], reference.files[exported.name]
    for name in BLOCK:
        assert back[name].label == source[name].label
        assert back[name].value_labels == source[name].value_labels
        assert back[name].na_values == source[name].na_values == ["9"]


def _with_mr_set(path: Path, definition: bytes) -> None:
    """Add an SPSS multiple-response set record (type 7, subtype 7) before the dictionary's end, as SPSS
    writes it: pyreadstat and haven read such sets but write none."""
    raw = path.read_bytes()
    end = raw.find(struct.pack("<ii", 999, 0))
    path.write_bytes(raw[:end] + struct.pack("<iiii", 7, 7, 1, len(definition)) + definition + raw[end:])


def test_a_sav_multiple_response_set_is_imported_with_its_counted_value(tmp_path: Path) -> None:
    """``--multi HELP`` alone: the file's dichotomy set, its label the question, its counted value (2 here,
    not 1) the selected code; the variables keep their own missing codes."""
    frame = pd.DataFrame({"sex": [1.0, 2.0] * 20, "fam": [2.0, 1.0, 2.0, 9.0] * 10, "fri": [1.0, 2.0] * 20})
    source, out = tmp_path / "help.sav", tmp_path / "data"
    yes_no = {1: "No", 2: "Yes", 9: "No answer"}
    pyreadstat.write_sav(frame, source, column_labels={"sex": "Sex", "fam": "Family", "fri": "Friends"},
                         variable_value_labels={"sex": {1: "Male", 2: "Female"}, "fam": yes_no,
                                                "fri": yes_no},
                         missing_ranges={"fam": [9], "fri": [9]})
    _with_mr_set(source, b"$HELP=D1 2 14 Who helped you fam fri\n")
    socbench("data", "import", str(source), "--out", str(out), "--multi", "HELP", "--sizes", "all")
    records = {r["question_id"]: r for r in json.loads((out / "q&a" / "issp_qa_help.json").read_text())}
    assert set(records) == {"fam", "fri"}
    assert records["fam"]["multi"] == {"set": "HELP", "question": "Who helped you", "label": "Family",
                                       "selected": "2"}
    assert records["fam"]["missing"] == {"9": "No answer"}
    assert records["fam"]["answer"] == {"1": "No", "2": "Yes"}
    bad = socbench("data", "import", str(source), "--out", str(tmp_path / "x"), "--multi", "NEWS", code=2)
    assert "no multiple-response set NEWS (its sets: HELP)" in bad.stderr
    assert len(bad.stderr.splitlines()) == 1


def test_an_option_nobody_selects_and_the_model_never_does_has_f1_1() -> None:
    """Agreement on an option nobody ticks is perfect, not 0 (scikit-learn's zero_division)."""
    questions = [Question("x", "x", {"0": "no", "1": "yes"}, multi=_option("X"))]
    items = [ScoredItem(p, "x", None, "0", "0", True, None, False, ("0", "1")) for p in (1, 2)]
    assert set_scores(questions, items)["multi NEWS: X F1"] == 1.0


def test_a_set_s_reply_is_constrained_to_a_list_of_its_option_texts() -> None:
    """Structured output (vLLM's regex, a server's JSON schema): a list of the options' texts, none to all;
    a single question's constraint and cache key stay as they were."""
    from socbench.engines._chat import answer_regex, answer_schema, constraint_regex

    options = (("1", "Television"), ("2", 'The "Times"'), ("3", "TV"))
    single = PromptRequest("1:q", (), offered_codes=("1", "2"))
    asked = PromptRequest("1:NEWS", (), offered_codes=("1", "2", "3"), options=options, structured=True,
                          choose_all=True)
    regex = constraint_regex(asked)
    for reply in ('{"answer": []}', '{"answer": ["Television"]}', '{"answer": ["TV", "The \\"Times\\""]}'):
        assert re.fullmatch(regex, reply), reply
    assert not re.fullmatch(regex, '{"answer": ["Radio"]}') and not re.fullmatch(regex, '{"answer": "1"}')
    assert chosen('{"answer": ["TV", "The \\"Times\\""]}', options) == ({"2", "3"}, None)
    assert answer_schema(asked)["properties"]["answer"] == {
        "type": "array", "items": {"type": "string", "enum": ["Television", 'The "Times"', "TV"]}}
    assert constraint_regex(single) == answer_regex(("1", "2"))
    assert answer_schema(single)["properties"]["answer"] == {"type": "string", "enum": ["1", "2"]}
    assert single.key == PromptRequest("1:q", (), offered_codes=("1", "2"), choose_all=False).key != \
        PromptRequest("1:q", (), offered_codes=("1", "2"), choose_all=True).key


def test_each_draw_of_a_set_is_spread_onto_its_members_draws() -> None:
    """``--samples K``: a set's draw k answers each member's draw k, so draws reduce per member; the single
    questions' requests (first) are read as ever; an engine error reaches every member."""
    options = (("1", "Television"), ("2", "Radio"))
    single = PromptRequest("7:trust", (), offered_codes=("1", "2"))
    draws = [PromptRequest(f"7:$NEWS~draw{k}", (), offered_codes=("1", "2"), options=options, choose_all=True)
             for k in range(2)]
    plan = {"7:$NEWS": (Member("7:tv", "1", "1", "0"), Member("7:radio", "2", "1", "0"))}
    results = [EngineResult(single.key, '{"answer": "2"}'), EngineResult(draws[0].key, '["Radio"]'),
               EngineResult(draws[1].key, error="HTTP 500")]
    found = extract_with_sets([single, *draws], results, plan)
    assert found["7:trust"].code == "2"
    assert (found["7:tv~draw0"].code, found["7:radio~draw0"].code) == ("0", "1")
    assert found["7:tv~draw1"].engine_error == found["7:radio~draw1"].engine_error == "HTTP 500"


def test_a_bad_set_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [0.0, 1.0] * 5, "b": [1.0, 2.0] * 5, "c": [1.0, 0.0] * 5})
    source = tmp_path / "s.sav"
    pyreadstat.write_sav(frame, source, variable_value_labels={
        "a": {0: "no", 1: "yes"}, "b": {1: "yes", 2: "no"}, "c": {0: "no", 1: "yes"}})
    cases = {"S=a,zz": "variable zz (--multi S) is not in the file",
             "S=a,b;T=c,a": "--multi: variable a is in two sets (S, T)"}
    for flag, words in cases.items():
        bad = socbench("data", "import", str(source), "--out", str(tmp_path / "o"), "--multi", flag, code=2)
        assert words in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    frame["b"] = [2.0, 3.0] * 5  # no code 1: no "selected" answer
    pyreadstat.write_sav(frame, source, variable_value_labels={
        "a": {0: "no", 1: "yes"}, "b": {2: "no", 3: "yes"}, "c": {0: "no", 1: "yes"}})
    bad = socbench("data", "import", str(source), "--out", str(tmp_path / "o"), "--multi", "S=a,b", code=2)
    assert "variable b (--multi S) is no dichotomy with the selected code 1 (its answer codes: 2, 3)" \
        in bad.stderr


def test_an_option_s_f1_is_scikit_learns_bit_for_bit() -> None:
    """F1 of "selected" from counts equals sklearn's binary f1_score with zero_division=1 (1 where
    neither side selects the option), on random blocks of every size."""
    from sklearn.metrics import f1_score

    from socbench.multi_select import _f1

    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 30, 200):
        for _ in range(100):
            true, pred = rng.random(n) < rng.random(), rng.random(n) < rng.random()
            assert _f1(true, pred) == float(f1_score(true, pred, zero_division=1.0))
