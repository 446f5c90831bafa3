"""The domains of a data folder: its manifest's, else the ten ISSP modules.

Why: the ten ISSP modules stay a table in code (lm-eval's YAML idea) so every existing
command and the demo work without a manifest, while any other study declares its domains
in ``socbench.yaml`` (``socbench.manifest``) beside its data and needs no code edit. Ids
stay integers everywhere (records, result files, Prefect artifact keys and the
``--start_domain_id`` order); a domain is also found by its slug or name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from socbench.errors import ConfigError
from socbench.manifest import AUTO_COUNTRY, ManifestDomain, load_manifest

QA_FOLDER = "q&a"


@dataclass(frozen=True)
class DomainSpec:
    """One domain: id, name (names its result files), file slug, source study, how to read its
    files, and ``title``, the name people read (default: ``name``).

    ``country_attribute`` is the attribute key holding the respondent's country; ``"auto"``
    finds the ISSP one by its label (the default) and None means a single-country study.
    ``missing_codes`` are answer codes never offered as options (excluded at scoring).
    """

    id: int
    name: str
    slug: str
    module: str = ""
    question_path: str = ""  # relative to the dataset root; "" = q&a/issp_qa_<slug>.json
    answer_name: str = ""  # in each A_GroundTruth_sampling<N>/; "" = issp_answer_<slug>.json
    country_attribute: str | None = AUTO_COUNTRY
    persona_include: tuple[str, ...] = ()
    persona_exclude: tuple[str, ...] = ()
    missing_codes: tuple[str, ...] = ()
    title: str = ""

    @property
    def display_name(self) -> str:
        return self.title or self.name

    @property
    def qa_file(self) -> str:
        return Path(self.question_path).name if self.question_path else f"issp_qa_{self.slug}.json"

    @property
    def qa_path(self) -> str:
        """The question file relative to the dataset root."""
        return self.question_path or f"{QA_FOLDER}/{self.qa_file}"

    @property
    def answer_file(self) -> str:
        return self.answer_name or f"issp_answer_{self.slug}.json"

    @property
    def profile_file(self) -> str:
        return f"issp_profile_{self.name}.json"


DOMAINS: tuple[DomainSpec, ...] = (
    DomainSpec(1, "Citizenship", "citizenship", "2014 Citizenship II (ZA6670)"),
    DomainSpec(2, "Environment", "environment", "2020 Environment IV (ZA7650)"),
    DomainSpec(3, "Family", "family", "2012 Family and Changing Gender Roles IV (ZA5900)"),
    DomainSpec(4, "Health", "health", "2021 Health and Health Care II (ZA8000)"),
    DomainSpec(6, "NationalIdentity", "nationalidentity", "2013 National Identity III (ZA5950)",
               title="National Identity"),
    DomainSpec(7, "Religion", "religion", "2018 Religion IV (ZA7570)"),
    DomainSpec(8, "RoleofGovernment", "roleofgovernment", "Role of Government", title="Role of Government"),
    DomainSpec(9, "SocialInequality", "socialinequality", "2019 Social Inequality V (ZA7600)",
               title="Social Inequality"),
    DomainSpec(10, "SocialNetworks", "socialnetworks", "2017 Social Networks II (ZA6980)",
               title="Social Networks"),
    DomainSpec(11, "WorkOrientations", "workorientations", "2015 Work Orientations IV (ZA6770)",
               title="Work Orientations"),
)
ISSP_BY_SLUG = {d.slug: d for d in DOMAINS}


def spec_from_manifest(entry: ManifestDomain) -> DomainSpec:
    """A manifest entry as a DomainSpec (missing codes as canonical strings: -9, "98")."""
    return DomainSpec(
        id=entry.id, name=entry.name, slug=entry.slug, module=entry.module,
        question_path=entry.question_file or "", answer_name=entry.answer_file or "",
        country_attribute=entry.country_attribute,
        persona_include=tuple(entry.persona_attributes.include),
        persona_exclude=tuple(entry.persona_attributes.exclude),
        missing_codes=tuple(_canonical(code) for code in entry.missing_codes),
    )


def _canonical(code: int | str) -> str:
    """A missing code as the loaders write codes: " 098" -> "98", -9 -> "-9"."""
    text = str(code).strip()
    return str(int(text)) if text.lstrip("-").isdigit() else text


def domain_table(data_dir: str | Path | None = None) -> tuple[DomainSpec, ...]:
    """The domains of ``data_dir``: its manifest's, or the ten ISSP domains when it has none."""
    manifest = load_manifest(data_dir)
    if manifest is None:
        return DOMAINS
    return tuple(sorted((spec_from_manifest(d) for d in manifest.domains), key=lambda d: d.id))


def get_domain(domain_id: int | str, data_dir: str | Path | None = None) -> DomainSpec:
    """Look a domain up by id, slug or name; a clear error lists the valid ids."""
    table = domain_table(data_dir)
    valid = ", ".join(str(d.id) for d in table)
    key = str(domain_id).strip()
    if key.lstrip("-").isdigit():
        num = int(key)
        if num == 5 and table is DOMAINS:
            raise ConfigError(
                f"--domain_id 5 (Leisure Time and Sports) has no data in ISSP/SocioBench; valid ids: {valid}"
            )
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
