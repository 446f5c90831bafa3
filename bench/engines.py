"""Throughput per backend and mode on the demo data, and the vLLM path against a bare LLM.generate.

Prompts are the demo data's real ISSP prompts (all ten domains). Backends: ``vllm`` and ``hf``
in-process on the model (default: the embedded SmolLM2), and ``config`` (the OpenAI-compatible
client) against the project's test server. No cache: each figure is the backend alone.
``--quick``: 2 prompts per mode (the warm-up's), 16 tokens per answer, on the tiny random model (unless
``--model``).
Usage: ``python -m bench.engines [--quick] [--model M] [--backends vllm,hf,config] [--n 400]`` (hf: a
tenth of ``--n``, at least 20 and at most ``--n``).
"""

from __future__ import annotations

from typing import Any

from bench import common
from bench.pipeline_vs_bare import bare_generate, bare_score
from socbench.studies import task_for

MODES = ("generate", "logprobs")


def demo_prompts(mode: str, n: int, **config: Any) -> list:
    """The first ``n`` demo prompts over all domains (respondent-grouped, as the flow sends them; ``config``:
    other run settings); the domains' plans are built in order until there are ``n`` (all ten take
    seconds: a quick pass needs one)."""
    from socbench import pipeline
    from socbench.config import make_config

    study, prompts = task_for(make_config(mode=mode, **config)), []
    for unit in study.units():
        prompts += pipeline.plan(study, unit).prompts.requests
        if len(prompts) >= n:
            break
    return prompts[:n]


def backend(name: str, model: str, server_url: str | None):
    from socbench.engines.registry import create_engine

    settings = {"api_base": server_url, "concurrent_requests": 64} if name == "config" else {}
    return create_engine(name, model, settings=settings)


def measure(name: str, model: str, n: int, server_url: str | None, **config: Any) -> list[dict]:
    rows = []
    engine = backend(name, model, server_url)
    try:
        for mode in MODES:
            prompts = demo_prompts(mode, n if name != "hf" else min(n, max(20, n // 10)), **config)
            method = engine.option_logprobs if mode == "logprobs" else engine.generate
            method(prompts[:8])  # start-up and warm-up are not part of the figure
            seconds, results, load = common.timed(method, prompts)
            failed = sum(1 for r in results if r.error)
            row = {"backend": name, "mode": mode, "prompts": len(prompts), "seconds": round(seconds, 2),
                   "prompts_per_s": round(len(prompts) / seconds, 1), "failed": failed, "load": load}
            if name == "vllm":
                bare = bare_score if mode == "logprobs" else bare_generate
                engine._engine().reset_prefix_cache()
                bare_s, _, _ = common.timed(bare, engine._engine(), engine.tokenizer, prompts)
                row.update(bare_prompts_per_s=round(len(prompts) / bare_s, 1),
                           ratio_to_bare=round(bare_s / seconds, 3))
            print(row, flush=True)
            rows.append(row)
    finally:
        engine.close()
    return rows


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--model", default=None, help="default: the embedded SmolLM2")
    p.add_argument("--backends", default="vllm,hf,config")
    p.add_argument("--n", type=int, default=400, help="prompts per mode (hf: a tenth)")
    args = p.parse_args()
    common.setup_env()
    n = 2 if args.quick else args.n  # quick: transformers generates ~1 prompt/s even on the tiny model
    config = {"max_tokens": 16} if args.quick else {}
    model = args.model or (str(common.tiny_model()) if args.quick else "smollm2-135m-instruct")
    from tests.support.fake_openai import FakeOpenAIServer

    rows: list[dict] = []
    with FakeOpenAIServer(latency_ms=20) as server:
        for name in args.backends.split(","):
            rows += measure(name.strip(), model, n, f"{server.url}/v1", **config)
    figures = {f"{r['backend']}_{r['mode']}_prompts_per_s": r["prompts_per_s"] for r in rows}
    ratios = [r["ratio_to_bare"] for r in rows if "ratio_to_bare" in r]
    ratio = min(ratios) if ratios else float("nan")
    common.report("engines", figures, "vLLM path / bare LLM.generate (worst mode)", ratio,
                  "close to 1 (issue 8 asks >= 0.9 for the whole pipeline)", ratio >= 0.9 if ratios else None,
                  {"rows": rows, "model": model})


if __name__ == "__main__":
    main()
