"""The cost of a run before (``--dry_run``) and after (``usage`` in the results): the dry run's request
count is what the server then receives, and the usage recorded is what the server reported.

Against the project's fake server (it reports ``usage`` per reply and counts requests and tokens), in this
process and through the CLI; and once against vLLM's own OpenAI server (its ``/tokenize`` and usage)."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest

from socbench import pipeline
from socbench.cli import main
from socbench.config import make_config
from socbench.cost import dry_run
from socbench.engines.session import close_engines, get_engine
from socbench.engines.usage import UsageMeter, total_usage, usage_text
from socbench.studies import task_for
from support import FakeOpenAIServer
from support.waiting import wait_for

TOTAL = re.compile(r"^\| total +\| ([\d,]+) +\| ([\d,]+) +\| ([\d,]+) +\| ([\d,]+) +\| ([\d,]+) +\|", re.M)


def totals(printed: str) -> dict[str, int]:
    """The dry run's total row: requests, cached, to send, prompt tokens, most completion tokens."""
    found = TOTAL.search(printed)
    assert found is not None, printed
    names = ("requests", "cached", "sent", "prompt_tokens", "completion_tokens")
    return dict(zip(names, (int(n.replace(",", "")) for n in found.groups()), strict=True))


def test_meter_reads_usage_as_servers_send_it() -> None:
    meter = UsageMeter()
    meter.add_reply({"prompt_tokens": 10, "completion_tokens": 7, "completion_tokens_details":
                     {"reasoning_tokens": 5}})
    meter.add_reply({"prompt_tokens": 3, "completion_tokens": 0, "completion_tokens_details": None})
    for bad in (None, "x", {"prompt_tokens": "many"}):
        meter.add_reply(bad)
    assert meter.total() == {"prompt_tokens": 13, "completion_tokens": 7, "reasoning_tokens": 5}
    both = total_usage([{"requests": 2, "from_cache": 1, **meter.total()}, {"requests": 1, "from_cache": 0,
                        "prompt_tokens": 1, "completion_tokens": 1, "reasoning_tokens": 0}])
    assert both == {"requests": 3, "from_cache": 1, "prompt_tokens": 14, "completion_tokens": 8,
                    "reasoning_tokens": 5}
    assert "tokens not counted" in usage_text(total_usage([{"requests": 2, "from_cache": 0}, both]))
    assert "(5 of them reasoning)" in usage_text(both)


def test_dry_run_counts_what_the_engine_then_sends(tmp_path: Path, monkeypatch) -> None:
    """In this process: the dry run's requests and prompt tokens per unit equal what the server gets and
    reports when the same requests are answered; then everything is cached and the dry run says so."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer(reasoning_tokens=2) as server:
        config = make_config(api_type="config", api_base=server.url, model="fake-model", domain_id=3,
                             interview_count=5, output_dir=tmp_path, dry_run=True, price_prompt=2,
                             price_completion=8)
        before = dry_run(config).printed
        planned = totals(before)
        assert server.stats().requests == 0  # /tokenize only
        assert re.search(r"\| max cost +\|", before) and "counted by the server's /tokenize" in before
        settings = config.engine_settings()
        study = task_for(config)
        try:
            used = [pipeline.answer(get_engine(settings), found.prompts.requests).usage
                    for found in pipeline.plans(study).values()]
            seen = server.stats()
            again = totals(dry_run(config).printed)
        finally:
            close_engines()
    assert planned["cached"] == 0 and planned["sent"] == planned["requests"] == seen.requests
    assert total_usage(used) == {"requests": seen.requests, "from_cache": 0, **seen.usage}
    assert seen.usage["prompt_tokens"] == planned["prompt_tokens"]
    assert 0 < seen.usage["completion_tokens"] <= planned["completion_tokens"]
    cost = (planned["prompt_tokens"] * 2 + planned["completion_tokens"] * 8) / 1e6
    assert f"| {cost:,.4f}" in next(line for line in before.splitlines() if line.startswith("| total"))
    assert again | {"cached": 0} == {**planned, "sent": 0, "prompt_tokens": 0, "completion_tokens": 0}
    assert again["cached"] == planned["requests"]


def test_estimate_where_the_server_has_no_tokenizer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer(tokenize=False) as server:
        printed = dry_run(make_config(api_type="config", api_base=server.url, model="fake-model", domain_id=3,
                                      interview_count=2, output_dir=tmp_path, dry_run=True)).printed
        assert server.stats().requests == 0 and server.stats().by_path["/tokenize"] == 1  # asked once
    assert "an estimate (4 characters a token" in printed and totals(printed)["prompt_tokens"] > 0
    assert not (tmp_path / ".cache").exists()  # a dry run writes nothing


@pytest.mark.slow  # builds the tiny model
def test_in_process_backends_count_with_the_models_tokenizer(tiny_model: Path, tmp_path: Path) -> None:
    """hf: each prompt counted as the chat template and the tokenizer make it, answer prefix included."""
    from transformers import AutoTokenizer

    config = make_config(api_type="hf", model=str(tiny_model), domain_id=3, interview_count=3,
                         output_dir=tmp_path, dry_run=True)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    requests = pipeline.distinct(pipeline.all_requests(pipeline.plans(task_for(config))))["generate"]

    def tokens(request) -> int:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return len(tok(text + request.answer_prefix, add_special_tokens=False)["input_ids"])

    expected = sum(map(tokens, requests))
    printed = dry_run(config).printed
    assert totals(printed)["prompt_tokens"] == expected and "the model's tokenizer" in printed
    assert totals(printed)["completion_tokens"] == 64 * len(requests)


@pytest.mark.parametrize("args, needle", [
    (["--dry_run", "--price_prompt", "-1"], "--price_prompt '-1': Input should be greater than or equal"),
    (["--price_completion", "3"], "--price_completion applies only with --dry_run"),
])
@pytest.mark.parametrize("command", ["issp", "mcq"])
def test_bad_cost_flags_are_one_line(command: str, args: list[str], needle: str, capsys) -> None:
    assert main([command, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


# ------------------------------------------------------------------------ through the CLI (slow)


@pytest.mark.slow
def test_cli_dry_run_then_run_issp_and_mcq(api_url, tmp_path: Path, monkeypatch, capsys) -> None:
    """``socbench issp/mcq --dry_run``, then the run: the server receives the dry run's requests (and the
    ``--structured`` check it announces), and the results carry exactly the usage the server reported."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "out"
    with FakeOpenAIServer(reasoning_tokens=3) as server:
        base = ["--api_type", "config", "--api_base", server.url, "--model", "fake-model",
                "--output_dir", str(out)]
        issp = ["issp", *base, "--domain_id", "all", "--start_domain_id", "9", "--interview_count", "3"]
        assert main([*issp, "--dry_run"]) == 0
        printed = capsys.readouterr().out
        assert "1 test request before it starts" in printed and not out.exists()
        assert main(issp) == 0
        seen = server.stats()
        assert seen.requests == totals(printed)["sent"] + 1
        probe = seen.usage - _usage_of_units(out / "fake-model" / "summary.json")
        assert probe["prompt_tokens"] < 100 and probe["completion_tokens"] <= 16  # the check's one request
        md = (out / "fake-model" / "summary.md").read_text()
        assert f"{seen.requests - 1} requests sent, 0 answers from the engine cache" in md

        server.reset_stats()  # the same run again: read from the last run, nothing sent
        assert main(issp) == 0 and server.stats().requests == 0
        (out / "fake-model" / "last_run.json").unlink()  # run for real: every answer from the cache
        assert main(issp) == 0
        summary = json.loads((out / "fake-model" / "summary.json").read_text())
        assert server.stats().requests == 0 and summary["totals"]["usage"]["prompt_tokens"] == 0
        assert summary["totals"]["usage"]["from_cache"] == totals(printed)["requests"]
        capsys.readouterr()

        mcq = ["mcq", *base, "--limit", "3", "--k_shot", "0,1"]
        assert main([*mcq, "--dry_run"]) == 0
        planned = totals(capsys.readouterr().out)
        server.reset_stats()
        assert main(mcq) == 0
        seen = server.stats()
    results = json.loads((out / "fake-model" / "mcq" / "arc-easy_results.json").read_text())
    assert seen.requests == planned["sent"] and results["usage"]["requests"] == planned["requests"]
    assert {k: results["usage"][k] for k in seen.usage} == dict(seen.usage)
    assert seen.usage["completion_tokens"] <= planned["completion_tokens"]
    html = (out / "report" / "report.html").read_text()
    assert "fake-model: " in html and "answers from the engine cache" in html


def _usage_of_units(summary: Path):
    from collections import Counter

    usage = json.loads(summary.read_text())["totals"]["usage"]
    return Counter({k: usage[k] for k in ("prompt_tokens", "completion_tokens", "reasoning_tokens")})


@pytest.mark.slow
def test_vllm_server_tokenize_and_usage(tiny_server, tmp_path: Path) -> None:
    """vLLM's own server: the dry run's requests are those the server then finishes, its prompt tokens (by
    /tokenize) exactly what the server reports in usage and counts itself (its Prometheus counters), and
    its completion tokens stay within the bound. Structured answers: a random model's empty reply would be
    asked again (and charged twice, as recorded)."""
    config = make_config(api_type="config", api_base=tiny_server.url, model=tiny_server.name, domain_id=3,
                         interview_count=3, max_tokens=12, output_dir=tmp_path, dry_run=True)
    planned = totals(dry_run(config).printed)
    before = _metrics(tiny_server.url)
    settings = config.engine_settings()
    try:
        usage = total_usage(pipeline.answer(get_engine(settings), found.prompts.requests).usage
                            for found in pipeline.plans(task_for(config)).values())
    finally:
        close_engines()
    assert usage["requests"] == planned["sent"] > 0
    assert usage["prompt_tokens"] == planned["prompt_tokens"]
    assert 0 < usage["completion_tokens"] <= planned["completion_tokens"]

    def counted() -> dict[str, float]:
        now = _metrics(tiny_server.url)
        return {key: now[key] - before[key] for key in before}

    expected = {"request_success": usage["requests"], "prompt_tokens": usage["prompt_tokens"],
                "generation_tokens": usage["completion_tokens"]}
    assert wait_for(lambda: counted() == expected, 30), counted()


def _metrics(url: str) -> dict[str, float]:
    """vLLM's own counters (Prometheus ``/metrics``), summed over their labels."""
    text = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
    found = {}
    for name in ("request_success", "prompt_tokens", "generation_tokens"):
        values = re.findall(rf"^vllm:{name}_total(?:{{[^}}]*}})? (\S+)$", text, re.M)
        found[name] = sum(map(float, values))
    return found
