"""Repeated draws per item (``--samples K`` at ``--temperature`` > 0): an expansion of the pipeline.

Why: without log-probabilities one answer per item cannot tell a stable answer from a coin flip. Draw
``k`` has its own seed (``run seed + k``), so it is cached under its own key and a larger K sends only the
new draws. An item's draws reduce to the modal one (ties: drawn first; a numeric item's: the median draw),
scored as its answer; the K-draw
shares are its distribution, the modal share its agreement; per domain: mean agreement and Fleiss' kappa.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

import numpy as np

from socbench.types import Extraction, PromptRequest

DRAW_MARK = "~draw"


def item_of(request_id: str) -> str:
    """The item a draw's request id belongs to (an ordinary id is its own item)."""
    return request_id.split(DRAW_MARK, 1)[0]


def draw_prompts(prompts: Sequence[PromptRequest], samples: int, run_seed: int) -> list[PromptRequest]:
    """Each prompt ``samples`` times, adjacent, draw ``k`` seeded ``run_seed + k``: the same for that draw
    whatever K is, so a larger K reuses the cache."""
    if samples <= 1:
        return list(prompts)
    return [replace(p, item_id=f"{p.item_id}{DRAW_MARK}{k}",
                    sampling=replace(p.sampling, seed=run_seed + k))
            for p in prompts for k in range(samples)]


def modal_extraction(draws: Sequence[Extraction], samples: int) -> tuple[Extraction, float | None]:
    """One item's extraction (the modal code's first draw, the K-draw shares as its distribution) and
    its agreement. An unanswered draw makes the item an engine error (a rerun asks it again); with no
    readable draw the item is the first draw's parse failure (agreement None)."""
    failed = next((d for d in draws if d.engine_error is not None), None)
    if failed is not None:
        return failed, None
    every = tuple(d.code for d in draws)
    codes = [code for code in every if code is not None]
    if not codes:
        return replace(draws[0], draws=every), None
    counts = Counter(codes)
    mode, top = counts.most_common(1)[0]  # ties: the code drawn first (a Counter keeps first appearance)
    chosen = next(d for d in draws if d.code == mode)
    shares = {code: n / len(codes) for code, n in counts.items()}
    return replace(chosen, distribution=shares, draws=every), top / samples


def median_extraction(draws: Sequence[Extraction], samples: int) -> tuple[Extraction, float | None]:
    """A numeric item's extraction: its median draw (the lower of two middle ones: a number drawn), or as
    ``modal_extraction`` where a draw failed or none is readable; no agreement (numbers rarely repeat)."""
    numbers = sorted((d for d in draws if d.code is not None), key=lambda d: float(d.code or 0))
    if any(d.engine_error is not None for d in draws) or not numbers:
        return modal_extraction(draws, samples)[0], None
    return replace(numbers[(len(numbers) - 1) // 2], draws=tuple(d.code for d in draws)), None


def fleiss_kappa(table: np.ndarray) -> float:
    """Fleiss' kappa of a subjects x categories count table; NaN where undefined (one subject or category)."""
    table = np.asarray(table, dtype=float)
    if table.ndim != 2 or len(table) < 2:
        return float("nan")
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of ratings per subject")
    n = raters[0]
    p_cat = table.sum(axis=0) / table.sum()
    p_item = ((table * (table - 1)).sum(axis=1)) / (n * (n - 1))
    expected = float((p_cat ** 2).sum())
    return float("nan") if expected >= 1 else (float(p_item.mean()) - expected) / (1 - expected)


def reduce_draws(extractions: Mapping[str, Extraction], samples: int, run_seed: int,
                 numeric: Collection[str] = ()) -> tuple[Mapping[str, Extraction], dict[str, float]]:
    """Extractions by item id (the modal draw's; the median's for a ``numeric`` item id), and the draw
    record: K, the seeds, mean agreement and Fleiss' kappa over the option items whose K draws were all
    readable."""
    if samples <= 1:  # as they are: no copy of a whole survey's
        return extractions, {}
    grouped: dict[str, list[Extraction]] = {}
    for request_id, extraction in extractions.items():
        grouped.setdefault(item_of(request_id), []).append(extraction)
    modal = {item_id: (median_extraction if item_id in numeric else modal_extraction)(draws, samples)
             for item_id, draws in grouped.items()}
    reduced = {item_id: extraction for item_id, (extraction, _) in modal.items()}
    agreements = [agreement for _, agreement in modal.values() if agreement is not None]
    complete = [[d.code for d in draws] for item_id, draws in grouped.items() if item_id not in numeric
                and len(draws) == samples and all(d.code is not None for d in draws)]
    categories = sorted({code for codes in complete for code in codes})
    table = np.array([[codes.count(c) for c in categories] for codes in complete])  # none: NaN
    return reduced, {"samples": samples, "draw_seed_0": run_seed,  # draw k: + k
                     "draw_agreement": float(np.mean(agreements)) if agreements else float("nan"),
                     "draw_fleiss_kappa": fleiss_kappa(table), "draw_items": len(complete)}
