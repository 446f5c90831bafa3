"""Country names -> C_ALPHAN codes, display names, and the country attribute key."""

from __future__ import annotations

import json
import re

import pytest

from socbench.data.countries import (
    COUNTRIES,
    country_attribute_key,
    country_info,
    normalize_name,
    resolve_country,
)


@pytest.mark.parametrize("name, code", [
    ("Taiwan", "TW"), ("Taiwan, China", "TW"), ("TAIWAN", "TW"), ("  taiwan ", "TW"),
    ("TW-Taiwan, China", "TW"),
    ("United Stated", "US"), ("United States", "US"), ("United States of America", "US"), ("USA", "US"),
    ("Korea (South)", "KR"), ("South Korea", "KR"), ("KR-Korea (South)", "KR"),
    ("Czechia", "CZ"), ("Czech Republic", "CZ"), ("czech republic", "CZ"),
    ("Great Britain", "GB-GBN"), ("United Kingdom – Great Britain", "GB-GBN"),
    ("United Kingdom - Great Britain", "GB-GBN"), ("GB-Great Britain and/or United Kingdom", "GB-GBN"),
    ("Belgium–Flanders", "BE-FLA"), ("Belgium-Flanders", "BE-FLA"), ("BE-FLA-Belgium/ Flanders", "BE-FLA"),
    ("Belgium–Brussels-Capital Region", "BE-BRU"), ("5603 BE-BRU-Belgium-Brussels", "BE-BRU"),
    ("Belgium–Wallonia", "BE-WAL"), ("Belgium", "BE"),
    ("Germany (West)", "DE-W"), ("Germany (East)", "DE-E"), ("27601 DE-W-Germany-West", "DE-W"),
    ("DE-E-Germany-East", "DE-E"), ("Germany", "DE"), ("de-w", "DE-W"),
    ("Israel – Jews", "IL-J"), ("Israel – Arabs", "IL-A"), ("IL-A-Israel, Arabs", "IL-A"),
    ("IL-Jews", "IL-J"),
    ("Israel", "IL"), ("Slovak Republic", "SK"), ("SR-Surinam", "SR"), ("VE-Venezeula", "VE"),
    ("PT-Portugal 2012: first fieldwork round (main sample)", "PT"), ("Russia", "RU"),
    ("the Netherlands", "NL"), ("Philippines", "PH"), ("China", "CN"),
])
def test_resolve_country(name, code):
    assert resolve_country(name) == code


@pytest.mark.parametrize("name", ["Narnia", "No answer", "", "  ", "Navarra", "Not available", "XX-Nowhere"])
def test_unknown_names_resolve_to_none(name):
    assert resolve_country(name) is None


def test_extra_table_extends_mapping():
    assert resolve_country("Kosovo") is None
    assert resolve_country("Kosovo", {"XK": "Kosovo"}) == "XK"
    assert resolve_country("XK-Kosovo", {"XK": "Kosovo"}) == "XK"
    assert resolve_country("Taiwan", {"XK": "Kosovo"}) == "TW"


@pytest.mark.parametrize("code, name, nationality", [
    ("DE-W", "Germany", "German"), ("TW", "Taiwan", "Taiwanese"), ("US", "the United States", "American"),
    ("GB-GBN", "Great Britain", "British"), ("IL-J", "Israel", "Israeli"), ("BE-FLA", "Belgium", "Belgian"),
    ("kr", "South Korea", "South Korean"),
])
def test_country_info(code, name, nationality):
    info = country_info(code)
    assert (info.code, info.name, info.nationality) == (code.upper(), name, nationality)


def test_country_info_unknown_code_falls_back():
    assert country_info("XK", "Kosovo").name == "Kosovo"
    assert country_info("XK").name == "XK"


def test_every_code_has_display_name_and_nationality():
    for code, (name, nationality, _aliases) in COUNTRIES.items():
        assert name and nationality and re.fullmatch(r"[A-Z]{2}(-[A-Z]{1,3})?", code)
        assert resolve_country(code) == code


@pytest.mark.parametrize("key", [
    "Country Prefix ISO 3166",
    "Country/ Sample Prefix ISO 3166 Code - alphanumeric",
    "Country Prefix ISO 3166 Code - alphanumeric",
    "Country/ Sample Prefix ISO 3166 code - alphanumeric",
    "COUNTRY PREFIX iso 3166",
])
def test_country_attribute_key_per_domain(key):
    attrs = {"Sex of Respondent": "Male",
             "Country/Sample (see V4 for codes)": "TW-Taiwan, China", key: "Taiwan"}
    assert country_attribute_key(attrs) == key


def test_country_attribute_key_prefers_alphanumeric_table():
    attrs = {
        "Country ISO 3166 Code (see c_sample for codes for the sample)": "DE-Germany",
        "Country/ Sample ISO 3166 Code (see country for codes for whole nation states)": "DE-W-Germany-West",
        "Country/ Sample Prefix ISO 3166 Code - alphanumeric": "Germany (West)",
    }
    assert country_attribute_key(attrs) == "Country/ Sample Prefix ISO 3166 Code - alphanumeric"
    del attrs["Country/ Sample Prefix ISO 3166 Code - alphanumeric"]
    assert resolve_country(attrs[country_attribute_key(attrs)]) == "DE-W"
    assert country_attribute_key({"Sex": "Male"}) is None


def test_normalize_name():
    assert normalize_name("Belgium–Brussels-Capital Region") == "belgium brussels capital region"
    assert normalize_name("  The  Netherlands ") == "netherlands"
    assert normalize_name("Türkiye") == "turkiye"


def _codebook_country_tables(shared_issp):
    """(file, variable, {code: label}) of every country table in the real codebooks."""
    for path in sorted((shared_issp / "codebooks").glob("issp_profile_*.json")):
        for entry in json.loads(path.read_text(encoding="utf-8")):
            meaning = entry["meaning"].lower()
            if entry["domain"].lower() == "c_alphan" or (meaning.startswith("country") and "see " in meaning):
                yield path.name, entry["domain"], entry["content"]


def test_every_real_c_alphan_code_and_name_resolves(shared_issp):
    tables = [t for t in _codebook_country_tables(shared_issp) if t[1].lower() == "c_alphan"]
    assert len(tables) == 10
    for file, _var, content in tables:
        for code, name in content.items():
            assert code in COUNTRIES, (file, code)
            assert resolve_country(name) == code, (file, code, name)
            assert resolve_country(code) == code, (file, code)


def test_every_real_numeric_country_label_resolves_to_its_prefix(shared_issp):
    """Labels such as "27601 DE-W-Germany-West" carry their code: the resolver must agree."""
    checked = 0
    for file, var, content in _codebook_country_tables(shared_issp):
        if var.lower() == "c_alphan":
            continue
        for label in content.values():
            text = re.sub(r"^\d+\s*", "", label)
            expected = next(c for c in sorted(COUNTRIES, key=len, reverse=True) if text.startswith(c + "-")
                            ) if any(text.startswith(c + "-") for c in COUNTRIES) else None
            got = resolve_country(label)
            if expected is None:  # "GB-Great Britain": GB is not a C_ALPHAN code, the name decides
                assert got == "GB-GBN", (file, var, label)
            else:
                assert got == expected or (got or "").startswith(expected + "-"), (file, var, label, got)
            checked += 1
    assert checked > 300
