"""A first look that shows something: a run of ``make demo``'s size (5 respondents a domain) is too small for
the figures that compare groups. Before issue 42 its report was, domain after domain, "Too few respondents
per group" twice over a table of n/a; now the report (html and markdown), ``summary.md`` and the terminal
table say so once, with the size needed and the command that gets it, and each domain leads with its
accuracy against the baselines. Runs are scored and written by the real code."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from socbench.log.write import write_domain_files
from socbench.metrics.headline import small_run_note
from socbench.progress import run_table
from socbench.report.html import write_report
from socbench.report.markdown import write_run_summary
from socbench.scoring import score_domain
from socbench.types import DomainData, Extraction, Item, Respondent
from support.cli import socbench
from support.fake_openai import FakeOpenAIServer

OPTS = (("1", "Agree"), ("2", "Neither"), ("3", "Disagree"), ("4", "Strongly disagree"))
DOMAINS = ((1, "Citizenship"), (3, "Family"), (8, "Role of Government"))
RUN = "org_Model-135M"
NEEDS = ("this run has 5 a domain, and group differences (the structure figures) need at least 30 answering "
         "a question, 10 or more in each of two groups; 95% intervals (and the verdicts that rest on them) "
         "and distribution scores need 10.")


def demo_sized_run(out: Path, cache: Path, respondents: int = 5, population: int = 40) -> None:
    """``respondents`` of ``population`` a domain (the demo's stratified sample of its 40), 6 questions."""
    rng = random.Random(1)
    results = []
    for domain_id, name in DOMAINS:
        people, items, extractions = [], [], {}
        for i in range(respondents):
            pid, country = domain_id * 1000 + i, ("DE", "JP", "FR")[i % 3]
            people.append(Respondent(pid, country, country, {"Sex of Respondent": ("Male", "Female")[i % 2],
                                                             "Age of respondent": f"{20 + 9 * i} years"}, {}))
            for q in range(6):
                item = Item(pid, f"V{q}", country, OPTS, str(rng.randint(1, 4)), False)
                items.append(item)
                extractions[item.item_id] = Extraction(str(rng.randint(1, 4)))
        sample = {"drawn": "stratified", "population": population, "respondents": respondents}
        data = DomainData(domain_id, name, (), tuple(people), {}, "synthetic", sample=sample)
        scored = score_domain(data, items, extractions, model="org/Model-135M", run=RUN, cache=cache)
        write_domain_files(out, scored.result, scored.items)
        results.append(scored.result)
    write_run_summary(out, RUN, results)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory, memo_cache: Path) -> dict:
    out = tmp_path_factory.mktemp("small")
    demo_sized_run(out, memo_cache)
    paths = write_report(out)
    summary = json.loads((out / RUN / "summary.json").read_text())
    return {"page": paths.html.read_text(), "md": paths.leaderboard_md.read_text(),
            "summary_md": (out / RUN / "summary.md").read_text(), "rows": summary["domains"]}


def test_the_report_says_once_what_a_small_run_cannot_show_and_how_to_get_it(small: dict) -> None:
    """Failed before the fix: "Too few respondents per group ..." twice a domain, each over a table of n/a."""
    page = small["page"]
    assert "Too few respondents per group" not in page and "answers of" not in page  # no n/a structure tables
    (note,) = re.findall(r"<p class='note small-run'>(.*?)</p>", page)
    assert NEEDS.replace("'", "&#39;") in note
    assert "<code>socbench issp --interview_count all</code>" in note  # the data holds 40: all of them
    assert page.count("Too few respondents to compare groups") == 1
    answer = page[page.index("id='answer'"):page.index("id='persona'")]
    assert "No distribution scores: too few respondents a question" in page  # not a table of n/a
    leads = re.findall(r"<p class='headline'>accuracy 0\.\d+; demographic model", answer)
    assert len(leads) == len(DOMAINS)  # every domain leads with its accuracy beside the baselines
    md = small["md"]
    assert md.count("Too few respondents to compare groups") == 1 and NEEDS in md
    assert "No distribution scores: too few respondents a question" in md
    assert "`socbench issp --interview_count all`" in md


def test_summary_and_terminal_table_say_it_once(small: dict) -> None:
    for text in (small["summary_md"], "\n".join(run_table(small["rows"]))):
        assert text.count("Too few respondents to compare groups") == 1 and NEEDS in text
    assert run_table(small["rows"])[-1].startswith("Too few respondents to compare groups")


def test_the_command_fits_the_data(small: dict) -> None:
    """40 suggested where the data holds more; where it holds fewer than 30, no command can help; a run
    large enough says nothing."""
    assert "`socbench issp --interview_count 40`" in small_run_note([(5, 1000)])
    assert "`socbench issp --interview_count 40`" in small_run_note([(5, None)])
    assert "holds only 12 a domain, so no run of it can show them" in small_run_note([(5, 40), (12, 12)])
    assert small_run_note([]) is None
    large = [{**row, "sample": {"respondents": 40, "population": 40}} for row in small["rows"]]
    assert run_table(large)[-1].startswith("|")


@pytest.mark.slow  # runs the issp flow on the session's Prefect API
def test_the_demo_sized_run_through_the_command_line(api_url: str, tmp_path: Path) -> None:
    """``make demo``'s run (the demo data, 5 respondents a domain) against a fake server: stdout's table is
    followed by the note once, naming the demo data's own size (40 a domain: ``--interview_count all``)."""
    data = Path(__file__).resolve().parents[1] / "data" / "demo" / "Dataset_all"
    with FakeOpenAIServer() as server:
        done = socbench("issp", "--api_type", "config", "--api_base", server.url, "--model", "fake-model",
                        "--data_dir", str(data), "--domain_id", "3", "--interview_count", "5",
                        "--output_dir", str(tmp_path), "--concurrent_requests", "16")
    assert done.stdout.count("Too few respondents to compare groups") == 1
    assert "this run has 5 a domain" in done.stdout and "`socbench issp --interview_count all`" in done.stdout
    page = (tmp_path / "report" / "report.html").read_text()
    assert page.count("Too few respondents to compare groups") == 1
    assert "Too few respondents per group" not in page
