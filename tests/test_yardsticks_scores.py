"""SimBench's score, Cramér's V, subgroup gaps, heterogeneity, the persona verdict, by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency, entropy
from scipy.stats.contingency import association

from socbench.metrics.headline import lead_sentence, structure_sentence
from socbench.metrics.persona_groups import persona_effect, verdict
from socbench.metrics.simbench import simbench_score, total_variation
from socbench.metrics.structure import cramers_v, heterogeneity_ratio, structure
from socbench.types import ScoredItem
from socbench.yardsticks import pooled_simbench

CODES = ("1", "2", "3", "4")


def si(pid: int, true: str, pred: str | None, q: str = "Q1", country: str | None = "DE", codes=CODES,
       groups: dict[str, str] | None = None) -> ScoredItem:
    error = None if pred in codes else "no code"
    return ScoredItem(pid, q, country, true, pred, error is None and pred == true, error, False, tuple(codes),
                      None, groups or {})


# ------------------------------------------------------------------------- SimBench
def test_simbench_worked_by_hand() -> None:
    two = ("1", "2")
    # DE: humans 8x"1" 2x"2" -> (.8, .2); model all "1" -> (1, 0): TV = .2; TV(uniform) = .3.
    de = [si(p, "1" if p < 8 else "2", "1", country="DE", codes=two) for p in range(10)]
    # FR: humans 5/5 -> (.5, .5) = uniform, TV(uniform) = 0; model 5/5 -> TV = 0.
    fr = [si(10 + p, "1" if p < 5 else "2", "1" if p % 2 else "2", country="FR", codes=two)
          for p in range(10)]
    found = simbench_score(de + fr)
    # Normaliser = mean uniform TV = (.3 + 0) / 2 = .15. DE: 100 (1 - .2/.15) = -33.3; FR: 100.
    assert found.norm == pytest.approx(0.15)
    assert found.score == pytest.approx((100 * (1 - 0.2 / 0.15) + 100) / 2)
    # Across domains: every row with its own domain's normaliser, averaged.
    other = simbench_score(de)  # norm .3: DE scores 33.3
    rows = [{"simbench_score": s.score, "simbench_questions": len(s.rows)} for s in (found, other)]
    assert pooled_simbench(rows) == pytest.approx((-100 / 3 + 100 + 100 / 3) / 3)
    assert total_variation([1, 0, 0], [0, 0.5, 0.5]) == 1.0


def test_simbench_thresholds_and_no_answers() -> None:
    few = [si(p, "1", "1") for p in range(9)]  # 9 < 10 respondents: no row
    assert math.isnan(simbench_score(few).score) and not simbench_score(few).rows
    silent = [si(p, "1", None) for p in range(10)]
    assert math.isnan(simbench_score(silent).score) and not simbench_score(silent).rows  # left out, not 0


# ---------------------------------------------------------------------- structure
def test_cramers_v_against_scipy() -> None:
    table = np.array([[20, 5, 3], [4, 18, 9], [6, 7, 15]])
    chi2 = chi2_contingency(table, correction=False)[0]
    assert cramers_v(table) == pytest.approx(math.sqrt(chi2 / (table.sum() * 2)))
    assert cramers_v(table) == pytest.approx(association(table, method="cramer"))
    assert cramers_v(np.array([[5, 0], [7, 0]])) == 0.0  # one answer: no association
    assert cramers_v(np.array([[5, 0, 2], [7, 0, 1]])) == pytest.approx(association([[5, 2], [7, 1]]))


def test_structure_v_and_planted_gap_signs() -> None:
    rng = np.random.default_rng(0)
    items_same, items_reversed = [], []
    for pid in range(80):
        sex = "female" if pid % 2 else "male"
        true = str(rng.integers(3, 5) if sex == "female" else rng.integers(1, 3))  # women answer higher
        flipped = {"3": "1", "4": "2", "1": "3", "2": "4"}[true]
        groups = {"sex": sex}
        items_same.append(si(pid, true, true, groups=groups))
        items_reversed.append(si(pid, true, flipped, groups=groups))
    same, reversed_ = structure(items_same), structure(items_reversed)
    sex_pairs = [p for p in same.pairs if p.attribute == "sex"]
    assert len(sex_pairs) == 1
    table = np.zeros((2, 4), dtype=int)
    for it in items_same:
        table[int(it.groups["sex"] == "male"), int(it.true_code) - 1] += 1
    assert sex_pairs[0].real_v == pytest.approx(association(table[:, table.sum(0) > 0], method="cramer"))
    assert same.gaps == 1 and same.gaps_same_sign == 1 and same.sign_agreement == 1.0
    (a, b, real_gap, sim_gap), = sex_pairs[0].gaps
    assert (a, b) == ("female", "male") and real_gap > 1 and sim_gap == pytest.approx(real_gap)
    assert reversed_.gaps == 1 and reversed_.gaps_same_sign == 0
    # one country only: no country pair; with one pair the profile correlation is undefined
    assert [p.attribute for p in same.pairs] == ["sex"] and math.isnan(same.profile_correlation)


def test_unclear_gap_is_not_counted() -> None:
    codes = [str(1 + (pid // 2) % 4) for pid in range(60)]  # both sexes answer 1..4 alike ...
    codes[1] = "2"  # ... but one woman: a gap of 1/30 of a position, far from p < 0.05
    items = [si(pid, code, code, groups={"sex": "female" if pid % 2 else "male"})
             for pid, code in enumerate(codes)]
    found = structure(items)
    (pair,) = found.pairs
    assert pair.gaps == ()
    assert found.gaps == 0 and math.isnan(found.sign_agreement)


def test_heterogeneity_by_hand() -> None:
    h_real = math.log(2)
    h_sim = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert heterogeneity_ratio(["1", "1", "2", "2"], ["1", "1", "1", "2"]) == pytest.approx(h_sim / h_real)
    assert heterogeneity_ratio(["1", "2"], ["1", "1"]) == 0.0
    assert math.isnan(heterogeneity_ratio(["1", "1"], ["1", "2"]))
    rng = np.random.default_rng(0)  # bit for bit the entropies of pandas' value counts
    for _ in range(200):
        real, sim = ([str(c) for c in rng.integers(1, int(rng.integers(2, 9)), int(n))]
                     for n in rng.integers(1, 60, 2))
        h_real, h_sim = (entropy(pd.Series(v).value_counts().to_numpy()) for v in (real, sim))
        expected = h_sim / h_real if h_real > 0 else math.nan
        assert heterogeneity_ratio(real, sim) == pytest.approx(expected, rel=0, abs=0, nan_ok=True)


# -------------------------------------------------------------------- persona effect
def test_persona_effect_mcnemar_by_hand() -> None:
    persona, control = [], []
    for pid in range(40):
        for q in range(5):
            k = q * 40 + pid  # 200 items: 10 persona-only right, 2 control-only right, 100 both, 88 neither
            a, b = ((True, False) if k < 10 else (False, True) if k < 12 else (True, True) if k < 112
                    else (False, False))
            groups = {"sex": "female" if pid % 2 else "male"}
            persona.append(si(pid, "1", "1" if a else "2", q=f"Q{q}", groups=groups))
            control.append(si(pid, "1", "1" if b else "2", q=f"Q{q}"))
    control.append(si(99, "1", "1"))
    found = persona_effect(persona, control)
    # exact two-sided binomial on 12 discordant pairs, 10 vs 2: 2 * (C(12,0)+C(12,1)+C(12,2)) / 2^12
    assert found.overall.mcnemar_p == pytest.approx(2 * (1 + 12 + 66) / 4096)
    assert found.overall.difference == pytest.approx((10 - 2) / 200)
    assert (found.overall.a_only, found.overall.b_only, found.overall.n_items) == (10, 2, 200)  # 99: apart
    low, high = found.overall.difference_ci
    words = f"the persona helped: +0.04 [{low:+.2f}, {high:+.2f}], McNemar p = 0.0386"
    assert verdict(found.overall) == words
    assert set(found.groups["sex"]) == {"female", "male"}
    assert sum(c.n_items for c in found.groups["sex"].values()) == 200


def test_verdict_words() -> None:
    from socbench.metrics.uncertainty import PairedComparison

    def comparison(low: float, high: float) -> PairedComparison:
        return PairedComparison(10, 5, .5, .45, .05, (low, high), 1, 1, 1, 1, 0.003)

    assert verdict(comparison(0.02, 0.08)) == "the persona helped: +0.05 [+0.02, +0.08], McNemar p = 0.003"
    assert verdict(comparison(-0.1, -0.01)).startswith("the persona hurt")
    assert verdict(comparison(-0.01, 0.1)).startswith("no clear difference")


# ------------------------------------------------------------------------- headline
def test_lead_sentence() -> None:
    assert lead_sentence(0.41, (0.38, 0.44), 0.44, 0.38) == (
        "accuracy 0.41 [0.38, 0.44]; demographic model 0.44; majority 0.38 — "
        "the model does not beat a classifier on the same attributes")
    assert lead_sentence(0.50, (0.47, 0.53), 0.44, 0.38).endswith("the model beats both baselines")
    assert lead_sentence(0.45, (0.42, 0.48), 0.44, 0.38).endswith("but within its uncertainty")
    assert lead_sentence(0.30, None, 0.2, 0.38).endswith("always answering the most common answer")


def test_no_profile_correlation_is_said_in_true_grammatical_clauses() -> None:
    """Issue 42: "cannot be compared group by group (in the survey they do: ...)" (failed before the fix):
    each reason for a missing correlation in a clause of its own, true of the figures."""
    figures = {"profile_correlation": None, "mean_real_v": 0.3, "mean_simulated_v": 0.2, "pairs": 2}
    few = structure_sentence(figures)
    assert few == ("With 2 question x attribute pairs large enough (3 are needed), how group differences "
                   "follow the survey's is not measured (average association 0.20 simulated vs 0.30 real).")
    same = structure_sentence({**figures, "pairs": 5})
    assert same.startswith("The association is the same in every question x attribute pair, in the "
                           "simulated or in the real answers, so how group differences follow the survey's")
    alike = structure_sentence({**figures, "mean_simulated_v": 0.0, "pairs": 5})
    assert alike == ("The simulated answers do not differ between groups at all; people's answers do "
                     "(average association 0.30 on a 0-1 scale).")
    neither = structure_sentence({**figures, "mean_simulated_v": 0.0, "mean_real_v": 0.0, "pairs": 5})
    assert neither == ("The simulated answers do not differ between groups at all; neither do people's "
                       "answers.")
    assert all("in the survey they do" not in s for s in (few, same, alike, neither))


def test_no_interval_no_verdict() -> None:
    """Issue 42 (failed before the fix): with 5 respondents (no CI) 0.23 against 0.20 read "the model beats
    both baselines"."""
    sentence = lead_sentence(0.23, (math.nan, math.nan), 0.20, 0.20)
    assert "beats" not in sentence
    assert sentence.endswith("the model is ahead of a classifier on the same attributes, with too few "
                             "respondents for an interval to tell")
    assert "beats" not in lead_sentence(0.23, None, 0.20, 0.20)
