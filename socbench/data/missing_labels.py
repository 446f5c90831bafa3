"""Which value labels mark a missing answer, in English and in the ISSP countries' languages.

A label is missing only as a whole label or its leading phrase followed by punctuation or the
end ("Don't know whether there is a God" is an answer; "nap" must not match "Navarra"), so persona
attributes are kept. A label may start with the countries it applies to ("AT, CZ: Not available").
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

_COUNTRY_LIST = re.compile(r"^[A-Z]{2}(?:-[A-Z]{1,3})?(?:\s*,\s*[A-Z]{2}(?:-[A-Z]{1,3})?)*\s*:\s*")
STATA_MISSING = re.compile(r"^\.[a-z]$")  # Stata's extended missing values .a-.z, as the import keeps them
_RAW_MISSING_CODE = re.compile(r"^(?:-\d+|9{2,}\d|\.[a-z])$")  # -9, -1, 990, 999, 9999, 999990, .a ...

# Leading phrases by language, lower case, as regular expressions (missing_labels.json); each must be
# followed by the end of the label or punctuation.
_PHRASES: dict[str, list[str]] = json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8"))
_MISSING_START = re.compile(
    r"^(?:(?:" + "|".join(phrase for phrases in _PHRASES.values() for phrase in phrases) + r")"
    r"(?=$|\s*[,;:(/+.\-、・（]|\s+incl)"  # "Don't know whether there is a God" is an answer
    r"|(?:refused to answer|no (?:\(second\)|second|secound)"
    r"|information insufficient|insufficient information"
    r"|(?:non-|not )classifiable|wrong answer|invalid answers?)\b)"
)


@functools.lru_cache(maxsize=1 << 16)  # labels repeat across respondents
def is_missing_label(value: str) -> bool:
    """True for survey missing-value labels and raw missing codes, not for real answers.

    "No answer", "NAP, other countries", "Can't choose", "Weiß nicht", "Keine Angabe",
    "Ne sait pas", "No contesta", "990", "-9", ".a" are missing; "No religion", "No income",
    "Navarra", "Never", "Trifft nicht zu" and ages such as "45" are not.
    """
    text = " ".join(str(value).split()).replace("\u2019", "'")
    return not text or bool(_RAW_MISSING_CODE.match(re.sub(r"\.0+$", "", text))
                            or _MISSING_START.match(_COUNTRY_LIST.sub("", text).lower()))


def is_missing_option(code: str, label: str) -> bool:
    """An option that must never be offered: its label is a missing label ("Not asked", "No answer").
    A label that is the code itself is a scale point ("-1" on a -5..5 scale), and an empty one is
    merely unlabelled: both stay options."""
    text = " ".join(str(label).split())
    return bool(text) and text != str(code) and is_missing_label(text)
