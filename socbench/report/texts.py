"""The words of ``report.html``: what each section answers, and what every number means and
is compared with (docs/results.md, "Scores and the report", says the same)."""

from __future__ import annotations

from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS as MIN_N

LEADS = {
    "baselines": (
        "Accuracy is the share of items where the model gave the respondent's own answer. It means little "
        "alone: a rule that never reads the persona (guess uniformly, or give the answer most other "
        "respondents gave, overall or in the same country) already gets some right. The margin is accuracy "
        "minus the strongest such baseline on the same items; a negative margin is marked \"below "
        "baseline\"."),
    "groups": (
        "Accuracy per country and persona group, pooled over domains, each with its respondents, a 95% "
        f"respondent-bootstrap CI (only from {MIN_N} respondents on) and the strongest answer-free baseline "
        "on exactly the same items, so a group where the model merely repeats the majority answer shows up "
        "as a margin near zero. Groups with fewer respondents are greyed."),
    "questions": (
        "Per question: how often the model gave the respondent's answer, the option most people chose beside "
        "the one the model chose most, whether they agree, and how well the model orders the options as "
        "people do (Kendall tau of the option shares; p from a permutation test)."),
    "distributions": (
        "How the model's answers are distributed beside people's: distances between the two distributions "
        "and the ranking alignment per domain (each beside what uniform answers would score), then every "
        "question's option shares side by side. A model that answers \"1\" to everything shows one full "
        "bar on option 1 in every question."),
}

DEFINITIONS = (
    ("Accuracy", "Share of scoreable items (respondent x question) answered with the respondent's own code; "
                 "unreadable answers count as wrong. Range 0-1."),
    ("95% CI", "Percentile bootstrap over respondents (all of a person's answers move together), 1,000 "
               f"resamples; within each domain for a run's overall number. Not shown below {MIN_N} "
               "respondents."),
    ("Rank", "1 + the number of runs whose accuracy CI lies wholly above this run's; runs whose CIs overlap "
             "(or whose accuracies are equal) share a rank and are marked tied."),
    ("Baselines", "Uniform guess among the offered options (expected accuracy mean 1/k); majority answer to "
                  "the question among all other respondents; majority answer among the other respondents in "
                  "the respondent's country (leave-one-respondent-out, ties split). Survey-weighted versions "
                  "when the data has weights. The strongest on the same items is the one compared with."),
    ("Margin", "Accuracy minus the strongest baseline on the same items, in accuracy points (-1 to 1). "
               "Negative: the model does worse than a rule that never reads the persona."),
    ("Per-question macro-F1", "Macro-F1 within each question's own options, averaged over questions (0-1)."),
    ("1-W1, 1-JS", "1 - normalised Wasserstein distance (codes in offered order as ordinal positions) "
                   "and 1 - Jensen-Shannon distance (base 2) between the model's answer distribution and "
                   f"people's, per (country, question) with at least {MIN_N} respondents (else per "
                   "question); 0-1, 1 = the same distribution. Compared with what uniform answers score."),
    ("Modal agreement", "Share of questions where the model's most chosen option is the option most people "
                        "chose (ties count as the chance that random tie-breaks agree); 0-1. Uniform answers "
                        "score 1/k."),
    ("Kendall tau", "Rank correlation (tau-b) between the model's and people's option shares of a question; "
                    "-1 to 1, 1 = the same order of preference, 0 = unrelated. Uniform answers score 0. p: "
                    "one-sided permutation test of tau > 0 (the model's shares permuted over the options; "
                    "exact up to 7 options); per domain, the test of the mean tau over questions."),
    ("Circular evaluation", "acc: accuracy over every reordered variant; perf: share of questions with every "
                            "variant right; vote: the majority answer over the variants is right. Order-only "
                            "keeps codes with their text (order bias); relabelled numbers options 1..n by "
                            "position (label and order bias, as OpenCompass)."),
)
