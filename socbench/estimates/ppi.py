"""Prediction-powered inference: PPI++ (Angelopoulos, Duchi & Zrnic 2024) over numpy arrays.

Labelled people (``y``: real answers, ``yhat``: the model's for them) and unlabelled ones (``yhat_u``)
give an estimate unbiased whatever the model is; λ (``lam``, variance-minimising, in [0, 1]) weighs the
model in, λ = 0 is the classical estimate. Design weights enter as Hajek means (mean 1 per sample) with
the linearised variance; ``ppi_py``'s conventions otherwise (``bench/ppi_reference.py`` and the tests
check against it). Variances use ddof 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

Family = Literal["ols", "logistic"]


@dataclass(frozen=True)
class Estimate:
    """PPI++ and classical estimates of a vector (one entry per option, or per coefficient)."""

    estimate: np.ndarray
    se: np.ndarray
    classical: np.ndarray
    classical_se: np.ndarray
    lam: np.ndarray  # λ per entry (a mean), or one λ repeated (a regression)
    rho: np.ndarray  # PPI correlation of people's and the model's answers (Broska et al.)
    n: int
    N: int

    @property
    def gain(self) -> np.ndarray:
        """Effective sample size as a multiple of n: humans the classical interval would need (NaN
        where either interval has no width: every labelled answer alike)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (self.classical_se / self.se) ** 2
        return np.where((self.se > 0) & (self.classical_se > 0), ratio, np.nan)

    def ci(self, alpha: float = 0.05, classical: bool = False) -> tuple[np.ndarray, np.ndarray]:
        centre, se = (self.classical, self.classical_se) if classical else (self.estimate, self.se)
        half = z_value(alpha) * se
        return centre - half, centre + half


def z_value(alpha: float) -> float:
    """The normal quantile of a two-sided 1 - alpha interval."""
    return NormalDist().inv_cdf(1 - alpha / 2)


def unit_weights(w: np.ndarray | None, n: int) -> np.ndarray:
    """Design weights scaled to mean 1 (none: all 1)."""
    return np.ones(n) if w is None else np.asarray(w, dtype=float) * (n / np.sum(w))


def tuned_lambda(g: np.ndarray, gh: np.ndarray, gu: np.ndarray,
                 inv_h: np.ndarray | None = None) -> np.ndarray:
    """PPI++'s variance-minimising λ in [0, 1] from the gradients on people (``g``), on the model's
    answers for them (``gh``) and for the unlabelled (``gu``): per column for a mean (``inv_h``
    None), else one λ for the trace of a regression's sandwich. No model variance: λ = 0."""
    n, N = len(g), len(gu)
    gc, hc = g - g.mean(0), gh - gh.mean(0)
    cov = gc.T @ hc / n
    cov = cov + cov.T
    var = np.atleast_2d(np.cov(np.vstack([gh, gu]), rowvar=False))
    if inv_h is None:
        num, den = np.diag(cov), 2 * (1 + n / N) * np.diag(var)
    else:
        num, den = np.trace(inv_h @ cov @ inv_h), 2 * (1 + n / N) * np.trace(inv_h @ var @ inv_h)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(den > 1e-15, num / den, 0.0), 0, 1)


def ppi_correlation(g: np.ndarray, gh: np.ndarray) -> np.ndarray:
    """Correlation of the gradients on people and on the model's answers, per column, capped at
    1 - 1/n as ``ppi_py`` does (0 where the model's answers do not vary)."""
    gc, hc = g - g.mean(0), gh - gh.mean(0)
    den = np.sqrt((gc ** 2).sum(0) * (hc ** 2).sum(0))
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(den > 0, (gc * hc).sum(0) / den, 0.0)
    return np.minimum(rho, 1 - 1 / len(g))


def _columns(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    return a.reshape(len(a), -1)


def ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, w: np.ndarray | None = None,
             w_u: np.ndarray | None = None, lam: float | np.ndarray | None = None) -> Estimate:
    """PPI++ mean of each column of ``y`` (n x d; an option's indicator gives its share), λ tuned
    per column at the λ = 1 estimate unless given."""
    y, yhat, yhat_u = _columns(y), _columns(yhat), _columns(yhat_u)
    n, N = len(y), len(yhat_u)
    w, w_u = unit_weights(w, n)[:, None], unit_weights(w_u, N)[:, None]
    imputed, labelled_model = (w_u * yhat_u).mean(0), (w * yhat).mean(0)
    classical = (w * y).mean(0)

    def grads(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return w * (y - theta), w * (yhat - theta), w_u * (yhat_u - theta)

    if lam is None:
        lam = tuned_lambda(*grads(imputed + classical - labelled_model))
    lam = np.broadcast_to(np.asarray(lam, dtype=float), classical.shape)
    theta = lam * imputed + classical - lam * labelled_model
    g, gh, gu = grads(theta)
    se = np.sqrt(np.var(g - lam * gh, axis=0, ddof=1) / n + np.var(lam * gu, axis=0, ddof=1) / N)
    classical_se = np.sqrt(np.var(w * (y - classical), axis=0, ddof=1) / n)
    return Estimate(theta, se, classical, classical_se, lam, ppi_correlation(g, gh), n, N)


def _link(family: Family, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and its derivative at the linear predictor."""
    from scipy.special import expit  # here, as scipy.optimize below: a report that imports this needs neither

    if family == "ols":
        return eta, np.ones_like(eta)
    mu = expit(eta)
    return mu, mu * (1 - mu)


def _wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    root = np.sqrt(w)
    return np.linalg.lstsq(x * root[:, None], y * root, rcond=None)[0]


def _fit(family: Family, x, y, yhat, x_u, yhat_u, w, w_u, lam: float) -> np.ndarray:
    """The PPI point estimate at ``lam``: OLS as imputed plus rectifier fit (PPI, 2023); logistic
    as the minimiser of the rectified loss over the stacked rows (signed row weights)."""
    if family == "ols":
        return _wls(x_u, lam * yhat_u, w_u) + _wls(x, y - lam * yhat, w)
    rows = np.vstack([x_u, x, x])
    target = np.concatenate([yhat_u, y, yhat])
    c = np.concatenate([lam * w_u / len(x_u), w / len(x), -lam * w / len(x)])

    def loss(t):
        eta = rows @ t
        return c @ (np.logaddexp(0, eta) - target * eta), rows.T @ (c * (_link(family, eta)[0] - target))

    def hess(t):
        mu = _link(family, rows @ t)[0]
        return (rows * (c * mu * (1 - mu))[:, None]).T @ rows

    from scipy.optimize import minimize

    start = np.zeros(x.shape[1])
    return minimize(loss, start, jac=True, hess=hess, method="trust-exact", options={"gtol": 1e-10}).x


def _stats(family: Family, theta, x, y, yhat, x_u, yhat_u, w, w_u, use_unlabelled: bool = True):
    """Gradients on people, on the model's answers, on the unlabelled, and the inverse Hessian."""
    (mu, d), (mu_u, d_u) = _link(family, x @ theta), _link(family, x_u @ theta)
    g, gh = x * (w * (mu - y))[:, None], x * (w * (mu - yhat))[:, None]
    gu = x_u * (w_u * (mu_u - yhat_u))[:, None]
    hessian = (x * (w * d)[:, None]).T @ x
    if use_unlabelled:
        hessian = (hessian + (x_u * (w_u * d_u)[:, None]).T @ x_u) / (len(x) + len(x_u))
    else:
        hessian = hessian / len(x)
    return g, gh, gu, np.linalg.inv(hessian)


def _sandwich_se(g, gh, gu, inv_h, lam: float) -> np.ndarray:
    n, N, d = len(g), len(gu), g.shape[1]
    inner = np.cov((g - lam * gh).T).reshape(d, d) + n / N * np.cov((lam * gu).T).reshape(d, d)
    return np.sqrt(np.diag(inv_h @ inner @ inv_h) / n)


def ppi_regression(family: Family, x: np.ndarray, y: np.ndarray, yhat: np.ndarray, x_u: np.ndarray,
                   yhat_u: np.ndarray, w: np.ndarray | None = None, w_u: np.ndarray | None = None,
                   lam: float | None = None) -> Estimate:
    """PPI++ coefficients of an OLS or logistic regression of the answer on ``x`` (with its own
    intercept column), one λ tuned at the λ = 1 estimate unless given; classical beside it."""
    x, x_u = np.asarray(x, dtype=float), np.asarray(x_u, dtype=float)
    y, yhat, yhat_u = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_u))
    w, w_u = unit_weights(w, len(y)), unit_weights(w_u, len(yhat_u))
    data = (x, y, yhat, x_u, yhat_u, w, w_u)
    if lam is None:
        lam = float(tuned_lambda(*_stats(family, _fit(family, *data, 1.0), *data)))
    theta = _fit(family, *data, lam)
    g, gh, gu, inv_h = _stats(family, theta, *data, use_unlabelled=lam != 0)  # λ = 0: classical
    classical = _fit(family, *data, 0.0)
    cg, _, cgu, c_inv = _stats(family, classical, *data, use_unlabelled=False)
    return Estimate(theta, _sandwich_se(g, gh, gu, inv_h, lam), classical,
                    _sandwich_se(cg, cg, cgu, c_inv, 0.0), np.full(len(theta), lam),
                    ppi_correlation(g @ inv_h, gh @ inv_h), len(y), len(yhat_u))


def classical_fit(family: Family, x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """The ordinary (weighted) OLS or logistic coefficients: what everyone's answers give."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    w = unit_weights(w, len(y))
    return _fit(family, x, y, y, x, y, w, w, 0.0)


def effective_n(n: float, extra: float, rho: float) -> float:
    """Effective sample size of n people plus ``extra`` model-only answers with optimal λ
    (Broska, Howes & van Loon): n (n + N) / (n + (1 - ρ²) N); a negative ρ adds nothing (λ >= 0)."""
    r2 = max(rho, 0.0) ** 2
    return n * (n + extra) / (n + (1 - r2) * extra) if n > 0 else 0.0


def plan_budget(rho: float, budget: float, cost_human: float, cost_model: float) -> dict[str, float]:
    """The split of ``budget`` into humans (each also answered by the model, ``cost_human +
    cost_model``) and model-only answers that maximises the effective sample size; all humans and
    no model answers when that is better (ppi_py's ``ppi_power``, solved numerically here)."""
    from scipy.optimize import minimize_scalar

    most = budget / (cost_human + cost_model)

    def extra(n: float) -> float:
        return max(budget - n * (cost_human + cost_model), 0.0) / cost_model

    best = minimize_scalar(lambda n: -effective_n(n, extra(n), rho), bounds=(min(1.0, most), most),
                           method="bounded", options={"xatol": 1e-6})
    humans_only = budget / cost_human
    if effective_n(best.x, extra(best.x), rho) <= humans_only:
        n, model = np.floor(humans_only), 0.0
    else:
        n = float(np.round(best.x))
        model = n + np.floor(extra(n))
    ess = effective_n(n, model - n, rho) if model else n
    return {"humans": float(n), "model_answers": float(model), "cost": n * cost_human + model * cost_model,
            "effective_n": ess, "humans_only_n": float(np.floor(humans_only)),
            "gain_over_humans_only": ess / np.floor(humans_only) if humans_only >= 1 else float("nan")}
