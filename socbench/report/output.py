"""How every result file looks: model folders, markdown tables, number cells, figure canvases and words.
matplotlib is imported inside the figure helpers (slow to load, only reports need it)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

from socbench.files import atomic_open
from socbench.models import model_slug

# the report's words (package data): labels, column heads, section leads, notes and definitions
TEXTS = json.loads(files("socbench.report").joinpath("texts.json").read_text(encoding="utf-8"))
LABELS, HEADS = TEXTS["labels"], {name: tuple(head) for name, head in TEXTS["heads"].items()}


def model_dir(output_dir: str | os.PathLike[str], model: str) -> Path:
    """``<output_dir>/<model_slug(model)>``, checked to lie inside ``output_dir`` (``../../x`` cannot)."""
    root = Path(output_dir).resolve()
    path = (root / model_slug(model)).resolve()
    if path.parent != root:
        raise ValueError(f"model folder {path} escapes {root}")
    return path


def now_timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def markdown_table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A markdown pipe table as lines (a ``|`` inside a cell becomes ``/``)."""
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(str(cell).replace("|", "/") for cell in row) + " |" for row in rows)]


def markdown_text(head: Sequence[str], rows: Iterable[Sequence[str]], title: str = "",
                  notes: Sequence[str] = ()) -> str:
    """A markdown file: ``# title`` (if any), the pipe table, then the notes."""
    lines = [*([f"# {title}", ""] if title else []), *markdown_table(head, rows)]
    return "\n".join([*lines, *([""] if notes else []), *notes]) + "\n"


def fmt(value: Any, digits: int = 3, missing: str = "n/a") -> str:
    """A table cell: floats to ``digits`` decimals, None/NaN/inf as ``missing``, the rest as text."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return missing
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def finite_mean(values: Iterable[Any]) -> float:
    """Mean of the finite numbers among ``values`` (None/NaN skipped); NaN when there are none."""
    finite = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def new_figure(width: float, height: float) -> Any:
    """A matplotlib Figure on the Agg canvas (no pyplot state), constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Any, path: Path) -> Path:
    """Write ``fig`` as PNG, atomically."""
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png")
    return path


def finish_figure(fig: Any, ax: Any, path: Path, ylabel: str, title: str, legend: str | None = "small",
                  **title_style: Any) -> Path:
    """Label ``ax``, put its legend (font size ``legend``) outside on the right, and write ``fig``."""
    ax.set_ylabel(ylabel)
    ax.set_title(title, **title_style)
    ax.legend(fontsize=legend, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save_figure(fig, path)
