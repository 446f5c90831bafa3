"""The ISSP persona benchmark (and any survey ``socbench data import`` wrote) as a Task: a unit is a
domain; each respondent is asked each question in their own persona, scored against their real answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import ClassVar, cast

from socbench import verbalized
from socbench.config import RunConfig
from socbench.data import build_items, load_domain
from socbench.data.layout import dataset_root, sample_dir
from socbench.data.loaders import unmapped_line
from socbench.data.variables import read_variables
from socbench.data_use import check_data_use
from socbench.domains import get_domain, select_domains, study_name
from socbench.errors import ConfigError
from socbench.extract import extract
from socbench.log.summary import summary_row
from socbench.log.write import write_scored_domain
from socbench.manifest import DomainSpec
from socbench.multi_select import extract_with_sets, set_prompts, split_items, with_set_scores
from socbench.outcomes import Artifact, RunReport, UnitReport
from socbench.progress import domain_line, run_table
from socbench.prompts import build_domain_prompts
from socbench.prompts.persona import prompt_settings
from socbench.report.circular import write_run_circular_table
from socbench.report.html import write_report
from socbench.report.leaderboard import leaderboard_rows
from socbench.report.markdown import domain_markdown, write_run_summary
from socbench.report.output import model_dir
from socbench.score_stage import score_expanded
from socbench.task import Prompts, Unit, UnitResult
from socbench.types import Answers, DomainData, DomainResult, Extraction, Item, PromptRequest, ScoredDomain


@dataclass(frozen=True)
class IsspSamples:
    """A domain's respondents and questions, and each (respondent, question) with its options."""

    data: DomainData
    items: tuple[Item, ...]


@dataclass(frozen=True)
class IsspTask:
    config: RunConfig
    name: ClassVar[str] = "issp"

    def units(self) -> list[Unit]:
        c = self.config
        return [Unit(d.id, d.name, f"domain {d.id} {d.name}")
                for d in select_domains(c.domain_id, c.start_domain_id, c.dataset_dir)]

    def folder(self) -> Path:
        return model_dir(self.config.output_dir, self.config.run_name)

    def unit(self, unit_id: int) -> Unit:
        domain = get_domain(unit_id, self.config.dataset_dir)
        return Unit(domain.id, domain.name, f"domain {domain.id} {domain.name}")

    def check(self) -> list[str]:
        """The sample size exists, the prompts may go where the engine is (a remote host's acknowledgement
        is the note returned), ``--export_wide`` has formats and the import's variables."""
        c = self.config
        root = dataset_root(c.dataset_dir)
        sample_dir(root, c.dataset_size)
        domains = [get_domain(unit.id, c.dataset_dir) for unit in self.units()]
        acknowledged = self.data_use(domains)
        if c.export_wide and not c.export:
            raise ConfigError("--export_wide: name the formats with --export (e.g. --export sav)")
        for domain in domains if c.export_wide else ():
            read_variables(root, domain.slug)
        return [acknowledged] if acknowledged else []

    def data_use(self, domains: list[DomainSpec]) -> str | None:
        """The licence check of ``socbench.data_use`` for this run's engine and data."""
        c = self.config
        return check_data_use(c.engine_settings(), c.dataset_dir, domains, c.allow_remote_data)

    def load(self, unit: Unit) -> DomainData:
        c = self.config
        domain = get_domain(unit.id, c.dataset_dir)
        self.data_use([domain])  # on a worker too: a licensed study's prompts stay where they may go
        return load_domain(c.dataset_dir, domain, c.dataset_size, c.interview_count, c.interview_sample)

    def notes(self, data: DomainData) -> list[str]:
        return [line] if (line := unmapped_line(data)) else []

    def special_options(self, data: DomainData) -> IsspSamples:
        return IsspSamples(data, tuple(build_items(data)))

    def prompts(self, samples: IsspSamples) -> Prompts:
        """Each question's requests; a multi-select set's last, one per respondent (its plan: who answers)."""
        single, sets = split_items(samples.items, samples.data.questions)
        asked, plan = set_prompts(samples.data, sets, prompt_settings(self.config), self.config.samples)
        return Prompts((*build_domain_prompts(samples.data, single, self.config), *asked), plan)

    def extract(self, prompts: Prompts, answers: Answers) -> tuple[dict[str, Extraction], dict[str, int]]:
        """What each answer says, and what asking cost (``Answers.usage``: the domain's line in the
        summary)."""
        requests = cast("tuple[PromptRequest, ...]", prompts.requests)  # ISSP asks only prompts
        c = self.config
        read = partial(verbalized.extraction, how=c.verbalized_answer, seed=c.seed) \
            if c.mode == "verbalized" else extract
        return extract_with_sets(requests, answers.results, prompts.plan or {}, read), answers.usage

    def score(self, samples: IsspSamples, plan: object,
              extracted: tuple[dict[str, Extraction], dict[str, int]]) -> ScoredDomain:
        extractions, usage = extracted
        scored = with_set_scores(score_expanded(samples.data, samples.items, extractions, self.config),
                                 samples.data.questions)
        return replace(scored, result=replace(scored.result, usage=usage))

    def result(self, unit: Unit, scored: ScoredDomain, incomplete: str | None) -> DomainResult:
        return scored.result

    def record(self, result: DomainResult) -> UnitResult:
        """The domain's numbers (its record beside holds the rest)."""
        numbers = {k: v for k, v in result.metrics.items() if isinstance(v, int | float)}
        return UnitResult(result.domain_id, result.domain_name, numbers, result.incomplete_reason,
                          {"baselines": result.baselines, "scoreable_items": result.scoreable_items})

    def report(self, scored: ScoredDomain, seconds: float) -> UnitReport:
        result = scored.result
        paths = write_scored_domain(self.config.output_dir, scored, self.config.expansion)
        markdown = Artifact(f"issp-report-domain-{result.domain_id}",
                            f"{study_name(self.config.dataset_dir)} {result.domain_name}: {result.model}",
                            markdown=domain_markdown(result))
        return UnitReport(domain_line(summary_row(result)), (markdown,), tuple(str(p) for p in paths))

    def finish(self, results: Sequence[DomainResult], failed: dict[int, str],
               export_failed: Sequence[str] = ()) -> RunReport:
        """``summary.json``/``.md`` over the domains run (and the ``--export`` formats that failed), the
        circular table, and the report (leaderboard, plots, HTML) over every run under ``output_dir``."""
        c = self.config
        data = c.data_record()
        summary = write_run_summary(c.output_dir, c.run_name, results, failed, data, export_failed)
        board = write_report(c.output_dir)
        study = data["study"]
        artifacts = [Artifact("issp-summary", f"{study} summary: {c.run_name}", table=summary.rows),
                     Artifact("issp-leaderboard", f"Leaderboard of every run under {c.output_dir} "
                              f"({board.html})", table=leaderboard_rows(board.leaderboard, per_domain=False))]
        if c.circular is not None and results:
            markdown, _ = write_run_circular_table(c.output_dir, c.run_name, results, c.circular, c.mode)
            artifacts.append(Artifact("issp-circular-summary", f"{study} circular evaluation: {c.run_name}",
                                      markdown=markdown.read_text(encoding="utf-8")))
        return RunReport("\n".join(run_table(summary.rows)) if summary.rows else "",
                         {"summary": str(summary.path), "report": str(board.html)}, tuple(artifacts))
