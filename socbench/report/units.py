"""Any study's units as people read them, from the one record every study writes (``log.records.UnitRecord``):
a table per study, its metrics per unit, in ``leaderboard.md``, ``report.html`` and a run's printed table.
ISSP and MCQ have richer sections of their own, so only the other studies are shown here."""

from __future__ import annotations

from collections.abc import Sequence

from socbench.log.read import UnitRun
from socbench.report.output import fmt, markdown_table

OWN_SECTIONS = ("issp", "mcq")  # studies whose runs have sections of their own in the report


def by_study(units: Sequence[UnitRun]) -> dict[str, list[UnitRun]]:
    """The units of studies without a section of their own, by study (``task``), in the order read."""
    studies = dict.fromkeys(unit.record.task for unit in units if unit.record.task not in OWN_SECTIONS)
    return {study: [unit for unit in units if unit.record.task == study] for study in studies}


def unit_table(units: Sequence[UnitRun]) -> tuple[list[str], list[list[str]]]:
    """Head and rows: run, model, unit, complete, then each metric any of them has (a blank: not given)."""
    names = list(dict.fromkeys(name for unit in units for name in unit.record.metrics))
    return (["run", "model", "unit", "complete", *names],
            [[unit.run, unit.record.model, unit.record.unit,
              "yes" if unit.record.complete else f"no: {unit.record.incomplete_reason}",
              *(fmt(unit.record.metrics.get(name), 4, missing="") for name in names)] for unit in units])


def units_markdown(units: Sequence[UnitRun]) -> list[str]:
    """``## Study <name>`` and its table for each study without a section of its own."""
    return [line for study, found in by_study(units).items()
            for line in ["", f"## Study {study}", "", *markdown_table(*unit_table(found))]]
