"""Target 1: the ISSP stages (load → prompts → engine → extract → score) vs one bare LLM.generate.

Same prompts (token ids), same sampling settings, same started vLLM engine; the prefix cache
is reset before each timed pass so neither inherits the other's cache. Model: the tiny random
Qwen2 (``tests/support/tiny_model.py``): SmolLM2 is too slow on 2 cores for 5,000+ prompts per mode.
The sides alternate ``--repeats`` times; the figure is the median of the pass-by-pass ratios (each
pair ran back to back, so a change in the host's load hits both), with every pass's time and
load average in the JSON. Usage: ``python -m bench.pipeline_vs_bare [--quick] [--prompts 6000]
[--repeats 3] [--profile]``.
"""

from __future__ import annotations

import math
import statistics
import tempfile
from pathlib import Path

from bench import common
from socbench.studies import task_for


def stages(config, engine, domain_id: int):
    """The pipeline's stages without Prefect, the plan built again each time; (the prompts, domain result)."""
    from socbench import pipeline

    pipeline.forget()
    study = task_for(config)
    unit = study.unit(domain_id)
    return pipeline.plan(study, unit).prompts.requests, pipeline.score_unit(study, unit, engine).result


def bare_generate(llm, tok, prompts) -> int:
    """One LLM.generate over the pipeline's prompts, tokenized and parametrised as the backend does."""
    from socbench.engines import _chat
    from socbench.engines.vllm import _generate_params

    inputs = [
        {"prompt_token_ids": _chat.prompt_ids(tok, p, "" if p.structured else p.answer_prefix)}
        for p in prompts
    ]
    params = [_generate_params(p) for p in prompts]
    return len(llm.generate(inputs, params, use_tqdm=False))


def bare_score(llm, tok, prompts) -> int:
    """One LLM.generate of single-step scoring (max_tokens=1, logprob_token_ids = the codes)."""
    from socbench.engines import _chat
    from socbench.engines.vllm import _node_subs

    plans = [_chat.option_plan(tok, p) for p in prompts]
    inputs = [{"prompt_token_ids": list(plan.context)} for plan in plans]
    params = [_node_subs(0, plan, ())[0].params for plan in plans]  # the root node: one request
    return len(llm.generate(inputs, params, use_tqdm=False))


def one_mode(mode: str, data_dir: Path, model: Path, domain_id: int, repeats: int, out: Path,
             profile: bool = False) -> dict:
    from socbench import pipeline
    from socbench.config import make_config
    from socbench.engines.session import get_engine

    config = make_config(
        data_dir=str(data_dir),
        output_dir=str(out),
        domain_id=domain_id,
        api_type="vllm",
        model=str(model),
        mode=mode,
        max_tokens=16,
    )
    # CachedEngine(VllmEngine), as in the flow, empty cache; one output folder, so one engine for both modes
    engine = get_engine(config.engine_settings())
    inner = engine.backend
    llm, tok = inner._engine(), inner.tokenizer  # start-up is not part of either figure
    prompts = list(pipeline.all_requests(pipeline.plans(task_for(config))))
    bare_fn = bare_score if mode == "logprobs" else bare_generate
    bare_fn(llm, tok, prompts[:64])  # warm-up (sampler, structured-output compilation)
    bare_runs, pipe_runs = [], []

    def bare_pass() -> None:
        llm.reset_prefix_cache()
        bare_runs.append(common.timed(lambda: bare_fn(llm, tok, prompts)))

    def pipeline_pass() -> None:
        fresh_caches(engine, llm)
        pipe_runs.append(common.timed(lambda: stages(config, engine, domain_id)))

    for n in range(repeats):  # alternate the sides and their order, so the host's load hits both
        for side in (bare_pass, pipeline_pass) if n % 2 == 0 else (pipeline_pass, bare_pass):
            side()
    if profile:
        fresh_caches(engine, llm)
        profiled = top_functions(lambda: stages(config, engine, domain_id))
    pipe_prompts = pipe_runs[-1][1][0]
    n_bare = bare_runs[-1][1]
    assert len(pipe_prompts) == n_bare == len(prompts)
    pairs = [b[0] / p[0] for b, p in zip(bare_runs, pipe_runs)]  # pass by pass, same load
    return {
        "mode": mode,
        "prompts": n_bare,
        "repeats": repeats,
        "ratio": round(statistics.median(pairs), 3),
        "pair_ratios": [round(r, 3) for r in pairs],
        "bare_s": [round(r[0], 2) for r in bare_runs],
        "pipeline_s": [round(r[0], 2) for r in pipe_runs],
        "bare_prompts_per_s": round(n_bare / statistics.median(r[0] for r in bare_runs), 1),
        "pipeline_prompts_per_s": round(n_bare / statistics.median(r[0] for r in pipe_runs), 1),
        "load_bare": [r[2] for r in bare_runs],
        "load_pipeline": [r[2] for r in pipe_runs],
        "scoring_methods": dict(inner.scoring_methods),
        **({"profile": profiled} if profile else {}),
    }


def fresh_caches(engine, llm) -> None:
    """An empty prefix cache and an empty engine cache, as a first run has."""
    from socbench.engines.cache import EngineCache

    llm.reset_prefix_cache()
    engine.cache.close()
    engine.cache = EngineCache(Path(tempfile.mkdtemp(prefix="bench-pipe-cache-")) / "cache.sqlite")


def top_functions(fn, n: int = 15) -> list[str]:
    """CPU-time profile of one pipeline pass: the ``n`` functions with the most own time."""
    import cProfile
    import io
    import pstats
    import time

    profiler = cProfile.Profile(time.process_time)
    profiler.runcall(fn)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(n)
    return [line.strip()[:200] for line in out.getvalue().splitlines() if line.strip()][-n:]


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--prompts", type=int, default=6000, help="at least this many prompts per mode")
    p.add_argument("--domain_id", type=int, default=1)
    p.add_argument(
        "--repeats", type=int, default=3, help="alternating passes; the median pass-by-pass ratio counts"
    )
    p.add_argument("--profile", action="store_true", help="add a CPU-time profile of one more pipeline pass")
    args = p.parse_args()
    common.setup_env()
    model = common.tiny_model()
    if args.quick:  # two respondents: about 100 prompts per mode
        data_dir = common.synth_data(2, str(args.domain_id))
    else:
        probe = common.synth_data(5, str(args.domain_id))
        per_respondent = probe_prompts(probe, args.domain_id) / 5
        data_dir = common.synth_data(math.ceil(args.prompts / per_respondent), str(args.domain_id))
    from socbench.engines.session import close_engines

    out, repeats = Path(tempfile.mkdtemp(prefix="bench-pipe-")), 1 if args.quick else args.repeats
    try:  # one engine for both modes (the session's): it starts once
        rows = [one_mode(mode, data_dir, model, args.domain_id, repeats, out, args.profile)
                for mode in ("generate", "logprobs")]
    finally:
        close_engines()
    for row in rows:
        print(f"{row['mode']}: {row}", flush=True)
    worst = min(r["ratio"] for r in rows)
    figures = {
        f"{r['mode']}_{k}": r[k] for r in rows for k in ("bare_prompts_per_s", "pipeline_prompts_per_s")
    }
    common.report(
        "pipeline_vs_bare",
        figures,
        "pipeline/bare throughput (worst mode)",
        worst,
        ">= 0.9 on >= 5,000 prompts",
        worst >= 0.9 and min(r["prompts"] for r in rows) >= 5000,
        {"rows": rows, "model": "tiny random Qwen2 (tests/support/tiny_model.py)", "quick": args.quick},
    )


def probe_prompts(data_dir: Path, domain_id: int) -> int:
    """Prompts per domain for this data (to size the respondents for the target count)."""
    from socbench import pipeline
    from socbench.config import make_config

    config = make_config(data_dir=str(data_dir), domain_id=domain_id)
    return len(pipeline.all_requests(pipeline.plans(task_for(config))))


if __name__ == "__main__":
    main()
