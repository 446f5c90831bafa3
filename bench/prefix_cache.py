"""Target 2: prefix-cache hits (as vLLM reports them) and respondent-grouped vs shuffled order;
CP on ARC: prompt-logprob scoring (what ``VllmEngine.loglikelihood`` does) vs scoring the
continuations from a cached context (``max_tokens=1`` + ``logprob_token_ids`` per token).

Hit rate = sum of ``RequestOutput.num_cached_tokens`` / sum of prompt tokens, per pass, with
the prefix cache reset before each pass. Part A uses the tiny model on synthetic ISSP
prompts; part B uses SmolLM2 on ARC-Easy test items (0-shot and 5-shot CP contexts).
``--quick``: 2 respondents, 2 ARC items, the tiny model for both parts (one engine).
Usage: ``python -m bench.prefix_cache [--quick] [--respondents 60] [--arc_items 40]``.
"""

from __future__ import annotations

import random
import tempfile
from functools import partial
from pathlib import Path

from bench import common
from socbench.studies import task_for


def _engine(model: str):
    from socbench.engines.registry import create_engine

    engine = create_engine("vllm", model)
    return engine, engine._engine(), engine.tokenizer


def hit_rate(outputs) -> float:
    cached = sum(o.num_cached_tokens or 0 for o in outputs)
    total = sum(len(o.prompt_token_ids) for o in outputs)
    return cached / max(1, total)


def _issp_prompts(data_dir: Path, mode: str) -> list:
    from socbench import pipeline
    from socbench.config import make_config

    config = make_config(data_dir=str(data_dir), domain_id=1, mode=mode, max_tokens=16,
                         output_dir=tempfile.mkdtemp(prefix="bench-pc-"))
    return list(pipeline.all_requests(pipeline.plans(task_for(config))))


def part_a(started: tuple, respondents: int) -> list[dict]:
    from socbench.engines import _chat
    from socbench.engines.vllm import _generate_params, _node_subs
    from socbench.pipeline import generate

    data_dir = common.synth_data(respondents, "1")
    engine, llm, tok = started
    rows = []
    for mode in ("logprobs", "generate"):
        grouped = _issp_prompts(data_dir, mode)
        shuffled = grouped[:]
        random.Random(0).shuffle(shuffled)
        for order, prompts in (("grouped", grouped), ("shuffled", shuffled)):
            if mode == "logprobs":
                plans = [_chat.option_plan(tok, p) for p in prompts]
                inputs = [{"prompt_token_ids": list(pl.context)} for pl in plans]
                params = [_node_subs(0, pl, ())[0].params for pl in plans]  # the root node: one request
            else:
                inputs = [{"prompt_token_ids": _chat.prompt_ids(tok, p)} for p in prompts]
                params = [_generate_params(p) for p in prompts]
            llm.reset_prefix_cache()
            bare_s, outs, load_bare = common.timed(partial(llm.generate, use_tqdm=False), inputs, params)
            llm.reset_prefix_cache()
            eng_s, _, load_eng = common.timed(generate, engine, prompts)
            rows.append({"mode": mode, "order": order, "prompts": len(prompts),
                         "hit_rate": round(hit_rate(outs), 3),
                         "bare_s": round(bare_s, 2), "engine_s": round(eng_s, 2),
                         "load_bare": load_bare, "load_engine": load_eng})
            print(rows[-1], flush=True)
    return rows


def _arc_requests(items: int, k: int):
    from socbench.mcq.datasets import load_mcq
    from socbench.mcq.prompts import build_plan

    data = load_mcq("arc-easy", limit=items)
    plan = build_plan(data, ["cp"], [k], False, 0)
    return [r for p in plan.prompts for r in p.cp]  # CP requests (not CP-UN's)


def cached_context_scores(llm, pairs) -> list[tuple[float, object]]:
    """Each continuation scored token by token from its (prefix-cached) context: contexts first."""
    from socbench.engines.vllm import _score_params

    first: dict[tuple[int, ...], set[int]] = {}
    for ctx, cont in pairs:
        first.setdefault(tuple(ctx), set()).add(cont[0])
    contexts = list(first)
    outs = llm.generate([{"prompt_token_ids": list(c)} for c in contexts],
                        [_score_params(sorted(first[c])) for c in contexts], use_tqdm=False)
    root = {c: o.outputs[0].logprobs[0] for c, o in zip(contexts, outs)}
    steps = [(i, k) for i, (_, cont) in enumerate(pairs) for k in range(1, len(cont))]
    outs2 = llm.generate([{"prompt_token_ids": list(pairs[i][0]) + pairs[i][1][:k]} for i, k in steps],
                         [_score_params([pairs[i][1][k]]) for i, k in steps], use_tqdm=False)
    totals = [root[tuple(ctx)][cont[0]].logprob for ctx, cont in pairs]
    for (i, k), out in zip(steps, outs2):
        totals[i] += out.outputs[0].logprobs[0][pairs[i][1][k]].logprob
    return totals, list(outs) + list(outs2)


def part_b(items: int, started: tuple) -> list[dict]:
    from socbench.engines import _chat

    engine, llm, tok = started
    rows = []
    for k in (0, 5):
        requests = _arc_requests(items, k)
        pairs = [_chat.loglikelihood_ids(tok, r) for r in requests]
        llm.reset_prefix_cache()
        a_s, a_res, load_a = common.timed(engine.loglikelihood, requests)
        llm.reset_prefix_cache()
        b_s, (b_tot, b_outs), load_b = common.timed(cached_context_scores, llm, pairs)
        diff = max(abs(a.logprob - b) for a, b in zip(a_res, b_tot))
        ctx_tokens = sum(len(c) for c, _ in pairs)
        unique_ctx = sum(len(c) for c in {tuple(c) for c, _ in pairs})
        rows.append({"k_shot": k, "requests": len(requests), "prompt_logprobs_s": round(a_s, 2),
                     "cached_context_s": round(b_s, 2), "speedup": round(a_s / b_s, 2),
                     "context_tokens_prompt_logprobs": ctx_tokens, "unique_context_tokens": unique_ctx,
                     "cached_context_hit_rate": round(hit_rate(b_outs), 3),
                     "max_abs_logprob_diff": round(diff, 4), "load_a": load_a, "load_b": load_b})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--respondents", type=int, default=60)
    p.add_argument("--arc_items", type=int, default=40)
    p.add_argument("--skip_arc", action="store_true")
    args = p.parse_args()
    common.setup_env()
    tiny = str(common.tiny_model())
    arc_model = tiny if args.quick else "smollm2-135m-instruct"
    started = _engine(tiny)
    try:
        a = part_a(started, 2 if args.quick else args.respondents)
        if not args.skip_arc and arc_model != tiny:  # the same model (quick): the same engine
            started[0].close()
            started = _engine(arc_model)
        b = [] if args.skip_arc else part_b(2 if args.quick else args.arc_items, started)
    finally:
        started[0].close()
    by = {(r["mode"], r["order"]): r for r in a}
    speed = by[("logprobs", "shuffled")]["engine_s"] / by[("logprobs", "grouped")]["engine_s"]
    figures = {"logprobs_grouped_hit_rate": by[("logprobs", "grouped")]["hit_rate"],
               "logprobs_shuffled_hit_rate": by[("logprobs", "shuffled")]["hit_rate"],
               "logprobs_grouped_engine_s": by[("logprobs", "grouped")]["engine_s"],
               "logprobs_shuffled_engine_s": by[("logprobs", "shuffled")]["engine_s"]}
    figures.update({f"arc_{r['k_shot']}shot_speedup_cached_context": r["speedup"] for r in b})
    common.report("prefix_cache", figures, "shuffled/grouped time (logprobs, engine)", speed,
                  "report hit rate and speed-up; CP context computed once", None,
                  {"issp": a, "arc_cp": b, "quick": args.quick})


if __name__ == "__main__":
    main()
