"""The repeated-split check's PPI++ means for every draw at once (``estimates.repeated``) against
``ppi.ppi_mean`` fitted draw by draw, as the check ran before: the same coverage counts, headline gains
and gains to 1e-9, weighted and not, with rows drawn more than once, targets whose labelled answers are
all alike in a draw (their interval a point, their gain NaN, as ppi_mean gives them) and a model that
gives everyone the same answer (gain exactly 1)."""

from __future__ import annotations

import numpy as np
import pytest

from socbench.estimates.ppi import covers, ppi_mean
from socbench.estimates.repeated import check_question, draw_counts


def one_by_one(y, yhat, w, row_of, draws, full, share, min_labelled, alpha):
    """The check as it ran before: one ppi_mean per draw."""
    covered, gains, heads = np.zeros((2, y.shape[1])), [], []
    for lab_people, unl_people in draws:
        lab, unl = (row_of[p][row_of[p] >= 0] for p in (lab_people, unl_people))
        if len(lab) < min_labelled or len(unl) < 2:
            heads.append(np.nan)
            continue
        weights = (None, None) if w is None else (w[lab], w[unl])
        est = ppi_mean(y[lab], yhat[lab], yhat[unl], *weights)
        covered += [covers(est.ci(alpha, classical=c, share=share), full) for c in (False, True)]
        gains.append(est.gain)
        heads.append(est.gain[0])
    return covered, gains, heads


def survey(seed: int, people: int = 400, codes: int = 4, weighted: bool = False, constant: bool = False):
    """A question's targets (the mean code, then each code's share) over ``people``, a tenth not asked;
    the model's answers right about half the time; code 4 rare (a share all 0 in small draws)."""
    rng = np.random.default_rng(seed)
    asked = rng.random(people) > 0.1
    rows = int(asked.sum())
    true = rng.choice(codes, size=rows, p=[0.5, 0.3, 0.19, 0.01][:codes])
    model = np.where(rng.random(rows) < 0.5, true, rng.integers(codes, size=rows))
    if constant:
        model[:] = 1
    eye = np.eye(codes)
    values = np.arange(1, codes + 1, dtype=float)
    y = np.column_stack([eye[true] @ values, eye[true]])
    yhat = np.column_stack([eye[model] @ values, eye[model]])
    row_of = np.full(people, -1)
    row_of[asked] = np.arange(rows)
    w = rng.uniform(0.3, 3.0, rows) if weighted else None
    full = np.average(y, axis=0, weights=w)
    share = np.array([False] + [True] * codes)
    return y, yhat, w, row_of, full, share


def draws(people: int, n: int, repeats: int, seed: int):
    rng = np.random.default_rng(seed)
    return [(rng.integers(people, size=n), rng.integers(people, size=people - n)) for _ in range(repeats)]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n", [12, 40, 200])
def test_every_draw_at_once_equals_one_ppi_mean_per_draw(weighted, n):
    y, yhat, w, row_of, full, share = survey(7 + n, weighted=weighted)
    ds = draws(len(row_of), n, 60, seed=n)
    lab, unl = (draw_counts(row_of, len(y), [d[i] for d in ds]) for i in (0, 1))
    covered, gains, heads = check_question(y, yhat, w, lab, unl, full, share, 10, 0.05)
    want_covered, want_gains, want_heads = one_by_one(y, yhat, w, row_of, ds, full, share, 10, 0.05)
    assert np.array_equal(covered, want_covered)
    np.testing.assert_allclose(heads, want_heads, rtol=1e-9)  # NaN where NaN
    np.testing.assert_allclose(np.array(gains), np.array(want_gains), rtol=1e-9)
    if n == 12:  # small draws: the rare code's share is all 0 in some, so its gain is NaN there
        assert np.isnan(np.array(want_gains)[:, -1]).any()


def test_a_model_giving_everyone_one_answer_gains_exactly_one():
    y, yhat, w, row_of, full, share = survey(3, constant=True)
    ds = draws(len(row_of), 100, 20, seed=1)
    lab, unl = (draw_counts(row_of, len(y), [d[i] for d in ds]) for i in (0, 1))
    _, gains, heads = check_question(y, yhat, w, lab, unl, full, share, 10, 0.05)
    assert heads.tolist() == [1.0] * 20
    assert np.all(np.array(gains)[:, :-1] == 1.0)


def test_rows_drawn_twice_count_twice():
    assert draw_counts(np.array([0, -1, 1]), 2, [np.array([0, 0, 1, 2])]).tolist() == [[2.0, 1.0]]
