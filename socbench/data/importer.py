"""``socbench data import``: an archive's survey file -> the ``Dataset_all`` layout, no code edits.

Why: ``plan_import`` checks everything from the file's metadata first, so a problem is one line
before any work; ``run_import`` then draws nested country-stratified samples and streams the rows
they keep into ``A_GroundTruth_sampling<N>/``, beside the question set, stats and manifest.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from socbench.data import import_report as report
from socbench.data import import_safety as safe
from socbench.data.countries import resolve_country
from socbench.data.import_records import label_values, write_samples
from socbench.data.import_report import ImportPlan
from socbench.data.import_request import ImportRequest
from socbench.data.layout import SAMPLE_PREFIX
from socbench.data.loaders import load_questions
from socbench.data.question_labels import check_answers, question_set, set_members, with_sets
from socbench.data.roles import country_or_group, persona_variables, plan_roles, role_lines, shown_attributes
from socbench.data.sampling import draw_ranks
from socbench.data.survey_file import SurveyFile, open_survey
from socbench.data.variables import source_variables, variables_path
from socbench.domains import DOMAINS, ISSP_BY_SLUG, QA_FOLDER
from socbench.errors import ConfigError, DataError, validated
from socbench.files import file_sha256, json_bytes, write_atomic
from socbench.manifest import MANIFEST_NAMES, DomainSpec, Manifest, Roles, read_manifest, write_manifest
from socbench.preflight import check_output_dir
from socbench.types import Respondent

NO_COUNTRY = "(no country)"


@dataclass(frozen=True)
class ImportSummary:
    """What the import wrote, beside its plan (respondents, questions, weight: ``ImportPlan``)."""

    countries: int
    samples: dict[int | str, int]  # size asked (or "all") -> respondents written
    seconds: float
    replaced: int = 0  # files of the old domain removed (--replace)


def _question_pairs(request: ImportRequest, survey: SurveyFile) -> list[tuple[str, str]]:
    """(file variable, question id) pairs of ``--qa`` or ``--questions``, each in the file."""
    if request.qa is not None and request.questions is not None:
        raise ConfigError("--qa and --questions: give one "
                          "(--qa for an ISSP question set, --questions otherwise)")
    if request.qa is not None and request.numeric:
        raise ConfigError("--numeric applies to --questions (a question set declares its own: \"numeric\": "
                          "[low, high])")
    if request.qa is not None:
        pairs = [(survey.find(q.id), q.id) for q in load_questions(request.qa)]
        absent = [qid for name, qid in pairs if name is None]
        if absent:
            more = f" ({len(absent)} of the {len(pairs)} are missing: {', '.join(absent[:8])})"
            raise DataError(f"{survey.path}: variable {absent[0]} of the question set {request.qa} "
                            f"is not in the file{more if len(absent) > 1 else ''}")
        return [(name, qid) for name, qid in pairs if name]
    if request.questions is None and request.multi and not request.numeric:
        return []  # the sets alone
    if request.questions is None and not request.numeric:
        raise ConfigError(f"{request.source}: name the questions with --qa QA_JSON (an ISSP question set) "
                          f"or --questions V1,V2,... (from the file's labels)")
    asked = [*(request.questions or ()), *(n for n, _ in request.numeric)]
    names = [survey.find(wanted) for wanted in asked]
    absent = next((wanted for wanted, name in zip(asked, names) if name is None), None)
    if absent is not None:
        flag = "--numeric" if asked.index(absent) >= len(request.questions or ()) else "--questions"
        raise DataError(f"{survey.path}: variable {absent} ({flag}) is not in the file")
    return [(name, name) for name in dict.fromkeys(names)]


def _attributes(survey: SurveyFile, names: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The persona variables, keyed by their label (their name when unlabelled or the label repeats)."""
    pairs: dict[str, str] = {}
    for name in names:
        key = survey.variables[name].key
        pairs[name] = key if key not in pairs.values() else f"{key} ({name})"
    return tuple(pairs.items())


def _manifest_path(out: Path) -> Path:
    """The manifest of the folder written to (``socbench.yaml`` unless it has a ``.yml``)."""
    return next((out / name for name in MANIFEST_NAMES if (out / name).is_file()), out / MANIFEST_NAMES[0])


def _base_manifest(out: Path, slug: str) -> Manifest | None:
    """The folder's manifest; for a SocioBench folder without one, its ISSP domains present."""
    if _manifest_path(out).is_file():
        return read_manifest(_manifest_path(out))
    present = [d for d in DOMAINS if d.slug != slug and (out / QA_FOLDER / d.qa_file).is_file()]
    return Manifest(domains=present) if present else None


def _entry(request: ImportRequest, base: Manifest | None, slug: str, earlier: DomainSpec | None,
           country_key: str | None, roles: Roles) -> DomainSpec:
    """The manifest entry: an earlier import's id and name, else ISSP's, else the next free id."""
    taken = {d.id for d in (base.domains if base else []) if d.slug != slug}
    issp = ISSP_BY_SLUG.get(slug)
    domain_id = (earlier.id if earlier else issp.id if issp is not None and issp.id not in taken
                 else max(taken | {0}) + 1)
    name = (request.name or (earlier.name if earlier else None) or (issp.name if issp else None)
            or "".join(part.capitalize() for part in re.split(r"[_-]+", slug)))
    return validated(DomainSpec, dict(
        id=domain_id, name=name, slug=slug, module=f"imported from {request.source.name}", roles=roles,
        country_attribute=country_key, country=request.study_country or "",
        vocabulary="issp" if request.qa is not None else "source"))


def plan_import(request: ImportRequest) -> ImportPlan:
    """Every check, from the file's metadata only; one line per problem, before any work."""
    survey = open_survey(request.source, request.codebook, request.sep, request.decimal)
    if survey.n_rows == 0:
        raise DataError(f"{survey.path}: the file holds no respondents (0 rows)")
    members = set_members(survey, request.multi)
    pairs = _question_pairs(request, survey)  # the named questions, then the set variables not among them
    if members and request.qa is not None:
        raise ConfigError("--multi: only with --questions or alone (an ISSP question set --qa has no sets)")
    pairs += [(name, name) for name in members if name not in dict(pairs)]
    question_vars = {name for name, _ in pairs}
    asked = [*request.roles, ("country", request.country), ("weight", request.weight)]
    roles = plan_roles(survey, question_vars, asked, request.qa is not None)
    weight = roles["weight"][0]
    others = [n for n in survey.variables if n not in question_vars and n != weight]
    role_vars = {name for name, _ in roles.values() if name}
    persona, left_out = persona_variables(survey, others, role_vars, request.persona)
    attributes = _attributes(survey, persona)
    report.check_label_sizes(survey, [name for name, _ in attributes] + [name for name, _ in pairs])
    weights = report.check_weights(survey, weight, request.bad_weights)
    wanted = roles["country"][0] or roles["group"][0]
    counts = survey.code_counts([name for name, _ in pairs] + ([wanted] if wanted else []), weights.dropped)
    country, group, notices = country_or_group(survey, roles, counts, request.study_country)
    decisions, question_file = question_set(survey, request, pairs, counts)
    check_answers(survey, decisions)
    with_sets(survey, question_file, members)
    stem = request.qa.stem.removeprefix("issp_qa_") if request.qa is not None else request.source.stem
    slug = request.slug or re.sub(r"[^a-z0-9_-]+", "_", stem.lower()).strip("_-") or "survey"
    base = _base_manifest(request.out, slug)
    keys = dict(attributes)
    declared = Roles(**{role: keys.get(name) for role, (name, _) in roles.items()
                        if name and role not in ("country", "weight")})
    earlier = next((d for d in (base.domains if base else []) if d.slug == slug), None)
    entry = _entry(request, base, slug, earlier, keys[country] if country else None, declared)
    stale = safe.check_existing(request.out, slug, earlier, request.replace)
    manifest = safe.merged_manifest(base, entry)
    check_output_dir(request.out, "--out", create=False)
    warnings = [*notices, *report.country_warnings(survey, country, counts[country] if country else {})]
    unassigned = [n for n in others if n not in role_vars]
    lines = role_lines(survey, roles, left_out, unassigned, *shown_attributes(attributes, entry))
    strata = group or country
    return ImportPlan(request, survey, attributes, tuple(pairs), country, group, entry, manifest,
                      question_file, tuple(decisions), tuple(warnings), weights, tuple(stale),
                      dict(counts[strata]) if strata else {}, tuple(lines))


def _rows(plan: ImportPlan, person_ids: np.ndarray) -> list[Respondent]:
    """Each respondent's stratum (country code, else the name as written; a group's label) for the sampler."""
    strata = plan.strata
    names = (label_values(plan.survey.columns([strata])[strata], plan.survey.variables[strata]) if strata
             else [None] * len(person_ids))
    codes = {name: resolve_country(name) for name in set(names) if name is not None and plan.country}
    return [Respondent(int(pid), name, codes.get(name), {}, {}) for pid, name in zip(person_ids, names)]


def _stats(plan: ImportPlan, rows: list[Respondent], ranks: np.ndarray, size: int | str, limit: int,
           sha: str) -> dict:
    """``sampling_stats_<slug>.json`` of one size (keeping the draw ranks below ``limit``): SocioBench's
    keys plus the source's provenance."""
    kept = [row for row, rank in zip(rows, ranks) if rank < limit]
    what, plural = ("group", "groups") if plan.group else ("country", "countries")
    counts = Counter((row.country_code or row.country_name or NO_COUNTRY) if plan.strata else NO_COUNTRY
                     for row in kept)
    return {
        "domain": plan.entry.name, "domain_number": plan.entry.id, "slug": plan.entry.slug,
        "target_size": size, "actual_size": len(kept),
        # a grouping variable that is not a country (a province, a year) is named as the file names it
        **({"grouping": plan.survey.variables[plan.group].key} if plan.group else {}),
        f"{what}_distribution": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        f"total_{plural}": len(counts) if plan.strata else 0,
        "random_seed": plan.request.seed, "stratified_by": plan.strata, "nested": True,
        "source_file": plan.request.source.name, "source_sha256": sha, "source_respondents": len(rows),
        **({"weights": plan.weights.note} if plan.weights.note else {}),
    }


def _write_side_files(plan: ImportPlan) -> Path:
    out = plan.request.out
    qa_path = out / QA_FOLDER / f"issp_qa_{plan.entry.slug}.json"
    qa_path.parent.mkdir(parents=True, exist_ok=True)
    if plan.request.qa is None or qa_path.resolve() != plan.request.qa.resolve():
        write_atomic(qa_path, json_bytes(plan.question_file))
    write_atomic(out / f"import_report_{plan.entry.slug}.md", report.format_report(plan).encode("utf-8"))
    record = source_variables(plan.survey, plan.questions, plan.weights.weight, plan.country, plan.group)
    write_atomic(variables_path(out, plan.entry.slug), json_bytes(record.model_dump(mode="json")))
    write_manifest(_manifest_path(out), plan.manifest)
    return qa_path


def run_import(plan: ImportPlan) -> ImportSummary:
    """Sample, stream the kept rows into the sample files, write question set, stats, manifest."""
    start = time.perf_counter()
    survey, request = plan.survey, plan.request
    scale = 10 ** max(7, len(str(survey.n_rows)))  # SocioBench's ids: domain number, then the row
    person_ids = plan.entry.id * scale + np.arange(1, survey.n_rows + 1, dtype=np.int64)
    rows = _rows(plan, person_ids)
    ranks = np.asarray(draw_ranks(rows, request.seed, leave_out=plan.weights.dropped), dtype=np.int64)
    # the draw ranks each sample keeps: ``all`` keeps every respondent (but those left out)
    limits = {size: survey.n_rows if size == "all" else int(size) for size in set(request.sizes)}
    sizes = sorted(limits, key=limits.get)
    answer_file = f"issp_answer_{plan.entry.slug}.json"
    paths = {size: request.out / f"{SAMPLE_PREFIX}{size}" / answer_file for size in sizes}
    stats_paths = {size: path.parent / safe.stats_name(plan.entry.slug) for size, path in paths.items()}
    folders = (request.out, request.out / QA_FOLDER, *(path.parent for path in paths.values()))
    created = [folder for folder in folders if not folder.exists()]
    try:
        counts = write_samples(plan, paths, person_ids, ranks, limits)
        sha = file_sha256(request.source)
        for size in sizes:
            write_atomic(stats_paths[size], json_bytes(_stats(plan, rows, ranks, size, limits[size], sha)))
        written = [*paths.values(), *stats_paths.values(), _write_side_files(plan)]
    except BaseException:
        safe.remove_empty(created)  # a failed import leaves no empty folders behind
        raise
    removed = safe.remove_stale(plan.stale, written, keep=[p for p in (request.source, request.qa) if p])
    kept = [row for row, rank in zip(rows, ranks) if rank < survey.n_rows]
    countries = len({r.country_code or r.country_name for r in kept}) if plan.strata else 1
    return ImportSummary(countries, counts, time.perf_counter() - start, len(removed))
