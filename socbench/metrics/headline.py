"""The sentences a domain's report opens with: the answer first, in words a reader uses (the lead sentence
against the demographic model and the majority answer; the structure figures without "Cramér's V")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS as MIN_CI
from socbench.metrics.structure import MIN_GROUP_SIZE, Structure
from socbench.metrics.structure import MIN_RESPONDENTS as MIN_STRUCTURE

DEMOGRAPHIC = "a classifier on the same attributes"
MAJORITY = "the most common answer"
SUGGESTED_COUNT = 40  # respondents a domain: room for 30 answering each question, 10 in each of two groups


def _num(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"


def lead_sentence(accuracy: float, ci: tuple[float, float] | None, demographic: float,
                  majority: float) -> str:
    """"accuracy 0.41 [0.38, 0.44]; demographic model 0.44; majority 0.38 — the model does not beat
    a classifier on the same attributes". Beating needs the whole CI above the strongest baseline (no CI,
    too few respondents: never beating)."""
    interval = f" [{_num(ci[0])}, {_num(ci[1])}]" if ci and not math.isnan(ci[0]) else ""
    head = (f"accuracy {_num(accuracy)}{interval}; demographic model {_num(demographic)}; "
            f"majority {_num(majority)}")
    finite = {name: v for name, v in ((DEMOGRAPHIC, demographic), (MAJORITY, majority)) if not math.isnan(v)}
    if math.isnan(accuracy) or not finite:
        return f"{head} — no comparison possible"
    strongest = max(finite, key=lambda name: finite[name])
    low = ci[0] if ci and not math.isnan(ci[0]) else math.nan
    if low > finite[strongest]:
        tail = "the model beats " + ("both baselines" if len(finite) > 1 else strongest)
    elif accuracy > finite[strongest] and math.isnan(low):
        tail = f"the model is ahead of {strongest}, with too few respondents for an interval to tell"
    elif accuracy > finite[strongest]:
        tail = f"the model is ahead of {strongest}, but within its uncertainty"
    elif strongest == DEMOGRAPHIC:
        tail = f"the model does not beat {DEMOGRAPHIC}"
    else:
        tail = f"the model does not beat always answering {MAJORITY}"
    return f"{head} — {tail}"


def stored_figures(stored: Mapping[str, Any]) -> SimpleNamespace:
    """The figures as a result file stores them (null for NaN; ``pairs`` a count or a list)."""
    pairs = stored.get("pairs") or 0
    figures = ("profile_correlation", "mean_real_v", "mean_simulated_v", "heterogeneity_ratio")
    return SimpleNamespace(pairs=len(pairs) if isinstance(pairs, (list, tuple)) else int(pairs),
                           gaps=int(stored.get("gaps") or 0),
                           gaps_same_sign=int(stored.get("gaps_same_sign") or 0),
                           **{k: math.nan if stored.get(k) is None else float(stored[k]) for k in figures})


def structure_sentence(found: Structure | Mapping[str, Any], who: str = "the model") -> str:
    """Plain words for the structure figures of one predictor's (``who``'s) answers, computed or
    as a result file stores them."""
    if isinstance(found, Mapping):
        found = stored_figures(found)  # type: ignore[assignment]
    if not found.pairs:
        return "Too few respondents per group to compare how answers differ between groups."
    parts = []
    if math.isnan(found.profile_correlation):
        parts.append(_uncorrelated(found))
    else:
        parts.append(f"differences between groups in the simulated answers follow the real ones "
                     f"{_strength(found.profile_correlation)} (correlation {_num(found.profile_correlation)};"
                     f" average association {_num(found.mean_simulated_v)} simulated vs "
                     f"{_num(found.mean_real_v)} real)")
    if found.gaps:
        plural = "s" if found.gaps > 1 else ""
        parts.append(f"of {found.gaps} clear difference{plural} between groups in the survey, {who} gets "
                     f"the direction of {found.gaps_same_sign} right")
    ratio = found.heterogeneity_ratio
    if not math.isnan(ratio):
        spread = ("as varied as the real ones" if 0.9 <= ratio <= 1.1
                  else "not varied at all, where the real ones vary" if ratio == 0
                  else f"{abs(1 - ratio):.0%} {'less' if ratio < 1 else 'more'} varied than the real ones")
        parts.append(f"its answers are {spread}")
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


def _uncorrelated(found: Any) -> str:
    """Why there is no profile correlation, in a clause that is true of these figures."""
    real = f"average association {_num(found.mean_real_v)} on a 0-1 scale"
    if found.mean_simulated_v == 0:
        people = f"people's answers do ({real})" if found.mean_real_v > 0 else "neither do people's answers"
        return f"the simulated answers do not differ between groups at all; {people}"
    both = f"average association {_num(found.mean_simulated_v)} simulated vs {_num(found.mean_real_v)} real"
    pairs = found.pairs if isinstance(found.pairs, int) else len(found.pairs)  # stored: a count
    if pairs < 3:
        return (f"with {pairs} question x attribute pair{'s' if pairs > 1 else ''} large enough "
                f"(3 are needed), how group differences follow the survey's is not measured ({both})")
    return (f"the association is the same in every question x attribute pair, in the simulated or in the "
            f"real answers, so how group differences follow the survey's is not measured ({both})")


def _strength(r: float) -> str:
    return "closely" if r >= 0.7 else "partly" if r >= 0.3 else "hardly" if r > -0.3 else "in reverse"


def small_run_note(few: Sequence[tuple[int, int | None]]) -> str | None:
    """Said once (report, summary, terminal) for the run x domains too few to compare groups, each
    (respondents, respondents in the data or None): what they need, the command that gets it, and what the
    run shows meanwhile; None when there are none."""
    if not few:
        return None
    respondents = max(n for n, _ in few)
    known = [population for _, population in few if population is not None]
    intervals = (f"; 95% intervals (and the verdicts that rest on them) and distribution scores need {MIN_CI}"
                 if respondents < MIN_CI else "")
    head = (f"Too few respondents to compare groups: this run has {respondents} a domain, and group "
            f"differences (the structure figures) need at least {MIN_STRUCTURE} answering a question, "
            f"{MIN_GROUP_SIZE} or more in each of two groups{intervals}.")
    if known and min(known) < MIN_STRUCTURE:
        get = f"The data holds only {min(known)} a domain, so no run of it can show them."
    else:
        count = "all" if known and max(known) <= SUGGESTED_COUNT else SUGGESTED_COUNT
        get = f"`socbench issp --interview_count {count}` (with this run's other flags) gets them."
    return (f"{head} {get} Meanwhile the report shows what {respondents} respondents can: accuracy against "
            "the baselines and, question by question, the model's answers beside people's.")


def summary_note(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """``small_run_note`` for a run's summary rows (their ``sample``: how many were asked, of how many)."""
    samples = [row.get("sample") or {} for row in rows]
    return small_run_note([(s["respondents"], s.get("population")) for s in samples
                           if s.get("respondents", MIN_STRUCTURE) < MIN_STRUCTURE])
