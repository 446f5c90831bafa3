"""The domains of a data folder: its manifest's, else the ten ISSP modules.

Why: the ten ISSP modules stay a table here so every command and the demo work without a manifest; any
other study declares its domains in ``socbench.yaml`` (``socbench.manifest``). Ids stay integers
everywhere (records, file names, artifact keys, ``--start_domain_id``); slug or name find a domain too.
"""

from __future__ import annotations

from pathlib import Path

from socbench.errors import ConfigError
from socbench.manifest import AUTO_COUNTRY, QA_FOLDER, DomainSpec, load_manifest

__all__ = ["DOMAINS", "ISSP_BY_SLUG", "QA_FOLDER", "DomainSpec", "domain_table", "get_domain",
           "select_domains", "study_name"]


def _issp(number: int, name: str, slug: str, module: str, title: str = "") -> DomainSpec:
    """An ISSP module: multi-country, its country found by the ISSP label."""
    return DomainSpec(id=number, name=name, slug=slug, module=module, title=title,
                      country_attribute=AUTO_COUNTRY)

DOMAINS: tuple[DomainSpec, ...] = (
    _issp(1, "Citizenship", "citizenship", "2014 Citizenship II (ZA6670)"),
    _issp(2, "Environment", "environment", "2020 Environment IV (ZA7650)"),
    _issp(3, "Family", "family", "2012 Family and Changing Gender Roles IV (ZA5900)"),
    _issp(4, "Health", "health", "2021 Health and Health Care II (ZA8000)"),
    _issp(6, "NationalIdentity", "nationalidentity", "2013 National Identity III (ZA5950)",
          title="National Identity"),
    _issp(7, "Religion", "religion", "2018 Religion IV (ZA7570)"),
    _issp(8, "RoleofGovernment", "roleofgovernment", "Role of Government", title="Role of Government"),
    _issp(9, "SocialInequality", "socialinequality", "2019 Social Inequality V (ZA7600)",
          title="Social Inequality"),
    _issp(10, "SocialNetworks", "socialnetworks", "2017 Social Networks II (ZA6980)",
          title="Social Networks"),
    _issp(11, "WorkOrientations", "workorientations", "2015 Work Orientations IV (ZA6770)",
          title="Work Orientations"),
)
ISSP_BY_SLUG = {d.slug: d for d in DOMAINS}


def domain_table(data_dir: str | Path | None = None) -> tuple[DomainSpec, ...]:
    """The domains of ``data_dir``: its manifest's, or the ten ISSP domains when it has none."""
    manifest = load_manifest(data_dir)
    if manifest is None:
        return DOMAINS
    return tuple(sorted(manifest.domains, key=lambda d: d.id))


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
    if key.lstrip("-").isdigit():
        num = int(key)
        if num == 5 and table is DOMAINS:
            raise ConfigError(f"--domain_id 5 (Leisure Time and Sports) has no data in ISSP/SocioBench; "
                              f"valid ids: {valid}")
        for d in table:
            if d.id == num:
                return d
    for d in table:
        if key.lower() in (d.slug, d.name.lower()):
            return d
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
