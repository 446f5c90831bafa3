"""Circular evaluation: variants, OpenCompass metrics, files, table, and the ISSP stages."""

from __future__ import annotations

import itertools
import json
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from socbench.circular import circular_metrics, expand_item, issp_variants, reduce_domain, rotations
from socbench.config import make_config
from socbench.errors import ConfigError, DataError
from socbench.log.read import read_variants
from socbench.log.write import write_scored_domain
from socbench.prompts.persona import PromptSettings, build_prompt, build_prompts
from socbench.report.circular import circular_table, issp_circular_table, write_circular_table
from socbench.scoring import score_domain, score_variants
from socbench.types import (
    CircularSettings,
    DomainData,
    Extraction,
    Item,
    Question,
    Respondent,
    VariantResult,
)


def mc(qid: str, labels: str | list[str], gold: str) -> tuple[str, tuple[tuple[str, str], ...], str]:
    """An item as ``expand_item`` takes it: id, (label, text) options, gold label."""
    return qid, tuple((label, f"text {label}") for label in labels), gold


def expand(item: tuple, mode: str, *, max_variants: int | None = None, seed: int = 42,
           keep_labels: bool = False) -> list:
    return expand_item(*item, CircularSettings(mode, max_variants, seed), keep_labels=keep_labels)


def answer(variants, qid_answers: dict[str, str | None]) -> list[VariantResult]:
    """Results for ``variants``; ``qid_answers`` maps a variant id to the displayed label answered."""
    return [VariantResult.of(v, qid_answers[v.variant_id]) for v in variants]


# ------------------------------------------------------------------------ expansion


def test_circular_rotations_remap_gold_with_positional_labels() -> None:
    variants = expand(mc("q1", "ABC", "B"), "circular")
    assert [v.pattern for v in variants] == [("A", "B", "C"), ("B", "C", "A"), ("C", "A", "B")]
    assert [v.variant_id for v in variants] == ["q1--ABC", "q1--BCA", "q1--CAB"]
    assert all(v.shown == ("A", "B", "C") for v in variants)
    # BCA shows original B at position A: the gold text "text B" is now labelled A.
    assert [v.gold for v in variants] == ["B", "A", "C"]
    assert [dict(v.options)[v.gold] for v in variants] == ["text B"] * 3
    assert [v.is_origin for v in variants] == [True, False, False]
    assert [v.request_id for v in variants] == ["q1", "q1--BCA", "q1--CAB"]


def test_keep_labels_moves_codes_with_their_text() -> None:
    item = ("7:V5", (("1", "Agree"), ("2", "Neither"), ("-4", "Can't choose"), ("95", "Other")), "-4")
    variants = expand(item, "circular", keep_labels=True)
    assert len(variants) == 4
    for v in variants:
        assert v.shown == v.pattern and v.gold == "-4"
        assert set(v.options) == set(item[1])  # every code keeps its text
    assert variants[1].variant_id == "7:V5--2,-4,95,1"


def test_all_possible_three_options_gives_six_orders() -> None:
    variants = expand(mc("q", "ABC", "C"), "all_possible")
    assert [v.pattern for v in variants] == list(itertools.permutations("ABC"))
    assert len({v.variant_id for v in variants}) == 6 and not any(v.sampled for v in variants)
    assert [v.gold for v in variants] == ["C", "B", "C", "B", "A", "A"]  # where C sits
    assert all(dict(v.options)[v.gold] == "text C" for v in variants)


def test_all_possible_refuses_six_options_without_max_variants() -> None:
    refusal = r"--circular all_possible.*6 options \(720 orders\).*--max_variants"
    with pytest.raises(ConfigError, match=refusal):
        expand(mc("q6", "ABCDEF", "A"), "all_possible")


def test_seeded_sample_is_recorded_reproducible_and_keeps_the_identity_and_rotations() -> None:
    item = mc("q6", "ABCDEF", "D")
    first = expand(item, "all_possible", max_variants=10, seed=7)
    again = expand(item, "all_possible", max_variants=10, seed=7)
    other = expand(item, "all_possible", max_variants=10, seed=8)
    assert first == again and [v.pattern for v in first] != [v.pattern for v in other]
    assert len({v.pattern for v in first}) == 10 and all(v.sampled for v in first)
    assert first[0].is_origin and all(sorted(v.pattern) == list("ABCDEF") for v in first)
    assert set(rotations("ABCDEF")) <= {v.pattern for v in first}  # the n rotations are always in
    assert all(dict(v.options)[v.gold] == "text D" for v in first)
    eleven = [str(code) for code in range(11)]  # 11! orders: drawn one by one, not listed
    big = expand(mc("q11", eleven, "3"), "all_possible", max_variants=14, seed=1, keep_labels=True)
    assert len({v.pattern for v in big}) == 14 and big[0].pattern == tuple(eleven)
    assert set(rotations(eleven)) <= {v.pattern for v in big}
    few = expand(mc("q11", eleven, "3"), "all_possible", max_variants=5, seed=1)  # < n: the rotations
    assert [v.pattern for v in few] == rotations(eleven)
    assert len(expand(mc("q2", "AB", "A"), "all_possible", max_variants=1)) == 2  # n >= n!: all orders
    assert not any(v.sampled for v in expand(mc("q2", "AB", "A"), "all_possible", max_variants=1))


def test_bad_items_are_data_errors() -> None:
    with pytest.raises(DataError, match="gold 'Z'"):
        expand(mc("q", "ABC", "Z"), "circular")
    with pytest.raises(DataError, match="repeated"):
        expand(mc("q", "ABA", "A"), "circular")


# -------------------------------------------------------------------------- metrics


def test_metrics_by_hand_with_three_and_five_options_identity_not_first() -> None:
    three = expand(mc("q3", "ABC", "B"), "circular")   # golds: ABC->B, BCA->A, CAB->C
    five = expand(mc("q5", "ABCDE", "E"), "circular")  # golds: E, D, C, B, A
    # Displayed answers: q3 right on BCA and CAB, wrong (A) on the identity; q5 all right.
    answers = {"q3--ABC": "A", "q3--BCA": "A", "q3--CAB": "C",
               "q5--ABCDE": "E", "q5--BCDEA": "D", "q5--CDEAB": "C", "q5--DEABC": "B", "q5--EABCD": "A"}
    ordered = [three[1], five[2], three[0], five[3], five[0], three[2], five[4], five[1]]
    scores = circular_metrics(answer(ordered, answers), "circular")
    assert scores.metrics == {
        "acc_origin": 0.5, "acc_circular": 7 / 8,
        "perf_origin": 0.5,
        "more_1_circular": 1.0, "more_2_circular": 1.0, "more_3_circular": 0.5, "more_4_circular": 0.5,
        "perf_circular": 0.5,
        "vote_origin": 0.5,      # q3's identity answer A is wrong
        "vote_circular": 1.0,    # q3 mapped back: B, A, B -> B
    }
    assert list(scores.metrics)[:2] == ["acc_origin", "acc_circular"]
    assert scores.questions == {"origin": 2, "circular": 2}
    assert scores.variants == {"origin": 2, "circular": 8}


def test_vote_ties_go_to_the_answer_seen_first() -> None:
    variants = expand(mc("q", "ABCD", "A"), "circular")  # golds A, D, C, B
    # Mapped back to original labels: ABCD "A"->A, BCDA "A"->B, CDAB "C"->A, DABC "C"->B: a 2-2 tie.
    answers = {"q--ABCD": "A", "q--BCDA": "A", "q--CDAB": "C", "q--DABC": "C"}
    gold_first = circular_metrics(answer(variants, answers), "circular")
    assert gold_first.metrics["vote_circular"] == 1.0
    wrong_first = circular_metrics(answer([variants[1], variants[0], variants[2], variants[3]], answers),
                                   "circular")
    assert wrong_first.metrics["vote_circular"] == 0.0
    unreadable = {"q--ABCD": None, "q--BCDA": "x", "q--CDAB": None, "q--DABC": "B"}  # -, -, -, A
    assert circular_metrics(answer(variants, unreadable), "circular").metrics["vote_circular"] == 0.0


def test_all_possible_metrics_include_the_circular_subset() -> None:
    variants = expand(mc("q", "ABC", "A"), "all_possible")
    answers = {v.variant_id: v.gold for v in variants}
    answers["q--ACB"] = "C"  # the one wrong order is not a rotation
    metrics = circular_metrics(answer(list(reversed(variants)), answers), "all_possible").metrics
    assert metrics["acc_all_possible"] == 5 / 6 and metrics["perf_all_possible"] == 0.0
    assert metrics["more_5_all_possible"] == 1.0 and "more_6_all_possible" not in metrics
    assert metrics["perf_circular"] == 1.0 and metrics["acc_circular"] == 1.0
    assert metrics["vote_all_possible"] == 1.0 and metrics["acc_origin"] == 1.0


def test_sampled_six_option_item_keeps_its_circular_metrics_and_labels_the_sample() -> None:
    """Issue 17: with --max_variants a 6-option item lost its circular metrics (the sample rarely
    held all 6 rotations) and its perf over the sample was reported as perf_all_possible."""
    variants = expand(mc("q", "ABCDEF", "A"), "all_possible", max_variants=9, seed=3)
    rotated = set(rotations("ABCDEF"))
    # right in every rotation, wrong in the three other sampled orders
    wrong = {v.variant_id: next(label for label in v.shown if label != v.gold) for v in variants}
    results = answer(variants, {v.variant_id: v.gold if v.pattern in rotated else wrong[v.variant_id]
                                for v in variants})
    three = expand(mc("r", "ABC", "B"), "all_possible", max_variants=9)  # 3! = 6 <= 9: all orders
    scores = circular_metrics(results + answer(three, {v.variant_id: v.gold for v in three}), "all_possible")
    assert scores.questions == {"origin": 2, "circular": 2, "all_possible": 1, "sampled": 1}
    assert scores.metrics["perf_circular"] == 1.0 and scores.metrics["acc_circular"] == 1.0
    assert scores.metrics["perf_sampled"] == 0.0 and scores.metrics["acc_sampled"] == 6 / 9
    assert scores.metrics["perf_all_possible"] == 1.0  # only the 3-option item has all its orders
    assert scores.variants["sampled"] == 9 and scores.sampled_questions == 1


def opencompass_reference(results: list[VariantResult], keys: str, mode: str) -> dict[str, float]:
    """OpenCompass's CircularEvaluator loops (acc/more/perf) and its vote, written out again."""
    sets = {"origin": [tuple(keys)], "circular": [tuple(keys[i:] + keys[:i]) for i in range(len(keys))]}
    if mode == "all_possible":
        sets["all_possible"] = list(itertools.permutations(keys))
    metrics: dict[str, float] = {}
    for k, patterns in sets.items():
        hits = [r.prediction == r.gold for r in results if r.pattern in patterns]
        metrics[f"acc_{k}"] = sum(hits) / len(hits) * 100
    for k, patterns in sets.items():
        per_q: dict[str, int] = {}
        for r in results:
            if r.pattern in patterns:
                per_q[r.qid] = per_q.get(r.qid, 0) + (r.prediction == r.gold)
        for j in range(1, len(patterns) + 1):
            name = f"more_{j}_{k}" if j != len(patterns) else f"perf_{k}"
            metrics[name] = sum(v >= j for v in per_q.values()) / len(per_q) * 100
    for k, patterns in sets.items():
        votes: dict[str, Counter] = {}
        refs: dict[str, str] = {}
        for r in results:
            back = dict(zip(keys, r.pattern))
            refs[r.qid] = back[r.gold]
            if r.pattern in patterns:
                votes.setdefault(r.qid, Counter())[back.get(r.prediction, "-")] += 1
        right = sum(refs[q] == c.most_common(1)[0][0] for q, c in votes.items())
        metrics[f"vote_{k}"] = right / len(votes) * 100
    return metrics


@pytest.mark.parametrize(("keys", "mode"), [("ABCD", "circular"), ("ABC", "all_possible")])
def test_metrics_match_opencompass_on_random_answers(keys: str, mode: str) -> None:
    rng = random.Random(5)
    results = []
    for q in range(40):
        variants = expand(mc(f"q{q}", keys, rng.choice(keys)), mode)
        skill = rng.random()
        results += [VariantResult.of(v, v.gold if rng.random() < skill else rng.choice([*keys, None]))
                    for v in variants]
    rng.shuffle(results)
    ours = circular_metrics(results, mode).metrics
    reference = opencompass_reference(results, keys, mode)
    assert set(ours) == set(reference)
    assert all(ours[name] == pytest.approx(reference[name] / 100) for name in ours)


# --------------------------------------------------------------------- table, files


def test_summary_table_has_opencompass_layout(tmp_path: Path) -> None:
    results = {"smollm2": {"ARC-e": {"acc_origin": 0.5, "perf_circular": 0.125},
                           "ARC-c": {"acc_origin": 0.25}}}
    table = circular_table(results, ["acc_origin", "perf_circular"], modes={"ARC-e": "gen"})
    assert list(table.columns) == ["dataset", "version", "mode", "smollm2", "-"]
    assert table.values.tolist() == [
        ["-", "-", "-", "acc_origin", "perf_circular"],
        ["ARC-e", "-", "gen", "50.00", "12.50"],
        ["ARC-c", "-", "-", "25.00", "-"],
    ]
    markdown, csv = write_circular_table(tmp_path, table)
    assert csv.read_text().splitlines() == [
        "dataset,version,mode,smollm2,-", "-,-,-,acc_origin,perf_circular",
        "ARC-e,-,gen,50.00,12.50", "ARC-c,-,-,25.00,-"]
    assert markdown.read_text().splitlines() == [
        "| dataset | version | mode | smollm2 | - |", "|---|---|---|---|---|",
        "| - | - | - | acc_origin | perf_circular |", "| ARC-e | - | gen | 50.00 | 12.50 |",
        "| ARC-c | - | - | 25.00 | - |"]


# ----------------------------------------------------------------------------- ISSP

V5 = Question("V5", "How important is it to vote in [COUNTRY]?", {"1": "Not important", "2": "Somewhat",
                                                                      "3": "Very important"})
V12 = Question("V12", "Should the government help?", {"1": "Agree", "2": "Neither", "3": "Disagree",
                                                       "-4": "Can't choose", "95": "Other"})


def respondent(pid: int) -> Respondent:
    sex = "Female" if pid % 2 else "Male"
    return Respondent(pid, "Japan", "JP", {"Country Prefix ISO 3166": "Japan", "Sex of Respondent": sex}, {})


def issp_item(pid: int, question: Question, true: str) -> Item:
    return Item(pid, question.id, "JP", tuple(question.options.items()), true, False)


ITEMS = [issp_item(1, V5, "2"), issp_item(1, V12, "3"), issp_item(2, V5, "1"),
         Item(2, "V12", "JP", tuple(V12.options.items()), None, False, "missing code -9")]
DATA = DomainData(1, "Citizenship", (V5, V12), (respondent(1), respondent(2)), {}, "hand-made")


def without_options(request) -> str:
    head, rest = request.messages[1].content.split("Options:\n", 1)
    return head + rest.split("\n\n", 1)[1]


def shown_options(request) -> list[tuple[str, str]]:
    block = request.messages[1].content.split("Options:\n", 1)[1].split("\n\n", 1)[0]
    return [tuple(line.split(". ", 1)) for line in block.splitlines()]


@pytest.mark.parametrize("shuffle", [False, True])
def test_issp_variant_prompts_rotate_the_displayed_order(shuffle: bool) -> None:
    settings = PromptSettings(shuffle_options=shuffle, seed=3)
    people = {1: respondent(1), 2: respondent(2)}
    questions = {"V5": V5, "V12": V12}
    normal = build_prompts(ITEMS, people, questions, settings)
    variants = build_prompts(ITEMS, people, questions, settings, CircularSettings("circular", seed=3,
                                                                                  shuffle_options=shuffle))
    assert len(variants) == 3 + 5 + 3  # excluded item: no prompts
    by_item: dict[str, list] = {}
    for request in variants:
        by_item.setdefault(request.item_id.split("--")[0], []).append(request)
    for base in normal:
        group = by_item[base.item_id]
        assert (group[0].key, group[0].item_id) == (base.key, base.item_id)  # identity: the normal request
        assert [r.variant.pattern for r in group] == [r.option_order for r in group]  # each records its order
        assert [r.option_order for r in group] == rotations(base.option_order)
        labels = dict(shown_options(base))
        for request in group:
            assert shown_options(request) == [(code, labels[code]) for code in request.option_order]
            assert request.messages[0] == base.messages[0]
            assert without_options(request) == without_options(base)  # only the option lines move
        assert [r.item_id for r in group[1:]] == [r.variant.variant_id for r in group[1:]]
    assert len({r.key for r in variants}) == len(variants)


def test_build_prompt_order_override_matches_shuffle() -> None:
    settings = PromptSettings(shuffle_options=True, seed=9)
    item = ITEMS[1]
    shuffled = build_prompt(item, respondent(1), V12, settings)
    assert build_prompt(item, respondent(1), V12, PromptSettings(), order=shuffled.option_order).messages == \
        shuffled.messages


def issp_extractions() -> dict[str, Extraction]:
    """Answers by request id, each carrying its variant as the extract stage passes it on."""
    settings = CircularSettings("circular")
    answers = {"1:V5": [("2", None)] * 3,                                          # 3/3 right
               "1:V12": [("3", None), ("3", None), ("1", None),                   # right, right, wrong
                         (None, "no JSON answer found"), ("3", None)],            # failed, right
               "2:V5": [("3", None), ("1", None), ("1", None)]}                   # wrong, right, right
    return {v.request_id: Extraction(code, failure, variant=v)
            for item in ITEMS[:3] for v, (code, failure) in zip(issp_variants(item, settings),
                                                               answers[item.item_id], strict=True)}


def test_issp_score_stage_computes_circular_perf_beside_normal_scores() -> None:
    extractions = issp_extractions()
    scored = reduce_domain(score_domain(DATA, ITEMS, extractions, model="m"), CircularSettings("circular"))
    result = scored.result
    plain = score_domain(DATA, ITEMS,
                         {i.item_id: extractions[i.item_id] for i in ITEMS[:3]}, model="m").result
    assert [s.correct for s in scored.items] == [True, True, False]  # the identity variants
    assert result.metrics["accuracy"] == plain.metrics["accuracy"] == 2 / 3
    assert {k: v for k, v in result.metrics.items() if not k.startswith("circular_")} == plain.metrics
    assert result.metrics["circular_perf"] == 1 / 3
    assert result.metrics["circular_acc"] == 8 / 11
    assert result.metrics["circular_vote"] == 1.0  # 1:V12 votes 3,3,1,-,3; 2:V5 votes 3,1,1
    variants = scored.variants  # each variant scored once, in the score stage
    assert scored.circular_scores.metrics["perf_circular"] == result.metrics["circular_perf"]
    failed = [v for v in variants if v.parse_error]
    assert len(variants) == 11 and [(f.qid, f.prediction) for f in failed] == [("1:V12", None)]


def test_an_engine_error_in_a_variant_makes_the_domain_incomplete() -> None:
    """A rotated variant the engine never answered is a missing request too: no circular scores."""
    extractions = issp_extractions()
    v12 = issp_variants(ITEMS[1], CircularSettings("circular"))
    failed = Extraction(None, engine_error="HTTP 503: overloaded", variant=v12[2])
    extractions[v12[2].request_id] = failed
    scored = reduce_domain(score_domain(DATA, ITEMS, extractions, model="m"), CircularSettings("circular"))
    result = scored.result
    assert all(s.engine_error is None for s in scored.items)  # the identity variants were answered
    assert not result.complete and result.engine_error_reasons == {"HTTP 503: overloaded": 1}
    assert not any(k.startswith("circular_") for k in result.metrics)
    assert math.isnan(result.metrics["accuracy"])
    variants = score_variants(ITEMS, extractions)
    assert [v.parse_error for v in variants if v.qid == "1:V12"][2] == "HTTP 503: overloaded"


def test_issp_circular_files_and_run_table(tmp_path: Path) -> None:
    settings = CircularSettings("circular")
    extractions = issp_extractions()
    scored = reduce_domain(score_domain(DATA, ITEMS, extractions, model="m"), settings)
    result, variants = scored.result, list(scored.variants)
    _, _, jsonl, metrics_path = write_scored_domain(tmp_path, scored, settings)
    assert jsonl.name == "Citizenship_circular.jsonl" and jsonl.parent == tmp_path / "m"
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert lines[1] == {**lines[1], "qid": "1:V5", "variant_id": "1:V5--231", "pattern": ["2", "3", "1"],
                        "gold": "2", "prediction": "2", "correct": True, "is_origin": False}
    assert read_variants(jsonl) == variants
    payload = json.loads(metrics_path.read_text())
    assert payload["metrics"]["perf_circular"] == result.metrics["circular_perf"]
    assert payload["questions"] == {"origin": 3, "circular": 3} and payload["seed"] == 42
    assert not list((tmp_path / "m").glob(".*.tmp"))
    table = issp_circular_table([result], "circular", "generate")
    assert table.values.tolist()[1] == ["Citizenship", "-", "generate, order-only", "66.67", "72.73", "33.33",
                                        "100.00"]
    assert payload["labels"] == "order_only" and payload["measures"].startswith("order bias")


def test_circular_settings_from_run_config() -> None:
    assert make_config().expansion is None
    settings = make_config(circular="all_possible", seed=5, shuffle_options=True).expansion
    assert settings == CircularSettings("all_possible", None, 5, True)
