"""Bare engine throughput on SmolLM2: start-up, structured generate and option log-probs.

No cache, no Prefect: what the in-process backends themselves cost on this host.
Usage: ``python -m bench.engines_bare [--quick] [--n 200] [--backends vllm,hf]``; prints JSON and writes
``engines_bare.json`` in the bench output folder (``--quick``: 4 prompts on the tiny random model).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import random
import sys
import time

from bench import common

QUESTION = ("On the whole, do you think it should or should not be the government's responsibility to "
            "provide a job for everyone who wants one?")
OPTIONS = {"1": "Definitely should be", "2": "Probably should be", "3": "Probably should not be",
           "4": "Definitely should not be", "5": "Can't choose"}  # codes 1-5: most ISSP questions
MULTI_TOKEN = ("1", "2", "3", "4", "-4")  # 4 of 555 ISSP questions offer -4: scored as continuations


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
                   f"{rng.choice(['religious', 'not religious'])}, "
                   f"living in a {rng.choice(['city', 'village'])}.")
        user = f"{QUESTION}\n{options}\nReply with JSON: {{\"answer\": \"<code>\"}}"
        messages = (Message("system", persona), Message("user", user))
        shared = dict(item_id=str(i), messages=messages, offered_codes=tuple(OPTIONS))
        out.append((PromptRequest(**shared, structured=True),
                    PromptRequest(**shared, mode="logprobs", answer_prefix='{"answer": "')))
    return out


def timed(label: str, fn, *args) -> tuple[float, float, object]:
    """(wall s, CPU s of this process, result); CPU time is the fairer figure on a shared host."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*args)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"  {label}: {wall:.1f} s wall, {cpu:.1f} s cpu", file=sys.stderr, flush=True)
    return wall, cpu, result


def make_engine(backend: str, model: str):
    """The backend as a run makes it (``registry.create_engine``) and the module its start imports."""
    from socbench.engines.registry import create_engine

    heavy = "vllm.entrypoints.llm" if backend == "vllm" else "transformers.models.llama.modeling_llama"
    return create_engine(backend, model), heavy


def bench(backend: str, n: int, model: str) -> dict:
    pairs = personas(n)
    gen, scored = [p[0] for p in pairs], [p[1] for p in pairs]
    multi = [dataclasses.replace(r, offered_codes=MULTI_TOKEN) for r in scored]
    engine, heavy_module = make_engine(backend, model)
    row: dict = {"backend": backend, "dtype": engine.identity["dtype"], "n": n, "per_cpu_s": {}}
    row["import_s"] = round(timed("import", importlib.import_module, heavy_module)[0], 2)
    try:
        row["start_plus_first_s"] = round(timed("start", engine.generate, gen[:1])[0], 2)
        for label, fn, requests in [("generate_structured", engine.generate, gen),
                                    ("logprobs_single_token", engine.option_logprobs, scored),
                                    ("logprobs_multi_token", engine.option_logprobs, multi)]:
            wall, cpu, results = timed(label, fn, requests)
            row[f"{label}_prompts_per_s"] = round(n / wall, 1)
            row["per_cpu_s"][label] = round(n / cpu, 1)
            row.setdefault("examples", {})[label] = results[0].text or results[0].option_logprobs
    finally:
        row["close_s"] = round(timed("close", engine.close)[0], 2)
    row["engine_start_s"] = round(getattr(engine, "startup_s", 0) or 0, 2)
    row["scoring_methods"] = dict(getattr(engine, "scoring_methods", {}))
    return row


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--backends", default="vllm")
    args = parser.parse_args()
    common.setup_env()
    model = str(common.tiny_model()) if args.quick else "smollm2-135m-instruct"
    rows = []
    for backend in args.backends.split(","):
        rows.append(bench(backend.strip(), 4 if args.quick else args.n, model))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / "engines_bare.json").write_text(json.dumps(rows, indent=2))
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
