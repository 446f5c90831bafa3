"""The demo's question sets and vocabulary, written for socbench (not ISSP text).

Each entry's drivers say which traits (age, female, edu, relig, work, urban, married) push an
answer up (ordinal) or towards one option (categorical); ``synth`` reads them, files do not carry them.
"""

from __future__ import annotations

import copy
from typing import Any

AGREE5 = {"1": "Strongly agree", "2": "Agree", "3": "Neither agree nor disagree", "4": "Disagree",
          "5": "Strongly disagree"}
IMPORTANT4 = {"1": "Very important", "2": "Fairly important", "3": "Not very important",
              "4": "Not important at all"}
SHOULD4 = {"1": "Definitely should be", "2": "Probably should be", "3": "Probably should not be",
           "4": "Definitely should not be"}
CONFIDENCE5 = {"1": "Complete confidence", "2": "A great deal of confidence", "3": "Some confidence",
               "4": "Very little confidence", "5": "No confidence at all"}
OFTEN5 = {"1": "Always", "2": "Often", "3": "Sometimes", "4": "Rarely", "5": "Never"}
SPEND5 = {"1": "Spend much more", "2": "Spend more", "3": "Spend the same as now", "4": "Spend less",
          "5": "Spend much less"}
JP_AGREE5 = {"1": "I think so", "2": "I rather think so", "3": "Hard to say either way",
             "4": "I rather don't think so", "5": "I don't think so"}

# slug -> [(question_id, text, options, special, drivers)]
_SETS: dict[str, list[tuple[str, str, dict, dict, dict]]] = {
    "citizenship": [
        ("V5", "For someone to be a good citizen, how important is it to vote in every national election?",
         IMPORTANT4, {}, dict(age=-0.9, edu=-0.5)),
        ("V6", "How important is it for a good citizen to keep watch on what the government of [COUNTRY] "
               "is doing?", IMPORTANT4, {}, dict(edu=-0.9, age=-0.3)),
        ("V7", "Do you agree or disagree: people like me have no real say in what the government does.",
         AGREE5, {"JP": JP_AGREE5}, dict(edu=1.3, urban=0.3)),
        ("V8", "In the past twelve months, how many times have you signed a petition?",
         {"0": "Not at all", "1": "Once", "2": "Two or three times", "3": "Four times or more"}, {},
         dict(edu=1.1, age=-0.6, urban=0.4)),
        ("V9", "How interested are you personally in politics?",
         {"1": "Very interested", "2": "Fairly interested", "3": "Not very interested",
          "4": "Not at all interested"}, {}, dict(edu=-1.0, age=-0.7, female=0.4)),
        ("V10", "Where do you get most of your news about politics and current affairs?",
         {"1": "Television", "2": "Newspapers", "3": "Radio", "4": "Internet and social media",
          "5": "Family, friends or colleagues"}, {},
         {"1": dict(age=1.0), "2": dict(age=0.8, edu=0.6), "4": dict(age=-1.6, edu=0.5),
          "5": dict(edu=-0.8)}),
    ],
    "environment": [
        ("v1", "Generally speaking, how worried are you about environmental issues?",
         {"1": "Not at all worried", "2": "Not very worried", "3": "Somewhat worried", "4": "Very worried",
          "5": "Extremely worried"}, {}, dict(edu=0.9, age=-0.5, female=0.4)),
        ("v2", "Do you agree or disagree: science and technology will solve our environmental problems "
               "without us changing the way we live.", AGREE5, {}, dict(edu=0.8, female=0.3, age=-0.4)),
        ("v3", "How willing would you be to pay much higher prices to protect the environment?",
         {"1": "Very willing", "2": "Fairly willing", "3": "Neither willing nor unwilling",
          "4": "Fairly unwilling", "5": "Very unwilling"}, {}, dict(edu=-1.1, age=0.5)),
        ("v4", "How often do you make a special effort to sort glass, metal, plastic or paper for recycling?",
         OFTEN5, {}, dict(urban=-0.4, age=-0.6, edu=-0.6, female=-0.3)),
        ("v5", "Which of these is the most important environmental problem for [COUNTRY] as a whole?",
         {"1": "Air pollution", "2": "Climate change", "3": "Shortage of clean water",
          "4": "Waste and litter", "5": "Loss of forests and wildlife"}, {},
         {"1": dict(urban=1.2), "2": dict(edu=1.2, age=-0.6), "3": dict(urban=-0.8, edu=-0.5),
          "5": dict(urban=-1.0)}),
    ],
    "family": [
        ("V5", "Do you agree or disagree: a mother who has a paid job can have just as warm a "
               "relationship with her children as a mother who stays at home.", AGREE5, {},
         dict(female=-0.6, edu=-0.7, age=0.7, relig=0.4)),
        ("V6", "Do you agree or disagree: the man should earn the money and the woman should look after "
               "the home.", AGREE5, {}, dict(edu=1.0, age=-1.0, relig=-0.7, female=0.4)),
        ("V7", "When there is a child under school age, should the mother work outside the home?",
         {"1": "Work full-time", "2": "Work part-time", "3": "Stay at home"}, {},
         dict(age=0.8, relig=0.7, edu=-0.6, work=-0.4)),
        ("V8", "In your household, who usually does the laundry?",
         {"1": "Always me", "2": "Usually me", "3": "About equally, or both together",
          "4": "Usually my spouse or partner", "5": "Always my spouse or partner",
          "6": "A third person does it"}, {"TW": {"7": "My parents or parents-in-law"}},
         dict(female=-1.6, married=0.5)),
        ("V9", "Do you agree or disagree: it is fine for a couple to live together without planning to "
               "marry.", AGREE5, {}, dict(relig=1.3, age=0.8, edu=-0.4)),
        ("V10", "In general, what do you think is the ideal number of children for a family to have?",
         {"0": "None", "1": "One", "2": "Two", "3": "Three", "4": "Four or more",
          "95": "As many as the family wants"}, {}, dict(relig=1.0, age=0.5, edu=-0.4)),
    ],
    "health": [
        ("v1", "In general, would you say your health is...", {"1": "Excellent", "2": "Very good",
         "3": "Good", "4": "Fair", "5": "Poor"}, {}, dict(age=1.3, edu=-0.6, work=-0.5)),
        ("v2", "How much confidence do you have in the health care system of [COUNTRY]?", CONFIDENCE5, {},
         dict(edu=0.4, age=-0.5)),
        ("v3", "On the whole, should it be the government's responsibility to provide health care for "
               "the sick?", SHOULD4, {}, dict(edu=0.3, age=-0.4, work=0.3)),
        ("v4", "In the past twelve months, how often have you visited a doctor?",
         {"1": "Never", "2": "Once or twice", "3": "Three to five times", "4": "Six times or more"}, {},
         dict(age=1.4, female=0.5)),
        ("v5", "During the past four weeks, how often have you felt unhappy and depressed?",
         {"1": "Never", "2": "Seldom", "3": "Sometimes", "4": "Often", "5": "Very often"}, {},
         dict(work=-0.8, married=-0.5, female=0.3)),
        ("v6", "Do you agree or disagree: herbal and other alternative remedies do more good than "
               "ordinary medicine.", AGREE5, {}, dict(edu=1.2, urban=0.4)),
    ],
    "nationalidentity": [
        ("V5", "How close do you feel to [COUNTRY]?", {"1": "Very close", "2": "Close",
         "3": "Not very close", "4": "Not close at all"}, {}, dict(age=-1.0, urban=0.3)),
        ("V6", "Some people say that to be truly [NATIONALITY] it matters to have been born in [COUNTRY]. "
               "How important do you think that is?", IMPORTANT4, {}, dict(edu=1.0, age=-0.8)),
        ("V7", "Do you agree or disagree: I would rather be a citizen of [COUNTRY] than of any other "
               "country.", AGREE5, {}, dict(age=-1.0, edu=0.6)),
        ("V8", "How proud are you of the way democracy works in [COUNTRY]?",
         {"1": "Very proud", "2": "Somewhat proud", "3": "Not very proud", "4": "Not proud at all"}, {},
         dict(work=-0.4, edu=-0.3)),
        ("V9", "Do you agree or disagree: immigrants make crime rates higher.", AGREE5,
         {"DE-W": {"1": "Agree completely", "2": "Tend to agree", "3": "Undecided", "4": "Tend to disagree",
                   "5": "Disagree completely"}}, dict(edu=1.3, age=-0.7, urban=0.5)),
        ("V10", "Should the number of immigrants coming to [COUNTRY] be...",
         {"1": "Increased a lot", "2": "Increased a little", "3": "Kept as it is now",
          "4": "Reduced a little", "5": "Reduced a lot"}, {}, dict(edu=-1.1, age=0.8, urban=-0.4)),
    ],
    "religion": [
        ("v1", "Which statement comes closest to what you believe about God?",
         {"1": "I don't believe in God",
          "2": "I don't know whether there is a God and see no way to find out",
          "3": "I don't believe in a personal God, but in a higher power of some kind",
          "4": "I find myself believing in God some of the time",
          "5": "I believe in God, though I have doubts",
          "6": "I know God really exists and have no doubts"}, {}, dict(relig=2.4, age=0.3)),
        ("v2", "How often do you pray?", {"1": "Never", "2": "Less than once a year",
         "3": "A few times a year", "4": "About once a month", "5": "Every week", "6": "Every day"}, {},
         dict(relig=2.5, female=0.4)),
        ("v3", "Do you agree or disagree: religious leaders should stay out of trying to influence how "
               "people vote.", AGREE5, {}, dict(relig=1.3, edu=-0.3)),
        ("v4", "Do you believe in life after death?", {"1": "Yes, definitely", "2": "Yes, probably",
         "3": "No, probably not", "4": "No, definitely not"}, {}, dict(relig=-2.2)),
        ("v5", "How much confidence do you have in churches and religious organisations?", CONFIDENCE5,
         {"JP": {"1": "Trust them completely", "2": "Trust them a lot", "3": "Trust them somewhat",
                 "4": "Hardly trust them", "5": "Do not trust them at all"}}, dict(relig=-1.9, age=-0.3)),
        ("v6", "Would you describe yourself as...", {"1": "Extremely religious", "2": "Very religious",
         "3": "Somewhat religious", "4": "Neither religious nor non-religious", "5": "Somewhat non-religious",
         "6": "Very non-religious", "7": "Extremely non-religious"}, {}, dict(relig=-2.6)),
    ],
    "roleofgovernment": [
        ("v1", "In general, should people obey the law without exception, or are there times when they "
               "should follow their conscience even if it means breaking the law?",
         {"1": "Obey the law without exception", "2": "Follow conscience on occasion"}, {},
         dict(edu=1.0, age=-0.9)),
        ("v2", "On the whole, should it be the government's responsibility to provide a job for everyone "
               "who wants one?", SHOULD4, {}, dict(edu=0.9, work=0.6, urban=0.3)),
        ("v3", "Should the government spend more or less on the environment? Remember that spending more "
               "might require a tax increase.", SPEND5, {}, dict(edu=-0.9, age=0.7)),
        ("v4", "Do you agree or disagree: most politicians in [COUNTRY] are in politics only for what "
               "they can get out of it.", AGREE5, {}, dict(edu=1.0, age=-0.3)),
        ("v5", "Should the government spend more or less on old age pensions?", SPEND5, {},
         dict(age=-1.3, work=0.4)),
    ],
    "socialinequality": [
        ("v1", "Do you agree or disagree: differences in income in [COUNTRY] are too large.", AGREE5, {},
         dict(edu=0.5, work=0.3, urban=0.3)),
        ("v2", "For getting ahead in life, how important is it to come from a wealthy family?",
         {"1": "Essential", "2": "Very important", "3": "Fairly important", "4": "Not very important",
          "5": "Not important at all"}, {}, dict(edu=0.7, work=0.5)),
        ("v3", "Do you agree or disagree: it is the government's job to reduce the differences in income "
               "between people with high and low incomes.", AGREE5,
         {"VE": {"1": "I agree", "2": "I somewhat agree", "3": "I neither agree nor disagree",
                 "4": "I somewhat disagree", "5": "I disagree"}}, dict(edu=0.9, work=0.7)),
        ("v4", "Some groups are towards the top of our society and some towards the bottom. Where would "
               "you put yourself, from 1 (bottom) to 10 (top)?",
         {"1": "1, Bottom", **{str(k): str(k) for k in range(2, 10)}, "10": "10, Top"}, {},
         dict(edu=1.6, work=1.0, urban=0.3)),
        ("v5", "Is it just or unjust that people with higher incomes can buy better health care than "
               "people with lower incomes?",
         {"1": "Very just, definitely right", "2": "Somewhat just, right", "3": "Neither just nor unjust",
          "4": "Somewhat unjust, wrong", "5": "Very unjust, definitely wrong"}, {},
         dict(edu=0.6, work=-0.6, female=0.3)),
    ],
    "socialnetworks": [
        ("v1", "How often do you spend an evening out with friends?",
         {"1": "Daily", "2": "Several times a week", "3": "Several times a month", "4": "Once a month",
          "5": "Several times a year", "6": "Less often", "7": "Never"}, {}, dict(age=1.5, married=0.4)),
        ("v2", "On a typical weekday, with about how many people do you have contact?",
         {"1": "0 to 4 people", "2": "5 to 9 people", "3": "10 to 19 people", "4": "20 to 49 people",
          "5": "50 people or more"}, {}, dict(work=1.2, age=-0.6, urban=0.3)),
        ("v3", "Generally speaking, would you say that people can be trusted or that you can't be too "
               "careful in dealing with people?",
         {"1": "People can almost always be trusted", "2": "People can usually be trusted",
          "3": "You usually can't be too careful", "4": "You almost always can't be too careful"}, {},
         dict(edu=-1.1, age=-0.3)),
        ("v4", "How often do you use the internet or social media to keep in touch with friends?",
         OFTEN5, {}, dict(age=1.7, edu=-0.5)),
        ("v5", "Suppose you were ill and needed help around the house. Whom would you ask first?",
         {"1": "My spouse or partner", "2": "Another family member", "3": "A close friend",
          "4": "A neighbour", "5": "A paid helper", "6": "Nobody"}, {"HU": {"7": "My church or parish"}},
         {"1": dict(married=2.0), "2": dict(married=-0.6, age=0.5), "3": dict(married=-0.8, age=-0.6),
          "5": dict(edu=0.8, age=0.4)}),
    ],
    "workorientations": [
        ("v1", "Do you agree or disagree: a job is just a way of earning money, no more.", AGREE5, {},
         dict(edu=1.2, work=0.4)),
        ("v2", "How important is job security to you personally?",
         {"1": "Very important", "2": "Important", "3": "Neither important nor unimportant",
          "4": "Not important", "5": "Not important at all"}, {}, dict(work=0.9, age=0.5)),
        ("v3", "If you could choose your work situation, which would you prefer?",
         {"1": "A full-time job", "2": "A part-time job", "3": "A job with fewer than 10 hours a week",
          "4": "No paid job at all"},
         {"ES": {"1": "Full-time work", "2": "Part-time work", "3": "Work of under 10 hours a week",
                 "4": "No paid work"}}, dict(work=-1.8, age=0.9, female=0.4)),
        ("v4", "Would you rather be an employee or work for yourself?",
         {"1": "Be an employee", "2": "Be self-employed"}, {}, dict(edu=0.4, urban=-0.4, age=-0.4)),
        ("v5", "All things considered, how satisfied are you with your (main) job, or the last job you had?",
         {"1": "Completely satisfied", "2": "Very satisfied", "3": "Fairly satisfied",
          "4": "Neither satisfied nor dissatisfied", "5": "Fairly dissatisfied", "6": "Very dissatisfied",
          "7": "Completely dissatisfied"}, {}, dict(work=-1.6, edu=-0.5)),
        ("v6", "Do you agree or disagree: workers need strong trade unions to protect their interests.",
         AGREE5, {}, dict(edu=0.5, work=-0.6, age=-0.4)),
    ],
}


def demo_question_set(slug: str) -> list[dict[str, Any]]:
    """The demo questions of one domain in the ``issp_qa_*.json`` layout."""
    return [{"question_id": qid, "question": text, "answer": dict(options), "special": copy.deepcopy(special)}
            for qid, text, options, special, _ in _SETS[slug]]


def demo_drivers(slug: str) -> dict[str, tuple[str, dict]]:
    """question id -> (question text, drivers) for the demo questions of ``slug``."""
    return {qid: (text, drivers) for qid, text, _, _, drivers in _SETS.get(slug, [])}


# ----------------------------------------------------------------- demo countries
# domain id -> (C_ALPHAN code, display name as ISSP spells it in that module)
DEMO_COUNTRIES: dict[int, tuple[tuple[str, str], ...]] = {
    1: (("AT", "Austria"), ("TW", "Taiwan"), ("US", "United States of America"), ("JP", "Japan"),
        ("IN", "India"), ("GB-GBN", "Great Britain"), ("ZA", "South Africa"), ("PL", "Poland")),
    2: (("US", "United Stated"), ("CN", "China"), ("DE", "Germany"), ("TH", "Thailand"),
        ("NZ", "New Zealand"), ("ES", "Spain"), ("KR", "Korea (South)"), ("IS", "Iceland")),
    3: (("TW", "Taiwan, China"), ("AR", "Argentina"), ("SE", "Sweden"), ("IE", "Ireland"),
        ("PH", "Philippines"), ("TR", "Turkey"), ("MX", "Mexico"), ("BG", "Bulgaria"), ("IL", "Israel")),
    4: (("CH", "Switzerland"), ("CN", "China"), ("IT", "Italy"), ("NO", "Norway"), ("SR", "Suriname"),
        ("TW", "Taiwan, China")),
    6: (("DE-W", "Germany (West)"), ("DE-E", "Germany (East)"), ("IL-J", "Israel – Jews"),
        ("IL-A", "Israel – Arabs"), ("BE-FLA", "Belgium–Flanders"), ("BE-WAL", "Belgium–Wallonia"),
        ("GB-GBN", "United Kingdom – Great Britain"), ("JP", "Japan"), ("RU", "Russia"), ("MX", "Mexico")),
    7: (("PH", "Philippines"), ("TR", "Turkey"), ("JP", "Japan"), ("CZ", "Czech Republic"), ("IT", "Italy"),
        ("GE", "Georgia"), ("DK", "Denmark"), ("US", "United States")),
    8: (("FR", "France"), ("VE", "Venezuela"), ("KR", "Korea (South)"), ("SR", "Suriname"),
        ("TH", "Thailand"), ("AU", "Australia"), ("HR", "Croatia")),
    9: (("VE", "Venezuela"), ("ZA", "South Africa"), ("NZ", "New Zealand"), ("TH", "Thailand"),
        ("IS", "Iceland"), ("BG", "Bulgaria"), ("CL", "Chile"), ("RU", "Russia")),
    10: (("HU", "Hungary"), ("CN", "China"), ("IN", "India"), ("MX", "Mexico"), ("FI", "Finland"),
         ("FR", "France"), ("GB-GBN", "Great Britain"), ("AT", "Austria")),
    11: (("ES", "Spain"), ("EE", "Estonia"), ("GE", "Georgia"), ("LV", "Latvia"), ("CN", "China"),
         ("NO", "Norway"), ("BE", "Belgium"), ("SR", "Suriname")),
}

# Names ISSP used in one module that differ from that module's code table.
NAME_QUIRKS: dict[tuple[int, str], str] = {(1, "TW"): "Taiwan"}

# Religious make-up (RELIGGRP code:percent) and mean religiosity, by code or code prefix.
_RELIGION_GROUPS: tuple[tuple[str, str, float], ...] = (
    ("PL HR SI SK LT AT IE PT ES IT CL MX AR VE PH", "1:78 0:14 2:4 4:4", 0.5),
    ("FR BE BE-FLA BE-WAL BE-BRU CZ HU", "1:45 0:45 2:7 6:3", -0.3),
    ("DE DE-W CH NL AU NZ CA GB GB-GBN", "0:42 1:25 2:25 4:4 6:4", -0.2),
    ("DE-E EE", "0:75 2:15 1:5 3:5", -0.8),
    ("SE NO DK FI IS LV", "2:68 0:26 1:3 4:3", -0.4),
    ("US ZA SR", "2:45 1:22 0:20 4:8 10:5", 0.6),
    ("RU GE BG", "3:72 0:18 6:8 1:2", 0.2),
    ("TR IL-A", "6:94 0:4 4:2", 0.9),
    ("IL IL-J", "5:82 6:14 0:4", 0.4),
    ("IN", "8:78 6:14 4:4 10:4", 1.0),
    ("JP KR CN TW TH", "0:48 7:34 9:10 4:8", -0.3),
)
_DEFAULT_RELIGION = ("0:30 1:30 2:30 10:10", 0.0)


def religion_profile(code: str) -> tuple[dict[int, float], float]:
    """(RELIGGRP code -> probability, mean religiosity) for a C_ALPHAN code."""
    found = _DEFAULT_RELIGION
    for prefix in (code, code.split("-")[0]):
        hit = next(((mix, mean) for codes, mix, mean in _RELIGION_GROUPS if prefix in codes.split()), None)
        if hit:
            found = hit
            break
    weights = {int(k): float(v) for k, v in (part.split(":") for part in found[0].split())}
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}, found[1]


# ----------------------------------------------------------- attribute vocabulary
# ISSP variable -> (attribute key, code -> value label, missing-value label); used when no
# codebook is given, and as the fallback for labels a codebook lacks.
VOCABULARY: dict[str, tuple[str, dict[str, str], str]] = {
    "CASEID": ("ID Number of Respondent", {}, "No answer"),
    "SEX": ("Sex of Respondent", {"1": "Male", "2": "Female"}, "No answer"),
    "AGE": ("Age of respondent", {}, "No answer"),
    "DEGREE": ("Highest completed education level: Categories for international comparison",
               {"0": "No formal education", "1": "Primary school (elementary education)",
                "2": "Lower secondary (secondary completed does not allow entry to university)",
                "3": "Upper secondary (programs that allow entry to university)",
                "4": "Post secondary, non-tertiary (other upper secondary programs toward labour market)",
                "5": "Lower level tertiary, first stage (also technical schools at a tertiary level)",
                "6": "Upper level tertiary (Master, Doctor)"}, "No answer"),
    "WORK": ("Currently, formerly, or never in paid work",
             {"1": "Currently in paid work", "2": "Currently not in paid work, paid work in the past",
              "3": "Never had paid work"}, "No answer"),
    "MAINSTAT": ("Main status", {"1": "In paid work", "2": "Unemployed and looking for a job",
                                 "3": "In education", "5": "Permanently sick or disabled", "6": "Retired",
                                 "7": "Domestic work", "9": "Other"}, "No answer"),
    "MARITAL": ("Legal partnership status",
                {"1": "Married", "2": "Civil partnership", "3": "Separated from spouse/ civil partner",
                 "4": "Divorced from spouse/ legally separated from civil partner",
                 "5": "Widowed/ civil partner died",
                 "6": "Never married/ never in a civil partnership, single"},
                "Refused"),
    "RELIGGRP": ("Groups of religious affiliations (derived from nat_RELIG)",
                 {"0": "No religion", "1": "Catholic", "2": "Protestant", "3": "Orthodox",
                  "4": "Other Christian",
                  "5": "Jewish", "6": "Islamic", "7": "Buddhist", "8": "Hindu", "9": "Other Asian Religions",
                  "10": "Other Religions"}, "Refused"),
    "ATTEND": ("Attendance of religious services",
               {"1": "Several times a week or more often", "2": "Once a week", "3": "2 or 3 times a month",
                "4": "Once a month", "5": "Several times a year", "6": "Once a year",
                "7": "Less frequently than once a year", "8": "Never"}, "Don't know"),
    "URBRURAL": ("Place of living: urban - rural",
                 {"1": "A big city", "2": "The suburbs or outskirts of a big city",
                  "3": "A town or a small city",
                  "4": "A country village", "5": "A farm or home in the country"}, "No answer"),
    "DATEYR": ("Date of interview: year of interview; YYYY (four digits)", {}, "No answer"),
    "MODE": ("Administrative mode of data-collection",
             {"10": "Face-to-face, PAPI, no visuals",
              "21": "CAPI, computer assisted personal interview, visuals",
              "34": "Self completion, mailed to, mailed back by Respondent",
              "40": "Self completion, web-based (CAWI)"}, "No answer"),
    "WEIGHT": ("Weighting factor", {"1": "No weighting"}, "No answer"),
}
NATIONAL_RELIGION_KEY = "Country specific religious affiliation or denomination: {name}"
NAP_LABEL = "NAP, other countries"
