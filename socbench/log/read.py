"""A run's results log (the files: ``log.write``), read back: what the run wrote, never recomputed.
Every record is read through its model (``log.records``); one written by an older socbench is named in
one line saying to re-score it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache, partial
from pathlib import Path
from typing import Any, Generic, TypeVar

import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from socbench.errors import DataError, problem
from socbench.files import read_json
from socbench.log.lines import ITEM_TYPES, item_columns, read_lines
from socbench.log.records import (
    FORMAT,
    CircularRecord,
    DomainRecord,
    McqRecord,
    SummaryRecord,
    UnitRecord,
    VariantRow,
)
from socbench.types import ScoredItem, VariantResult

DETAILED_SUFFIX = "_detailed.json"
ITEMS_SUFFIX = "_items.jsonl"  # a line per scored item (``records.detail_row``)
RESPONDENTS_SUFFIX = "_respondents.jsonl"  # a line per respondent: person_id and persona groups
METRICS_SUFFIX = "_metrics.json"
RESULTS_SUFFIX = "_results.json"
PREDICTIONS_SUFFIX = "_predictions.jsonl"
UNIT_SUFFIX = "_unit.json"  # every study's unit record (``records.UnitRecord``)
MCQ_FOLDER = "mcq"
R = TypeVar("R", bound=BaseModel)


class Rescore(DataError):
    """A results log this socbench does not read as it is: the same command, run again, rewrites it."""


def read_record(path: Path, model: type[R]) -> R:
    """One record; an older or newer format is a ``Rescore`` line, a bad field one DataError line."""
    payload = read_json(path)
    found = payload.get("format") if isinstance(payload, dict) else None
    if isinstance(found, int) and found > FORMAT:
        raise Rescore(f"{path}: written by a newer socbench (results format {found}; this one reads "
                      f"{FORMAT})")
    if found != FORMAT:
        raise Rescore(f"{path.parent}: written by an older socbench (no results format {FORMAT}): re-score "
                      "it by running the same command again (the answers come from the engine cache)")
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise DataError(f"{path}: {problem(exc)}") from None


def read_variants(path: Path) -> list[VariantResult]:
    """Variant results from a ``*_circular.jsonl`` file."""
    return [row.result() for row in read_lines(path, VariantRow, "a circular variant record")]


def _records(folder: Path, suffix: str) -> list[Path]:
    """A folder's files of one kind, circular files left out."""
    return [path for path in sorted(Path(folder).glob(f"*{suffix}")) if "_circular" not in path.name]


class Respondent(BaseModel):
    """A line of ``<Domain>_respondents.jsonl``: the id, then each persona group (``sex``, ...)."""

    model_config = ConfigDict(extra="allow")
    person_id: int | str


@dataclass(frozen=True)
class DomainRun:
    """One domain of one run: its record as written; its items and respondents read from their lines
    when asked, only the fields a reader names."""

    path: Path
    stored: DomainRecord
    domain: str
    domain_id: int

    def beside(self, suffix: str) -> Path:
        """A file of this domain beside its record (``ITEMS_SUFFIX``, ``RESPONDENTS_SUFFIX``, ...)."""
        return self.path.with_name(self.path.name.removesuffix(DETAILED_SUFFIX) + suffix)

    @cached_property
    def groups(self) -> dict[str, dict[str, str]]:
        """Each respondent's persona groups, by person id as text."""
        return {str(r.person_id): {k: str(v) for k, v in (r.model_extra or {}).items()}
                for r in read_lines(self.beside(RESPONDENTS_SUFFIX), Respondent, "a respondent record")}

    def columns(self, names: Sequence[str]) -> dict[str, list[Any]]:
        """Only these fields of every item (``lines.ITEM_TYPES``), in the run's order: what readers keep."""
        return item_columns(self.beside(ITEMS_SUFFIX), names, self.stored.total_count)

    def scored(self, raw_reply: bool = False) -> list[ScoredItem]:
        """The scored items with their respondents' persona groups (the pooled figures', the estimators',
        the paired comparison's); the reply texts, which none of them reads, only with ``raw_reply``."""
        c = self.columns([n for n in ITEM_TYPES if raw_reply or n != "raw_reply"])
        groups, replies = self.groups, c.get("raw_reply") or [None] * len(c["person_id"])
        return [ScoredItem(p, *fields, tuple(offered), shares, groups.get(str(p), {}), error, reply,
                           None if draws is None else tuple(draws))
                for p, *fields, offered, shares, error, reply, draws in zip(
                    c["person_id"], c["question_id"], c["country_code"], c["true_answer"], c["llm_answer"],
                    c["correct"], c["parse_error"], c["is_country_specific"], c["offered_codes"],
                    c["option_distribution"], c["engine_error"], replies, c["draws"], strict=True)]

    @cached_property
    def people(self) -> set[str]:
        """The ids (as text) of the respondents with a scored item."""
        return {str(p) for p in self.columns(("person_id",))["person_id"]}


def read_domain(path: Path) -> DomainRun:
    stat = path.stat()
    return _read_domain(path, stat.st_ino, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _read_domain(path: Path, *version: int) -> DomainRun:
    """Once per version of the file: the run's summary and then its report read every record."""
    stored = read_record(path, DomainRecord)
    return DomainRun(path, stored, stored.domain, stored.domain_id)


def read_domains(folder: Path) -> list[DomainRun]:
    return sorted(map(read_domain, _records(folder, DETAILED_SUFFIX)), key=lambda d: (d.domain_id, d.domain))


@dataclass(frozen=True)
class ModelRun:
    """One ISSP run folder: its domains; summary (None: not finished) and circular metrics read lazily."""

    run: str  # folder name
    model: str
    folder: Path
    domains: tuple[DomainRun, ...]

    @cached_property
    def summary(self) -> SummaryRecord | None:
        path = self.folder / "summary.json"
        return read_record(path, SummaryRecord) if path.is_file() else None

    @cached_property
    def circular(self) -> dict[str, CircularRecord]:
        """File stem -> record, of every ``<Domain>_circular[_relabel]_metrics.json``."""
        return {path.name.removesuffix(METRICS_SUFFIX): read_record(path, CircularRecord)
                for path in sorted(self.folder.glob(f"*_circular*{METRICS_SUFFIX}"))}

    @property
    def study(self) -> str:
        """The survey's own name, as the run recorded it ("": none)."""
        return str(self.summary.data.get("study") or "") if self.summary else ""

    @property
    def grouping(self) -> str:
        """What the run's items are grouped by: the grouping its domains share, else "group"."""
        found = {d.stored.grouping for d in self.domains}
        return found.pop() if len(found) == 1 else "group"


@dataclass(frozen=True)
class Stored(Generic[R]):
    """One record of a run as written, with the run it belongs to."""

    run: str
    path: Path
    record: R


McqRun = Stored[McqRecord]  # one MCQ dataset of one model's run (``run``: the model's folder name)
UnitRun = Stored[UnitRecord]  # one unit of any study (``run``: its folder under the results folder)


def read_units(folder: Path) -> list[UnitRun]:
    """The unit records of a run folder and of the study folders inside it (``<model>/mcq/``, ...)."""
    paths = sorted([*folder.glob(f"*{UNIT_SUFFIX}"), *folder.glob(f"*/*{UNIT_SUFFIX}")])
    return [UnitRun(str(path.parent.relative_to(folder.parent)), path, read_record(path, UnitRecord))
            for path in paths]


def read_run(folder: Path) -> ModelRun | None:
    """An ISSP run folder, or None when it holds no domain record."""
    domains = read_domains(folder)
    return ModelRun(folder.name, domains[0].stored.model, folder, tuple(domains)) if domains else None


@dataclass(frozen=True)
class Runs:
    """Every run under a results folder: ISSP and MCQ, every study's unit records, and a line for each one
    left out (to re-score)."""

    issp: list[ModelRun]
    mcq: list[McqRun]
    notes: list[str]
    units: list[UnitRun]


def load_runs(output_dir: str | Path) -> Runs:
    """Every run under ``output_dir`` (or ``output_dir`` itself when it is a run folder)."""
    root = Path(output_dir).expanduser()
    if not root.is_dir():
        raise DataError(f"{root}: results folder not found")
    own = [root] if _records(root, DETAILED_SUFFIX) or (root / MCQ_FOLDER).is_dir() \
        or any(root.glob(f"*{UNIT_SUFFIX}")) else []
    folders = own or [f for f in sorted(root.iterdir()) if f.is_dir() and not f.name.startswith(".")]
    runs = Runs([], [], [], [])
    for folder in folders:
        try:
            issp, units = read_run(folder), read_units(folder)
            mcq = [McqRun(folder.name, path, read_record(path, McqRecord))  # the datasets its mcq/ holds
                   for path in _records(folder / MCQ_FOLDER, RESULTS_SUFFIX)]
            if issp is not None:
                _ = issp.summary, issp.circular  # read now, so an older one is left out here
        except Rescore as exc:
            runs.notes.append(str(exc))
            continue
        runs.issp.extend([issp] if issp else [])
        runs.mcq.extend(mcq)
        runs.units.extend(units)
    if not runs.issp and not runs.mcq and not runs.units:
        raise DataError("; ".join(runs.notes) or f"{root}: no results of a run here (expected <run>/<Domain>"
                        f"{DETAILED_SUFFIX} or <model>/{MCQ_FOLDER}/<dataset>{RESULTS_SUFFIX})")
    return runs


def unit_metrics(folder: Path) -> dict[str, dict[str, Any]]:
    """Each unit's metrics as the run wrote them in the record every study shares, with ``complete`` and
    the study's extras (an ISSP domain's baselines and scoreable items, an MCQ dataset's chance)."""
    records = (read_record(path, UnitRecord) for path in sorted(folder.glob(f"*{UNIT_SUFFIX}")))
    return {r.unit: {**r.metrics, "complete": r.complete, **r.extras} for r in records}


# a JSON Lines file as a frame: every value as the JSON holds it (no dtype guessing, floats to the last digit)
_lines_frame = partial(pd.read_json, lines=True, dtype=False, precise_float=True)


def items_frame(folder: Path) -> pd.DataFrame:
    """Every item of the run: ISSP scored items (``domain`` column), MCQ predictions (``dataset``)."""
    frames = [_lines_frame(d.beside(ITEMS_SUFFIX)).assign(domain=d.domain)
              for d in map(read_domain, _records(folder, DETAILED_SUFFIX))]
    frames += [_lines_frame(path).assign(dataset=path.name.removesuffix(PREDICTIONS_SUFFIX))
               for path in _records(folder, PREDICTIONS_SUFFIX)]
    if not frames:
        raise DataError(f"{folder}: no results of a run here")
    return pd.concat(frames, ignore_index=True)
