"""Bare engine throughput on SmolLM2: start-up, structured generate and option log-probs.

No cache, no Prefect: what the in-process backends themselves cost on this host.
Usage: ``python bench/engines_bare.py [--n 200] [--backends vllm,hf]``; prints JSON and writes
``bench/out/engines_bare.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out" / "engines_bare.json"
QUESTION = ("On the whole, do you think it should or should not be the government's responsibility to "
            "provide a job for everyone who wants one?")
OPTIONS = {"1": "Definitely should be", "2": "Probably should be", "3": "Probably should not be",
           "4": "Definitely should not be", "-4": "Can't choose"}


def personas(n: int, seed: int = 0) -> list:
    """Short ISSP-like persona prompts (about 150 tokens), distinct per respondent."""
    from socbench.types import Message, PromptRequest

    rng = random.Random(seed)
    countries = ["Norway", "Japan", "Chile", "Germany", "Taiwan", "South Africa", "Poland", "Mexico"]
    jobs = ["teacher", "nurse", "farmer", "engineer", "retired clerk", "student", "shop owner"]
    options = "\n".join(f"{code}: {label}" for code, label in OPTIONS.items())
    out = []
    for i in range(n):
        persona = (f"You are a {rng.randint(18, 85)}-year-old {rng.choice(['man', 'woman'])} from "
                   f"{rng.choice(countries)}, working as a {rng.choice(jobs)}, with "
                   f"{rng.choice(['primary', 'secondary', 'university'])} education, "
                   f"{rng.choice(['married', 'single', 'widowed', 'divorced'])}, "
                   f"{rng.choice(['religious', 'not religious'])}, living in a {rng.choice(['city', 'village'])}.")
        user = f"{QUESTION}\n{options}\nReply with JSON: {{\"answer\": \"<code>\"}}"
        messages = (Message("system", persona), Message("user", user))
        common = dict(item_id=str(i), messages=messages, offered_codes=tuple(OPTIONS))
        out.append((PromptRequest(**common, structured=True),
                    PromptRequest(**common, mode="logprobs", answer_prefix='{"answer": "')))
    return out


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def bench(backend: str, n: int) -> dict:
    from socbench.models import resolve_model

    model = resolve_model("smollm2-135m-instruct")
    pairs = personas(n)
    gen, scored = [p[0] for p in pairs], [p[1] for p in pairs]
    if backend == "vllm":
        from socbench.engines.settings import VllmSettings
        from socbench.engines.vllm import VllmEngine

        engine = VllmEngine(model, VllmSettings.for_host())
        import_s, _ = timed(lambda: __import__("vllm.entrypoints.llm"))
    else:
        from socbench.engines.hf import HfEngine
        from socbench.engines.settings import HfSettings

        engine = HfEngine(model, HfSettings.from_options({}))
        import_s, _ = timed(lambda: __import__("transformers.models.llama.modeling_llama"))
    try:
        start_s, _ = timed(engine.generate, gen[:1])  # start + one request
        gen_s, results = timed(engine.generate, gen)
        lp_s, lps = timed(engine.option_logprobs, scored)
    finally:
        close_s, _ = timed(engine.close)
    parsed = sum(1 for r in results if r.text and r.text.startswith('{"answer"'))
    return {"backend": backend, "dtype": engine.identity["dtype"], "n": n, "import_s": round(import_s, 2),
            "start_plus_first_s": round(start_s, 2), "engine_start_s": round(getattr(engine, "startup_s", 0) or 0, 2),
            "generate_prompts_per_s": round(n / gen_s, 1), "logprobs_prompts_per_s": round(n / lp_s, 1),
            "close_s": round(close_s, 2), "generate_json_ok": parsed,
            "scoring_methods": dict(getattr(engine, "scoring_methods", {})),
            "example": {"text": results[0].text, "logprobs": lps[0].option_logprobs}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--backends", default="vllm")
    args = parser.parse_args()
    rows = [bench(b.strip(), args.n) for b in args.backends.split(",")]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(rows, indent=2))
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
