"""CP vs MCP (Robinson et al. 2022) as a Task: a unit is a multiple-choice dataset (ARC, MMLU, a
JSONL file), asked by cloze log-likelihood and by letter, k-shot, optionally in circular orders."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from socbench.circular import circular_notes
from socbench.log.write import mcq_files
from socbench.mcq.datasets import load_mcq
from socbench.mcq.mcq_config import McqConfig
from socbench.mcq.mcq_types import McqAnswers, McqData, McqPlan, McqScores
from socbench.mcq.prompts import build_plan, loglikelihood_requests, option_requests_of
from socbench.mcq.scoring import COLUMNS, chance_accuracy, reported_accuracies, score_mcq
from socbench.outcomes import Artifact, RunReport, UnitReport
from socbench.report.html import write_report
from socbench.report.mcq import write_mcq_files
from socbench.studies.generic import StudyTask
from socbench.task import Prompts, Request, Unit, UnitResult
from socbench.types import Answers

log = logging.getLogger("socbench")


def plan_requests(plan: McqPlan) -> tuple[Request, ...]:
    """Every request of a plan, each once: CP's log-likelihoods, then MCP's option log-probs."""
    return (*loglikelihood_requests(plan), *option_requests_of(plan))


def read_answers(plan: McqPlan, answers: Answers) -> McqAnswers:
    """The engine's answers (to ``plan_requests(plan)``) by request key, split by kind."""
    found = dict(zip((r.key for r in plan_requests(plan)), answers.results, strict=True))
    return McqAnswers(answers.results, answers.seconds, answers.identity, answers.cache, answers.usage,
                      loglikelihoods={r.key: found[r.key] for r in loglikelihood_requests(plan)},
                      options={r.key: found[r.key] for r in option_requests_of(plan)})


@dataclass(frozen=True)
class McqScored:
    """What ``report`` writes: the unit's data, plan, answers and scores, and its outcome."""

    data: McqData
    plan: McqPlan
    answers: McqAnswers
    scores: McqScores
    result: UnitResult  # metrics: "<column> <k>-shot" -> accuracy, as the table reports them; chance beside


@dataclass(frozen=True)
class McqTask(StudyTask):
    """A unit per run (its dataset) in ``<model>/mcq/``; no checks beyond the dataset itself, which the
    preflight reads (public data: it may go anywhere); every item shows its own options to everyone."""

    config: McqConfig
    name: ClassVar[str] = "mcq"

    def units(self) -> list[Unit]:
        return [Unit(1, self.config.dataset, f"{self.config.dataset} ({self.config.engine.model})")]

    def load(self, unit: Unit) -> McqData:
        return load_mcq(self.config.dataset, limit=self.config.limit, fewshot=max(self.config.k_shot) > 0)

    def prompts(self, samples: McqData) -> Prompts:
        c = self.config
        plan = build_plan(samples, c.method, c.k_shot, c.tolerance, c.seed, c.expansion)
        for note in circular_notes(plan.methods) if plan.circular_settings is not None else ():
            log.info(note)
        return Prompts(plan_requests(plan), plan)

    def extract(self, prompts: Prompts, answers: Answers) -> McqAnswers:
        return read_answers(prompts.plan, answers)

    def score(self, samples: McqData, plan: McqPlan, extracted: McqAnswers) -> McqScored:
        scores, reason = score_mcq(plan, extracted), extracted.incomplete_reason
        table = reported_accuracies(scores.predictions, reason)
        accuracy = {f"{COLUMNS[m]} {k}-shot": acc for k, row in table.items() for m, acc in row.items()}
        chance = chance_accuracy([len(item.choices) for item in samples.items])
        return McqScored(samples, plan, extracted, scores,
                         UnitResult(1, samples.dataset, accuracy, reason, {"chance_accuracy": chance}))

    def result(self, unit: Unit, scored: McqScored, incomplete: str | None) -> UnitResult:
        return scored.result

    def report(self, scored: McqScored, seconds: float) -> UnitReport:
        c, data = self.config, scored.data
        files = write_mcq_files(c.output_dir, c.engine.model, data, scored.plan, scored.answers,
                                scored.scores, wall_s=seconds, backend=c.backend_choice().record())
        artifacts = [Artifact(key, f"{what}: {data.dataset}, {c.engine.model}",
                              markdown=files[name].read_text(encoding="utf-8"))
                     for name, key, what in (("table", "mcq-table", "CP vs MCP"),
                                             ("circular_table", "mcq-circular", f"Circular ({c.circular})"))
                     if name in files]
        incomplete = scored.result.incomplete_reason
        line = f"{data.dataset}: {len(data.items)} items, " + (
            f"INCOMPLETE, not a result ({incomplete})" if incomplete else "every request answered")
        return UnitReport(line, tuple(artifacts), tuple(str(p) for p in files.values()))

    def finish(self, results: Sequence[UnitResult], failed: dict[int, str],
               export_failed: Sequence[str] = ()) -> RunReport:
        """The tables of the run's datasets for the terminal, and the report over every run beside it."""
        folder = self.folder()
        printed, paths = [], {}
        for result in results:
            files = {name: path for name, path in mcq_files(folder, result.unit).items()
                     if name != "circular_table" or self.config.circular is not None and path.is_file()}
            printed += [files[name].read_text(encoding="utf-8") for name in ("table", "circular_table")
                        if name in files]
            paths |= {name: str(path) for name, path in files.items() if name != "table"}
        board = write_report(self.config.output_dir)
        return RunReport("\n".join(printed).rstrip("\n"), {**paths, "report": str(board.html)})
