"""socbench export: a run's answers as csv, parquet, Stata .dta or SPSS .sav.

    socbench export results/my-model                       # -> results/my-model/export/answers_long.csv
    socbench export results/my-model --format sav --out answers.sav
    socbench export results/my-model --wide --format dta   # the survey's own shape, + *_real.dta

Long (default): one row per respondent x question. --wide: per domain, one row per respondent and
one column per question under its original variable name, with the imported file's labels; the real
answers in a second file (``_real``); ``source_row`` merges both back onto the source file.
"""

from __future__ import annotations

import argparse
import sys

from socbench.cli.flags import flag


def register(sub: argparse._SubParsersAction) -> None:
    from socbench.config import EXPORT_FORMATS

    parser = sub.add_parser("export", help="a run's answers as csv, parquet, .dta or .sav (long, or the "
                                           "survey's own shape)",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="one run's folder (e.g. results/<model>)")
    flag(parser, "format", default=None, choices=EXPORT_FORMATS,
         help="file format (default: --out's suffix, else csv)")
    flag(parser, "out", default=None,
         help="file to write (default: RUN_DIR/export/answers_long.<format>; --wide: "
              "answers_<Domain>.<format> and answers_<Domain>_real.<format>)")
    flag(parser, "wide", action="store_true",
         help="the survey's own shape with its labels (a domain imported by `socbench data import`)")
    flag(parser, "data_dir", default=None,
         help="the data folder the run read (default: the one its summary.json records)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from socbench.export import export_run

    exported = export_run(args.run_dir, args.format, args.out, args.wide, args.data_dir)
    for note in exported.notes:
        print(f"note: {note}")
    for path in exported.paths:
        print(f"export: {path}")
    for line in exported.failed:
        print(f"socbench: error: {line}", file=sys.stderr)
    return 2 if exported.failed else 0
