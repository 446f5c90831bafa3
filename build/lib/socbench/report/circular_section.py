"""Section 5 of ``report.html``: circular evaluation of the ISSP runs that have it.

Read from each run's ``<Domain>_circular[_relabel]_metrics.json``: which options the
variants showed (order-only: the survey's codes, only the lines move; relabelled: 1..n by
position), and per family (rotations, all orders, or a sampled set of orders, labelled as
sampled) the questions that entered, accuracy in the original order and over the variants,
perf (every variant right) and vote.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from socbench.report.html_sections import esc, note, table
from socbench.report.labels import domain_label
from socbench.report.leaderboard import ModelRun
from socbench.report.output import fmt

FAMILY_LABELS = {"circular": "rotations (n orders)", "all_possible": "all n! orders",
                 "sampled": "sampled orders (sampled: not all orders)"}
LABEL_MODES = {"order_only": "order-only (codes kept)", "relabel": "relabelled 1..n"}
HEAD = ("domain", "run", "options shown", "orders", "questions", "accuracy, original order",
        "accuracy over variants", "perf (all variants right)", "vote")
LEAD = ("Each question is asked again with its options reordered; perf counts a question only when "
        "every order is answered right. Order-only keeps each survey code with its text, so it measures "
        "order bias alone: a model that always answers \"1\" names the same option in every order and looks "
        "perfectly consistent (perf equals its accuracy). Relabelled numbers the options 1..n by position in "
        "each order and maps the answer back, as OpenCompass does: it measures label and order bias, and "
        "always \"1\" scores perf 0. Sampled orders (--max_variants) always include the n rotations; their "
        "metrics are marked sampled and are an upper bound of the same metric over all orders.")


def circular_rows(run: ModelRun) -> list[list[str]]:
    """One row per (domain file, family) of a run's circular metrics."""
    rows = []
    for payload in run.circular.values():
        metrics: dict[str, Any] = payload.get("metrics", {})
        labels = LABEL_MODES.get(payload.get("labels", "order_only"), str(payload.get("labels")))
        for family, label in FAMILY_LABELS.items():
            if f"perf_{family}" not in metrics:
                continue
            rows.append([domain_label(str(payload["domain"])), run.run, labels, label,
                         str((payload.get("questions") or {}).get(family, "n/a")),
                         fmt(metrics.get("acc_origin")), fmt(metrics.get(f"acc_{family}")),
                         fmt(metrics.get(f"perf_{family}")), fmt(metrics.get(f"vote_{family}"))])
    return rows


def circular_section(runs: Sequence[ModelRun]) -> list[str]:
    rows = [row for run in runs for row in circular_rows(run)]
    head = "<h2 id='circular'>5. Circular evaluation (option order and labels)</h2>"
    if not rows:
        return [head, note("No circular evaluation in these results (socbench issp --circular circular).")]
    return [head, f"<p class='lead'>{esc(LEAD)}</p>", table(HEAD, rows)]
