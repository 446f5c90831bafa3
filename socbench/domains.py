"""The ten ISSP domains as data (lm-eval's YAML idea, kept as a table in code)."""

from __future__ import annotations

from dataclasses import dataclass

from socbench.errors import ConfigError


@dataclass(frozen=True)
class DomainSpec:
    """One ISSP module: id, display name, file slug and source study."""

    id: int
    name: str
    slug: str
    module: str

    @property
    def qa_file(self) -> str:
        return f"issp_qa_{self.slug}.json"

    @property
    def answer_file(self) -> str:
        return f"issp_answer_{self.slug}.json"

    @property
    def profile_file(self) -> str:
        return f"issp_profile_{self.name}.json"


DOMAINS: tuple[DomainSpec, ...] = (
    DomainSpec(1, "Citizenship", "citizenship", "2014 Citizenship II (ZA6670)"),
    DomainSpec(2, "Environment", "environment", "2020 Environment IV (ZA7650)"),
    DomainSpec(3, "Family", "family", "2012 Family and Changing Gender Roles IV (ZA5900)"),
    DomainSpec(4, "Health", "health", "2021 Health and Health Care II (ZA8000)"),
    DomainSpec(6, "NationalIdentity", "nationalidentity", "2013 National Identity III (ZA5950)"),
    DomainSpec(7, "Religion", "religion", "2018 Religion IV (ZA7570)"),
    DomainSpec(8, "RoleofGovernment", "roleofgovernment", "Role of Government"),
    DomainSpec(9, "SocialInequality", "socialinequality", "2019 Social Inequality V (ZA7600)"),
    DomainSpec(10, "SocialNetworks", "socialnetworks", "2017 Social Networks II (ZA6980)"),
    DomainSpec(11, "WorkOrientations", "workorientations", "2015 Work Orientations IV (ZA6770)"),
)

_BY_ID = {d.id: d for d in DOMAINS}
VALID_IDS = ", ".join(str(d.id) for d in DOMAINS)


def get_domain(domain_id: int | str) -> DomainSpec:
    """Look a domain up by id, slug or name; a clear error lists the valid ids."""
    key = str(domain_id).strip()
    if key.lstrip("-").isdigit():
        num = int(key)
        if num == 5:
            raise ConfigError(
                f"--domain_id 5 (Leisure Time and Sports) has no data in ISSP/SocioBench; "
                f"valid ids: {VALID_IDS}"
            )
        if num in _BY_ID:
            return _BY_ID[num]
    for d in DOMAINS:
        if key.lower() in (d.slug, d.name.lower()):
            return d
    raise ConfigError(f"--domain_id {key!r} is not a known domain; valid ids: {VALID_IDS} (or 'all')")


def select_domains(domain_id: int | str = "all", start_domain_id: int | None = None) -> list[DomainSpec]:
    """Domains to run: one id, or 'all' from ``start_domain_id`` on (the seed's semantics)."""
    if str(domain_id).strip().lower() != "all":
        return [get_domain(domain_id)]
    if start_domain_id is None:
        return list(DOMAINS)
    try:
        start = get_domain(start_domain_id)
    except ConfigError as exc:  # the message names the flag that was given
        raise ConfigError(str(exc).replace("--domain_id", "--start_domain_id", 1)) from None
    return [d for d in DOMAINS if d.id >= start.id]
