"""The survey manifest: ``socbench.yaml`` in a data folder declares its domains, no code edits.

Why: without it any study but the ten ISSP modules (``socbench.domains``, the same ``DomainSpec`` record)
would mean editing code. This module reads, validates (pydantic) and writes the file; every problem is
one line naming the file and the field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from socbench.errors import DataError, problem
from socbench.files import write_atomic

MANIFEST_NAMES = ("socbench.yaml", "socbench.yml")
QA_FOLDER = "q&a"
AUTO_COUNTRY = "auto"  # find the ISSP country attribute by its label (the default ISSP behaviour)
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.()-]*$")  # becomes part of result file names



def _rule(why: Callable[[Any], str | None]) -> AfterValidator:
    """A field's own rule as pydantic's validator: ``why`` says what is wrong with a value (None: nothing),
    which the file's problem line shows after the field's name."""

    def check(value: Any) -> Any:
        if (wrong := why(value)) is not None:
            raise ValueError(wrong)
        return value

    return AfterValidator(check)


HEADER = (
    "# socbench survey manifest: the domains of this data folder (see socbench's docs/own-survey.md).\n"
    "# Paths are relative to this folder; answer_file is looked up in every A_GroundTruth_sampling<N>/.\n"
)


class PersonaAttributes(BaseModel):
    """Which respondent attributes the persona shows (keys matched case-insensitively)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    include: tuple[str, ...] = ()  # empty: every attribute
    exclude: tuple[str, ...] = ()


PERSONA_ROLES = ("sex", "age", "education", "religion", "party", "employment")  # persona groups


class Roles(BaseModel):
    """Which attribute key is what, beside ``country_attribute``: the respondent id and design weight
    (never in the persona), ``group`` (a grouping that is not a country: region, wave), and what persona
    groups read. Unset: ISSP-style labels are recognised (``metrics.persona_groups``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    respondent_id: str | None = None
    group: str | None = None
    weight: str | None = None
    sex: str | None = None
    age: str | None = None
    education: str | None = None
    religion: str | None = None
    party: str | None = None
    employment: str | None = None

    def declared(self) -> dict[str, str]:
        """``{role: attribute key}`` of the roles set."""
        return {role: key for role, key in self if key}


class DomainSpec(BaseModel):
    """One domain (a question set and its respondents): ``name`` names its result files, ``title`` is
    what people read. ``missing_codes``: answer codes never offered (excluded at scoring); ``data_use``:
    ``local`` (licensed microdata, ``socbench.data_use``) or ``remote``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[int, Field(ge=1)]
    name: Annotated[str, _rule(lambda v: None if _NAME.match(v) else
                               "use letters, digits, spaces and _ . ( ) - (it names result files)")]
    slug: Annotated[str, _rule(lambda v: None if _SLUG.match(v) else
                               "use lower-case letters, digits, '-' and '_' (it names files)")]
    module: str = ""
    question_file: Annotated[str, _rule(  # default q&a/issp_qa_<slug>.json
        lambda v: "a path relative to the data folder, without '..'"
        if Path(v).is_absolute() or ".." in Path(v).parts or not v.strip() else None)] | None = None
    answer_file: Annotated[str, _rule(  # default issp_answer_<slug>.json
        lambda v: "a file name inside each A_GroundTruth_sampling<N>/ folder, not a path"
        if not v.strip() or Path(v).name != v else None)] | None = None
    country_attribute: str | None = None  # None: a single-country study; "auto": the ISSP label
    country: str = ""  # the study's one country, where no attribute holds it ("Chile", "CL")
    roles: Roles = Roles()
    persona_attributes: PersonaAttributes = PersonaAttributes()
    missing_codes: tuple[int | str, ...] = ()
    numeric: Annotated[dict[str, tuple[float, float]], _rule(  # question id -> [lowest, highest]: a number
        lambda spans: next((f"{qid}: the lowest must be below the highest"
                            for qid, (low, high) in spans.items() if not low < high), None))] = {}
    data_use: Literal["local", "remote"] = "local"
    title: str = ""
    vocabulary: Literal["issp", "source"] | None = None  # None: "issp" unless a persona role is declared

    @property
    def issp_vocabulary(self) -> bool:
        """Whether persona groups speak ISSP's words (its age bands, education levels): ISSP data (the ten
        modules, a SocioBench folder, a ``--qa`` import); any other study keeps its own labels."""
        if self.vocabulary is not None:
            return self.vocabulary == "issp"
        return not any(getattr(self.roles, role) for role in PERSONA_ROLES)

    @property
    def display_name(self) -> str:
        return self.title or self.name

    @property
    def qa_file(self) -> str:
        return Path(self.question_file).name if self.question_file else f"issp_qa_{self.slug}.json"

    @property
    def qa_path(self) -> str:
        """The question file relative to the dataset root."""
        return self.question_file or f"{QA_FOLDER}/{self.qa_file}"

    @property
    def answer_name(self) -> str:
        """The answer file's name in each ``A_GroundTruth_sampling<N>/``."""
        return self.answer_file or f"issp_answer_{self.slug}.json"

    @property
    def profile_file(self) -> str:
        return f"issp_profile_{self.name}.json"


class Manifest(BaseModel):
    """The whole file: a title and at least one domain, ids, slugs and names unique."""

    model_config = ConfigDict(extra="forbid")

    title: str = ""
    domains: Annotated[list[DomainSpec], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique(self) -> Manifest:
        for attr in ("id", "slug", "name"):
            seen: set[Any] = set()
            for index, domain in enumerate(self.domains):
                value = getattr(domain, attr)
                key = value.lower() if isinstance(value, str) else value
                if key in seen:
                    raise ValueError(f"domains.{index}.{attr} {value!r} repeats an earlier domain's")
                seen.add(key)
        return self


def find_manifest(data_dir: str | Path) -> Path | None:
    """``socbench.yaml`` (or ``.yml``) in ``data_dir`` or its ``Dataset_all`` child, else None."""
    base = Path(data_dir).expanduser()
    paths = (folder / name for folder in (base, base / "Dataset_all") for name in MANIFEST_NAMES)
    return next((path for path in paths if path.is_file()), None)


def read_manifest(path: str | Path) -> Manifest:
    """Parse and validate one manifest file; one DataError line per problem."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the manifest ({exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise DataError(f"{path}{where}: malformed YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(raw, dict):
        raise DataError(f"{path}: expected a mapping with a 'domains' list at the top level")
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        raise DataError(f"{path}: {problem(exc)}") from None


def load_manifest(data_dir: str | Path | None) -> Manifest | None:
    """The manifest of a data folder, or None when it has none (then the ISSP domains apply)."""
    path = find_manifest(data_dir) if data_dir is not None else None
    return read_manifest(path) if path else None


def write_manifest(path: str | Path, manifest: Manifest) -> Path:
    """Write ``manifest`` as commented YAML (unset optional fields left out, for easy editing)."""
    path = Path(path)
    body = manifest.model_dump(mode="json", exclude_defaults=False)
    if not body.get("title"):
        body.pop("title", None)
    for domain in body["domains"]:
        for key in ("question_file", "answer_file", "module", "title", "country", "vocabulary", "numeric"):
            if not domain.get(key):
                domain.pop(key, None)
        if roles := {role: key for role, key in domain.pop("roles").items() if key}:
            domain["roles"] = roles
    text = HEADER + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=110)
    return write_atomic(path, text.encode("utf-8"))
