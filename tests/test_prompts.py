"""ISSP prompts: persona contents, placeholders, option order, prefix sharing, cache keys."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from socbench.errors import DataError
from socbench.prompts.persona import (
    ANSWER_PREFIX,
    PromptSettings,
    build_prompts,
    country_words,
    fill_placeholders,
    prompt_text,
)
from socbench.shuffle import display_order, option_text, render_options
from socbench.types import Item, Question, Respondent, SamplingSettings

UNFILLED = re.compile(r"\[\s*(country|nationality)|nationality\s*\]", re.IGNORECASE)

ATTRIBUTES = {
    "GESIS Study Number": "ZA6670",
    "Digital Object Identifier": "doi:10.4232/1.12848",
    "GESIS Archive Version": "2.0.0 (2016-11-28)",
    "ID Number of Respondent": "4711",
    "Country/ Sample Prefix ISO 3166 Code - alphanumeric": "Taiwan, China",
    "Country/ Sample ISO 3166 Code (see country for codes for the sample)": "158. TW-Taiwan",
    "Sex of Respondent": "Female",
    "Age of respondent": "45",
    "Taiwan, China: Country specific religious affiliation or denomination": "Buddhist",
    "Japan: Country specific religious affiliation or denomination": "NAP, other countries",
    "Trade union membership": "No answer",
    "Q26b Weight": "60",
    "Weight": "1.0312",
    "Post-stratification weight": "0.98",
    "Administrative mode of data-collection": "Face-to-face interview, paper",
    "Date of interview: year of interview; YYYY (four digits)": "2014",
    "Case substitution flag": "No substitution",
    "Language of the interview": "Chinese",
    "Place of living: urban - rural": "A big city",
    "Religious affiliation": "No religion",
}
PERSONA = {
    "Country": "Taiwan",
    "Sex of Respondent": "Female",
    "Age of respondent": "45",
    "Taiwan, China: Country specific religious affiliation or denomination": "Buddhist",
    "Q26b Weight": "60",
    "Place of living: urban - rural": "A big city",
    "Religious affiliation": "No religion",
}
PLACEHOLDER_TEXT = (
    "[COUNTRY] should help. In [country], [COUNTRY's] and [country’s] economy; truly [NATIONALITY]; "
    "[COUNTRY NATIONALITY] citizenship; fully [COUNTRY'S NATIONALITY]; "
    "The [COUNTRY NATIONALITY PARLIAMENT]; speak [COUNTRY LANGUAGE]; close to your [Country]? "
    "your [County]? a [COUNTRY-SPECIFIC LIST icon, or crucifix]"
)


def person(pid: int = 10000001, name: str | None = "Taiwan, China", code: str | None = "TW",
           attributes: dict | None = None) -> Respondent:
    return Respondent(pid, name, code, dict(ATTRIBUTES if attributes is None else attributes), {})


QUESTIONS = {
    "V5": Question("V5", "Q1 How important is it always to vote in elections?",
                   {"1": "1, Not at all important", "2": "2", "3": "3, Very important"}),
    "V12": Question("V12", "Q2 To help people in [COUNTRY] who are worse off",
                    {"1": "Agree", "2": "Neither", "3": "Disagree", "-4": "Can't choose",
                     "95": "[COUNTRY] only"}),
    "V20": Question("V20", "Q3 Trust [COUNTRY NATIONALITY] courts?", {"1": "Yes", "2": "No"}),
}


def item(pid: int, qid: str, excluded: str | None = None) -> Item:
    return Item(pid, qid, "TW", tuple(QUESTIONS[qid].options.items()), "1", False, excluded)


def prompts_for(people: list[Respondent], settings: PromptSettings | None = None, qids=("V5", "V12", "V20")):
    items = [item(p.person_id, q) for q in qids for p in people]  # interleaved on purpose
    return build_prompts(items, {p.person_id: p for p in people}, QUESTIONS, settings or PromptSettings())


def persona_json(request) -> dict:
    return json.loads(request.messages[0].content.split("Personal information:\n", 1)[1])


# ----------------------------------------------------------------------- persona


def test_persona_leaves_out_ids_admin_and_missing_labels() -> None:
    [request, *_] = prompts_for([person()])
    assert persona_json(request) == PERSONA  # order too: Country first, then the data's order
    assert list(persona_json(request)) == list(PERSONA)
    text = prompt_text(request)
    for absent in ("4711", "ZA6670", "doi:", "1.0312", "Face-to-face", "NAP", "No answer", "2014", "158"):
        assert absent not in text


def test_no_doubled_braces_or_person_id_anywhere() -> None:
    people = [person(10000001), person(10000002, attributes={**ATTRIBUTES, "Sex of Respondent": "Male"})]
    for settings in (PromptSettings(), PromptSettings(mode="logprobs", shuffle_options=True),
                     PromptSettings(include_persona=False)):
        for request in prompts_for(people, settings):
            text = prompt_text(request)
            assert "{{" not in text and "}}" not in text
            assert "10000001" not in text and "10000002" not in text
            assert '{"answer": "option_id"}' in text


def test_persona_free_control() -> None:
    request = prompts_for([person()], PromptSettings(include_persona=False))[0]
    assert "Personal information" not in request.messages[0].content
    assert "Female" not in prompt_text(request)


# ------------------------------------------------------------------ placeholders


@pytest.mark.parametrize(("code", "name", "expected"), [
    ("DE-W", "Germany-West", (
        "Germany should help. In Germany, Germany's and Germany's economy; truly German; German citizenship; "
        "fully German; The German parliament; speak the national language of Germany; close to Germany? "
        "your [County]? a icon, or crucifix")),
    ("TW", "Taiwan, China", (
        "Taiwan should help. In Taiwan, Taiwan's and Taiwan's economy; truly Taiwanese; "
        "Taiwanese citizenship; "
        "fully Taiwanese; The Taiwanese parliament; speak the national language of Taiwan; close to Taiwan? "
        "your [County]? a icon, or crucifix")),
    ("US", "United Stated", (
        "The United States should help. In the United States, the United States' and the United States' "
        "economy; truly American; American citizenship; fully American; The American parliament; speak the "
        "national language of the United States; close to the United States? your [County]? "
        "a icon, or crucifix")),
    (None, "Atlantis", (  # unmapped: the raw name, also as the nationality (noun adjunct)
        "Atlantis should help. In Atlantis, Atlantis' and Atlantis' economy; truly Atlantis; "
        "Atlantis citizenship; fully Atlantis; The Atlantis parliament; "
        "speak the national language of Atlantis; close to Atlantis? "
        "your [County]? a icon, or crucifix")),
])
def test_placeholders_filled(code, name, expected) -> None:
    assert fill_placeholders(PLACEHOLDER_TEXT, country_words(person(name=name, code=code))) == expected


def test_placeholder_capitalised_only_at_a_sentence_start() -> None:
    us = country_words(person(name="United States", code="US"))
    assert fill_placeholders("Q2c [COUNTRY] should act", us) == "Q2c The United States should act"
    assert fill_placeholders("Q1c ... your [Country]?", us) == "Q1c ... the United States?"
    assert fill_placeholders("Why? [COUNTRY'S] taxes", us) == "Why? The United States' taxes"


def test_placeholders_filled_in_prompt_and_options() -> None:
    people = [person(1, "Great Britain", "GB-GBN"), person(2, "Taiwan", "TW")]
    prompts = prompts_for(people, PromptSettings(shuffle_options=True))
    for request in prompts:
        assert not UNFILLED.search(prompt_text(request))
    v12 = {p.item_id: p.messages[1].content for p in prompts if p.item_id.endswith("V12")}
    assert "help people in Great Britain who" in v12["1:V12"] and "95. Great Britain only" in v12["1:V12"]
    assert "help people in Taiwan who" in v12["2:V12"]
    assert "Trust Taiwanese courts?" in [p for p in prompts if p.item_id == "2:V20"][0].messages[1].content


# ---------------------------------------------------------------------- options


def test_options_rendered_in_shown_order() -> None:
    for settings in (PromptSettings(), PromptSettings(shuffle_options=True, seed=7)):
        for request in prompts_for([person()], settings):
            labels = dict(QUESTIONS[request.item_id.split(":")[1]].options)
            labels = {c: label.replace("[COUNTRY]", "Taiwan") for c, label in labels.items()}
            assert request.offered_codes == tuple(labels)  # survey order, always
            assert sorted(request.option_order) == sorted(labels)
            block = request.messages[1].content.split("Options:\n")[1].split("\n\n")[0]
            assert block.splitlines() == [option_text(c, labels[c]) for c in request.option_order]


def test_shuffle_off_by_default_and_seeded_when_on() -> None:
    assert PromptSettings().shuffle_options is False
    people = [person(pid) for pid in range(1, 21)]
    plain = prompts_for(people)
    assert all(p.option_order == p.offered_codes for p in plain)
    one = prompts_for(people, PromptSettings(shuffle_options=True, seed=1))
    again = prompts_for(people, PromptSettings(shuffle_options=True, seed=1))
    other = prompts_for(people, PromptSettings(shuffle_options=True, seed=2))
    assert [p.option_order for p in one] == [p.option_order for p in again]
    assert any(p.option_order != p.offered_codes for p in one)
    assert [p.option_order for p in one] != [p.option_order for p in other]
    assert len({p.option_order for p in one if p.item_id.endswith("V12")}) > 3  # varies by person


def test_shuffled_order_is_uniform() -> None:
    from scipy.stats import chisquare

    counts = Counter(display_order(("1", "2", "3"), True, 42, pid, "V5") for pid in range(6000))
    assert len(counts) == 6
    assert chisquare(list(counts.values())).pvalue > 0.001


@pytest.mark.slow  # runs Python in a subprocess
def test_shuffled_order_same_in_another_process() -> None:
    codes = ("1", "2", "3", "4", "5", "-4", "95")
    mine = display_order(codes, True, 42, 10000001, "V5")
    code = ("from socbench.shuffle import display_order as s; "
            f"print(','.join(s({codes!r}, True, 42, 10000001, 'V5')))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert tuple(out.stdout.strip().split(",")) == mine
    assert sorted(mine) == sorted(codes)


def test_end_labelled_scale_points_read_as_numbers() -> None:
    options = {"0": "Completely dissatisfied", "1": "1", "2": "02", "-1": "-1", "10": "10 Completely"}
    assert render_options(list(options.items()), list(options)) == \
        "0. Completely dissatisfied\n1\n2\n-1\n10. 10 Completely"


def test_render_options_rejects_a_wrong_order() -> None:
    assert render_options([("1", "Yes"), ("2", "No")], ["2", "1"]) == "2. No\n1. Yes"
    assert render_options([("1", "Yes"), ("2", "No")], ["1", "2"]) == "1. Yes\n2. No"
    with pytest.raises(ValueError):
        render_options([("1", "Yes"), ("2", "No")], ["1", "3"])


# --------------------------------------------------------- structure and keys


def test_respondent_prompts_adjacent_and_share_system_message() -> None:
    people = [person(3), person(1, attributes={**ATTRIBUTES, "Age of respondent": "30"}), person(2)]
    prompts = prompts_for(people)
    assert [p.item_id.split(":")[0] for p in prompts] == ["3"] * 3 + ["1"] * 3 + ["2"] * 3
    for pid in ("3", "1", "2"):
        mine = [p for p in prompts if p.item_id.startswith(f"{pid}:")]
        assert [p.item_id.split(":")[1] for p in mine] == ["V5", "V12", "V20"]  # survey order kept
        texts = [prompt_text(p) for p in mine]
        shared = os.path.commonprefix(texts)
        system = mine[0].messages[0].content
        assert len({p.messages[0].content for p in mine}) == 1
        assert shared.startswith(f"--- system ---\n{system}\n--- user ---\nQuestion: Q")
    assert prompts[0].messages[0].content != prompts[3].messages[0].content  # age differs


def test_excluded_items_get_no_prompt_and_unknown_refs_fail() -> None:
    p = person(1)
    items = [item(1, "V5"), item(1, "V12", excluded="code not offered (missing or invalid code)")]
    prompts = build_prompts(items, {1: p}, QUESTIONS, PromptSettings())
    assert [r.item_id for r in prompts] == ["1:V5"]
    lower = build_prompts([item(1, "V5")], {1: p}, {"v5": QUESTIONS["V5"]}, PromptSettings())
    assert lower[0].messages == prompts[0].messages  # question ids match case-insensitively
    with pytest.raises(DataError, match="question 'V99'"):
        build_prompts([replace(item(1, "V5"), question_id="V99")], {1: p}, QUESTIONS, PromptSettings())
    with pytest.raises(DataError, match="respondent 2"):
        build_prompts([item(2, "V5")], {1: p}, QUESTIONS, PromptSettings())


def test_logprobs_mode() -> None:
    request = prompts_for([person()], PromptSettings(mode="logprobs", structured=True,
                                                     sampling=SamplingSettings(temperature=0.7)))[0]
    assert (request.mode, request.answer_prefix, request.structured) == ("logprobs", ANSWER_PREFIX, False)
    assert request.sampling == SamplingSettings()  # decoding settings do not change log-probs
    assert prompt_text(request).endswith('--- assistant (answer prefix) ---\n{"answer": "')
    plain = prompts_for([person()], PromptSettings(structured=True))[0]
    assert (plain.mode, plain.answer_prefix, plain.structured) == ("generate", "", True)


def test_keys_differ_when_the_answer_can_differ() -> None:
    base_settings = PromptSettings()
    q = dict(QUESTIONS)

    def key(people=None, settings=base_settings, questions=q, qid="V12"):
        people = people or [person()]
        items = [item(people[0].person_id, qid)]
        if questions is not q:
            items = [replace(items[0], options=tuple(questions[qid].options.items()))]
        return build_prompts(items, {p.person_id: p for p in people}, questions, settings)[0].key

    base = key()
    assert key() == base  # deterministic
    assert key(people=[person(pid=99)]) == base  # the person id is not part of the prompt
    shuffled = next(s for s in range(50) if display_order(tuple(q["V12"].options), True, s, 10000001, "V12")
                    != tuple(q["V12"].options))
    variants = [
        key(people=[person(attributes={**ATTRIBUTES, "Age of respondent": "46"})]),
        key(people=[person(name="Japan", code="JP")]),
        key(questions={**q, "V12": replace(q["V12"], text=q["V12"].text + "?")}),
        key(questions={**q, "V12": replace(q["V12"], options={**q["V12"].options, "3": "Disagree!"})}),
        key(settings=PromptSettings(shuffle_options=True, seed=shuffled)),
        key(settings=PromptSettings(mode="logprobs")),
        key(settings=PromptSettings(structured=True)),
        key(settings=PromptSettings(sampling=SamplingSettings(temperature=0.7))),
        key(settings=PromptSettings(sampling=SamplingSettings(max_tokens=128))),
        key(settings=PromptSettings(include_persona=False)),
        key(qid="V5"),
    ]
    assert len({base, *variants}) == len(variants) + 1


# ------------------------------------------------------------------ real data


def test_real_question_sets_leave_no_placeholder(shared_issp: Path) -> None:
    from socbench.data.loaders import load_questions
    from socbench.data.options import effective_options

    people = [person(1, "Taiwan, China", "TW"), person(2, "Great Britain", "GB-GBN"),
              person(3, "Germany-West", "DE-W"), person(4, "United States", "US"),
              person(5, "Atlantis", None)]
    total = 0
    for path in sorted((shared_issp / "qa").glob("issp_qa_*.json")):
        questions = load_questions(path)
        items = [Item(p.person_id, q.id, p.country_code, effective_options(q, p.country_code)[0], None, False)
                 for p in people for q in questions]
        prompts = build_prompts(items, {p.person_id: p for p in people}, {q.id: q for q in questions},
                                PromptSettings(shuffle_options=True))
        assert len(prompts) == len(items)
        for request in prompts:
            text = prompt_text(request)
            assert not UNFILLED.search(text), (path.name, request.item_id, UNFILLED.search(text).group())
            assert "{{" not in text
        total += len(questions)
    assert total == 555


# ------------------------------------------------------------------------ CLI


def _dataset(root: Path) -> Path:
    folder = root / "Dataset_all"
    (folder / "q&a").mkdir(parents=True)
    (folder / "A_GroundTruth_sampling500").mkdir()
    qa = [{"question_id": q.id, "question": q.text, "answer": q.options, "special": {}}
          for q in QUESTIONS.values()]
    (folder / "q&a" / "issp_qa_citizenship.json").write_text(json.dumps(qa))
    attributes = {k: v for k, v in ATTRIBUTES.items() if "ISO 3166" not in k}
    people = [{"person_id": 10000000 + i, "attributes": {**attributes, "Country Prefix ISO 3166": country},
               "questions_answer": {"V5": 1, "V12": 2, "V20": 9}}
              for i, country in enumerate(["Taiwan", "Japan"])]
    (folder / "A_GroundTruth_sampling500" / "issp_answer_citizenship.json").write_text(json.dumps(people))
    return folder


def test_cli_prints_the_first_prompts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from socbench.cli.issp_prompts import register_prompts

    parser = argparse.ArgumentParser()
    register_prompts(parser.add_subparsers())
    args = parser.parse_args(["issp-prompts", "--data-dir", str(_dataset(tmp_path)), "--domain_id", "1",
                              "--limit", "3", "--shuffle-options", "--mode", "logprobs"])
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    headers = re.findall(r"^=== prompt (\d): item (\d+):(\w+), mode logprobs", out, re.MULTILINE)
    # V20's true code 9 is not offered: excluded, so the third prompt is the next respondent's
    assert headers == [("1", "10000000", "V5"), ("2", "10000000", "V12"), ("3", "10000001", "V5")]
    blocks = out.split("=== prompt ")[1:]
    assert '"Country": "Taiwan"' in blocks[0] and '"Country": "Japan"' in blocks[2]
    assert "help people in Taiwan who" in blocks[1]
    assert out.count('--- assistant (answer prefix) ---\n{"answer": "') == 3
    body = re.sub(r"^=== prompt .*$", "", out, flags=re.MULTILINE)
    assert "10000000" not in body and "10000001" not in body
