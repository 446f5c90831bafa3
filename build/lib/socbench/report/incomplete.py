"""Runs that are not results: some request got no answer from the engine (engine errors).

A run with an incomplete domain is listed apart with its counts and never ranked, compared
or plotted: its accuracy would count unanswered requests as wrong answers.
"""

from __future__ import annotations

from typing import Any

from socbench.errors import ConfigError

INCOMPLETE_HEAD = ("run", "model", "domains", "incomplete domains", "items", "engine errors",
                   "parse failures", "first engine error")


def domain_engine_errors(dom: Any) -> tuple[int, str | None]:
    """(engine errors, first reason) of one ``DomainRun``; (0, None) when it is complete."""
    stored, reasons = dom.stored, dom.items["engine_error"].dropna()
    count = stored.engine_errors if stored.engine_errors is not None else len(reasons)
    first = next(iter(stored.engine_error_reasons), None) or (str(reasons.iloc[0]) if len(reasons) else None)
    if stored.complete is False or len(reasons):
        return max(count, 1), first or "unknown"
    return 0, None


def incomplete_row(run: Any) -> dict[str, Any] | None:
    """A ``ModelRun``'s line in the list of incomplete runs, or None when every domain is complete."""
    counts = [(dom, *domain_engine_errors(dom)) for dom in run.domains]
    bad = [(dom, n, first) for dom, n, first in counts if n]
    if not bad:
        return None
    return {"run": run.run, "model": run.model, "complete": False, "domains": len(run.domains),
            "incomplete_domains": ", ".join(f"{dom.domain} ({n})" for dom, n, _ in bad),
            "items": sum(len(dom.items) for dom in run.domains),
            "engine_errors": sum(n for _, n, _ in bad),
            "parse_failures": int(sum(dom.items["parse_failure"].sum() for dom in run.domains)),
            "first_engine_error": bad[0][2]}


def incomplete_cells(row: dict[str, Any]) -> list[str]:
    return [row["run"], row["model"], str(row["domains"]), row["incomplete_domains"], str(row["items"]),
            str(row["engine_errors"]), str(row["parse_failures"]), str(row["first_engine_error"])[:160]]


def incomplete_notes(rows: list[dict[str, Any]]) -> list[str]:
    """One line per incomplete run, for the console and the report's notes."""
    return [f"incomplete run {r['run']} (not ranked): {r['engine_errors']} engine error(s) in "
            f"{r['incomplete_domains']}; first: {r['first_engine_error']}; rerun it to fill the gaps"
            for r in rows]


def require_complete(run: Any) -> None:
    """A ConfigError naming ``--compare`` when ``run`` is incomplete (its accuracy is not a result)."""
    row = incomplete_row(run)
    if row is not None:
        raise ConfigError(f"--compare {run.run}: the run is incomplete ({row['engine_errors']} engine "
                          f"error(s) in {row['incomplete_domains']}); rerun it before comparing")


INCOMPLETE_NOTE = ("Incomplete runs: some requests got no answer from the engine (server down, timeouts, "
                   "rejected requests). Their accuracy would count those as wrong answers, so they are "
                   "not ranked; rerun the same command to send exactly the missing requests.")
