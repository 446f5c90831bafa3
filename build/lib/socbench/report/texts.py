"""The words of ``report.html``: what each section answers, and what every number means and
is compared with (docs/results.md, "Scores and the report", says the same)."""

from __future__ import annotations

from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS as MIN_N

LEADS = {
    "answer": (
        "Each domain opens with the answer: the model's accuracy with its 95% CI beside a classifier trained "
        "on the same attributes the model was shown (each respondent predicted by a model that never saw "
        "them) and beside always giving the most common answer. Then whether the simulated population "
        "keeps the survey's structure: do answers differ between groups (women and men, age groups, "
        "countries) as people's do, and are they as varied? The same figures for the classifier show "
        "whether the model adds anything its attributes alone do not carry. SimBench scores place the "
        "answer distribution on SimBench's published scale."),
    "persona": (
        "The persona run against the same model's run without persona, on the items both answered: the "
        "difference in accuracy (with persona minus without) with its 95% respondent-bootstrap CI and "
        "McNemar's exact p, overall and per persona group. \"Helped\" needs the whole CI above zero, "
        "\"hurt\" below."),
    "baselines": (
        "Accuracy is the share of items where the model gave the respondent's own answer. It means little "
        "alone: a rule that never reads the persona (guess uniformly, or give the answer most other "
        "respondents gave, overall or in the same country) already gets some right. The margin is accuracy "
        "minus the strongest such baseline on the same items; a negative margin is marked \"below "
        "baseline\". Results that have the demographic model (a classifier on the persona attributes "
        "the model was shown, see the answer above) count it among the baselines."),
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
                    "-1 to 1, 1 = the same order of preference, 0 = unrelated (a random order's expected "
                    "value). n/a where either side's shares are all equal (no order: uniform answers). A "
                    "model giving one answer to everything ranks that option first and ties the rest: "
                    "its tau is high when that option is people's favourite. p: "
                    "one-sided permutation test of tau > 0 (the model's shares permuted over the options; "
                    "exact up to 7 options); per domain, the test of the mean tau over questions."),
    ("Demographic model", "A classifier (regularised multinomial logistic regression) trained per question "
                          "on exactly the persona attributes the model was shown (none for a run without "
                          "persona: then it knows only the answer shares), cross-fitted over respondents (5 "
                          "folds): each respondent's answer is predicted by a model that never saw them. "
                          "Survey-weighted when the data has weights. It is the strongest honest baseline: "
                          "a model that cannot beat it knows nothing about people their attributes do not "
                          "already tell."),
    ("SimBench score", "SimBench's distribution score (Hu et al. 2025, arXiv 2510.17516): 100 x (1 - "
                       "TV(model, people) / TV(uniform, people)), TV the total variation distance, per "
                       "question x country group, the uniform distance averaged over the domain's groups "
                       "as SimBench's scorer does, then averaged. 0 = no better than uniform answers, "
                       "100 = people's distribution, negative = worse than uniform. SimBench's published "
                       "leaderboard: 40.8 for its best model, 12.7 for the mean of 45 models."),
    ("Structure figures", "Per question x attribute (and country) with enough respondents, the "
                          "association between group and answer (Cramér's V, 0-1) in people's and in the "
                          "simulated answers; the correlation of the two profiles (1 = the same groups "
                          "differ as much); of the survey's clear gaps between two groups (Welch p < "
                          "0.05), how many the simulation gets in the right direction; the variety of "
                          "the simulated answers over people's (entropy ratio, median over questions: "
                          "below 1 the model compresses the population, 0 = everyone answers alike)."),
    ("Persona effect", "Accuracy with persona minus without on the items both runs answered, its 95% "
                       "respondent-bootstrap CI and McNemar's exact p on the items only one run got "
                       "right; per persona group too."),
    ("Circular evaluation", "acc: accuracy over every reordered variant; perf: share of questions with every "
                            "variant right; vote: the majority answer over the variants is right. Order-only "
                            "keeps codes with their text (order bias); relabelled numbers options 1..n by "
                            "position (label and order bias, as OpenCompass)."),
)
