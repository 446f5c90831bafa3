"""``socbench data validate|synth|import``: check a dataset, write a synthetic one, or import a survey."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from socbench.cli.flags import add_config_flags, config_from_args, flag, non_negative_int
from socbench.config import RunConfig
from socbench.data.import_request import ImportRequest
from socbench.data.import_safety import mixed_sources
from socbench.data.layout import dataset_root, sample_dir
from socbench.data.loaders import load_domain
from socbench.data.options import INVALID_CODE, build_items, exclusions_by_question, summarize_items
from socbench.data.sampling import stratum
from socbench.domains import DomainSpec, select_domains
from socbench.errors import DataError
from socbench.types import COUNTRY, DomainData
from socbench.weights import NO_WEIGHTS, weights_off_reason

SYNTH_SEED = 20261122
DEFAULT_RESPONDENTS = 40
COLUMNS = ("respondents", "questions", "countries", "scoreable_items", "excluded_items")  # validate's table
SHOWN_QUESTIONS = 12  # per domain in the table; --json has every question
IMPORT_DESCRIPTION = (
    "Read a survey file with its labels (.dta, .sav/.zsav, or .csv with --codebook), draw nested country-"
    "stratified samples and write q&a/, A_GroundTruth_sampling<N>/, sampling_stats_<slug>.json and the "
    "folder's manifest socbench.yaml. ISSP: --qa issp_qa_<slug>.json decides the questions. Any other study: "
    "--questions V1,V2,... (or @list.txt) builds the question set from the variable and value labels, for "
    "you to edit.")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("data", help="validate, synthesise or import survey data")
    inner = parser.add_subparsers(dest="data_command", required=True, parser_class=type(parser))
    check = inner.add_parser("validate", help="check an ISSP dataset and count scoreable items per domain")
    add_config_flags(check, RunConfig, only=("data_dir", "dataset_size", "domain_id"))  # as a run reads them
    flag(check, "json", action="store_true", help="print one JSON object instead of a table")
    check.set_defaults(handler=run_validate)
    synth = inner.add_parser(
        "synth", help="write synthetic respondents (demo or your question sets) in the Dataset_all layout",
        description="Write q&a/ and A_GroundTruth_sampling500/ for each domain, with seeded synthetic "
                    "respondents whose answers depend on their attributes. Not ISSP data.")
    flag(synth, "out", type=Path, required=True, help="the Dataset_all folder to write")
    flag(synth, "qa_dir", type=Path, default=None,
         help="folder with issp_qa_<slug>.json to copy and answer (default: the built-in demo questions)")
    flag(synth, "codebook_dir", type=Path, default=None,
         help="folder with issp_profile_<Domain>.json codebooks for attribute names and labels")
    flag(synth, "respondents", type=int, default=DEFAULT_RESPONDENTS,
         help=f"respondents per domain (default {DEFAULT_RESPONDENTS})")
    flag(synth, "seed", type=non_negative_int, default=SYNTH_SEED, help=f"random seed (default {SYNTH_SEED})")
    flag(synth, "domain_id", type=str, default="all", help="domain id, slug or 'all' (default all)")
    synth.set_defaults(handler=run_synth)
    survey = inner.add_parser("import", help="import a .dta/.sav/.csv survey file into the benchmark layout",
                              description=IMPORT_DESCRIPTION)
    add_config_flags(survey, ImportRequest, positional=("source",))
    survey.set_defaults(handler=run_import)


def run_synth(args: argparse.Namespace) -> int:
    """``socbench data synth``: a synthetic SocioBench ``Dataset_all`` folder."""
    from socbench.data.synth import write_dataset

    domains = select_domains(args.domain_id)
    info = write_dataset(args.out, domains, args.respondents, args.seed, args.qa_dir, args.codebook_dir)
    print(f"wrote {len(domains)} domain(s) x {args.respondents} synthetic respondents to {args.out} "
          f"(seed {args.seed}, questions: {info['questions']})")
    return 0


def domain_report(data: DomainData) -> dict[str, object]:
    """Counts of one loaded domain, as printed by ``validate`` (and its ``--json``)."""
    items = build_items(data)
    summary = summarize_items(items)
    unmapped = sorted(data.unmapped_countries.items(), key=lambda kv: (-kv[1], kv[0]))
    plural, one = ("countries", "country") if data.grouping == COUNTRY else ("groups", "group")
    return {
        "respondents": len(data.respondents), "questions": len(data.questions),
        plural: len({stratum(p) for p in data.respondents}),
        "grouping": data.grouping,  # "country", or the grouping variable as the file names it
        "scoreable_items": summary["scoreable"], "excluded_items": summary["excluded"],
        "excluded_by_reason": summary["excluded_by_reason"],
        "excluded_by_question": exclusions_by_question(items),
        "unmapped_respondents": [{one: name, "count": n} for name, n in unmapped],
    }


def validate(data_dir: Path, domains: list[DomainSpec], dataset_size: int | str) -> tuple[dict, dict]:
    """Reports and each domain's problems (loading, mixed source files, unusable weights), keyed by
    domain id (as a string)."""
    root = dataset_root(data_dir)
    sample_dir(root, dataset_size)  # shared problems: fail once, not per domain
    reports: dict[str, dict] = {}
    errors: dict[str, list[str]] = {}
    for domain in domains:
        problems = [line] if (line := mixed_sources(root, domain.slug, domain.answer_name)) else []
        try:
            data = load_domain(data_dir, domain, dataset_size)
            reports[str(domain.id)] = domain_report(data)
            people = data.respondents
            reason = weights_off_reason([p.weight for p in people], [p.person_id for p in people])
            if reason not in (None, NO_WEIGHTS):  # some weights unusable: weighted metrics would be off
                problems.append(f"{data.source}: {reason}: weighted metrics will be off")
        except DataError as exc:
            problems.append(str(exc))
        if problems:
            errors[str(domain.id)] = [f"domain {domain.id}: {problem}" for problem in problems]
    return reports, errors


def format_table(reports: dict[str, dict], names: dict[str, str]) -> str:
    """A readable per-domain table, then exclusion reasons and unmapped countries."""
    import pandas as pd

    rows = [{"id": key, "domain": names[key], **dict(_cell(column, r) for column in COLUMNS),
             "unmapped": sum(u["count"] for u in r["unmapped_respondents"])} for key, r in reports.items()]
    lines = [pd.DataFrame(rows).fillna("").to_string(index=False)] if rows else []
    for key, report in reports.items():
        name = names[key]
        lines += [f"  {name}: excluded, {reason}: {n}" for reason, n in report["excluded_by_reason"].items()]
        lines += _question_lines(name, report)
        grouping = report["grouping"]
        if grouping != COUNTRY:
            lines.append(f"  {name}: grouped by {grouping} ({report['groups']} groups; not a "
                         "country variable): strata, the majority-in-group baseline and breakdowns use it")
        what = "country not mapped" if grouping == COUNTRY else f"no {grouping} recorded"
        lines += [f"  {name}: {what}: {entry.get('country', entry.get('group'))!r} ({entry['count']} "
                  "respondents)" for entry in report["unmapped_respondents"]]
    return "\n".join(lines)


def _cell(column: str, report: dict) -> tuple[str, object]:
    """A table column's name and value: the count of groups is headed by the grouping variable's own
    name where it is not a country ("Province groups"; ISSP keeps "countries")."""
    if column == "countries" and "groups" in report:
        return f"{report['grouping']} groups", report["groups"]
    return column, report[column]


def _question_lines(name: str, report: dict) -> list[str]:
    """Per question, the exclusions: questions losing answers as "code not offered" first (a
    scale whose answers are not among its options shows here by name), then the most excluded."""
    by_question: dict[str, dict[str, int]] = report["excluded_by_question"]
    order = sorted(by_question.items(), key=lambda kv: (-kv[1].get(INVALID_CODE, 0), -sum(kv[1].values())))
    lines = [f"  {name} {qid}: excluded " + ", ".join(f"{reason}: {n}" for reason, n in reasons.items())
             for qid, reasons in order[:SHOWN_QUESTIONS]]
    if len(order) > SHOWN_QUESTIONS:
        lines.append(f"  {name}: {len(order) - SHOWN_QUESTIONS} more question(s) with exclusions "
                     "(--json lists all)")
    return lines


def run_validate(args: argparse.Namespace) -> int:
    """``socbench data validate``: a domain that cannot be read is one error line (exit 2), the others are
    still validated; problems shared by all domains (no such folder, sample size) stop at once."""
    config = config_from_args(RunConfig, args)
    data_dir, size = config.dataset_dir, config.dataset_size
    domains = select_domains(config.domain_id, data_dir=data_dir)
    reports, errors = validate(data_dir, domains, size)
    if args.json:
        payload = {"domains": reports, **({"errors": errors} if errors else {})}
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    elif reports:
        print(f"{data_dir} (sample size {size})")
        print(format_table(reports, {str(d.id): d.name for d in domains}))
    for lines in errors.values():
        for message in lines:
            print(f"socbench: error: {message}", file=sys.stderr)
    return 2 if errors else 0


def run_import(args: argparse.Namespace) -> int:
    """``socbench data import``: the plan (every check) and its summary, then the import."""
    from socbench.data.import_report import format_report
    from socbench.data.importer import plan_import, run_import

    request = config_from_args(ImportRequest, args)
    plan = plan_import(request)  # every check, before any work
    print(format_report(plan, summary=True), file=sys.stderr, end="")
    summary = run_import(plan)
    domain = plan.entry
    samples = ", ".join(f"{size}: {n}" for size, n in summary.samples.items())
    groups = ("countries" if plan.country else f"groups of {plan.group}" if plan.group
              else "country (no country variable)")
    print(f"imported {request.source.name}: {plan.respondents} respondents, {summary.countries} {groups}, "
          f"{len(plan.questions)} questions, {len(plan.attributes)} attributes, weight "
          f"{plan.weights.weight or 'none'} ({summary.seconds:.1f} s)")
    print(f"domain {domain.id} {domain.name} (slug {domain.slug}) -> {request.out}; samples {samples}")
    if plan.weights.note:
        print(f"weights: {plan.weights.note}")
    if plan.stale:
        print(f"replaced: domain {domain.slug} whole; {summary.replaced} old files not rewritten removed")
    print(f"import report: {request.out / f'import_report_{domain.slug}.md'}")
    size = "all" if "all" in request.sizes else 500 if 500 in request.sizes else min(request.sizes)
    extra = "" if size == 500 else f" --dataset_size {size}"
    print(f"next: socbench data validate --data_dir {request.out} --domain_id {domain.slug}{extra}")
    return 0
