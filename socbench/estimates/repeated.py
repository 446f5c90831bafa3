"""The repeated-split check's PPI++ means for every draw at once.

Why: ``socbench estimate`` checks its intervals on 200 i.i.d. draws per question; fitted one draw at a
time that was ~90 of the ~127 CPU seconds of a 10,000-respondent survey. A PPI++ mean, its λ and both
standard errors follow from weighted sums over a draw's labelled and unlabelled rows, so every draw is
one row of a few matrix products. Draws are with replacement: a row counts as often as it was drawn.

The arithmetic is ``ppi.ppi_mean``'s in sums (the tests compare the two draw by draw). A target whose
labelled answers are all alike in a draw is set as ``ppi_mean`` gives it, not from rounding: its mean
that value, no variance, λ 0, so its interval is that point and its gain NaN.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from socbench.estimates.ppi import covers, gain, interval


def draw_counts(row_of: np.ndarray, rows: int, draws: list[np.ndarray]) -> np.ndarray:
    """Draws x rows: how often each of a question's rows is among each draw's people (``row_of``: person
    index -> row, -1 where the person was not asked)."""
    found = [row_of[people] for people in draws]
    return np.stack([np.bincount(f[f >= 0], minlength=rows) for f in found]).astype(float)


def _alike(lab: np.ndarray, y: np.ndarray, share: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Draws x targets: whether the labelled values are all alike, and that value. A share is 0/1, so
    its count of ones says it exactly; any other target by its least and largest value."""
    n = lab.sum(1)[:, None]
    ones = lab @ y
    alike = np.where(share, (ones == 0) | (ones == n), False)
    value = np.where(ones == 0, 0.0, 1.0)
    drawn = lab > 0
    for j in np.flatnonzero(~share):
        top = np.where(drawn, y[:, j], -np.inf).max(1)
        alike[:, j], value[:, j] = top == np.where(drawn, y[:, j], np.inf).min(1), top
    return alike, value


def _sums(y: np.ndarray, yhat: np.ndarray, w: np.ndarray | None, lab: np.ndarray,
          unl: np.ndarray) -> SimpleNamespace:
    """A draw's weighted sums (draws x 1 or draws x targets), by name: ``s`` over its labelled rows, ``u``
    over its unlabelled ones; ``w``/``w2`` the weight and its square, ``y`` people's answers, ``h`` the
    model's (``n``/``N``: the rows of each part)."""
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=float)
    w2 = w * w
    wy, wh, w2y, w2h = w[:, None] * y, w[:, None] * yhat, w2[:, None] * y, w2[:, None] * yhat
    column = lambda counts, v: (counts @ v)[:, None]  # noqa: E731
    ones = np.ones(len(y))
    return SimpleNamespace(
        n=column(lab, ones), sw=column(lab, w), sw2=column(lab, w2), swy=lab @ wy, swh=lab @ wh,
        s2y=lab @ w2y, s2h=lab @ w2h, s2yy=lab @ (w2y * y), s2hh=lab @ (w2h * yhat), s2yh=lab @ (w2y * yhat),
        N=column(unl, ones), uw=column(unl, w), uw2=column(unl, w2), uwh=unl @ wh, u2h=unl @ w2h,
        u2hh=unl @ (w2h * yhat))


def ppi_means(y: np.ndarray, yhat: np.ndarray, w: np.ndarray | None, lab: np.ndarray, unl: np.ndarray,
              share: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """PPI++ means of each column of ``y`` (rows x targets) for every draw, λ tuned per column as
    ``ppi_mean`` tunes it, and their standard errors; classical means and theirs beside (each draws x
    targets); ``lab``/``unl``: ``draw_counts`` of each draw's two parts."""
    s = _sums(y, yhat, w, lab, unl)
    n, N = s.n, s.N
    c, cu = n / s.sw, N / s.uw  # each part's weights scaled to mean 1, as ppi.unit_weights
    alike, value = _alike(lab, y, share)
    my, mh, mu = np.where(alike, value, s.swy / s.sw), s.swh / s.sw, s.uwh / s.uw
    sum_g = np.where(alike, 0.0, c * (s.swy - my * s.sw))  # Σ g, g = c w (y - my): people's influence
    sq_y = np.where(alike, 0.0, s.s2yy - 2 * my * s.s2y + my ** 2 * s.sw2)  # Σ w² (y - my)²
    cross = np.where(alike, 0.0, s.s2yh - mh * s.s2y - my * s.s2h + my * mh * s.sw2)  # Σ w² (y-my)(ŷ-mh)
    sq_h = s.s2hh - 2 * mh * s.s2h + mh ** 2 * s.sw2  # Σ w² (ŷ - mh)²
    lam = np.where(alike, 0.0, _tuned_lambda(s, c, cu, my, sum_g))
    with np.errstate(divide="ignore", invalid="ignore"):
        var_g = (c ** 2 * sq_y - sum_g ** 2 / n) / (n - 1)
        sum_d = sum_g - lam * c * (s.swh - mh * s.sw)  # Σ (g - λ gh)
        var_d = (c ** 2 * (sq_y - 2 * lam * cross + lam ** 2 * sq_h) - sum_d ** 2 / n) / (n - 1)
        sum_u = cu * (s.uwh - mu * s.uw)
        var_u = (cu ** 2 * (s.u2hh - 2 * mu * s.u2h + mu ** 2 * s.uw2) - sum_u ** 2 / N) / (N - 1)
    se = np.sqrt(np.maximum(var_d, 0) / n + lam ** 2 * np.maximum(var_u, 0) / N)
    return my + lam * (mu - mh), se, my, np.sqrt(np.maximum(var_g, 0) / n)


def _tuned_lambda(s: SimpleNamespace, c: np.ndarray, cu: np.ndarray, my: np.ndarray,
                  sum_g: np.ndarray) -> np.ndarray:
    """``ppi.tuned_lambda`` in sums: the covariance of people's and the model's influences over the
    variance of the model's, pooled over both parts around their pooled mean ``p``."""
    n, N = s.n, s.N
    p = (c * s.swh + cu * s.uwh) / (n + N)
    sum_h, sum_u = c * (s.swh - p * s.sw), cu * (s.uwh - p * s.uw)
    sq_h = c ** 2 * (s.s2hh - 2 * p * s.s2h + p ** 2 * s.sw2)
    sq_u = cu ** 2 * (s.u2hh - 2 * p * s.u2h + p ** 2 * s.uw2)
    with np.errstate(divide="ignore", invalid="ignore"):
        num = (c ** 2 * (s.s2yh - p * s.s2y - my * s.s2h + my * p * s.sw2) - sum_g * sum_h / n) / n
        den = (1 + n / N) * (sq_h + sq_u - (sum_h + sum_u) ** 2 / (n + N)) / (n + N - 1)
        return np.clip(np.where(den > 1e-15, num / den, 0.0), 0, 1)


def check_question(y: np.ndarray, yhat: np.ndarray, w: np.ndarray | None, lab: np.ndarray, unl: np.ndarray,
                   full: np.ndarray, share: np.ndarray, min_labelled: int, alpha: float
                   ) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """One question over the draws: how often each interval held the full-sample value (PPI, classical),
    each usable draw's gains, and each draw's headline gain (NaN: too few labelled in that draw)."""
    use, heads = (lab.sum(1) >= min_labelled) & (unl.sum(1) >= 2), np.full(len(lab), np.nan)
    if not use.any():
        return np.zeros((2, y.shape[1])), [], heads
    estimate, se, classical, classical_se = ppi_means(y, yhat, w, lab[use], unl[use], share)
    held = [covers(interval(centre, spread, alpha, share), full).sum(0)
            for centre, spread in ((estimate, se), (classical, classical_se))]
    gains = gain(se, classical_se)
    heads[use] = gains[:, 0]
    return np.array(held, dtype=float), list(gains), heads
