"""Effective options per respondent and the scoreable/excluded items built from them."""

from __future__ import annotations

from collections import Counter

import pytest

from fixtures.data_layer.issp_dataset import FAMILY_EXPECTED, NATID_EXPECTED, write_dataset
from socbench.data.loaders import load_domain, load_questions
from socbench.data.options import INVALID_CODE, NO_ANSWER, build_items, effective_options, summarize_items
from socbench.domains import get_domain
from socbench.types import DomainData, Question, Respondent

Q = Question(
    id="V1", text="t", options={"1": "Agree", "2": "Neither", "3": "Disagree"},
    special={"JP": {"1": "I think so"}, "TW": {"10": "ten", "-9": "minus nine", "6": "six", "2": "Middle"},
             "DE": {"3": "Rather not"}},
)


def test_no_override_gives_base_options():
    assert effective_options(Q, "FR")[:2] == ((("1", "Agree"), ("2", "Neither"), ("3", "Disagree")), False)
    assert effective_options(Q, None)[:2] == ((("1", "Agree"), ("2", "Neither"), ("3", "Disagree")), False)


def test_relabel_keeps_survey_order():
    options, specific, _ = effective_options(Q, "JP")
    assert (options, specific) == ((("1", "I think so"), ("2", "Neither"), ("3", "Disagree")), True)


def test_added_codes_appended_in_numeric_order():
    options, specific, _ = effective_options(Q, "TW")
    assert specific
    assert options == (("1", "Agree"), ("2", "Middle"), ("3", "Disagree"),
                       ("-9", "minus nine"), ("6", "six"), ("10", "ten"))


def test_subsample_falls_back_to_its_nation():
    assert effective_options(Q, "DE-W")[0][2] == ("3", "Rather not")
    assert effective_options(Q, "DE-W")[1] is True


def test_real_overrides(shared_issp):
    family = {q.id: q for q in load_questions(shared_issp / "qa" / "issp_qa_family.json")}
    options, specific, _ = effective_options(family["V12"], "TW")
    assert specific and [c for c, _ in options] == ["1", "2", "3", "6"]
    assert "6" not in dict(effective_options(family["V31"], "ES")[0])  # "Not asked" in Spain
    assert "6" in dict(effective_options(family["V31"], "DE")[0])
    networks = {q.id: q for q in load_questions(shared_issp / "qa" / "issp_qa_socialnetworks.json")}
    options = effective_options(networks["v53"], "HU")[0]
    assert [c for c, _ in options] == ["1", "2", "3", "4", "5", "7", "6"]
    assert dict(options)["5"] == "None" and dict(options)["6"] == "Almost none"


def test_options_labelled_as_missing_are_never_offered():
    """A country override labelled "Not asked" (ISSP Family V31, Spain) takes code 6 away from that
    country, in a SocioBench folder read as it is (no import); its answers are that missing code."""
    q = Question(id="V31", text="t", options={"1": "Mother at home", "6": "Father at home"},
                 special={"ES": {"6": "Not asked"}, "TW": {"7": "No answer"}, "PL": {"-1": "-1"}})
    assert effective_options(q, "ES")[:2] == ((("1", "Mother at home"),), True)
    assert [c for c, _ in effective_options(q, "TW")[0]] == ["1", "6"]
    assert [c for c, _ in effective_options(q, "PL")[0]] == ["1", "6", "-1"]  # a bare code: a scale point
    people = tuple(Respondent(i, None, country, {}, {"V31": "6"}) for i, country in enumerate(["ES", "FR"]))
    spain, france = build_items(DomainData(3, "Family", (q,), people, {}, "hand-made"))
    assert spain.excluded_reason == "missing code 6 (Not asked)" and france.excluded_reason is None


def _items(tmp_path, domain_id=3):
    return build_items(load_domain(write_dataset(tmp_path), get_domain(domain_id)))


def test_items_order_and_shape(tmp_path):
    items = _items(tmp_path)
    assert len(items) == 8 * 3
    assert [i.item_id for i in items[:4]] == ["30000001:V5", "30000001:V6", "30000001:v7", "30000002:V5"]


def test_items_exclusions_and_overrides(tmp_path):
    by_id = {i.item_id: i for i in _items(tmp_path)}
    taiwan = by_id["30000001:V5"]  # code 5 exists only for Taiwan
    assert taiwan.true_code == "5" and taiwan.excluded_reason is None and taiwan.country_specific
    assert taiwan.offered_codes == ("1", "2", "3", "4", "5")
    assert by_id["30000005:V5"].excluded_reason == INVALID_CODE  # Germany answered Taiwan's code
    assert by_id["30000005:V5"].offered_codes == ("1", "2", "3", "4")
    assert by_id["30000004:V5"].options[0] == ("1", "I think so")
    assert by_id["30000003:V6"].excluded_reason == INVALID_CODE  # -9
    assert by_id["30000005:V6"].excluded_reason == INVALID_CODE  # 8
    assert by_id["30000007:v7"].excluded_reason == INVALID_CODE  # 99
    assert by_id["30000001:v7"].excluded_reason is None  # -4 is an offered option here
    for key in ("30000002:v7", "30000003:v7", "30000007:V5"):
        assert by_id[key].excluded_reason == NO_ANSWER and by_id[key].true_code is None
    narnia = by_id["30000006:V5"]
    assert narnia.country_code is None and not narnia.country_specific and narnia.excluded_reason is None
    assert by_id["30000002:V6"].true_code == "2"  # 2.0 normalised


@pytest.mark.parametrize("domain_id, expected", [(3, FAMILY_EXPECTED), (6, NATID_EXPECTED)])
def test_summary_matches_hand_tally(tmp_path, domain_id, expected):
    items = _items(tmp_path, domain_id)
    summary = summarize_items(items)
    assert summary == {
        "total": expected["respondents"] * expected["questions"],
        "scoreable": expected["scoreable_items"],
        "excluded": expected["excluded_items"],
        "excluded_by_reason": expected["excluded_by_reason"],
    }
    excluded = Counter(i.excluded_reason for i in items if i.excluded_reason)
    assert excluded == Counter(expected["excluded_by_reason"])
    assert all(i.true_code in i.offered_codes for i in items if i.excluded_reason is None)
