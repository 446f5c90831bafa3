"""Issue 42: the coverage of socbench's weighted PPI++ and classical 95% intervals against a known truth.

A population of two equal halves answers a 1-5 scale (each half its own shares); the survey oversamples
the second half 65:35 and its design weights undo that, times lognormal noise (Kish design effect
about 1.2). A model answers right with probability 0.6, else at random. Per labelled size n (1,000
unlabelled beside them) seeded studies give how often each interval (``ppi.interval``, as the
estimates compute it: shares on the logit scale) held the truth: the mean, each option's share
(0.125-0.275) and the slope of the answer on the half (weighted OLS). A size holds where every target,
PPI and classical, covers within 3 Monte Carlo errors of 0.95 (``holds``) in each of three independent
measurements (``SEEDS``: one alone passes at a size whose coverage sits near the edge, 200 here); the
smallest that holds is ``MIN_LABELLED`` (docs/estimates.md, Small samples).

    PYTHONPATH=. python -m bench.ppi_coverage          # 3 x 4,000 studies per n (about a minute a size)
"""

from __future__ import annotations

import numpy as np

from bench import common
from socbench.estimates.ppi import covers, interval, ppi_mean, ppi_regression

CODES = np.arange(1, 6)
HALVES = np.array([[0.1, 0.2, 0.3, 0.25, 0.15], [0.25, 0.3, 0.2, 0.15, 0.1]])  # each half's shares
SAMPLED = 0.65  # the second half's share of the sample (the population's: 0.5)
TARGETS = ("mean", *(f"share {c}" for c in CODES), "slope")
SHARE = np.array([t.startswith("share") for t in TARGETS])  # their intervals: on the logit scale
TRUTH = np.array([HALVES.mean(0) @ CODES, *HALVES.mean(0), (HALVES[1] - HALVES[0]) @ CODES])
SIZES = (30, 50, 100, 200, 300, 500)
SEEDS = (0, 1, 2)


def draw(rng: np.random.Generator, size: int, p: float) -> tuple[np.ndarray, ...]:
    """Sampled people: design row (intercept, half), answer, the model's answer, design weight."""
    half = (rng.random(size) < SAMPLED).astype(int)
    y = 1 + (rng.random(size)[:, None] > HALVES[half].cumsum(1)[:, :-1]).sum(1)
    constant = p is None
    yhat = np.full(size, 3) if constant else np.where(rng.random(size) < p, y, rng.integers(1, 6, size))
    w = np.where(half == 1, 0.5 / SAMPLED, 0.5 / (1 - SAMPLED)) * rng.lognormal(0, 0.3, size)
    return np.column_stack([np.ones(size), half]), y.astype(float), yhat.astype(float), w


def study(rng: np.random.Generator, n: int, big_n: int = 1000,
          p: float | None = 0.6) -> dict[str, np.ndarray]:
    """One weighted study: PPI++ and classical estimates and standard errors of every target, and λ.
    (A labelled sample with one half only has no slope: drawn again.)"""
    (x, y, yhat, w), (x_u, _, yhat_u, w_u) = draw(rng, n, p), draw(rng, big_n, p)
    if np.ptp(x[:, 1]) == 0:
        return study(rng, n, big_n, p)

    def targets(a: np.ndarray) -> np.ndarray:
        return np.column_stack([a, a[:, None] == CODES]).astype(float)

    mean = ppi_mean(targets(y), targets(yhat), targets(yhat_u), w, w_u)
    ols = ppi_regression("ols", x, y, yhat, x_u, yhat_u, w, w_u)
    return {key: np.append(getattr(mean, key), getattr(ols, key)[1])
            for key in ("estimate", "se", "classical", "classical_se", "lam", "rho")}


def coverage(n: int, repeats: int, seed: int = 0, alpha: float = 0.05) -> dict[str, np.ndarray]:
    """Share of ``repeats`` seeded studies whose interval held the truth, per target: PPI, classical."""
    rng, held = np.random.default_rng([seed, n]), np.zeros((2, len(TARGETS)))
    for _ in range(repeats):
        s = study(rng, n)
        held += [covers(interval(s[centre], s[se], alpha, SHARE), TRUTH)
                 for centre, se in (("estimate", "se"), ("classical", "classical_se"))]
    return {"ppi": held[0] / repeats, "classical": held[1] / repeats}


def holds(got: dict[str, np.ndarray], repeats: int) -> bool:
    """Whether ``coverage``'s figures meet the documented rule: every target, PPI and classical,
    within 3 Monte Carlo errors of 0.95."""
    error = 3 * np.sqrt(0.95 * 0.05 / repeats)
    return all((np.abs(values - 0.95) <= error).all() for values in got.values())


def main() -> None:
    args = common.parser(__doc__).parse_args()
    repeats = 200 if args.quick else 4000
    print(f"coverage of the 95% intervals over {repeats} weighted studies per seed {SEEDS}, 3 MC errors "
          f"{3 * np.sqrt(0.95 * 0.05 / repeats):.4f}; targets: {', '.join(TARGETS)}")
    found, held = {}, []
    for n in SIZES[:2] if args.quick else SIZES:
        runs = [coverage(n, repeats, seed) for seed in SEEDS]
        held += [n] if all(holds(got, repeats) for got in runs) else []
        found[n] = {k: [[round(float(v), 4) for v in got[k]] for got in runs] for k in runs[0]}
        for k, values in found[n].items():
            print(f"n = {n:>4}  {k:<9}  " + "  ".join(str(v) for v in values), flush=True)
    common.report("ppi_coverage", {"repeats": repeats, "smallest_n_held": min(held) if held else -1},
                  "worst coverage at the largest n", float(np.min(found[max(found)]["ppi"])),
                  "the rule of holds() met at some n", bool(held),
                  {"coverage": found, "quick": args.quick})


if __name__ == "__main__":
    main()
