"""``socbench data import``: a Stata/SPSS file (or a CSV with a codebook) -> the benchmark layout."""

from __future__ import annotations

import argparse
import sys

from socbench.cli.flags import add_config_flags, config_from_args
from socbench.data.import_request import ImportRequest

DESCRIPTION = (
    "Read a survey file with its labels (.dta, .sav/.zsav, or .csv with --codebook), draw nested "
    "country-stratified samples and write q&a/, A_GroundTruth_sampling<N>/, sampling_stats_<slug>.json "
    "and the folder's manifest socbench.yaml. ISSP: --qa issp_qa_<slug>.json decides the questions. "
    "Any other study: --questions V1,V2,... (or @list.txt) builds the question set from the variable "
    "and value labels, for you to edit."
)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("import", help="import a .dta/.sav/.csv survey file into the benchmark layout",
                            description=DESCRIPTION)
    add_config_flags(parser, ImportRequest, positional=("source",))
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from socbench.data.import_report import format_report
    from socbench.data.importer import plan_import, run_import

    request = config_from_args(ImportRequest, args)
    plan = plan_import(request)  # every check, before any work
    print(format_report(plan, summary=True), file=sys.stderr, end="")
    summary = run_import(plan)
    domain, layout = plan.entry, plan.layout
    samples = ", ".join(f"{size}: {n}" for size, n in summary.samples.items())
    groups = ("countries" if plan.country else f"groups of {plan.group}" if plan.group
              else "country (no country variable)")
    print(
        f"imported {request.source.name}: {plan.respondents} respondents, {summary.countries} "
        f"{groups}, {len(layout.questions)} questions, "
        f"{len(layout.attributes)} attributes, weight {layout.weight or 'none'} ({summary.seconds:.1f} s)"
    )
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
