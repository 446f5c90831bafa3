"""What a new study inherits, so that it is one module plus one entry in ``socbench.studies.STUDIES``: a
configuration record with the engine settings (``StudyConfig``) and a Task (``StudyTask``) whose every stage
but load, prompts, extract and score has a default. Its units are written as the record every study shares
(``log.records.UnitRecord``), which the leaderboard, ``socbench report`` and ``socbench.evaluate`` read, and
it runs on the generic flows (``socbench.flows.generic``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from socbench.config import EngineRun
from socbench.engines.settings import EngineSettings, resolve_engine
from socbench.errors import ConfigError
from socbench.log.read import read_units
from socbench.outcomes import RunReport, UnitReport
from socbench.report.html import write_report
from socbench.report.output import model_dir
from socbench.report.units import units_markdown
from socbench.task import Unit, UnitResult


class StudyConfig(EngineRun):
    """A study's run configuration: the engine and where results go (field names are the CLI's flags);
    a study adds its own settings."""

    engine: EngineSettings = EngineSettings()
    output_dir: Path = Field(Path("results"), description="results go to <output_dir>/<model>/<study>/")

    def engine_settings(self) -> EngineSettings:
        """The engine record with ``auto`` resolved (what the engine session is keyed on)."""
        return resolve_engine(self.engine, "generation")


@dataclass(frozen=True)
class StudyTask:
    """Defaults for every stage but ``load``, ``prompts``, ``extract`` and ``score`` (which returns the
    unit's metrics by name): one unit named after the study, no checks or notes, options as loaded, the
    shared unit record as its results, the report over every run as its end."""

    config: Any
    name: ClassVar[str]

    def units(self) -> list[Unit]:
        return [Unit(1, self.name, f"{self.name} ({self.config.engine.model})")]

    def unit(self, unit_id: int) -> Unit:
        """One unit by id; an id the study lacks is one ConfigError line (a deployment's parameter)."""
        found = {unit.id: unit for unit in self.units()}
        if unit_id not in found:
            raise ConfigError(f"{self.name}: no unit {unit_id} (its units: {', '.join(map(str, found))})")
        return found[unit_id]

    def folder(self) -> Path:
        return model_dir(self.config.output_dir, self.config.engine.model) / self.name

    def check(self) -> list[str]:
        return []

    def notes(self, data: Any) -> list[str]:
        return []

    def special_options(self, data: Any) -> Any:
        return data

    def result(self, unit: Unit, scored: Mapping[str, float], incomplete: str | None) -> UnitResult:
        return UnitResult(unit.id, unit.name, dict(scored), incomplete)

    def record(self, result: UnitResult) -> UnitResult:
        return result

    def report(self, scored: Mapping[str, float], seconds: float) -> UnitReport:
        return UnitReport(", ".join(f"{k} {v:.4f}" for k, v in scored.items()), (), ())

    def finish(self, results: Sequence[UnitResult], failed: dict[int, str],
               export_failed: Sequence[str] = ()) -> RunReport:
        """The run's units as a table for the terminal, and the report over every run beside it."""
        board = write_report(self.config.output_dir)
        return RunReport("\n".join(units_markdown(read_units(self.folder()))).strip(),
                         {"report": str(board.html)})
