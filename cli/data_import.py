"""``socbench data import``: a Stata/SPSS file (or a CSV with a codebook) -> the benchmark layout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from socbench.cli.flags import flag, non_negative_int
from socbench.errors import ConfigError

DESCRIPTION = (
    "Read a survey file with its labels (.dta, .sav/.zsav, or .csv with --codebook), draw nested "
    "country-stratified samples and write q&a/, A_GroundTruth_sampling<N>/, sampling_stats_<slug>.json "
    "and the folder's manifest socbench.yaml. ISSP: --qa issp_qa_<slug>.json decides the questions. "
    "Any other study: --questions V1,V2,... (or @list.txt) builds the question set from the variable "
    "and value labels, for you to edit."
)


def _sizes(text: str) -> tuple[int | str, ...]:
    parts = [part.strip().lower() for part in text.split(",") if part.strip()]
    try:
        sizes = tuple(part if part == "all" else int(part) for part in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers or all, got {text!r}") from None
    if not sizes or any(size != "all" and size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(f"expected positive integers or 'all', got {text!r}")
    return sizes


def _codes(text: str) -> tuple[str, ...]:
    from socbench.data.survey_file import canonical_code

    codes = tuple(code for part in text.split(",") if (code := canonical_code(part)) is not None)
    if not codes:
        raise argparse.ArgumentTypeError(f"expected comma-separated codes, got {text!r}")
    return codes


def _roles(text: str) -> tuple[tuple[str, str], ...]:
    from socbench.data.roles import IMPORT_ROLES

    pairs = [part.split("=", 1) for part in text.split(",") if part.strip()]
    bad = next((p for p in pairs if len(p) != 2 or p[0].strip() not in IMPORT_ROLES or not p[1].strip()),
               None)
    if bad is not None or not pairs:
        raise argparse.ArgumentTypeError(f"expected ROLE=VAR,... with ROLE one of {', '.join(IMPORT_ROLES)} "
                                         f"(VAR 'none': no such variable), got {'='.join(bad or [text])!r}")
    return tuple((role.strip(), name.strip()) for role, name in pairs)


def _persona(text: str) -> str | tuple[str, ...]:
    from socbench.data.question_labels import parse_question_list
    from socbench.data.roles import ALL, BACKGROUND

    return text if text in (ALL, BACKGROUND) else tuple(parse_question_list(text))


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("import", help="import a .dta/.sav/.csv survey file into the benchmark layout",
                            description=DESCRIPTION)
    parser.add_argument("source", type=Path, help="the survey file: .dta, .sav, .zsav or .csv")
    flag(parser, "out", type=Path, required=True, help="the data folder to write (then: --data_dir there)")
    flag(parser, "qa", type=Path, default=None, help="an ISSP question set issp_qa_<slug>.json")
    flag(parser, "questions", default=None,
         help="question variables V1,V2,... or @file (variable label = question, value labels = options)")
    flag(parser, "country", default=None, help="the country variable (default C_ALPHAN when present)")
    flag(parser, "weight", default=None, help="the design weight variable (default WEIGHT when present)")
    flag(parser, "roles", type=_roles, default=(),
         help="what variables are: ROLE=VAR,... with ROLE respondent_id, country, group (a grouping variable "
         "that is not a country: region, state, wave), weight, sex, age, education, religion, party, "
         "employment; VAR 'none' for none. Roles not named are proposed from the labels (import report)")
    flag(parser, "study_country", default=None,
         help="the study's one country (a name or code) when no variable holds it: the prompts name it")
    flag(parser, "persona", type=_persona, default="background",
         help="the persona's attributes: background (default: every variable that is not a numbered "
         "questionnaire item), all, or V1,V2,... (@file)")
    flag(parser, "slug", default=None, help="file slug of the domain (default: from --qa or the file name)")
    flag(parser, "name", default=None, help="display name of the domain (default: ISSP's, or from the slug)")
    flag(parser, "sizes", type=_sizes, default=(500, 1000, 2000),
         help="nested sample sizes (default 500,1000,2000); 'all' writes every respondent to "
         "A_GroundTruth_samplingall/ (then: socbench issp --dataset_size all)")
    flag(parser, "seed", type=non_negative_int, default=42, help="sampling seed (default 42)")
    flag(parser, "codebook", type=Path, default=None,
         help="for a .csv source: the labels, as CSV (variable,label,code,value_label) or ISSP-style JSON")
    flag(parser, "replace", action="store_true",
         help="replace an existing domain of the same slug whole (every sample size; nothing of it kept)")
    flag(parser, "bad_weights", choices=("error", "drop", "unweighted"), default="error",
         help="respondents whose weight is missing, NaN, zero or negative: error (default; names them), "
         "drop (leave them out of the samples, counted) or unweighted (import no weights)")
    flag(parser, "missing", type=_codes, default=(),
         help="codes that mean 'no answer' for every question that does not offer them, e.g. -9,-8,99 "
         "(besides the file's user-missing declarations and missing labels)")
    flag(parser, "scale_conflict", choices=("file", "refuse"), default="file",
         help="with --qa, a question whose options disagree with the file's value labels (another range, "
         "wording or order): file (default; its options are the file's own, said per question) or refuse")
    flag(parser, "sep", default=None, help="a .csv source's separator (default: detected among , ; tab |)")
    flag(parser, "decimal", choices=(".", ","), default=None,
         help="a .csv source's decimal mark (default: ',' where the separator is not ',' and numbers use it)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from socbench.data.import_plan import ImportRequest
    from socbench.data.import_report import format_report
    from socbench.data.importer import plan_import, run_import
    from socbench.data.question_labels import parse_question_list

    questions = tuple(parse_question_list(args.questions)) if args.questions is not None else None
    if args.qa is not None and not args.qa.is_file():
        raise ConfigError(f"--qa {args.qa}: question set not found")
    fields = {name: getattr(args, name) for name in ImportRequest.model_fields if name != "questions"}
    request = ImportRequest(**fields, questions=questions)
    plan = plan_import(request)  # every check, before any work
    print(format_report(plan, summary=True), file=sys.stderr, end="")
    summary = run_import(plan)
    domain = summary.domain
    samples = ", ".join(f"{size}: {n}" for size, n in summary.samples.items())
    groups = ("countries" if plan.country else f"groups of {plan.group}" if plan.group
              else "country (no country variable)")
    print(
        f"imported {args.source.name}: {summary.respondents} respondents, {summary.countries} "
        f"{groups}, {summary.questions} questions, "
        f"{summary.attributes} attributes, weight {summary.weight or 'none'} ({summary.seconds:.1f} s)"
    )
    print(f"domain {domain.id} {domain.name} (slug {domain.slug}) -> {args.out}; samples {samples}")
    if summary.weight_note:
        print(f"weights: {summary.weight_note}")
    if plan.stale:
        print(f"replaced: domain {domain.slug} whole; {summary.replaced} old files not rewritten removed")
    print(f"import report: {args.out / f'import_report_{domain.slug}.md'}")
    size = "all" if "all" in args.sizes else 500 if 500 in args.sizes else min(args.sizes)
    extra = "" if size == 500 else f" --dataset_size {size}"
    print(f"next: socbench data validate --data_dir {args.out} --domain_id {domain.slug}{extra}")
    return 0
