"""Tables for a terminal: aligned, at most 120 columns; a name too long loses its tail ("…") instead of
wrapping every row (the files keep every column)."""

from __future__ import annotations

from collections.abc import Sequence

WIDTH = 120
NARROWEST = 12  # a shrinkable column is never cut below this


def terminal_table(head: Sequence[str], rows: Sequence[Sequence[object]], shrink: Sequence[int] = (0,),
                   width: int = WIDTH) -> list[str]:
    """``head`` and ``rows`` as an aligned markdown pipe table whose lines fit ``width``: the widest
    of the ``shrink`` columns loses a character at a time until the table fits."""
    cells = [[str(cell).replace("|", "/") for cell in row] for row in [head, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
    over = sum(widths) + 3 * len(widths) + 1 - width  # "| " + " | ".join(cells) + " |"
    while over > 0 and shrink:
        widest = max(shrink, key=lambda i: widths[i])
        if widths[widest] <= NARROWEST:
            break
        widths[widest] -= 1
        over -= 1

    def line(row: list[str]) -> str:  # a cell longer than its column: its tail replaced by "…"
        cells = (cell if len(cell) <= w else cell[: w - 1] + "…" for cell, w in zip(row, widths))
        return "| " + " | ".join(cell.ljust(w) for cell, w in zip(cells, widths)) + " |"

    return [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, cells[1:])]
