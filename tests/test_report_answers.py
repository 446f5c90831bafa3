"""The report leads with the answer: per domain the lead sentence, the structure figures of the model
and of the demographic model side by side, and persona vs no persona in one line and per group.

Runs are scored and written by the real code; the yardsticks the score stage stores are planted
by hand in the result files (a stuck model keeps no structure, the classifier keeps it), so every
line is checked against numbers the test set. The persona effect is checked against a paired
difference and McNemar's exact test computed here by hand.
"""

from __future__ import annotations

import csv
import html
import json
import math
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from scipy.stats import binomtest

from socbench.log.read import ModelRun
from socbench.log.write import write_domain_files
from socbench.metrics.headline import lead_sentence, structure_sentence
from socbench.metrics.structure import structure
from socbench.report.answers import _simbench, persona_pairs
from socbench.report.html import ALIGNMENT, SCORES, distribution_cells, groups_title, write_report
from socbench.report.html_sections import DEFINITIONS, NOTES, lead
from socbench.report.labels import grouping_words
from socbench.report.markdown import write_run_summary
from socbench.scoring import score_domain
from socbench.types import DomainData, Extraction, Item, Respondent, ScoredItem
from support.records import read_detailed

OPTS = (("1", "Agree"), ("2", "Neither"), ("3", "Disagree"), ("4", "Strongly disagree"))
DOMAINS = ((1, "Citizenship"), (3, "Family"))
MODEL, OLD = "org/Model-1.7B", "org/Old-135M"
PERSONA, CONTROL = "org_Model-1.7B", "org_Model-1.7B-no_persona"
STUCK_S = {"profile_correlation": None, "mean_real_v": 0.31, "mean_simulated_v": 0.0, "gaps": 2,
           "gaps_same_sign": 0, "sign_agreement": 0.0, "heterogeneity_ratio": 0.0, "pairs": 6}
CLASSIFIER_S = {"profile_correlation": 0.93, "mean_real_v": 0.31, "mean_simulated_v": 0.27, "gaps": 2,
                "gaps_same_sign": 2, "sign_agreement": 1.0, "heterogeneity_ratio": 0.8, "pairs": 6}
YARDSTICKS = {
    "demographic_model": {"accuracy": 0.55, "macro_f1": 0.41, "per_question_macro_f1": 0.4,
                          "learner": "logistic", "folds": 5, "fallbacks": {}, "distributions": {}},
    "simbench": {"model": -12.5, "demographic_model": 31.0, "questions": 3, "norm": 0.4},
    "structure": {"model": STUCK_S, "demographic_model": CLASSIFIER_S,
                  "comparison": {"difference": -0.93, "ci_low": -0.99, "ci_high": -0.85, "level": 0.95}},
}
KEYS = {"demographic_model", "profile_correlation", "mean_real_v", "mean_simulated_v", "gaps_same_sign",
        "sign_agreement", "heterogeneity_ratio", "per_question_macro_f1", "majority_question",
        "majority_country_question", "age_group"}


def right(persona: bool, female: bool, rng: random.Random) -> bool:
    """With persona: always right for women, half the time for men; without: half the time."""
    return True if persona and female else rng.random() < 0.5


def make_run(out: Path, model: str, run: str, *, persona: bool, seed: int, yardsticks: dict | None,
             cache: Path) -> None:
    """``cache``: the session's memo folder: the demographic model (the same people and answers in every
    run) is fitted once per domain and read back, as on a real rerun; the files are the same."""
    rng, truth = random.Random(seed), random.Random(99)  # the same people and answers in every run
    results = []
    for domain_id, name in DOMAINS:
        people, items, extractions = [], [], {}
        for i in range(40):
            pid, country = domain_id * 1000 + i, ("DE", "JP")[i % 2]
            people.append(Respondent(pid, country, country, {
                "Sex of Respondent": ("Male", "Female")[i % 2 == 0 or i % 5 == 0],
                "Age of respondent": f"{20 + i if i < 36 else 70} years"}, {}))  # 8 people over 60
            female = i % 2 == 0 or i % 5 == 0
            for q in ("V1", "V2", "V3"):
                item = Item(pid, q, country, OPTS, str(truth.randint(1, 4)), False)
                items.append(item)
                wrong = str(int(item.true_code) % 4 + 1)
                answer = item.true_code if right(persona, female, rng) else wrong
                extractions[item.item_id] = Extraction(answer)
        data = DomainData(domain_id, name, (), tuple(people), {}, "synthetic")
        scored = score_domain(data, items, extractions, model=model, run=run, cache=cache)
        detailed, _ = write_domain_files(out, scored.result, scored.items)
        results.append(scored.result)
        payload = json.loads(detailed.read_text())  # the yardsticks planted, or none (an older file)
        payload.pop("yardsticks", None)
        payload["baselines"].pop("demographic_model", None)
        detailed.write_text(json.dumps({**payload, **({"yardsticks": yardsticks} if yardsticks else {})}))
    write_run_summary(out, run, results)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, memo_cache: Path) -> dict:
    out = tmp_path_factory.mktemp("results")
    make_run(out, MODEL, PERSONA, persona=True, seed=1, yardsticks=YARDSTICKS, cache=memo_cache)
    make_run(out, MODEL, CONTROL, persona=False, seed=2, yardsticks=YARDSTICKS, cache=memo_cache)
    make_run(out, OLD, "org_Old-135M", persona=False, seed=3, yardsticks=None,  # written before yardsticks
             cache=memo_cache)
    paths = write_report(out, out / "site")
    with (out / "site" / "leaderboard.csv").open() as handle:
        rows = {(r["run"], r["domain"]): r for r in csv.DictReader(handle)}
    return {"out": out, "page": paths.html.read_text(), "md": paths.leaderboard_md.read_text(), "rows": rows}


def detailed(out: Path, run: str) -> dict[str, dict]:
    return {p.name.removesuffix("_detailed.json"): read_detailed(p)
            for p in sorted((out / run).glob("*_detailed.json"))}


def sections(page: str) -> list[tuple[str, str, str]]:
    """(title, first line, the rest) of every domain section of the page."""
    found = re.findall(r"<section class='domain'><h4>(.*?)</h4><p class='headline'>(.*?)</p>(.*?)</section>",
                       page)
    return [(html.unescape(t), html.unescape(lead), rest) for t, lead, rest in found]


def expected_lead(report: dict, run: str, domain: str, stored: dict) -> str:
    """The lead from the details by hand: accuracy over items, the CI of the leaderboard, the
    classifier's stored accuracy (NaN when absent) and the stronger majority baseline."""
    items = stored["details"]
    accuracy = sum(d["correct"] for d in items) / len(items)
    row = report["rows"][(run, domain)]
    demographic = (stored.get("yardsticks") or {}).get("demographic_model", {}).get("accuracy", math.nan)
    majority = max(stored["baselines"]["majority_question"], stored["baselines"]["majority_country_question"])
    return lead_sentence(accuracy, (float(row["accuracy_ci_low"]), float(row["accuracy_ci_high"])),
                         demographic, majority)


def test_every_domain_section_opens_with_its_lead_sentence(report: dict) -> None:
    found = {title: (lead, rest) for title, lead, rest in sections(report["page"])}
    runs = (PERSONA, CONTROL, "org_Old-135M")
    assert len(found) == len(runs) * len(DOMAINS)
    for run in runs:
        for domain, stored in detailed(report["out"], run).items():
            title = f"{'Family' if domain == 'Family' else 'Citizenship'} — {run}"
            lead, rest = found[title]
            assert lead == expected_lead(report, run, domain, stored)
            assert f"\n### {title}\n\n{lead}\n" in report["md"]  # the markdown report says the same
    lead, rest = found[f"Citizenship — {PERSONA}"]
    assert "; demographic model 0.55; majority " in lead
    assert "demographic model n/a" in found["Citizenship — org_Old-135M"][0]
    assert "score the run again" in found["Citizenship — org_Old-135M"][1]


def test_structure_of_model_and_classifier_side_by_side(report: dict) -> None:
    _, _, rest = next(s for s in sections(report["page"]) if s[0] == f"Family — {PERSONA}")
    text = html.unescape(rest)
    assert f"This model: {structure_sentence(STUCK_S)}" in text
    classifier = structure_sentence(CLASSIFIER_S, "the classifier")
    assert f"A classifier on the same attributes: {classifier}" in text
    assert "do not differ between groups at all" in text and "the model gets the direction of 0 right" in text
    assert "the classifier gets the direction of 2 right" in text
    assert "the model scores -12.5, the classifier 31.0, over 3 question x country groups." in text
    assert "not varied at all" in text and "follow the real ones closely (correlation 0.93" in text
    assert ("reproduces the survey's group differences more closely than the model (correlation n/a: no "
            "differences between groups vs 0.930; difference -0.930, 95% CI [-0.990, -0.850]") in text
    # the words agree with the table's n/a, not "0.00"
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", rest)]
    assert cells == ["this model", "-12.5", "n/a", "0.000 / 0.310", "0 of 2", "0.000",
                     "classifier on the same attributes", "31.0", "0.930", "0.270 / 0.310", "2 of 2", "0.800"]


def test_stored_figures_read_as_the_computed_ones() -> None:
    """A Structure and the same figures as a result file stores them (NaN as null) read alike."""
    rng = random.Random(4)
    items = [ScoredItem(p, q, "DE", str(1 + (p % 2) * 2 + (rng.random() < 0.3)), str(rng.choice("1234")),
                        False, None, False, ("1", "2", "3", "4"), groups={"sex": ("male", "female")[p % 2]})
             for p in range(80) for q in ("V1", "V2")]
    found = structure(items)
    stored = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in vars(found).items()}
    assert structure_sentence({**stored, "pairs": len(found.pairs)}) == structure_sentence(found)


def test_persona_effect_in_one_line_and_per_group_by_hand(report: dict) -> None:
    with_p, without = detailed(report["out"], PERSONA), detailed(report["out"], CONTROL)
    a, b = ({(dom, d["person_id"], d["question_id"]): d["correct"]
             for dom, f in run.items() for d in f["details"]} for run in (with_p, without))
    difference = (sum(a.values()) - sum(b[k] for k in a)) / len(a)
    only_a, only_b = sum(a[k] and not b[k] for k in a), sum(b[k] and not a[k] for k in a)
    p = binomtest(only_a, only_a + only_b, 0.5).pvalue
    persona_part = report["page"].split("<h3 id='persona'>")[1]
    line = html.unescape(re.search(r"<p class='headline'>(.*?)</p>", persona_part).group(1))
    assert line.startswith(f"{PERSONA} against its run without persona ({CONTROL}): the persona helped: "
                           f"{difference:+.2f} [")
    assert line.endswith(f"McNemar p = {p:.3g} (accuracy {sum(a.values()) / len(a):.3f} with, "
                         f"{sum(b.values()) / len(b):.3f} without, on {len(a)} items answered in both).")
    assert line in report["md"]
    rows = {cells[1]: cells for cells in (
        [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
        for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", persona_part.split("</table>")[0]) if "<td" in tr)}
    sex = {pid: g["sex"] for f in with_p.values() for pid, g in f["persona_groups"].items()}
    for group in ("female", "male"):
        keys = [k for k in a if sex[str(k[1])] == group]
        diff = (sum(a[k] for k in keys) - sum(b[k] for k in keys)) / len(keys)
        assert rows[group][0] == "sex" and rows[group][3] == str(len(keys))
        assert rows[group][6].startswith(f"{diff:+.3f}")
    assert rows["female"][8] == "the persona helped"
    assert rows["60+"][6].endswith("n/a (n < 10)") and rows["60+"][8] == "too few respondents to tell"
    assert "<tr class='few'><td class='txt'>age group</td><td>60+</td>" in persona_part


def test_no_internal_names_where_a_person_reads(report: dict) -> None:
    body = report["page"].split("</style>", 1)[1]
    visible = html.unescape(re.sub(r"<[^>]+>", " ", body))
    assert not KEYS & set(re.findall(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b", visible))
    assert not KEYS & set(re.findall(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b", report["md"].split("## By domain")[0]))


def test_no_control_run_says_how_to_get_one(tmp_path: Path, memo_cache: Path) -> None:
    make_run(tmp_path, MODEL, PERSONA, persona=True, seed=1, yardsticks=YARDSTICKS, cache=memo_cache)
    page = write_report(tmp_path, tmp_path / "site").html.read_text()
    assert "run the same model with --no_persona into the same results folder" in page


def test_control_runs_pair_with_their_own_variant() -> None:
    """``-no_persona`` pairs with the same run name without it, variants included, and only if present."""
    runs = [ModelRun(name, "org/M", Path(name), ()) for name in (
        "org_M", "org_M-no_persona", "org_M-logprobs", "org_M-logprobs-no_persona", "org_N-no_persona")]
    assert [(a.run, b.run) for a, b in persona_pairs(runs)] == [
        ("org_M", "org_M-no_persona"), ("org_M-logprobs", "org_M-logprobs-no_persona")]


def test_a_grouping_variable_is_no_country_in_the_report() -> None:
    """Issue 42: the distribution level of a study grouped by province read "country x question", and the
    SimBench line "question x country groups"; both name the grouping variable, ISSP keeps "country"."""
    row = {"domain": "Ces", "domain_id": 1, "run": "m", "distribution_level": "country_question",
           "grouping": "province", "kendall_tau_p": 0.1, **{f"{name}_score": 0.5 for name in SCORES},
           **{name: 0.5 for name in ALIGNMENT}}
    assert distribution_cells(row)[2] == "province x question"
    assert distribution_cells({**row, "grouping": "country"})[2] == "country x question"
    (line,) = _simbench({"model": 40.0, "demographic_model": 30.0, "questions": 12}, "province")
    assert "12 question x province groups" in line and "country" not in line
    run = SimpleNamespace(run="m", model="m", grouping="province", summary=None, domains=[])
    board = SimpleNamespace(ranked=lambda: [run], runs=[run])
    assert groups_title(board.ranked()) == "2. For whom? By province and persona groups"
    run.grouping = "country"
    assert groups_title(board.ranked()) == "2. For whom? Countries and persona groups"
    run.grouping = "province"
    texts = [text for _, text in DEFINITIONS] + [NOTES["leaderboard"]]
    words = " ".join([lead("groups", "province"), *(grouping_words(text, "province") for text in texts)])
    assert "country" not in words.lower() and "Accuracy per province and persona group" in words
    assert "in the respondent's province" in words and lead("groups") == lead("groups", "country")
    assert grouping_words("Countries differ; a country", "year") == "Year groups differ; a year"
