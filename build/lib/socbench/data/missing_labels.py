"""Which value labels mark a missing answer, in English and in the ISSP countries' languages.

A label is missing only as a whole label or its leading phrase followed by punctuation or the
end ("Don't know whether there is a God" is an answer; "nap" must not match "Navarra"), so persona
attributes are kept. A label may start with the countries it applies to ("AT, CZ: Not available").
"""

from __future__ import annotations

import functools
import re

_COUNTRY_LIST = re.compile(r"^[A-Z]{2}(?:-[A-Z]{1,3})?(?:\s*,\s*[A-Z]{2}(?:-[A-Z]{1,3})?)*\s*:\s*")
STATA_MISSING = re.compile(r"^\.[a-z]$")  # Stata's extended missing values .a-.z, as the import keeps them
_RAW_MISSING_CODE = re.compile(r"^(?:-\d+|9{2,}\d|\.[a-z])$")  # -9, -1, 990, 999, 9999, 999990, .a ...

# Leading phrases, lower case; each must be followed by the end of the label or punctuation.
_PHRASES = {
    "English / ISSP": (
        r"no ans?w?er|no \(second\) answer|nap|nav|n/?a|not applicable|does not apply|not available"
        r"|not asked|inapplicable|refused|resused|(?:i )?(?:don'?t|do not) (?:know|remember)"
        r"|can'?t (?:choose|say|remember)|can ?not (?:choose|say)|hard to say|no information"
        r"|information missing|break-off|missing|system missing|sysmis|prefer not to (?:say|answer)"
    ),
    "German": (
        r"wei(?:ß|ss) nicht|kei(?:ne|n) angabe|k\. ?a\.|keine antwort|verweigert|antwort verweigert"
        r"|kann (?:ich )?(?:nicht|mich nicht) (?:sagen|entscheiden|wählen)|nicht anwendbar|entfällt"
        r"|fehlend|fehlender wert|nicht erhoben"
    ),
    "French": (
        r"(?:je )?ne (?:sait|sais) pas|nsp|refus|refusé|refuse|sans réponse|pas de réponse"
        r"|non[- ]réponse|ne se prononce pas|nspp|ne veut pas répondre|sans objet|non concerné"
        r"|ne peut pas choisir|ne peut pas dire"
    ),
    "Spanish": (
        r"no (?:sabe|sé|lo sé)|no contesta|no contestó|no responde|ns/nc|no procede|no aplica"
        r"|sin respuesta|se niega|rechaza|no puede elegir|no puede decir"
    ),
    "Italian": r"non (?:so|sa|sa rispondere|risponde|applicabile|indica)|nessuna risposta|rifiut[ao]",
    "Portuguese": (
        r"não (?:sabe|sei|responde|respondeu|se aplica|sabe/não responde)|sem resposta|recus[ao]u?"
        r"|ns/nr"
    ),
    "Dutch": (
        r"weet (?:ik )?niet|geen antwoord|weigert|geweigerd|niet van toepassing|kan niet kiezen"
        r"|wil niet zeggen"
    ),
    "Polish": r"nie wiem|trudno powiedzieć|odmowa(?: odpowiedzi)?|brak odpowiedzi|nie dotyczy",
    "Czech / Slovak": (
        r"nev[íi]m?|odmítl[a]?|odmítnutí|odmietol|bez odpovědi|bez odpovede|netýká se"
        r"|nelze určit|neviem"
    ),
    "Swedish": r"vet (?:inte|ej)|inget svar|ej svar|vägrar|vill inte svara|ej tillämplig|kan inte välja",
    "Norwegian / Danish": (
        r"vet ikke|ved ikke|ikke svar|intet svar|vil ikke svare|nekter|nægter|ikke aktuelt"
        r"|ikke relevant|ubesvart|kan ikke velge|kan ikke vælge|ønsker ikke at svare"
    ),
    "Finnish": r"en osaa sanoa|ei osaa sanoa|ei vastausta|kieltäytyi|ei koske",
    "Hungarian / Slovenian / Croatian": (
        r"nem tudja|nem tudom|nem válaszolt|válaszmegtagadás|ne vem|ne znam|brez odgovora|bez odgovora"
    ),
    "Russian / Turkish": (
        r"затрудняюсь ответить|нет ответа|отказ от ответа|не знаю|bilmiyor|cevap yok|yanıt yok"
    ),
    "Japanese / Chinese / Korean": (
        r"わからない|分からない|無回答|答えたくない|非該当|不知道|拒答|无回答|不适用|모름|무응답"
    ),
}
_MISSING_START = re.compile(
    r"^(?:(?:" + "|".join(_PHRASES.values()) + r")"
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
    if not text:
        return True
    number = re.sub(r"\.0+$", "", text)
    if _RAW_MISSING_CODE.match(number):
        return True
    text = _COUNTRY_LIST.sub("", text)
    return bool(_MISSING_START.match(text.lower()))


def is_missing_option(code: str, label: str) -> bool:
    """An option that must never be offered: its label is a missing label ("Not asked", "No answer").
    A label that is the code itself is a scale point ("-1" on a -5..5 scale), and an empty one is
    merely unlabelled: both stay options."""
    text = " ".join(str(label).split())
    return bool(text) and text != str(code) and is_missing_label(text)
