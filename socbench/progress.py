"""A run's progress: the stages report (``begin`` a unit, ``requests`` to send, ``advance`` one answered,
``end`` with its line, ``note`` a warning, ``status`` a batch's state while it is waited for), a listener
shows (the CLI: a bar on a terminal, else lines; a Prefect worker has none). ``domain_line`` and
``run_table`` put each score beside its strongest baseline.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS
from socbench.metrics.headline import summary_note
from socbench.report.labels import baseline_label
from socbench.report.output import fmt
from socbench.report.terminal import terminal_table

_LISTENERS: list[Any] = []


@contextlib.contextmanager
def listening(listener: Any) -> Iterator[Any]:
    """Show the progress of what runs inside on ``listener`` (``cli.inprocess.ConsoleProgress``): an object
    with a method per event, ``begin(label)``, ``requests(total)``, ``advance(n=1)``, ``end(line)``,
    ``note(line)``, ``status(line)``."""
    _LISTENERS.append(listener)
    try:
        yield listener
    finally:
        _LISTENERS.remove(listener)


def _tell(event: str, *args: Any) -> None:
    """Pass ``event`` on to every listener."""
    for listener in _LISTENERS:
        getattr(listener, event)(*args)


begin, requests, advance, end, note, status = (functools.partial(_tell, event) for event in (
    "begin", "requests", "advance", "end", "note", "status"))


def _accuracy(row: Mapping[str, Any]) -> str:
    low, high = row["accuracy_ci_low"], row["accuracy_ci_high"]
    missing = f"[no CI: n < {DEFAULT_MIN_RESPONDENTS}]"  # low is None or NaN
    ci = f"[{fmt(low)}, {fmt(high)}]" if fmt(low) != "n/a" else missing
    return f"{fmt(row['accuracy'])} {ci}"


def _margin(row: Mapping[str, Any]) -> str:
    margin = row["margin_over_best_baseline"]
    return fmt(margin) if margin is None or fmt(margin) == "n/a" else f"{margin:+.3f}"


def domain_line(row: Mapping[str, Any]) -> str:
    """``domain 3 Family: 145 items, accuracy 0.412 [0.350, 0.470], best baseline majority answer 0.380
    (+0.032), 0 parse failures, 0 engine errors`` from a summary row; an incomplete one says so."""
    head = f"domain {row['domain_id']} {row['domain']}: {row['scoreable_items']} items"
    tail = f"{row['parse_failures']} parse failures, {row['engine_errors']} engine errors"
    if row.get("complete") is False:
        return f"{head}, INCOMPLETE, not a result ({row['incomplete_reason']}), {tail}"
    best = f"{baseline_label(row['best_baseline'], short=True)} {fmt(row['best_baseline_accuracy'])}"
    return f"{head}, accuracy {_accuracy(row)}, best baseline {best} ({_margin(row)}), {tail}"


def finished_line(line: str, seconds: float) -> str:
    """A stage's closing line with the seconds it took, as a console shows it (the CLI and ``make demo``)."""
    return f"{line}, {seconds:.1f} s"


def run_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The run's table for a terminal (at most 120 columns; ``summary.md`` and the report keep every
    column); an incomplete domain: "incomplete", no margin."""
    head = ("domain", "accuracy [95% CI]", "strongest baseline", "margin", "failures")
    cells = [[f"{row['domain_id']} {row['domain']}",
              _accuracy(row) if row.get("complete") is not False else "incomplete",
              # the score first: a cut keeps it
              f"{fmt(row['best_baseline_accuracy'])} {baseline_label(row['best_baseline'], short=True)}",
              _margin(row) if row.get("complete") is not False else "n/a",
              f"{row['parse_failures']} parse, {row['engine_errors']} engine"] for row in rows]
    small = summary_note(rows)  # once, below the table: what a run too small to compare groups lacks
    return terminal_table(head, cells, shrink=(0, 2)) + ([small] if small else [])
