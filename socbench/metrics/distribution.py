"""How close the model's answer distribution is to people's (OpinionQA-style), per (country, question) or
question with at least ``min_respondents`` respondents. The model's shares are the mean of per-item vectors
(the logprobs ``distribution``, else a one-hot of the answer; failed answers left out). ``wasserstein``:
1 - W1 / (k - 1) with codes at 0..k-1 in offered (survey) order, so meaningful for ordinal scales only;
``js``: 1 - Jensen-Shannon distance (base 2). Each beside what uniform answers score (the floor to read it
against), and ``weighted_*`` ones (the population's shares) when the survey has design weights."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter

import numpy as np

from socbench.types import Code, ScoredItem

DEFAULT_MIN_RESPONDENTS = 10
LEVELS: dict[str, tuple[str, ...]] = {
    "country_question": ("country_code", "question_id"),
    "question": ("question_id",),
}


def wasserstein_score(model: np.ndarray, human: np.ndarray) -> float:
    """1 - W1 / (k - 1) over ordinal positions 0..k-1; NaN for fewer than two codes. W1 in scipy's
    ``wasserstein_distance`` arithmetic for positions 0..k-1 (the same floats, tested), without its set-up:
    its CDFs at the merged positions (each twice) against the steps between them (0, 1, 0, 1, ...)."""
    k = len(human)
    if k < 2:
        return math.nan
    steps = np.diff(np.repeat(np.arange(k, dtype=float), 2))
    distance = np.vecdot(np.abs(_cdf_at_merged(model) - _cdf_at_merged(human)), steps)
    return 1.0 - float(distance) / (k - 1)


def _cdf_at_merged(weights: np.ndarray) -> np.ndarray:
    cumulative = np.concatenate(([0], np.cumsum(np.asarray(weights, dtype=float))))
    return np.repeat(cumulative[1:] / cumulative[-1], 2)[:-1]


def js_score(model: np.ndarray, human: np.ndarray) -> float:
    """1 - Jensen-Shannon distance (base 2) between two distributions over the same codes: scipy's
    ``jensenshannon`` arithmetic (the same floats, tested) without its set-up."""
    from scipy.special import rel_entr

    p, q = np.asarray(model, dtype=float), np.asarray(human, dtype=float)
    p, q = p / np.sum(p), q / np.sum(q)
    m = (p + q) / 2.0
    js = (np.sum(rel_entr(p, m)) + np.sum(rel_entr(q, m))) / np.log(2)
    return 1.0 - float(np.sqrt(js / 2.0))


def group_codes(items: Sequence[ScoredItem]) -> tuple[Code, ...]:
    """The offered codes of a group in offered order (union, first appearance first); each distinct tuple
    of codes is read once (a question's items share a few: a per-item walk was most of ranking's time)."""
    return tuple(dict.fromkeys(code for codes in dict.fromkeys(item.offered_codes for item in items)
                               for code in codes))


Weights = Mapping[int, float]


def weightings(weights: Weights | None) -> tuple[tuple[str, Weights | None], ...]:
    """The plain figures' prefix and weights, and the weighted ones' where the survey has ``weights``."""
    return (("", None), ("weighted_", weights)) if weights is not None else (("", None),)
SCORE_NAMES = ("wasserstein", "js", "uniform_wasserstein", "uniform_js")


def human_distribution(items: Sequence[ScoredItem], codes: Sequence[Code],
                       weights: Weights | None = None) -> np.ndarray:
    """Shares of the true codes over ``codes`` (weighted by respondent when ``weights``)."""
    index = {code: i for i, code in enumerate(codes)}
    w = [weights[item.person_id] for item in items] if weights is not None else None
    counts = np.bincount([index[item.true_code] for item in items], weights=w, minlength=len(codes))
    return counts / counts.sum()


def _item_vector(item: ScoredItem, index: dict[Code, int]) -> np.ndarray | int | None:
    """The item's normalised distribution, or its answer's index (a one-hot), or None (no usable answer)."""
    if item.distribution:
        vector = np.zeros(len(index))
        for code, p in item.distribution.items():
            if code in index:
                vector[index[code]] = p
        total = vector.sum()
        return vector / total if total > 0 else None
    if item.parse_error is None and item.predicted_code in index:
        return index[item.predicted_code]
    return None


def model_distribution(items: Sequence[ScoredItem], codes: Sequence[Code],
                       weights: Weights | None = None) -> np.ndarray | None:
    """(Weighted) mean of the items' answer vectors over ``codes``; None when no item has an answer. One
    matrix for the group, its one-hot rows set at once (an array per item was ranking's largest cost)."""
    index = {code: i for i, code in enumerate(codes)}
    pairs = [(v, item.person_id) for item in items if (v := _item_vector(item, index)) is not None]
    if not pairs:
        return None
    w = np.array([weights[pid] for _, pid in pairs]) if weights is not None else np.ones(len(pairs))
    if w.sum() <= 0:
        return None
    vectors = np.zeros((len(pairs), len(codes)))
    hot = [(row, v) for row, (v, _) in enumerate(pairs) if isinstance(v, int)]
    vectors[[row for row, _ in hot], [column for _, column in hot]] = 1.0
    for row, (v, _) in enumerate(pairs):
        if not isinstance(v, int):
            vectors[row] = v
    return np.average(vectors, axis=0, weights=w)


def distance_scores(model: np.ndarray, human: np.ndarray) -> dict[str, float]:
    """1 - W1 and 1 - JS of ``model`` against ``human``, and what uniform answers score."""
    uniform = np.full(len(human), 1.0 / len(human))
    return {"wasserstein": wasserstein_score(model, human), "js": js_score(model, human),
            "uniform_wasserstein": wasserstein_score(uniform, human), "uniform_js": js_score(uniform, human)}


def split_groups(items: Sequence[ScoredItem], keys: Sequence[str]) -> dict[tuple, list[ScoredItem]]:
    """Items by the values of ``keys`` (a (country, question) pair, or a question), first seen first."""
    groups: dict[tuple, list[ScoredItem]] = defaultdict(list)
    get = attrgetter(*keys)  # in C: a tuple for two keys, the value for one
    key_of = get if len(keys) > 1 else lambda item: (get(item),)
    for item in items:
        groups[key_of(item)].append(item)
    return groups


def scorable_groups(items: Sequence[ScoredItem], keys: Sequence[str], min_respondents: int,
                    ) -> dict[tuple, tuple[list[ScoredItem], tuple[Code, ...]]]:
    """The groups by ``keys`` a distribution can be compared on: at least ``min_respondents``
    respondents and two offered codes; each with its codes (shares from a handful of people, or of one
    option, compare nothing)."""
    return {key: (group, codes) for key, group in split_groups(items, keys).items()
            if len(codes := group_codes(group)) >= 2 and len({i.person_id for i in group}) >= min_respondents}


Shares = Mapping[str, tuple[np.ndarray, np.ndarray]]  # a group's (model, human) shares by prefix


def group_shares(group: Sequence[ScoredItem], codes: Sequence[Code], weights: Weights | None) -> Shares:
    """The group's (model, human) shares by prefix ("" and "weighted_"), while the model answered: no
    weighted model shares without unweighted ones (every answerer weighs 0)."""
    shares = {}
    for prefix, w in weightings(weights):
        model = model_distribution(group, codes, w)
        if model is None:
            break
        shares[prefix] = (model, human_distribution(group, codes, w))
    return shares


def shares_scores(groups: Iterable[Shares], weighted: bool, min_respondents: int) -> dict[str, float]:
    """Mean scores over a level's qualifying groups from their shares; a group without any usable model
    answer is counted in ``skipped_no_answers``, not scored as zero."""
    scores: dict[str, list[float]] = defaultdict(list)
    skipped = 0
    for shares in groups:
        skipped += "" not in shares
        for prefix, (model, human) in shares.items():
            for name, value in distance_scores(model, human).items():
                scores[prefix + name].append(value)
    names = SCORE_NAMES + (tuple(f"weighted_{name}" for name in SCORE_NAMES) if weighted else ())
    result = {name: float(np.mean(scores[name])) if scores[name] else math.nan for name in names}
    return {"groups": float(len(scores["js"])), **result, "skipped_no_answers": float(skipped),
            "min_respondents": float(min_respondents)}


def level_scores(items: Sequence[ScoredItem], keys: Sequence[str],
                 min_respondents: int = DEFAULT_MIN_RESPONDENTS,
                 weights: Weights | None = None) -> dict[str, float]:
    """``shares_scores`` over the qualifying groups by ``keys``."""
    shares = (group_shares(group, codes, weights)
              for group, codes in scorable_groups(items, keys, min_respondents).values())
    return shares_scores(shares, weights is not None, min_respondents)


def distribution_scores(items: Sequence[ScoredItem], min_respondents: int = DEFAULT_MIN_RESPONDENTS,
                        weights: Weights | None = None) -> dict[str, dict[str, float]]:
    """Scores per level: ``country_question`` (the headline) and ``question`` (pooled);
    weighted ones beside them when the survey's ``weights`` are given."""
    if min_respondents < 1:
        raise ValueError(f"min_respondents must be positive, got {min_respondents}")
    return {level: level_scores(items, keys, min_respondents, weights) for level, keys in LEVELS.items()}


def headline_level(distribution: dict[str, dict[str, float]]) -> str | None:
    """``country_question`` when any group qualified there, else ``question``, else None: decided by the
    human data alone, so every model run on the same items gets the same level."""
    for level in LEVELS:
        scores = distribution.get(level, {})
        if scores.get("groups", 0) + scores.get("skipped_no_answers", 0) > 0:
            return level
    return None
