"""The data folder behind a run: each respondent's record (weight, source row, real answers) and an
imported domain's variables. Why: results keep what was scored, not the survey's design; the export joins
them back to the sample file the run read (``summary.json``'s ``data_dir``, or ``--data_dir``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from socbench.data.import_safety import sample_folders
from socbench.data.layout import dataset_root, parse_interview_count, sample_dir
from socbench.data.loaders import AnswerRecord, load_answer_records, load_domain
from socbench.data.variables import SourceVariables, read_variables, variables_path
from socbench.domains import get_domain
from socbench.errors import DataError
from socbench.log.read import DETAILED_SUFFIX, DomainRun, ModelRun, read_run
from socbench.manifest import DomainSpec


@dataclass(frozen=True)
class DomainSource:
    """One domain's respondents in the run (by person_id as text, in file order) and its variables."""

    answer_file: Path
    respondents: dict[str, AnswerRecord]
    variables: SourceVariables | None


@dataclass(frozen=True)
class RunData:
    """The data folder a run read, and which of its respondents (``summary.json``'s ``data``)."""

    root: Path
    dataset_size: int | str | None = None  # None: not recorded (the smallest sample holding the run is used)
    interview_count: int | str = "all"
    interview_sample: str = "first"  # not recorded: a run from before samples were drawn


def run_folder(run_dir: Path) -> ModelRun:
    """One run's folder read, or a one-line DataError naming what it is not."""
    if not run_dir.is_dir():
        raise DataError(f"{run_dir}: run folder not found")
    run = read_run(run_dir)
    if run is None:
        raise DataError(f"{run_dir}: not a run folder (no <Domain>{DETAILED_SUFFIX}; give the folder of "
                        "one run, e.g. results/<model>)")
    return run


def run_data(run: ModelRun, data_dir: Path | None, record: Mapping[str, Any] | None = None) -> RunData | None:
    """``--data_dir``, else the data folder ``record`` (default: ``summary.json``'s ``data``) names;
    None when neither is there."""
    recorded = record if record is not None else run.summary.data if run.summary else None
    recorded = recorded if isinstance(recorded, Mapping) else {}
    folder = data_dir or (Path(recorded["data_dir"]) if isinstance(recorded.get("data_dir"), str) else None)
    if folder is None or (data_dir is None and not folder.is_dir()):
        return None
    size = recorded.get("dataset_size")
    return RunData(dataset_root(folder), size if isinstance(size, int) or size == "all" else None,
                   recorded.get("interview_count", "all"), recorded.get("interview_sample", "first"))


def _in_run(records: list[AnswerRecord], data: RunData, people: set[str],
            spec: DomainSpec) -> list[AnswerRecord]:
    """The records the run read: its sample (drawn again) or first ``interview_count`` (sample size
    unknown: through the last one asked)."""
    limit = parse_interview_count(data.interview_count)
    if data.dataset_size is not None and (limit is None or data.interview_sample == "first"):
        return records[:limit]
    if data.dataset_size is not None:
        drawn = load_domain(data.root, spec, data.dataset_size, data.interview_count, data.interview_sample)
        asked = {person.person_id for person in drawn.respondents}
        return [record for record in records if record.person_id in asked]
    ids = [str(record.person_id) for record in records]
    last = max((i for i, pid in enumerate(ids) if pid in people), default=-1)
    return records[:last + 1]


def domain_source(data: RunData, domain: DomainRun, need_variables: bool) -> DomainSource:
    """The run's respondents of one domain: from the sample file it read (recorded), else the
    smallest one holding every respondent of its results."""
    spec = get_domain(domain.domain, data.root)
    known = need_variables or variables_path(data.root, spec.slug).is_file()
    variables = read_variables(data.root, spec.slug) if known else None
    people = domain.people
    folders = [sample_dir(data.root, data.dataset_size)] if data.dataset_size else sample_folders(data.root)
    for folder in folders:
        path = folder / spec.answer_name
        if not path.is_file():
            continue
        records = {str(r.person_id): r for r in _in_run(load_answer_records(path), data, people, spec)}
        if people <= records.keys():
            return DomainSource(path, records, variables)
    raise DataError(f"{data.root}: no sample file of {spec.name} ({spec.answer_name}) holds all "
                    f"{len(people)} respondents of {domain.path} (did the data folder change since the run?)")
