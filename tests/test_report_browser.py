"""``report.html`` in a real browser (Debian's chromium, headless, through chromium-driver), read as a
social scientist would.

Four runs are scored and written by the real code: a good model, a weak one, an exact copy of
the weak one under another name (a tie), a model stuck on "1", and a control run of the good
model (its own folder, its model not rewritten). The page rendered by chromium must hold the
numbers of the JSON files in its tables, name baselines and domains in words, mark negative
margins, give no CI from fewer than 10 respondents, rank tied runs alike, show the stuck
model's answers at once, and have no empty plot; a screenshot is written for a person to look at.
Each domain section, unfolded as a reader would, opens with its lead sentence under its title.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import random
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pytest

from socbench.log.write import write_domain_files
from socbench.metrics.headline import lead_sentence
from socbench.report.html import write_report
from socbench.report.markdown import write_run_summary
from socbench.scoring import score_domain
from socbench.types import DomainData, Extraction, Item, Question, Respondent
from support.browser import browser, needs_browser
from support.records import read_detailed

pytestmark = [pytest.mark.slow, needs_browser]  # drives chromium
OPTS = (("1", "Agree"), ("2", "Neither"), ("3", "Disagree"), ("4", "Strongly disagree"))
DOMAINS = ((1, "Citizenship"), (8, "RoleofGovernment"))
COUNTRIES = ["DE"] * 20 + ["JP"] * 20 + ["FR"] * 4  # France: too few respondents for a CI (8 < 10)
GOOD, WEAK, TWIN, STUCK = "org/Good-1.7B", "org/Weak-135M", "org/Twin-135M", "org/Stuck-360M"
CONTROL = "org_Good-1.7B-no_persona"


def make_run(out: Path, model: str, p_right: float, seed: int, run: str = "", stuck: bool = False) -> None:
    rng, truth = random.Random(seed), random.Random(99)  # the same people for every run
    results = []
    for domain_id, name in DOMAINS:
        people, items, extractions = [], [], {}
        for i, country in enumerate(COUNTRIES):
            pid = domain_id * 1000 + i
            people.append(Respondent(pid, country, country, {
                "Sex of Respondent": ("Male", "Female")[i % 2], "Age of respondent": f"{18 + i} years"}, {}))
            for qid, weights in (("V1", (5, 2, 2, 1)), ("V2", (1, 2, 3, 4)), ("V3", (2, 5, 2, 1))):
                item = Item(pid, qid, country, OPTS, truth.choices("1234", weights)[0], False)
                items.append(item)
                pred = "1" if stuck else item.true_code if rng.random() < p_right else str(rng.randint(1, 4))
                extractions[item.item_id] = Extraction(pred)
        questions = tuple(Question(q, f"Question {q} of domain {domain_id}?", dict(OPTS))
                          for q in ("V1", "V2", "V3"))
        data = DomainData(domain_id, name, questions, tuple(people), {}, "synthetic")
        scored = score_domain(data, items, extractions, model=model, run=run)
        write_domain_files(out, scored.result, scored.items)
        results.append(scored.result)
    write_run_summary(out, run or model, results)


class Tables(HTMLParser):
    """Every table of a page: its header cells and rows of (text, class) cells; and <img> sources."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.images: list[str] = []
        self._cell: list[str] | None = None
        self._class, self._in_head = "", False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = dict(attrs)
        if tag == "table":
            self.tables.append({"head": [], "rows": []})
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self.tables and not self._in_head:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self._cell, self._class = [], attrs.get("class") or ""
        elif tag == "img":
            self.images.append(attrs["src"])

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "thead":
            self._in_head = False
        elif tag in ("td", "th") and self._cell is not None:
            text = "".join(self._cell).strip()
            if self._in_head:
                self.tables[-1]["head"].append(text)
            else:
                self.tables[-1]["rows"][-1].append((text, self._class))
            self._cell = None


def table_with(tables: list[dict], *head: str) -> list[list[tuple[str, str]]]:
    """The rows of the first table whose header starts with ``head``."""
    found = next(t for t in tables if tuple(t["head"][:len(head)]) == head)
    return [row for row in found["rows"] if row]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("results")
    make_run(out, GOOD, 0.7, seed=1)
    make_run(out, WEAK, 0.3, seed=2)
    make_run(out, TWIN, 0.3, seed=2)
    make_run(out, STUCK, 0.0, seed=3, stuck=True)
    make_run(out, GOOD, 0.5, seed=4, run=CONTROL)
    # a run with a file as `socbench export` leaves it
    (out / CONTROL / "export").mkdir()
    (out / CONTROL / "export" / "answers_long.csv").write_text("domain,person_id\n")
    site = out / "site"
    paths = write_report(out, site)
    with browser(tmp_path_factory.mktemp("chromium"), height=3000) as chromium:
        chromium.open(paths.html.as_uri(), "org_Stuck-360M", "Citizenship (1)")
        dom, shot = chromium.html(), chromium.screenshot(site / "report.png")
        sections = chromium.driver.execute_script(  # every run's domains, as a reader sees them unfolded
            "document.querySelectorAll('details').forEach(d => d.open = true);"
            "return [...document.querySelectorAll('section.domain')].map(s => s.innerText);")
        links = chromium.driver.execute_script(  # as the browser resolves them
            "return [...document.querySelectorAll('#exports ~ ul a')].map(a => [a.innerText, a.href]);")
    parser = Tables()
    parser.feed(dom)
    with (site / "leaderboard.csv").open() as handle:
        csv_rows = {(r["run"], r["domain"]): r for r in csv.DictReader(handle)}
    return {"out": out, "dom": dom, "tables": parser.tables, "images": parser.images, "shot": shot,
            "csv": csv_rows, "paths": paths, "sections": sections, "links": links}


def details(out: Path, run: str) -> dict[str, dict]:
    return {p.name.removesuffix("_detailed.json"): read_detailed(p)
            for p in sorted((out / run).glob("*_detailed.json"))}


def visible_text(dom: str) -> str:
    return dom.split("</style>", 1)[1]


def test_leaderboard_holds_the_json_numbers_and_ties_share_a_rank(page: dict) -> None:
    rows = {cells[1][0]: [text for text, _ in cells] for cells in table_with(page["tables"], "rank", "run")}
    assert set(rows) == {"org_Good-1.7B", "org_Weak-135M", "org_Twin-135M", "org_Stuck-360M", CONTROL}
    for run, cells in rows.items():
        by_domain = details(page["out"], run)
        accuracy = np.mean([np.mean([d["correct"] for d in f["details"]]) for f in by_domain.values()])
        line = page["csv"][(run, "ALL")]
        assert float(line["accuracy"]) == pytest.approx(accuracy, abs=1e-6)
        assert cells[7] == f"{accuracy:.3f} [{float(line['accuracy_ci_low']):.3f}, " \
                           f"{float(line['accuracy_ci_high']):.3f}]"
    weak, twin = rows["org_Weak-135M"][0], rows["org_Twin-135M"][0]
    assert weak == twin and weak.endswith("(tied)")
    assert rows["org_Good-1.7B"][0] == "1"
    assert rows[CONTROL][2] == GOOD and rows[CONTROL][3] == "no persona (control)"  # model not rewritten
    summary = json.loads((page["out"] / CONTROL / "summary.json").read_text())
    assert summary["model"] == GOOD and summary["run"] == CONTROL


def test_baselines_and_domains_in_words_and_negative_margins_marked(page: dict) -> None:
    text = visible_text(page["dom"])
    assert "majority_country_question" not in text and "RoleofGovernment" not in text
    rows = table_with(page["tables"], "domain", "run", "respondents")
    stuck = [r for r in rows if r[1][0] == "org_Stuck-360M"]
    assert {r[0][0] for r in rows} == {"Citizenship (1)", "Role of Government (8)"}
    for cells in stuck:
        stored = details(page["out"], "org_Stuck-360M")[cells[0][0].split(" (")[0].replace(" ", "")]
        best = max(stored["baselines"], key=lambda k: stored["baselines"][k])
        assert cells[5][0] in ("Majority answer to the question (all other respondents)",
                               "Majority answer in the respondent's country",
                               "Uniform guess among the offered options")
        assert cells[6][0] == f"{stored['baselines'][best]:.3f}"
        margin = np.mean([d["correct"] for d in stored["details"]]) - stored["baselines"][best]
        assert margin < 0 and cells[7] == (f"{margin:+.3f} (below baseline)", "neg")


def test_distribution_and_alignment_table_holds_the_json_scores_beside_their_floors(page: dict) -> None:
    rows = table_with(page["tables"], "domain", "run", "level")
    assert len(rows) == 5 * 2
    for cells in rows:
        stored = details(page["out"], cells[1][0])[cells[0][0].split(" (")[0].replace(" ", "")]
        dist, aligned = stored["distribution"]["country_question"], stored["alignment"]["question"]
        assert [c for c, _ in cells[3:7]] == [f"{dist[k]:.3f}" for k in
                                              ("wasserstein", "uniform_wasserstein", "js", "uniform_js")]
        assert [c for c, _ in cells[7:10]] == [f"{aligned[k]:.3f}" for k in
                                               ("modal_agreement", "uniform_modal_agreement", "kendall_tau")]
        assert cells[8][0] == "0.250"  # uniform answers: 1/k with four options


def test_countries_and_persona_groups_have_n_cis_and_baselines(page: dict) -> None:
    stored = details(page["out"], "org_Good-1.7B")
    items = [(name, d) for name, f in stored.items() for d in f["details"]]
    rows = {cells[0][0]: cells for cells in table_with(page["tables"], "country", "respondents")}
    for code, label in (("DE", "Germany (DE)"), ("FR", "France (FR)")):
        mine = [d for _, d in items if d["country_code"] == code]
        cells = rows[label]
        assert cells[1][0] == str(len({(n, d["person_id"]) for n, d in items if d["country_code"] == code}))
        assert cells[3][0].startswith(f"{np.mean([d['correct'] for d in mine]):.3f} ")
    assert rows["France (FR)"][3][0].endswith("n/a (n < 10)") and "few" in page["dom"]
    assert rows["Germany (DE)"][3][0].endswith("]")  # 40 respondents: a CI
    groups = {(c[0][0], c[1][0]): c for c in table_with(page["tables"], "attribute", "group")}
    female = [d for name, f in stored.items() for d in f["details"]
              if f["persona_groups"][str(d["person_id"])]["sex"] == "female"]
    assert groups[("sex", "female")][4][0].startswith(f"{np.mean([d['correct'] for d in female]):.3f} [")
    assert groups[("sex", "female")][5][0].startswith("Majority answer")  # a per-group baseline
    heat = next(t for t in page["tables"] if t["head"][:1] == ["country"] and "Citizenship" in t["head"])
    assert any("n=20" in cell for row in heat["rows"] for cell, _ in row)


def test_per_question_view_shows_a_model_stuck_on_one(page: dict) -> None:
    stuck = details(page["out"], "org_Stuck-360M")["Citizenship"]["questions"]
    rows = [row for t in page["tables"] if t["head"][:2] == ["question", "respondents"] for row in t["rows"]]
    assert len(rows) == 5 * 2 * 3  # every run, domain and question
    assert sum(row[4][0] == "1. Agree (100%)" for row in rows) == 2 * 3  # the stuck model's, at once
    dists = [t for t in page["tables"] if t["head"][:1] == ["option"]]
    shares = [[cell for cell, _ in row] for t in dists for row in t["rows"] if row]
    human = stuck["V1"]["human"]
    expected = [f"{code}. {label}" for code, label in OPTS]
    assert any([r[0] for r in shares[i:i + 4]] == expected
               and [r[1] for r in shares[i:i + 4]] == [f"{100 * human[c]:.1f}%" for c, _ in OPTS]
               and [r[2] for r in shares[i:i + 4]] == ["100.0%", "0.0%", "0.0%", "0.0%"]
               for i in range(len(shares) - 3))


def test_page_renders_with_no_empty_plot(page: dict) -> None:
    from matplotlib.image import imread

    assert page["images"] and all(src.startswith("data:image/png;base64,") for src in page["images"])
    for src in page["images"]:
        pixels = imread(io.BytesIO(base64.b64decode(src.split(",", 1)[1])), format="png")[..., :3]
        drawn = (pixels < 0.9).any(axis=-1).mean()  # share of non-white pixels
        assert drawn > 0.03 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 10
    shot = imread(page["shot"])[..., :3]
    assert shot.shape[:2] == (3000, 1400) and (shot < 0.9).any(axis=-1).mean() > 0.02
    assert not page["paths"].notes or all("no scale plot" not in n for n in page["paths"].notes)


def test_each_domain_section_opens_with_its_lead_line(page: dict) -> None:
    """The first line a reader sees under each domain's title is the answer, from the files' numbers."""
    runs = ("org_Good-1.7B", "org_Weak-135M", "org_Twin-135M", "org_Stuck-360M", CONTROL)
    lines = {text.splitlines()[0]: [line for line in text.splitlines()[1:] if line.strip()]
             for text in page["sections"]}
    assert len(page["sections"]) == len(runs) * len(DOMAINS)
    for run in runs:
        for domain, stored in details(page["out"], run).items():
            row = page["csv"][(run, domain)]
            demographic = (stored.get("yardsticks") or {}).get("demographic_model", {}).get("accuracy")
            lead = lead_sentence(np.mean([d["correct"] for d in stored["details"]]),
                                 (float(row["accuracy_ci_low"]), float(row["accuracy_ci_high"])),
                                 np.nan if demographic is None else demographic,
                                 max(stored["baselines"][k] for k in ("majority_question",
                                                                       "majority_country_question")))
            title = f"{'Citizenship' if domain == 'Citizenship' else 'Role of Government'} — {run}"
            assert lines[title][0] == lead
    persona = visible_text(page["dom"]).split("Did the persona help?", 1)[1]
    assert f"org_Good-1.7B against its run without persona ({CONTROL}): " in persona


def test_the_report_links_each_run_s_exported_answers(page: dict) -> None:
    """A run with ``socbench export`` files gets a link to each, and each link opens that file."""
    (name, href), = page["links"]
    assert name == "answers_long.csv"
    assert Path(unquote(urlparse(href).path)) == page["out"] / CONTROL / "export" / "answers_long.csv"
