"""What section 8 of ``report.html``, "Could these answers stand in for respondents?", shows, and its
figure: the gain per question as each domain's record holds it (``estimates.study.gain_record``); nothing
is estimated here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from socbench.estimates.render import gain_sentence
from socbench.estimates.study import DEFAULT_FRACTION
from socbench.log.read import DomainRun, ModelRun
from socbench.report.labels import domain_label
from socbench.report.output import LABELS, finish_figure, fmt, new_figure

GAINS = "gain_per_question.png"
TITLE = "gain per question (dots), median (line), its spread: middle 95% over splits (bar)"  # the figure's


def gain_view(run: ModelRun, domain: DomainRun) -> str | tuple[str, str, list[list[str]]]:
    """The sentence a researcher can quote, a warning and the gain per question (``HEADS["standin"]``
    rows); or the note why there is none."""
    record, title = domain.stored.estimates, domain_label(domain.domain)
    if not record:
        return LABELS["no_gain"].format(domain=title, folder=run.folder)
    if "questions" not in record:
        return record["note"].replace(domain.domain, title, 1)  # too few respondents
    rows = [[qid, q["target"], str(q["labelled"]), fmt(q["gain"], 2), fmt(q["rho"], 2)]
            for qid, q in record["questions"].items()]
    sentence, behind = gain_sentence(title, record["median_gain"], record.get("median_gain_ci"),
                                     record["repeats"], record["labelled"], record["respondents"])
    return (f"{sentence} Median gain over {len(rows)} questions {fmt(record['median_gain'], 2)}; {behind}.",
            record.get("warning") or "", rows)


def gain_figure(runs: Sequence[ModelRun], path: Path) -> Path | None:
    """Each question's gain (dots) and the domain's median with its CI (bar), per domain and run;
    None when no domain of any run has a gain."""
    found = [(run, d, d.stored.estimates) for run in runs for d in run.domains
             if d.stored.estimates.get("questions")]  # the domains whose record holds gains per question
    if not found:
        return None
    domains = list(dict.fromkeys(domain_label(d.domain) for _, d, _ in found))
    names = list(dict.fromkeys(run.run for run, _, _ in found))
    width = 0.8 / len(names)
    fig = new_figure(max(6.0, 1.2 * len(domains) * max(1, len(names) / 2) + 3), 4.5)
    ax = fig.add_subplot()
    seen: set[str] = set()  # runs in the legend
    for run, d, record in found:
        i = names.index(run.run)
        x = domains.index(domain_label(d.domain)) - 0.4 + width * (i + 0.5)
        gains = [q["gain"] for q in record["questions"].values() if math.isfinite(q["gain"])]
        ax.scatter([x] * len(gains), gains, s=12, alpha=0.5, color=f"C{i}",
                   label=None if run.run in seen else run.run)
        seen.add(run.run)
        ci, half = record.get("median_gain_ci"), min(width, 0.5) / 3
        if isinstance(ci, list):
            ax.vlines(x, ci[0], ci[1], color=f"C{i}", linewidth=6, alpha=0.3)
        ax.hlines(record["median_gain"], x - half, x + half, color=f"C{i}", linewidth=2.5)
    ax.axhline(1, color="grey", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(domains)), domains, rotation=30, ha="right")
    ax.set_xlim(-0.6, len(domains) - 0.4)
    return finish_figure(fig, ax, path, f"gain (x n, {DEFAULT_FRACTION:.0%} labelled)", TITLE, "small",
                         fontsize="medium")
