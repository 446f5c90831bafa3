"""socbench report: leaderboard, figures and report.html over every run under a folder.

    socbench report results/                       # -> results/report/{leaderboard.md,.csv,report.html,...}
    socbench report results/ --out site/
    socbench report results/ --compare RUN_A RUN_B [--domain_id 3]   # paired comparison only

A run is a folder ``<output_dir>/<name>/`` with ``<Domain>_detailed.json`` files (an MCQ run:
``<model>/mcq/<dataset>_results.json``); ``--compare`` takes folder names (or model names when they are
unambiguous). Every number is the one the run wrote; only the comparisons are computed here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from socbench.cli.flags import flag, positive_int
from socbench.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("report", help="leaderboard, plots and a self-contained HTML report over results",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output_dir", help="folder holding one sub-folder per run (e.g. results/)")
    flag(parser, "out", default=None, help="where to write the report (default: <output_dir>/report)")
    flag(parser, "compare", nargs=2, metavar=("A", "B"), default=None,
         help="paired comparison of two runs on their shared items (McNemar exact, bootstrap CI); "
              "prints it, writes nothing")
    flag(parser, "domain_id", default=None, help="with --compare: one domain only (its name, or an ISSP id)")
    flag(parser, "resamples", type=positive_int, default=1000,
         help="bootstrap resamples of the comparisons (default 1000)")
    flag(parser, "seed", type=int, default=0, help="bootstrap seed of the comparisons (default 0)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.compare:
        return compare(args)
    if args.domain_id is not None:
        raise ConfigError("--domain_id applies only with --compare A B")
    from socbench.report.html import HEADS, markdown_table, overall_cells, write_report

    paths = write_report(args.output_dir, args.out, n_resamples=args.resamples, seed=args.seed)
    print("\n".join(markdown_table(HEADS["overall"], map(overall_cells, paths.leaderboard.overall))))
    print(*(f"note: {note}" for note in paths.notes), f"report: {paths.html}",
          f"leaderboard: {paths.leaderboard_md} {paths.leaderboard_csv}", sep="\n")
    return 0


def compare(args: argparse.Namespace) -> int:
    from socbench.domains import get_domain
    from socbench.log.read import load_runs
    from socbench.report.html import HEADS, compare_cells, markdown_table
    from socbench.report.leaderboard import compare_runs, find_run

    runs = load_runs(Path(args.output_dir)).issp
    a, b = (find_run(runs, name) for name in args.compare)
    if a.run == b.run:
        raise ConfigError(f"--compare {args.compare[0]} {args.compare[1]}: both name run {a.run}")
    names = {d.domain.lower(): d.domain for run in (a, b) for d in run.domains}  # a manifest's names too
    domain = None if args.domain_id is None else names.get(str(args.domain_id).lower()) or \
        get_domain(args.domain_id).name
    result = compare_runs(a, b, domain, n_resamples=args.resamples, seed=args.seed)
    print("\n".join(markdown_table(HEADS["compare"], [compare_cells(a.run, b.run, result)])))
    low, high = result.difference_ci
    print(f"\n{result.n_items} shared items from {result.n_respondents} respondents"
          f"{f' in {domain}' if domain else ''}; both right {result.both_correct}, neither {result.neither}.")
    verdict = ("is undefined (fewer than two respondents)" if low != low  # NaN: fewer than two respondents
               else "excludes 0" if low > 0 or high < 0 else "includes 0")
    print(f"The 95% respondent-bootstrap CI of A - B {verdict}; McNemar exact p = {result.mcnemar_p:.3g}.")
    return 0
