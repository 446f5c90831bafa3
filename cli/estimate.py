"""socbench estimate: how many respondents a run's answers are worth (prediction-powered inference).

    socbench estimate results/my-model                     # 10% of each domain's respondents labelled
    socbench estimate results/my-model --labelled 300
    socbench estimate results/my-model --budget 10000 --cost_human 25 --cost_model 0.01

Per question: PPI++ estimate and 95% CI from n labelled respondents plus the model's answers for
the rest, the classical CI from the n alone, the gain (effective sample size as a multiple of n)
and the coverage of both intervals over repeated random splits. Below 300 labelled respondents
each estimate carries a warning: its interval may cover less than 95% (docs/estimates.md).
Writes RUN_DIR/estimates.json.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Annotated

from pydantic import Field, PositiveFloat

from socbench.cli.flags import checked, flag, positive_int
from socbench.errors import ConfigError

_positive = checked(PositiveFloat, "a positive number")
_fraction = checked(Annotated[float, Field(gt=0, lt=1)], "a fraction between 0 and 1")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("estimate", help="how many respondents the answers are worth (PPI++ estimates, "
                                             "effective sample size, coverage, budget planner)",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="one run's folder (e.g. results/<model>)")
    size = parser.add_mutually_exclusive_group()
    flag(size, "labelled", type=positive_int, default=None, help="labelled respondents per domain")
    flag(size, "fraction", type=_fraction, default=None,
         help="share of each domain's respondents labelled (default 0.1)")
    flag(parser, "repeats", type=positive_int, default=200,
         help="random splits for the coverage check and the gain's spread (default 200)")
    flag(parser, "seed", type=int, default=0, help="seed of the splits (default 0)")
    flag(parser, "budget", type=_positive, default=None, help="total budget for the planner")
    flag(parser, "cost_human", type=_positive, default=None, help="cost of one respondent")
    flag(parser, "cost_model", type=_positive, default=None, help="cost of one model answer")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    costs = {"--budget": args.budget, "--cost_human": args.cost_human, "--cost_model": args.cost_model}
    given = [name for name, value in costs.items() if value is not None]
    if given and len(given) < 3:
        missing = ", ".join(name for name in costs if name not in given)
        raise ConfigError(f"{given[0]}: the budget planner needs --budget, --cost_human and --cost_model "
                          f"({missing} missing)")
    from socbench.estimates.items import run_items
    from socbench.estimates.render import HEAD, LEGEND, domain_lines, question_cells
    from socbench.estimates.study import Settings, estimate_items
    from socbench.files import write_json
    from socbench.report.terminal import terminal_table

    settings = Settings(labelled=args.labelled, fraction=args.fraction, repeats=args.repeats, seed=args.seed,
                        budget=args.budget, cost_human=args.cost_human, cost_model=args.cost_model)
    record = estimate_items(run_items(args.run_dir), settings)
    path = write_json(Path(args.run_dir).expanduser() / "estimates.json", record)
    print("\n".join(terminal_table(HEAD, question_cells(record), shrink=(0, 1))))
    print(LEGEND + "\n\n" + "\n".join(domain_lines(record)))
    print(*(f"note: {note}" for note in record["notes"]), f"estimates: {path}", sep="\n")
    return 0
