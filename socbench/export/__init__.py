"""``socbench export``: a run's answers back into the formats survey researchers open: long (a row per
item, every domain in one file) or wide (per domain, the survey's shape, real answers in ``<stem>_real``).
Everything is checked before a file is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from socbench.config import EXPORT_FORMATS
from socbench.errors import ConfigError, DataError
from socbench.export.source import DomainSource, domain_source, run_data, run_folder
from socbench.export.tables import long_table, wide_tables
from socbench.export.writers import write_tables

EXPORT_FOLDER = "export"  # default place: <run folder>/export/
LONG_STEM = "answers_long"

__all__ = ["EXPORT_FOLDER", "Exported", "export_formats", "export_run", "resolve_format"]


@dataclass(frozen=True)
class Exported:
    paths: tuple[Path, ...]
    notes: tuple[str, ...] = ()  # what the files lack or had to change, and why
    failed: tuple[str, ...] = ()  # per format that could not be written: one line why


def resolve_format(fmt: str | None, out: Path | None) -> str:
    """``--format``, else the one ``--out``'s suffix names, else csv; a contradiction is one line."""
    suffix = out.suffix.lower().lstrip(".") if out is not None else ""
    if fmt is None:
        return suffix if suffix in EXPORT_FORMATS else "csv"
    if fmt not in EXPORT_FORMATS:
        raise ConfigError(f"--format {fmt}: unknown format (expected one of {', '.join(EXPORT_FORMATS)})")
    if suffix and suffix != fmt:
        raise ConfigError(f"--out {out}: the name ends in .{suffix} but --format is {fmt}")
    return fmt


def _wide_paths(out: Path, domain: str, several: bool) -> tuple[Path, Path]:
    stem = f"{out.stem}_{domain}" if several else out.stem
    return out.with_name(f"{stem}{out.suffix}"), out.with_name(f"{stem}_real{out.suffix}")


def export_run(run_dir: str | Path, fmt: str | None = None, out: str | Path | None = None, wide: bool = False,
               data_dir: str | Path | None = None, record: Mapping[str, Any] | None = None) -> Exported:
    """Write the run's answers: the paths, notes on what they lack or changed, and one line per file set
    not written (never stopping the others); ``record``: which respondents the run read (default:
    ``summary.json``'s). Bad input raises before any file."""
    run_dir = Path(run_dir).expanduser()
    out_path = Path(out).expanduser() if out is not None else None
    fmt = resolve_format(fmt, out_path)
    run = run_folder(run_dir)
    data = run_data(run, Path(data_dir).expanduser() if data_dir is not None else None, record)
    if data is None and wide:
        raise DataError(f"{run_dir}: the run's data folder is not known (summary.json records none, or it "
                        "moved): give --data_dir (the folder `socbench data import` wrote)")
    sources: list[DomainSource | None] = [domain_source(data, d, wide) if data else None for d in run.domains]
    folder = run_dir / EXPORT_FOLDER
    if not wide:
        frame, labels = long_table(list(zip(run.domains, sources)))
        sets = [([(frame, out_path or folder / f"{LONG_STEM}.{fmt}")], labels)]
    else:
        tables = [(domain.domain, *wide_tables(domain, source))  # all checked before a file is written
                  for domain, source in zip(run.domains, sources) if source is not None]
        several = len(tables) > 1 or out_path is None
        sets = [(list(zip((model, real), _wide_paths(out_path or folder / f"answers.{fmt}", name, several))),
                 labels) for name, model, real, labels in tables]
    paths, notes, failed = [], [], []
    for tables_of_set, labels in sets:
        try:
            written, changed = write_tables(tables_of_set, fmt, labels)
            paths, notes = paths + written, notes + changed
        except DataError as exc:
            failed.append(str(exc))
    if data is None:  # only the long export gets here without one
        notes.append(f"weight and source_row are blank: {run_dir}/summary.json names no data folder that "
                     "exists (give --data_dir)")
    return Exported(tuple(paths), tuple(notes), tuple(failed))


def export_formats(run_dir: str | Path, formats: tuple[str, ...], wide: bool,
                   record: Mapping[str, Any]) -> Exported:
    """``--export`` at a run's end: the long table in each format (and wide with ``wide``) under
    ``<run folder>/export/``; a format not written is one line in ``failed``, never stopping the others."""
    done, failed = [], []
    for fmt, shape in [(fmt, False) for fmt in formats] + [(fmt, True) for fmt in formats if wide]:
        what = f"{fmt}{' --wide' if shape else ''}"
        try:
            done.append(export_run(run_dir, fmt, wide=shape, record=record))
            failed += [f"{what}: {line}" for line in done[-1].failed]
        except DataError as exc:
            failed.append(f"{what}: {exc}")
    notes = tuple(dict.fromkeys(note for e in done for note in e.notes))
    return Exported(tuple(path for e in done for path in e.paths), notes, tuple(failed))
