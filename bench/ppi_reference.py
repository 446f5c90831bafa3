"""Issue 31: socbench's PPI++ estimators beside ppi_py's (``ppi-python`` 0.2.3) on seeded data.

ppi_py does not fit the project's lock (it needs numba, statsmodels, gdown and installs a top-level
``tests`` package), so socbench has its own estimators (``socbench/estimates/ppi.py``). This script
builds the data ``tests/test_estimates_ppi.py`` builds, computes each quantity with both, and prints
them side by side. In a scratch venv with ppi_py:

    python3.11 -m venv /tmp/ppivenv && /tmp/ppivenv/bin/pip install ppi-python==0.2.3
    PYTHONPATH=. /tmp/ppivenv/bin/python -m bench.ppi_reference

Without ppi_py (the project's venv) the ppi_py column shows the reference values the tests hold
(copied from a run of this script). ppi_py's CIs are taken at socbench's λ (ppi_py does not return
its λ; its point estimate with λ tuned is compared on its own), and ``ppi_mean_ci`` uses ddof 0
where socbench (like ``ppi_ols_ci``) uses ddof 1, so the intercept-only OLS CI is the exact one.
Both columns go to ``ppi_reference.json`` in the bench output folder (``--quick`` changes nothing: it
takes seconds).

Where the variance conventions differ the columns differ by design (issue 42): socbench linearises the
weighted mean and the OLS fits each around its own value, ppi_py at the common θ (which lets a constant
model move a weighted estimate), so the weighted and OLS rows differ by up to 2e-3 (the λ each tunes);
at ppi_py's λ the points are equal and the intervals within 0.5% (``tests/test_estimates_ppi.py``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from bench import common
from socbench.estimates.ppi import plan_budget, ppi_mean, ppi_regression, unit_weights

TEST_FILE = Path(__file__).resolve().parents[1] / "tests" / "test_estimates_ppi.py"
POWER = {"rho": 0.6, "budget": 10_000.0, "cost_human": 50.0, "cost_model": 0.5}
# the rows where socbench's linearisation differs from ppi_py's on purpose (module docstring)
OWN_LINEARISATION = ("weighted_mean", "weighted_lambda", "weighted_ci_low", "weighted_ci_high", "ols_0",
                     "ols_1", "ols_2", "ols_ci_low_1", "power_model_only")


def reference_data(seed: int = 31, n: int = 200, big_n: int = 2000) -> dict[str, np.ndarray]:
    """A 1-5 scale answered by people and by a model right 60% of the time (else uniform), two
    covariates (a 0/1 group, a standardised age), lognormal design weights; labelled then unlabelled."""
    rng = np.random.default_rng(seed)
    total = n + big_n
    group, age = rng.integers(0, 2, total).astype(float), rng.normal(size=total)
    latent = 3 + 0.6 * group - 0.5 * age + rng.normal(size=total)
    y = np.clip(np.round(latent), 1, 5)
    yhat = np.where(rng.random(total) < 0.6, y, rng.integers(1, 6, total).astype(float))
    x = np.column_stack([np.ones(total), group, age])
    w = rng.lognormal(0, 0.4, total)
    lab, unl = slice(0, n), slice(n, total)
    high, high_hat = (y >= 4).astype(float), (yhat >= 4).astype(float)  # a binary answer: agree
    return {"y": y[lab], "yhat": yhat[lab], "yhat_u": yhat[unl], "x": x[lab], "x_u": x[unl], "w": w[lab],
            "w_u": w[unl], "yb": high[lab], "ybhat": high_hat[lab], "ybhat_u": high_hat[unl]}


def onehot(values: np.ndarray) -> np.ndarray:
    return (values[:, None] == np.arange(1, 6)[None, :]).astype(float)


def socbench_values(d: dict[str, np.ndarray]) -> dict[str, float]:
    """socbench's numbers for every quantity compared."""
    mean = ppi_mean(d["y"], d["yhat"], d["yhat_u"])
    weighted = ppi_mean(d["y"], d["yhat"], d["yhat_u"], d["w"], d["w_u"])
    shares = ppi_mean(onehot(d["y"]), onehot(d["yhat"]), onehot(d["yhat_u"]))
    ols = ppi_regression("ols", d["x"], d["y"], d["yhat"], d["x_u"], d["yhat_u"])
    logit = ppi_regression("logistic", d["x"], d["yb"], d["ybhat"], d["x_u"], d["ybhat_u"])
    plan = plan_budget(**POWER)
    out = {"mean": mean.estimate[0], "mean_lambda": mean.lam[0], "mean_ci_low": mean.ci()[0][0],
           "mean_ci_high": mean.ci()[1][0], "classical_ci_low": mean.ci(classical=True)[0][0],
           "weighted_mean": weighted.estimate[0], "weighted_lambda": weighted.lam[0],
           "weighted_ci_low": weighted.ci()[0][0], "weighted_ci_high": weighted.ci()[1][0],
           **{f"share_{k + 1}": shares.estimate[k] for k in range(5)},
           **{f"ols_{k}": ols.estimate[k] for k in range(3)}, "ols_ci_low_1": ols.ci()[0][1],
           **{f"logistic_{k}": logit.estimate[k] for k in range(3)}, "logistic_ci_low_1": logit.ci()[0][1],
           "power_humans": plan["humans"], "power_model_only": plan["model_answers"] - plan["humans"]}
    return {key: float(value) for key, value in out.items()}


def ppi_py_values(d: dict[str, np.ndarray], ours: dict[str, float]) -> dict[str, float]:
    """ppi_py's numbers for the same quantities (CIs at socbench's λ, see the module docstring)."""
    import ppi_py

    keys = ("y", "yhat", "yhat_u", "x", "x_u", "yb", "ybhat", "ybhat_u")
    y, yh, yu, x, xu, b, bh, bu = (d[k] for k in keys)
    ones, ones_u = np.ones((len(y), 1)), np.ones((len(yu), 1))
    mean = ppi_py.ppi_mean_pointestimate(y, yh, yu)
    w, w_u = unit_weights(d["w"], len(y)), unit_weights(d["w_u"], len(yu))
    weighted = ppi_py.ppi_mean_pointestimate(y, yh, yu, w=d["w"], w_unlabeled=d["w_u"])
    mean_ci = ppi_py.ppi_ols_ci(ones, y, yh, ones_u, yu, alpha=0.05, lam=ours["mean_lambda"])
    classical = ppi_py.ppi_ols_ci(ones, y, yh, ones_u, yu, alpha=0.05, lam=0)
    weighted_ci = ppi_py.ppi_ols_ci(ones, y, yh, ones_u, yu, alpha=0.05, lam=ours["weighted_lambda"],
                                    w=d["w"], w_unlabeled=d["w_u"])
    shares = ppi_py.ppi_mean_pointestimate(onehot(y), onehot(yh), onehot(yu), lam_optim_mode="element")
    ols = ppi_py.ppi_ols_pointestimate(x, y, yh, xu, yu)
    ols_ci = ppi_py.ppi_ols_ci(x, y, yh, xu, yu, alpha=0.05,
                               lam=ppi_regression("ols", x, y, yh, xu, yu).lam[0])
    logit = ppi_py.ppi_logistic_pointestimate(x, b, bh, xu, bu)
    logit_ci = ppi_py.ppi_logistic_ci(x, b, bh, xu, bu, alpha=0.05,
                                      lam=ppi_regression("logistic", x, b, bh, xu, bu).lam[0])
    power = ppi_py.ppi_power(POWER["rho"], 0.0, POWER["cost_human"], POWER["cost_model"],
                             budget=POWER["budget"])

    def lam_of(theta: float, w, w_u) -> float:  # θ = λ (mean ŷ_u - mean ŷ) + mean y
        return float((theta - np.mean(w * y)) / (np.mean(w_u * yu) - np.mean(w * yh)))

    out = {"mean": mean[0], "mean_lambda": lam_of(mean[0], 1, 1), "mean_ci_low": mean_ci[0][0],
           "mean_ci_high": mean_ci[1][0], "classical_ci_low": classical[0][0], "weighted_mean": weighted[0],
           "weighted_lambda": lam_of(weighted[0], w, w_u), "weighted_ci_low": weighted_ci[0][0],
           "weighted_ci_high": weighted_ci[1][0], **{f"share_{k + 1}": shares[k] for k in range(5)},
           **{f"ols_{k}": ols[k] for k in range(3)}, "ols_ci_low_1": ols_ci[0][1],
           **{f"logistic_{k}": logit[k] for k in range(3)}, "logistic_ci_low_1": logit_ci[0][1],
           "power_humans": power["n"], "power_model_only": power["N"]}
    return {key: float(value) for key, value in out.items()}


def stored_reference() -> dict[str, float]:
    """The reference values the tests hold (loaded by path: ppi_py's own ``tests`` package would
    shadow the project's where ppi_py is installed)."""
    spec = importlib.util.spec_from_file_location("estimates_reference", TEST_FILE)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return dict(module.PPI_PY_REFERENCE)


def main() -> None:
    args = common.parser(__doc__).parse_args()
    data = reference_data()
    ours = socbench_values(data)
    try:
        theirs, source = ppi_py_values(data, ours), "ppi_py (computed now)"
    except ImportError:
        theirs, source = stored_reference(), "ppi_py (stored in the tests)"
    print(f"{'quantity':<20} {source:>30} {'socbench':>20} {'|difference|':>14}")
    for key, value in ours.items():
        print(f"{key:<20} {theirs[key]:>30.12g} {value:>20.12g} {abs(theirs[key] - value):>14.3g}")
    print("\nPPI_PY_REFERENCE = {" + ", ".join(f'"{k}": {v!r}' for k, v in theirs.items()) + "}")
    agree = [key for key in ours if key not in OWN_LINEARISATION]  # the conventions agree
    worst = max(abs(theirs[key] - ours[key]) for key in agree)
    common.report("ppi_reference", {"quantities": len(ours), "max_abs_difference": worst}, "max |difference|",
                  worst, "socbench's estimators give ppi_py's numbers where the conventions agree", None,
                  {"source": source, "socbench": ours, "ppi_py": theirs, "quick": args.quick})


if __name__ == "__main__":
    main()
