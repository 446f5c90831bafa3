"""Country names -> ``C_ALPHAN`` codes, and display names for prompts.

Answer files spell countries as the codebook does (typos, variants, sub-samples, code prefixes);
every variant seen is in one table, names are normalised, and an unmapped name is reported, never dropped.
Past the table, ISO 3166 (pycountry: alpha-3 codes, English names and their translations in the
major European languages: "Australien", "Allemagne", "Países Bajos") maps a name to its code.
"""

from __future__ import annotations

import functools
import gettext
import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# code -> (display name for [COUNTRY], nationality for [NATIONALITY], extra aliases), from countries.json.
# Covers every code and name in the C_ALPHAN, c_sample, country, V3 and V4 tables of the
# ten ISSP codebooks the benchmark uses. Sub-samples display as their nation.
COUNTRIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    code: (c["name"], c["nationality"], tuple(c["aliases"]))
    for code, c in json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8")).items()}

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-")
# "27601 DE-W-Germany-West", "TW-Taiwan, China": an optional numeric code, then a C_ALPHAN code.
_NUMERIC_PREFIX = re.compile(r"^\d+[\s.:-]*")
_CODE_PREFIX = re.compile(r"^([A-Z]{2}(?:-[A-Z]{1,3})?)-+\s*(.+)$")


@dataclass(frozen=True)
class CountryInfo:
    """What the prompt builder puts in ``[COUNTRY]`` and ``[NATIONALITY]`` placeholders."""

    code: str
    name: str
    nationality: str

    @property
    def possessive(self) -> str:
        return f"{self.name}'" if self.name.endswith("s") else f"{self.name}'s"


def normalize_name(name: str) -> str:
    """Case-, accent-, dash- and punctuation-insensitive form of a country name."""
    text = unicodedata.normalize("NFKD", name.translate(_DASHES))
    text = "".join(ch for ch in text if not unicodedata.combining(ch) and ch not in ".'").lower()
    text = re.sub(r"[^a-z0-9]+", " ", text).strip()
    return re.sub(r"^the ", "", text)


def _sorted_tokens(norm: str) -> str:
    return " ".join(sorted(norm.split()))


def _names_of(code: str) -> list[str]:
    """Names that map to ``code``; a sub-sample's display name is its nation's, not an alias."""
    name, _, aliases = COUNTRIES[code]
    is_subsample = "-" in code and code.split("-")[0] in COUNTRIES
    return [code, *([] if is_subsample else [name]), *aliases]


def _build_index(pairs: list[tuple[str, str]], strict: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """Exact and word-order-free indexes over (name, code); first wins, a clash in ``strict``
    mode (the built-in table) is a bug."""
    exact: dict[str, str] = {}
    loose: dict[str, str] = {}
    for name, code in pairs:
        for index, key in ((exact, normalize_name(name)), (loose, _sorted_tokens(normalize_name(name)))):
            if index.setdefault(key, code) != code and strict:
                raise ValueError(f"country alias {name!r} maps to both {index[key]} and {code}")
    return exact, loose


_EXACT, _LOOSE = _build_index([(n, code) for code in COUNTRIES for n in _names_of(code)], strict=True)


# the languages whose country names map (pycountry's translations of ISO 3166-1)
LANGUAGES = ("de", "fr", "es", "it", "nl", "pt", "pl", "sv", "da", "nb", "fi", "cs", "hu", "ro", "ca", "sl",
             "hr")


@functools.lru_cache(maxsize=1)
def _iso_index() -> tuple[dict[str, str], dict[str, str]]:
    """ISO 3166 alpha-3 codes and names (English and ``LANGUAGES``) -> the table's code ("GB" is
    "GB-GBN"), else the ISO alpha-2 code; built once, on the first name the table does not know."""
    import pycountry

    books = [gettext.translation("iso3166-1", pycountry.LOCALES_DIR, languages=[lang], fallback=True)
             for lang in LANGUAGES]
    known = [(country, _EXACT.get(normalize_name(country.alpha_2), country.alpha_2))
             for country in pycountry.countries]
    names = [(name, code) for country, code in known for name in
             {getattr(country, key, None) for key in ("name", "official_name", "common_name")} - {None}]
    codes = [(iso, code) for country, code in known for iso in (country.alpha_2, country.alpha_3)]
    pairs = codes + names  # English first: it wins a clash
    pairs += [(book.gettext(name), code) for book in books for name, code in names]
    return _build_index(pairs)


def _lookup(name: str, extra: tuple[dict[str, str], dict[str, str]]) -> str | None:
    if not (norm := normalize_name(name)):
        return None
    indexes = (extra, (_EXACT, _LOOSE), _iso_index())
    found = (exact.get(norm) or loose.get(_sorted_tokens(norm)) for exact, loose in indexes)
    return next((code for code in found if code), None)


def resolve_country(name: str, extra: Mapping[str, str] | None = None) -> str | None:
    """An ISSP country name (or code, or "XX-Name") -> its ``C_ALPHAN`` code, else None; ``extra``
    (a codebook's code -> name table) is tried first."""
    text, extra = _NUMERIC_PREFIX.sub("", str(name).strip().translate(_DASHES)), extra or {}
    extra_index = _build_index([(n, c) for c, n in extra.items()] + [(c, c) for c in extra])
    if code := _lookup(text, extra_index):
        return code
    if not (match := _CODE_PREFIX.match(text)):
        return None
    prefix, rest = match.groups()
    rest_code = _lookup(rest, extra_index)
    if prefix in COUNTRIES or prefix in extra:
        # "IL-Jews" -> IL-J: keep the finer sub-sample when the rest names one of the prefix.
        return rest_code if rest_code and rest_code.startswith(prefix) else prefix
    return rest_code


def country_info(code: str, name: str | None = None) -> CountryInfo:
    """Display name and nationality of a code; unknown codes fall back to ``name`` or the code."""
    key = code.strip().upper()
    if key in COUNTRIES:
        return CountryInfo(key, *COUNTRIES[key][:2])  # display name, nationality
    import pycountry

    iso = pycountry.countries.get(alpha_2=key) if len(key) == 2 else None
    name = getattr(iso, "common_name", None) or getattr(iso, "name", None) or name
    return CountryInfo(key, name or key, name or key)


def country_attribute_key(attributes: Mapping[str, object]) -> str | None:
    """The attribute holding the C_ALPHAN country name (keys differ by domain); the alphanumeric
    prefix table is preferred over numeric ones, then sample tables over whole-nation ones."""
    candidates = [k for k in attributes if k.lower().startswith("country") and "iso 3166" in k.lower()]

    def rank(key: str) -> tuple[int, int, int]:
        low = key.lower()
        return ("alphanumeric" not in low, "prefix" not in low, not re.match(r"country\s*/\s*sample", low))

    return min(candidates, key=rank, default=None)


def codebook_country_table(entries: list) -> dict[str, str]:
    """The C_ALPHAN ``{code: name}`` table of a codebook (a list of CodebookEntry), or {}."""
    entry = next((e for e in entries if e.domain.strip().lower() == "c_alphan"), None)
    return {code.strip(): str(label) for code, label in entry.content.items()} if entry else {}
