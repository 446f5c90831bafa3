"""The domains of a data folder: its manifest's, else the ten ISSP modules.

Why: the ten ISSP modules stay a table (``domains.json``) so every command and the demo work without a
manifest; any other study declares its domains in ``socbench.yaml`` (``socbench.manifest``). Ids stay
integers everywhere (records, file names, artifact keys, ``--start_domain_id``); slug or name find a domain.
"""

from __future__ import annotations

import json
from pathlib import Path

from socbench.errors import ConfigError
from socbench.manifest import AUTO_COUNTRY, QA_FOLDER, DomainSpec, load_manifest

__all__ = ["DOMAINS", "ISSP_BY_SLUG", "QA_FOLDER", "DomainSpec", "domain_table", "get_domain",
           "select_domains", "study_name"]


# the ten ISSP modules, multi-country, each respondent's country found by the ISSP label (domains.json)
DOMAINS: tuple[DomainSpec, ...] = tuple(
    DomainSpec(**row, country_attribute=AUTO_COUNTRY)
    for row in json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8")))
ISSP_BY_SLUG = {d.slug: d for d in DOMAINS}


def domain_table(data_dir: str | Path | None = None) -> tuple[DomainSpec, ...]:
    """The domains of ``data_dir``: its manifest's, or the ten ISSP domains when it has none."""
    manifest = load_manifest(data_dir)
    return DOMAINS if manifest is None else tuple(sorted(manifest.domains, key=lambda d: d.id))


def study_name(data_dir: str | Path | None = None) -> str:
    """The study's name for titles: the manifest's ``title``, "ISSP" (ISSP modules only), or its domains'."""
    manifest = load_manifest(data_dir)
    if manifest is None or all(d.slug in ISSP_BY_SLUG for d in manifest.domains) and not manifest.title:
        return "ISSP"
    return manifest.title or ", ".join(d.display_name for d in manifest.domains)


def get_domain(domain_id: int | str, data_dir: str | Path | None = None) -> DomainSpec:
    """Look a domain up by id, slug or name; a clear error lists the valid ids."""
    table = domain_table(data_dir)
    valid = ", ".join(str(d.id) for d in table)
    key = str(domain_id).strip()
    num = int(key) if key.lstrip("-").isdigit() else None
    if num == 5 and table is DOMAINS:
        raise ConfigError(f"--domain_id 5 (Leisure Time and Sports) has no data in ISSP/SocioBench; "
                          f"valid ids: {valid}")
    # an id first, then a slug or name
    found = [d for d in table if d.id == num] + [d for d in table if key.lower() in (d.slug, d.name.lower())]
    if found:
        return found[0]
    raise ConfigError(f"--domain_id {key!r} is not a known domain; valid ids: {valid} (or 'all')")


def select_domains(domain_id: int | str = "all", start_domain_id: int | str | None = None,
                   data_dir: str | Path | None = None) -> list[DomainSpec]:
    """Domains to run: one id, or 'all' from ``start_domain_id`` on (the original system's semantics)."""
    if str(domain_id).strip().lower() != "all":
        return [get_domain(domain_id, data_dir)]
    table = domain_table(data_dir)
    if start_domain_id is None:
        return list(table)
    try:
        start = get_domain(start_domain_id, data_dir)
    except ConfigError as exc:  # the message names the flag that was given
        raise ConfigError(str(exc).replace("--domain_id", "--start_domain_id", 1)) from None
    return [d for d in table if d.id >= start.id]
