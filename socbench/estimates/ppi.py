"""Prediction-powered inference: PPI++ (Angelopoulos, Duchi & Zrnic 2024) over numpy arrays.

Labelled people (``y``: real answers, ``yhat``: the model's for them) and unlabelled ones (``yhat_u``)
give an estimate unbiased whatever the model is; λ (``lam``, variance-minimising, in [0, 1]) weighs the
model in, λ = 0 is the classical estimate. Design weights enter as Hajek means (mean 1 per sample); each
mean and OLS fit is linearised around its own value, so a model that gives everyone the same answer
has no influence (ρ = λ = 0, weighted or not). Unweighted, ``ppi_py``'s numbers (``bench/ppi_reference.py``
and the tests check against it; docs/estimates.md says where the conventions differ). Variances use ddof 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

Family = Literal["ols", "logistic"]
# a logistic fit's trust-region steps: 5-22 measured (bench/results_scale.py, 1,000 respondents); a loss
# without a minimum steps on for thousands (~2,200, 280 s at 10,000 respondents) before it meets inf/NaN
MAX_ITERATIONS = 200


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
        return gain(self.se, self.classical_se)

    def ci(self, alpha: float = 0.05, classical: bool = False,
           share: bool | np.ndarray = False) -> tuple[np.ndarray, np.ndarray]:
        """The 1 - alpha interval of each entry; ``share`` (per entry) marks an option's share."""
        centre, se = (self.classical, self.classical_se) if classical else (self.estimate, self.se)
        return interval(centre, se, alpha, share)


def gain(se: np.ndarray, classical_se: np.ndarray) -> np.ndarray:
    """Effective sample size as a multiple of n: humans the classical interval would need (NaN
    where either interval has no width: every labelled answer alike)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (classical_se / se) ** 2
    return np.where((se > 0) & (classical_se > 0), ratio, np.nan)


def interval(centre: np.ndarray, se: np.ndarray, alpha: float = 0.05,
             share: bool | np.ndarray = False) -> tuple[np.ndarray, np.ndarray]:
    """Every interval socbench shows. A mean, gap or coefficient: Wald, centre ± z se. A share (where
    ``share``) on the logit scale, as Stata's ``svy: proportion``: logit(p) ± z se / (p (1 - p)),
    back-transformed, because near 0 or 1 and at a few hundred people the Wald interval of a share
    covers less than 1 - alpha (docs/estimates.md, Small samples). A share estimate of 0 or 1, or
    outside (0, 1) (PPI can leave it), has no logit: its Wald interval clipped to [0, 1]."""
    centre, se = np.asarray(centre, dtype=float), np.asarray(se, dtype=float)
    z, share = NormalDist().inv_cdf(1 - alpha / 2), np.broadcast_to(share, centre.shape)  # two-sided
    low, high = centre - z * se, centre + z * se
    logit = share & (centre > 0) & (centre < 1)
    p = np.where(logit, centre, 0.5)
    eta, half = np.log(p / (1 - p)), z * se / (p * (1 - p))
    with np.errstate(over="ignore"):  # a share near 0 or 1 with a wide se: its bound is 0 or 1
        low = np.where(logit, 1 / (1 + np.exp(half - eta)), np.where(share, np.clip(low, 0, 1), low))
        high = np.where(logit, 1 / (1 + np.exp(-eta - half)), np.where(share, np.clip(high, 0, 1), high))
    return low, high


def covers(bounds: tuple[np.ndarray, np.ndarray], value: np.ndarray) -> np.ndarray:
    """Whether each interval holds its value (the coverage checks')."""
    return (bounds[0] <= value) & (value <= bounds[1])


def unit_weights(w: np.ndarray | None, n: int) -> np.ndarray:
    """Design weights scaled to mean 1 (none: all 1)."""
    return np.ones(n) if w is None else np.asarray(w, dtype=float) * (n / np.sum(w))


def hajek(a: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    """Weighted mean of each column (``w`` of mean 1, a column; None: all 1), taken from the first row so
    that a column whose values are all alike gives that value exactly (its deviations are then 0)."""
    return a[0] + (a - a[0] if w is None else w * (a - a[0])).mean(0)


def tuned_lambda(g: np.ndarray, gh: np.ndarray, gu: np.ndarray, single: bool = False) -> np.ndarray:
    """PPI++'s variance-minimising λ in [0, 1] from the influence of each person on the estimate
    through people's answers (``g``), the model's for them (``gh``) and for the unlabelled (``gu``):
    per column, or (``single``) one λ for the trace of a regression's variance. The model's answers'
    variance is pooled over both samples, as ppi_py pools it. A model whose answers carry no
    variation around their own fit (``gh`` all 0: a constant model) gets λ = 0 exactly."""
    n, N = len(g), len(gu)
    num = ((g - g.mean(0)) * (gh - gh.mean(0))).sum(0) / n
    den = (1 + n / N) * np.var(np.vstack([gh, gu]), axis=0, ddof=1)
    if single:
        num, den = num.sum(), den.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(den > 1e-15, num / den, 0.0), 0, 1)


def ppi_correlation(g: np.ndarray, gh: np.ndarray) -> np.ndarray:
    """Correlation of the influences through people's and the model's answers, per column, capped at
    1 - 1/n as ``ppi_py`` does (0 where the model's answers carry nothing: their influence is 0, or
    rounding error beside people's)."""
    gc, hc = g - g.mean(0), gh - gh.mean(0)
    norm_g, norm_h = np.sqrt((gc ** 2).sum(0)), np.sqrt((hc ** 2).sum(0))
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(norm_h > 1e-12 * norm_g, (gc * hc).sum(0) / (norm_g * norm_h), 0.0)
    return np.minimum(np.nan_to_num(rho), 1 - 1 / len(g))


def _combine(parts: tuple, lam: float | np.ndarray | None, single: bool = False) -> Estimate:
    """PPI++ from three fits, each with each person's influence on it at its own value: people's
    answers (labelled), the model's for them, the model's for the unlabelled. θ = people's fit +
    λ (unlabelled model fit - labelled model fit); its variance is the variance of the influences."""
    (b_y, g), (b_h, gh), (b_u, gu) = parts
    if lam is None:
        lam = tuned_lambda(g, gh, gu, single)
    lam = np.broadcast_to(np.asarray(lam, dtype=float), b_y.shape)
    return Estimate(b_y + lam * (b_u - b_h), _se(g, gh, gu, lam), b_y, _se(g, gh, gu, 0 * lam), lam,
                    ppi_correlation(g, gh), len(g), len(gu))


def ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, w: np.ndarray | None = None,
             w_u: np.ndarray | None = None, lam: float | np.ndarray | None = None) -> Estimate:
    """PPI++ mean of each column of ``y`` (n x d; an option's indicator gives its share), λ tuned
    per column unless given. Each Hajek mean is linearised around its own value (``w (y - m)``), so
    a model that gives everyone the same answer moves nothing, weighted or not."""
    y, yhat, yhat_u = (np.asarray(a, dtype=float).reshape(len(a), -1) for a in (y, yhat, yhat_u))
    n, N = len(y), len(yhat_u)
    if w is None and w_u is None:  # unweighted: no multiplications by 1 (the same floats, less time)
        w = w_u = pooled_w = None
    else:
        w, w_u = unit_weights(w, n)[:, None], unit_weights(w_u, N)[:, None]
        pooled_w = np.vstack([w, w_u])
    parts = tuple((m := hajek(a, v), _weighted(v, a - m)) for a, v in ((y, w), (yhat, w), (yhat_u, w_u)))
    if lam is None:  # the model's answers around their pooled mean: ppi_py's λ when unweighted
        pooled = hajek(np.vstack([yhat, yhat_u]), pooled_w)
        lam = tuned_lambda(parts[0][1], _weighted(w, yhat - pooled), _weighted(w_u, yhat_u - pooled))
    return _combine(parts, lam)


def _weighted(w: np.ndarray | None, a: np.ndarray) -> np.ndarray:
    return a if w is None else w * a


def _link(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The logistic mean and its derivative at the linear predictor."""
    from scipy.special import expit  # here, as scipy.optimize below: a report that imports this needs neither

    mu = expit(eta)
    return mu, mu * (1 - mu)


def _wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    root = np.sqrt(w)
    return np.linalg.lstsq(x * root[:, None], y * root, rcond=None)[0]


def _ols(x: np.ndarray, t: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """WLS coefficients of ``t`` on ``x`` and each row's influence on them, H⁻¹ x w (t - x b), at its
    own fit: exactly 0 for a constant ``t`` (fitted from its first value; ``x`` holds an intercept)."""
    resid = (t - t[0]) - x @ _wls(x, t - t[0], w)
    return _wls(x, t, w), (x * (w * resid)[:, None]) @ np.linalg.inv((x * w[:, None]).T @ x / len(x))


def _logistic(x, y, yhat, x_u, yhat_u, w, w_u, lam: float) -> np.ndarray:
    """The PPI++ logistic coefficients at ``lam``: the minimiser of the rectified loss over the
    stacked rows (signed row weights), as ppi_py fits it."""
    rows = np.vstack([x_u, x, x])
    target = np.concatenate([yhat_u, y, yhat])
    c = np.concatenate([lam * w_u / len(x_u), w / len(x), -lam * w / len(x)])

    def loss(t):
        eta = rows @ t
        return c @ (np.logaddexp(0, eta) - target * eta), rows.T @ (c * (_link(eta)[0] - target))

    def hess(t):
        return (rows * (c * _link(rows @ t)[1])[:, None]).T @ rows

    from scipy.optimize import minimize

    try:
        fit = minimize(loss, np.zeros(x.shape[1]), jac=True, hess=hess, method="trust-exact",
                       options={"gtol": 1e-10, "maxiter": MAX_ITERATIONS})
        found = fit.x if fit.nit < MAX_ITERATIONS else np.array([np.nan])
    except ValueError:  # scipy met inf/NaN: the coefficients ran off to infinity
        found = np.array([np.nan])
    if not np.isfinite(found).all():  # the rectified loss (negative row weights) can fall without bound
        raise np.linalg.LinAlgError("the PPI++ logistic loss has no finite minimum")
    return found


def _alike(yhat: np.ndarray, yhat_u: np.ndarray) -> bool:
    """Whether the model gave every person the same answer (its answers then carry nothing)."""
    return bool(np.ptp(np.concatenate([yhat, yhat_u])) == 0)


def _logistic_influences(theta, x, y, yhat, x_u, yhat_u, w, w_u, use_unlabelled: bool = True):
    """Each person's influence on the logistic coefficients through people's answers, the model's for
    them and for the unlabelled (the gradients at ``theta`` times the inverse Hessian). Model answers
    that are all alike carry nothing: their influence is 0 (λ = 0, ρ = 0)."""
    (mu, d), (mu_u, d_u) = _link(x @ theta), _link(x_u @ theta)
    hessian = (x * (w * d)[:, None]).T @ x
    hessian = (hessian + (x_u * (w_u * d_u)[:, None]).T @ x_u) / (len(x) + len(x_u)) if use_unlabelled \
        else hessian / len(x)
    inv_h, alike = np.linalg.inv(hessian), _alike(yhat, yhat_u)
    g, gh = x * (w * (mu - y))[:, None], x * (w * (mu - yhat) * (not alike))[:, None]
    gu = x_u * (w_u * (mu_u - yhat_u) * (not alike))[:, None]
    return g @ inv_h, gh @ inv_h, gu @ inv_h


def _se(g: np.ndarray, gh: np.ndarray, gu: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Standard errors from the influences of labelled and unlabelled people at ``lam``; at λ = 0 (the
    classical) without the model's terms, which are then exactly 0 (the repeated check's time)."""
    if not lam.any():
        return np.sqrt(np.var(g, axis=0, ddof=1) / len(g))
    return np.sqrt(np.var(g - lam * gh, axis=0, ddof=1) / len(g) + np.var(lam * gu, axis=0, ddof=1) / len(gu))


def ppi_regression(family: Family, x: np.ndarray, y: np.ndarray, yhat: np.ndarray, x_u: np.ndarray,
                   yhat_u: np.ndarray, w: np.ndarray | None = None, w_u: np.ndarray | None = None,
                   lam: float | None = None) -> Estimate:
    """PPI++ coefficients of an OLS or logistic regression of the answer on ``x`` (with its own
    intercept column), one λ tuned unless given; classical beside it. OLS: people's fit + λ (the
    model's fit on the unlabelled - on the labelled), each linearised around its own coefficients."""
    x, y, yhat, x_u, yhat_u = (np.asarray(a, dtype=float) for a in (x, y, yhat, x_u, yhat_u))
    w, w_u = unit_weights(w, len(y)), unit_weights(w_u, len(yhat_u))
    if family == "ols":
        return _combine((_ols(x, y, w), _ols(x, yhat, w), _ols(x_u, yhat_u, w_u)), lam, single=True)
    data = (x, y, yhat, x_u, yhat_u, w, w_u)
    if lam is None and _alike(yhat, yhat_u):
        lam = 0.0  # answers all alike carry nothing; their λ = 1 loss need not even have a minimum
    elif lam is None:
        lam = float(tuned_lambda(*_logistic_influences(_logistic(*data, 1.0), *data), single=True))
    theta, classical = _logistic(*data, lam), _logistic(*data, 0.0)
    g, gh, gu = _logistic_influences(theta, *data, use_unlabelled=lam != 0)  # λ = 0: classical
    cg, _, cgu = _logistic_influences(classical, *data, use_unlabelled=False)
    lams = np.full(len(theta), lam)
    return Estimate(theta, _se(g, gh, gu, lams), classical, _se(cg, cg, cgu, np.zeros_like(lams)), lams,
                    ppi_correlation(g, gh), len(y), len(yhat_u))


def classical_fit(family: Family, x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """The ordinary (weighted) OLS or logistic coefficients: what everyone's answers give."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    w = unit_weights(w, len(y))
    return _wls(x, y, w) if family == "ols" else _logistic(x, y, y, x, y, w, w, 0.0)


def effective_n(n: float, extra: float, rho: float) -> float:
    """Effective sample size of n people plus ``extra`` model-only answers with optimal λ
    (Broska, Howes & van Loon): n (n + N) / (n + (1 - ρ²) N); a negative ρ adds nothing (λ >= 0)."""
    r2 = max(rho, 0.0) ** 2
    return n * (n + extra) / (n + (1 - r2) * extra) if n > 0 else 0.0


def plan_budget(rho: float, budget: float, cost_human: float, cost_model: float) -> dict[str, float]:
    """The split of ``budget`` into humans (each also answered by the model, ``cost_human +
    cost_model``) and model-only answers that maximises the effective sample size (ppi_py's
    ``ppi_power``, solved numerically here). Whole people only and never past the budget: the floor
    and the ceiling of the continuous optimum are compared with all humans and no model answers."""
    from scipy.optimize import minimize_scalar

    pair = cost_human + cost_model
    most = budget / pair

    def extra(n: float) -> float:  # model-only answers the rest buys (a cent's rounding is no spending)
        return float(np.floor(max(budget - n * pair, 0.0) / cost_model + 1e-9))

    def worth(plan: tuple[float, float]) -> float:
        return effective_n(plan[0], plan[1], rho) if plan[1] else plan[0]

    best = minimize_scalar(lambda n: -effective_n(n, extra(n), rho), bounds=(min(1.0, most), most),
                           method="bounded", options={"xatol": 1e-6}).x
    humans_only = float(np.floor(budget / cost_human + 1e-9))
    plans = [(humans_only, 0.0), *((n, extra(n)) for n in (np.floor(best), np.ceil(best)) if 1 <= n <= most)]
    n, more = max(plans, key=worth)  # ties: the first, humans only
    model = n + more if more else 0.0
    ess, cost = float(worth((n, more))), float(round(n * cost_human + model * cost_model, 9))
    return {"humans": float(n), "model_answers": float(model), "cost": cost, "effective_n": ess,
            "humans_only_n": humans_only,
            "gain_over_humans_only": ess / humans_only if humans_only >= 1 else float("nan")}
