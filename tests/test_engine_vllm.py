"""In-process vLLM backend on the tiny model (plumbing, numbers vs transformers) and on SmolLM2.

The tiny model's engine is the session's (``engine_pool``: the one the flows' tests run on; each
start costs ~30 CPU seconds); the teardown test starts, closes and starts engines of its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.reference import chat_ids, check_raw_prompt_letters, reference
from socbench.engines import settings as engine_settings
from socbench.engines.settings import HfSettings, VllmSettings, cpu_bf16, vllm_cpu_threads
from socbench.errors import ConfigError
from socbench.models import ResolvedModel, resolve_model
from socbench.types import LoglikelihoodRequest, Message, PromptRequest, SamplingSettings

PREFIX = '{"answer": "'
TINY = {"dtype": "float32"}  # the settings of the flows' tests (``--engine '{"dtype": "float32"}'``)
SMOLLM2 = {"dtype": "float32", "max_model_len": 2048}  # fp32: log-probs of two engines agree exactly


def persona(question: str, i: int = 0) -> tuple[Message, ...]:
    return (Message("system", f"You are respondent {i}, 40 years old, living in Norway."),
            Message("user", f"{question} Reply with JSON like {{\"answer\": \"<code>\"}}."))


def encode(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


@pytest.fixture(scope="module")
def tiny(tiny_model: Path) -> ResolvedModel:
    return resolve_model(str(tiny_model))


@pytest.fixture()
def engine(engine_pool, tiny_model: Path):
    """The session's vLLM engine on the tiny model (closed by the pool at the session's end)."""
    return engine_pool.get("vllm", tiny_model, TINY)


# ------------------------------------------------------------------ settings (no engine)


@pytest.mark.parametrize(("native", "dtype"), [(True, "bfloat16"), (False, "float32")])
def test_cpu_dtype_follows_the_cpus_bf16_support(monkeypatch, native: bool, dtype: str) -> None:
    """bf16 only where the CPU computes it (AVX512_BF16/AMX): elsewhere it is 4x slower than fp32."""
    monkeypatch.setattr(engine_settings, "cpu_bf16", lambda: native)
    assert VllmSettings.for_host(cuda=False).dtype == dtype
    assert VllmSettings.for_host(cuda=True).dtype == "auto"
    assert HfSettings(device="cpu").dtype == dtype  # transformers too: bf16 there was 8x slower here
    assert HfSettings(device="cuda").dtype == "bfloat16"
    assert HfSettings.from_options({"dtype": "float16", "device": "cpu"}).dtype == "float16"


def test_cpu_defaults_and_gpu_defaults():
    cpu = VllmSettings.for_host(cuda=False)
    assert cpu.enforce_eager and cpu.in_process and cpu.dtype == ("bfloat16" if cpu_bf16() else "float32")
    assert cpu.max_num_batched_tokens == 16384 and cpu.block_size == 32
    assert cpu.kv_cache_space_gib == 1  # conftest's VLLM_CPU_KVCACHE_SPACE
    assert cpu.cpu_threads == vllm_cpu_threads() >= 1
    gpu = VllmSettings.for_host(cuda=True)
    assert not gpu.enforce_eager and gpu.gpu_memory_utilization == 0.9 and gpu.enable_prefix_caching
    assert gpu.enable_chunked_prefill and gpu.dtype == "auto" and gpu.kv_cache_space_gib is None
    assert gpu.cpu_threads is None
    assert VllmSettings.model_validate({"seed": 3}).enforce_eager  # built any way: host defaults apply here
    assert VllmSettings.for_host({"enforce_eager": False}, cuda=False).enforce_eager is False


def test_bad_settings_name_the_key():
    with pytest.raises(ConfigError, match="--engine bogus=1: unknown setting"):
        VllmSettings.for_host({"bogus": 1})
    with pytest.raises(ConfigError, match="gpu_memory_utilization"):
        VllmSettings.for_host({"gpu_memory_utilization": 1.5})
    with pytest.raises(ConfigError, match="data_parallel_size"):
        VllmSettings.for_host({"data_parallel_size": 2})


@pytest.mark.slow  # builds the tiny model in transformers
def test_engine_is_lazy_and_close_before_start_is_harmless(tiny: ResolvedModel):
    from socbench.engines.vllm import VllmEngine

    eng = VllmEngine(tiny, VllmSettings.for_host(TINY))
    assert eng.identity == {"backend": "vllm", "model": "tiny-qwen2", "fingerprint": tiny.fingerprint,
                            "dtype": "float32"}
    assert eng._llm is None and eng.generate([]) == []
    eng.close()
    eng.close()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.slow  # imports torch and vLLM
def test_cpu_rms_norm_gives_vllm_natives_bits(dtype: str):
    """The faster RMSNorm the CPU engine registers computes exactly vLLM's native arithmetic."""
    import torch
    from vllm.ir.ops import layernorm

    from socbench.engines import _vllm_cpu

    torch.manual_seed(0)
    kind = getattr(torch, dtype)
    x, residual = torch.randn(257, 576, dtype=kind) * 4, torch.randn(257, 576, dtype=kind)
    for weight in (torch.randn(576, dtype=kind), None):
        native_fn = layernorm.fused_add_rms_norm.impls["native"].impl_fn
        native = native_fn(x.clone(), residual.clone(), weight, 1e-5)
        ours = _vllm_cpu.fused_add_rms_norm(x.clone(), residual.clone(), weight, 1e-5)
        assert torch.equal(native[0], ours[0]) and torch.equal(native[1], ours[1])
        assert torch.equal(layernorm.rms_norm.impls["native"].impl_fn(x.clone(), weight, 1e-5),
                           _vllm_cpu.rms_norm(x.clone(), weight, 1e-5))


# ------------------------------------------------------------------ tiny engine


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_cpu_engine_runs_our_rms_norm_on_one_thread(engine):
    import torch
    from vllm import ir

    engine.load()
    assert ir.ops.fused_add_rms_norm.get_priority()[0] == "socbench_cpu"
    assert engine.settings.cpu_threads == torch.get_num_threads() >= 1


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_generate_one_result_per_request_in_order(engine):
    requests = [PromptRequest(item_id=f"p{i}", messages=persona(f"Question {i}?", i),
                              sampling=SamplingSettings(max_tokens=1 + (7 * i) % 13)) for i in range(12)]
    seen: list[int] = []
    before = engine.usage.total()
    results = engine.generate(requests, on_result=lambda i, r: seen.append(i))
    assert [r.key for r in results] == [r.key for r in requests]
    assert sorted(seen) == list(range(12)) and all(r.error is None and r.text is not None for r in results)
    used = {key: n - before[key] for key, n in engine.usage.total().items()}  # its token ids, counted
    assert used["prompt_tokens"] == sum(len(chat_ids(engine.tokenizer, r.messages)) for r in requests)
    assert 0 < used["completion_tokens"] <= sum(r.sampling.max_tokens for r in requests)


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_draws_are_seeded_per_request(engine):
    """--samples K in-process: each draw has its own seed, so a draw asked again (alone or in another
    batch) gives the same text, and the K draws of one prompt are not all the same."""
    from socbench.draws import draw_prompts

    prompts = [PromptRequest(item_id=f"d{i}", messages=persona(f"Question {i}?", i),
                             sampling=SamplingSettings(temperature=1.0, max_tokens=8)) for i in range(2)]
    draws = draw_prompts(prompts, 4, 7)
    texts = [r.text for r in engine.generate(draws)]
    assert None not in texts and len(set(texts[:4])) > 1 and len(set(texts[4:])) > 1
    assert [r.text for r in engine.generate(draws[::-1])] == texts[::-1]
    assert engine.generate([draws[5]])[0].text == texts[5]


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_bad_requests_fail_alone(engine):
    ok = PromptRequest(item_id="raw", messages=(Message("user", "Question: 2+2?\nAnswer:"),), chat=False,
                       sampling=SamplingSettings(max_tokens=3))
    long = PromptRequest(item_id="long", messages=persona("word " * 2100),  # past the 2,048 positions
                         sampling=SamplingSettings(max_tokens=3))
    no_codes = PromptRequest(item_id="nc", messages=persona("Pick."), structured=True)
    results = engine.generate([ok, long, ok, no_codes])
    assert results[0].error is None and results[2].error is None and results[0].text == results[2].text
    assert results[1].text is None and "rejected" in results[1].error
    assert "needs offered codes" in results[3].error


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_structured_output_always_parses_to_an_offered_code(engine):
    code_sets = [("1", "2", "3", "4", "5"), ("1", "2", "10", "-4"), ("0", "95", "96"), ("-9", "8", "99")]
    requests = [PromptRequest(item_id=f"s{i}", messages=persona("How happy are you?", i), structured=True,
                              offered_codes=code_sets[i % 4],
                              sampling=SamplingSettings(temperature=1.0, max_tokens=24, seed=i))
                for i in range(24)]
    results = engine.generate(requests)
    answers = [json.loads(r.text)["answer"] for r in results]
    assert all(a in req.offered_codes for a, req in zip(answers, requests))
    assert len(set(answers)) > 3  # sampling really ran (random weights, temperature 1)


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_a_multi_select_reply_is_a_list_of_the_options_texts(engine):
    """A multi-select set's request (``choose_all``): vLLM's grammar takes the list regex, and every
    sampled reply is a JSON list of the options' texts (issue 45)."""
    options = (("1", "Television"), ("2", "Radio"), ("3", "The internet"))
    requests = [PromptRequest(item_id=f"m{i}", messages=persona("Where do you get news?", i), structured=True,
                              offered_codes=("1", "2", "3"), options=options, choose_all=True,
                              sampling=SamplingSettings(temperature=1.0, max_tokens=400, seed=i))
                for i in range(12)]
    replies = [json.loads(r.text)["answer"] for r in engine.generate(requests)]
    assert all(set(reply) <= {"Television", "Radio", "The internet"} for reply in replies), replies
    assert len({len(reply) for reply in replies}) > 1  # sampling really ran: lists of different lengths


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_a_numeric_reply_is_a_number_that_extraction_reads(engine):
    """A numeric question's request: vLLM's grammar takes the number regex, and every sampled reply is read
    as a number or, outside the question's range, a counted failure (never a crash or an option code)."""
    from socbench.extract import OUT_OF_RANGE, extract_number

    requests = [PromptRequest(item_id=f"n{i}", messages=persona("Hours worked last week?", i),
                              structured=True, numeric=(0.0, 80.0),
                              sampling=SamplingSettings(temperature=1.0, max_tokens=40, seed=i))
                for i in range(12)]
    read = [extract_number(r.text, (0.0, 80.0)) for r in engine.generate(requests)]
    assert all(code is not None or why == OUT_OF_RANGE for code, why in read), read


@pytest.mark.parametrize("codes,method", [(("1", "2", "3", "4"), "single_token"),
                                          (("1", "10", "-4", "95"), "continuation")])
@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_option_logprobs_match_transformers(engine, tiny_reference, codes, method):
    model, tok = tiny_reference
    messages = persona("How often do you attend religious services?")
    request = PromptRequest(item_id="o", messages=messages, mode="logprobs", offered_codes=codes,
                            answer_prefix=PREFIX)
    before = engine.scoring_methods[method]
    [result] = engine.option_logprobs([request])
    assert engine.scoring_methods[method] == before + 1 and result.error is None
    context = chat_ids(tok, messages, PREFIX)
    closing = "" if method == "single_token" else '"'
    for code in codes:
        cont = tok(code + closing, add_special_tokens=False)["input_ids"]
        expected, _ = reference(model, context + cont, len(context))
        assert result.option_logprobs[code] == pytest.approx(expected, abs=1e-3), code


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_option_logprobs_more_codes_than_one_step(engine, tiny_reference):
    """vLLM scores at most 128 token ids per step: 150 single-token codes are split, numbers unchanged."""
    model, tok = tiny_reference
    words = {tok.decode([t]) for t in range(300, 700)}
    codes = tuple(sorted(w for w in words if w.strip() and len(encode(tok, w)) == 1))
    codes = codes[:150]
    messages = persona("Which word describes you?")
    requests = [PromptRequest(item_id=f"m{n}", messages=messages, mode="logprobs", offered_codes=codes[:n],
                              answer_prefix=PREFIX) for n in (150, 5)]
    results = engine.option_logprobs(requests)
    assert [r.key for r in results] == [r.key for r in requests]
    assert len(codes) == 150 and [len(r.option_logprobs) for r in results] == [150, 5]
    context = chat_ids(tok, messages, PREFIX)
    for code in (codes[0], codes[129], codes[149]):
        expected, _ = reference(model, context + encode(tok, code), len(context))
        assert results[0].option_logprobs[code] == pytest.approx(expected, abs=1e-3)
    assert results[1].option_logprobs[codes[2]] == pytest.approx(results[0].option_logprobs[codes[2]],
                                                                 abs=1e-4)


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_raw_prompt_option_logprobs_move_trailing_space_onto_codes(engine, tiny_reference):
    model, tok = tiny_reference
    check_raw_prompt_letters(engine, model, tok, tolerance=1e-3)


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_loglikelihood_matches_transformers(engine, tiny_reference):
    model, tok = tiny_reference
    requests = [LoglikelihoodRequest("Question: Which is a mammal?\nAnswer:", " whale"),
                LoglikelihoodRequest("Question: Which is a mammal?\nAnswer:", " shark fin"),
                LoglikelihoodRequest("Country: ", "Norway"),  # trailing space moves to the continuation
                LoglikelihoodRequest("", "hello world")]
    results = engine.loglikelihood(requests)
    for request, result in zip(requests, results):
        context = request.context.rstrip()
        cont_text = request.context[len(context):] + request.continuation
        ctx = tok(context)["input_ids"] or [tok.eos_token_id]  # the tiny tokenizer has no BOS
        whole = ctx + tok(context + cont_text)["input_ids"][len(tok(context)["input_ids"]):]
        expected, greedy = reference(model, whole, len(ctx))
        assert result.key == request.key and result.n_tokens == len(whole) - len(ctx)
        assert result.logprob == pytest.approx(expected, abs=1e-3) and result.is_greedy == greedy


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_failed_start_is_one_engine_error_and_harmless(engine, tiny_model: Path, tmp_path: Path):
    import shutil

    from socbench.engines.vllm import VllmEngine
    from socbench.errors import EngineError

    broken = Path(shutil.copytree(tiny_model, tmp_path / "broken"))
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "num_attention_heads": 3}))  # 64 % 3 != 0
    bad = VllmEngine(resolve_model(str(broken)), VllmSettings.for_host(TINY))
    with pytest.raises(EngineError, match=f"could not start model broken \\({broken}"):
        bad.generate([PromptRequest(item_id="x", messages=persona("Hi?"))])
    bad.close()
    bad.close()
    assert engine.generate([PromptRequest(item_id="y", messages=persona("Hi?"), sampling=SamplingSettings(
        max_tokens=2))])[0].error is None  # the module engine still answers


@pytest.mark.slow  # starts vLLM in-process on the tiny model
def test_teardown_twice_then_a_new_engine_starts(engine_pool, tiny_model: Path):
    """Closes the session's engine (twice), the process's only one, and starts another in the same
    process: the session's from then on."""
    from socbench.engines import vllm

    request = PromptRequest(item_id="t", messages=persona("Again?"), sampling=SamplingSettings(max_tokens=4))
    old = engine_pool.get("vllm", tiny_model, TINY).engine
    before = old.generate([request])[0].text
    engine_pool.close()
    old.close()
    assert not vllm._STARTED  # every engine closed: vLLM's process-wide state was freed
    fresh = engine_pool.get("vllm", tiny_model, TINY)
    assert fresh.engine is not old
    assert fresh.generate([request])[0].text == before  # greedy: same answer from the new engine
    assert fresh.startup_s is not None


# ------------------------------------------------------------------ SmolLM2 (real language)


@pytest.mark.slow
def test_smollm2_generate_logprobs_structured_and_agreement_with_transformers(engine_pool, smollm2: Path):
    """One fp32 engine: a persona reply, option log-probs, constrained JSON, and the issue's check that
    vLLM and transformers agree on prompt log-probabilities to 1e-3."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    eng = engine_pool.get("vllm", smollm2, SMOLLM2)  # the session's (tests/test_vllm_server.py uses it too)
    messages = persona("Do you agree that the government should reduce income differences? "
                       "1 Agree strongly, 2 Agree, 3 Disagree, 4 Disagree strongly.")
    codes = ("1", "2", "3", "4")
    free = PromptRequest(item_id="g", messages=messages, sampling=SamplingSettings(max_tokens=24))
    forced = PromptRequest(item_id="s", messages=messages, structured=True, offered_codes=codes)
    scored = PromptRequest(item_id="l", messages=messages, mode="logprobs", offered_codes=codes,
                           answer_prefix=PREFIX)
    text, structured = [r.text for r in eng.generate([free, forced])]
    assert text.strip() and json.loads(structured)["answer"] in codes
    logprobs = eng.option_logprobs([scored])[0].option_logprobs
    lls = eng.loglikelihood([LoglikelihoodRequest("The capital of France is", " Paris."),
                             LoglikelihoodRequest("Survey question: how happy are you?", " Very happy")])
    tok = AutoTokenizer.from_pretrained(smollm2)
    model = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32).eval()
    context = chat_ids(tok, messages, PREFIX)
    for code in codes:
        expected, _ = reference(model, context + encode(tok, code), len(context))
        assert logprobs[code] == pytest.approx(expected, abs=1e-3)
    paris = tok("The capital of France is")["input_ids"]
    expected, greedy = reference(model, tok("The capital of France is Paris.")["input_ids"], len(paris))
    assert lls[0].logprob == pytest.approx(expected, abs=1e-3) and lls[0].logprob > lls[1].logprob
