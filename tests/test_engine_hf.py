"""transformers backend on the tiny model: KV-cache scoring and batched generation vs plain forward passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.reference import chat_ids, check_raw_prompt_letters, reference
from socbench.engines.settings import HfSettings
from socbench.errors import ConfigError
from socbench.models import ResolvedModel, resolve_model
from socbench.types import LoglikelihoodRequest, Message, PromptRequest, SamplingSettings

PREFIX = '{"answer": "'


def persona(question: str, i: int = 0) -> tuple[Message, ...]:
    return (Message("system", f"You are respondent {i}, a {20 + 3 * i}-year-old teacher from Chile."),
            Message("user", question))


def greedy_reference(model, ids: list[int], steps: int, eos: int) -> list[int]:
    """Greedy decoding by repeated full forward passes (no cache, no padding)."""
    import torch

    out: list[int] = []
    with torch.no_grad():
        for _ in range(steps):
            token = int(model(torch.tensor([ids + out])).logits[0, -1].argmax())
            if token == eos:
                break
            out.append(token)
    return out


@pytest.fixture(scope="module")
def tiny(tiny_model: Path) -> ResolvedModel:
    return resolve_model(str(tiny_model))


@pytest.fixture(scope="module")
def engine(tiny: ResolvedModel):
    from socbench.engines.hf import HfEngine

    eng = HfEngine(tiny, HfSettings(dtype="float32", batch_size=4, device="cpu"))
    yield eng
    eng.close()


@pytest.mark.slow  # loads the tiny model in transformers
def test_settings_and_lazy_identity(tiny: ResolvedModel):
    from socbench.engines.hf import HfEngine

    with pytest.raises(ConfigError, match="--engine batch_size=0"):
        HfSettings.from_options({"batch_size": 0})
    with pytest.raises(ConfigError, match="unknown setting"):
        HfSettings.from_options({"gpu_memory_utilization": 0.5})
    eng = HfEngine(tiny, HfSettings.from_options({"dtype": "float32"}))
    assert eng.identity == {"backend": "hf", "model": "tiny-qwen2", "fingerprint": tiny.fingerprint,
                            "dtype": "float32"}
    assert eng._model is None
    eng.close()
    eng.close()


@pytest.mark.slow  # loads the tiny model in transformers
def test_batched_generation_equals_one_by_one_greedy(engine, tiny_reference):
    model, tok = tiny_reference
    requests = [PromptRequest(item_id=f"g{i}", messages=persona("Tell me about you." + " Really." * i, i),
                              sampling=SamplingSettings(max_tokens=6))
                for i in range(6)]  # ragged lengths: left padding must not change answers
    seen: list[int] = []
    results = engine.generate(requests, on_result=lambda i, r: seen.append(i))
    assert [r.key for r in results] == [r.key for r in requests] and sorted(seen) == list(range(6))
    for request, result in zip(requests, results):
        expected = greedy_reference(model, chat_ids(tok, request.messages), 6, tok.eos_token_id)
        assert result.text == tok.decode(expected, skip_special_tokens=True)


@pytest.mark.slow  # loads the tiny model in transformers
def test_structured_is_unconstrained_text_not_an_error(engine):
    request = PromptRequest(item_id="s", messages=persona("Pick one."), structured=True,
                            offered_codes=("1", "2"), sampling=SamplingSettings(max_tokens=3))
    [result] = engine.generate([request])
    assert result.error is None and isinstance(result.text, str)


@pytest.mark.parametrize("codes,closing", [(("1", "2", "3"), ""), (("1", "10", "-4", "2"), '"')])
@pytest.mark.slow  # loads the tiny model in transformers
def test_option_logprobs_from_cache_equal_full_forward(engine, tiny_reference, codes, closing):
    model, tok = tiny_reference
    messages = persona("How much do you trust people?")
    request = PromptRequest(item_id="o", messages=messages, mode="logprobs", offered_codes=codes,
                            answer_prefix=PREFIX)
    [result] = engine.option_logprobs([request])
    context = chat_ids(tok, messages, PREFIX)
    for code in codes:
        expected, _ = reference(model, context + tok(code + closing, add_special_tokens=False)["input_ids"],
                                len(context))
        assert result.option_logprobs[code] == pytest.approx(expected, abs=1e-4), code


@pytest.mark.slow  # loads the tiny model in transformers
def test_raw_prompt_option_logprobs_move_trailing_space_onto_codes(engine, tiny_reference):
    model, tok = tiny_reference
    check_raw_prompt_letters(engine, model, tok, tolerance=1e-4)


@pytest.mark.slow  # loads the tiny model in transformers
def test_loglikelihood_groups_contexts_and_keeps_order(engine, tiny_reference):
    model, tok = tiny_reference
    question = "Question: Which animal lays eggs?\nAnswer:"
    answers = [" hen", " cow", " dog that barks", " cat", " horse"]  # 5 continuations > batch_size 4
    requests = [LoglikelihoodRequest(question, a) for a in answers]
    requests.insert(2, LoglikelihoodRequest("Another context:", " yes"))
    seen: list[int] = []
    results = engine.loglikelihood(requests, on_result=lambda i, r: seen.append(i))
    assert [r.key for r in results] == [r.key for r in requests] and sorted(seen) == list(range(6))
    for request, result in zip(requests, results):
        ctx = tok(request.context)["input_ids"]
        whole = tok(request.context + request.continuation)["input_ids"]
        expected, greedy = reference(model, whole, len(ctx))
        assert result.n_tokens == len(whole) - len(ctx)
        assert result.logprob == pytest.approx(expected, abs=1e-4) and result.is_greedy == greedy


@pytest.mark.parametrize("pack_tokens,pack_rows", [(8, 1), (24, 3), (512, 4)])
@pytest.mark.slow  # loads the tiny model in transformers
def test_packed_scoring_equals_one_full_forward_per_continuation(tiny: ResolvedModel, tiny_reference,
                                                                 pack_tokens, pack_rows):
    """Any row size (groups split, contexts repeated, trie nodes shared, padding) gives each
    (context, continuation) the log-prob of one plain forward pass over both (fp32, 1e-4)."""
    from socbench.engines.hf import HfEngine

    model, tok = tiny_reference
    eng = HfEngine(tiny, HfSettings(dtype="float32", device="cpu", pack_tokens=pack_tokens,
                                    pack_rows=pack_rows))
    long = ("A much longer context that will not fit into one small row of tokens, "
            "so it is split and repeated:")
    contexts = ["Question: Which animal lays eggs?\nAnswer:", "Answer:", long]
    answers = [" hen", " hen house", " hen house door", " cow", " hen", " a", " dog that barks loudly"]
    requests = [LoglikelihoodRequest(c, a) for c in contexts for a in answers]
    results = eng.loglikelihood(requests)
    for request, result in zip(requests, results):
        ctx = tok(request.context)["input_ids"]
        whole = tok(request.context + request.continuation)["input_ids"]
        expected, greedy = reference(model, whole, len(ctx))
        assert result.logprob == pytest.approx(expected, abs=1e-4) and result.is_greedy == greedy
    eng.close()


def test_pack_lays_out_every_continuation_once_within_the_row_size():
    from socbench.engines._packed import Group, pack, prefixes

    groups = [Group((1, 2, 3), ((4, 5), (4, 6, 7), (8,))),
              Group((9,), tuple((10 + i, 11) for i in range(12)))]
    rows = pack(groups, row_tokens=8)
    reads = sorted((gid, cid) for row in rows for gid, cid, _ in row.reads)
    assert reads == [(0, 0), (0, 1), (0, 2)] + [(1, i) for i in range(12)]
    assert all(len(row.tokens) <= 8 for row in rows)
    # tokens fed: (4,) and (4, 6); the last tokens are only read
    assert len(prefixes(groups[0].continuations)) == 2
    for row in rows:  # a token sees only itself, its context and its trie ancestors
        mask = row.mask()
        for i, parent in enumerate(row.parents):
            assert mask[i, i] and (parent < 0 or (mask[i] >= mask[parent]).all())


@pytest.mark.slow  # loads the tiny model in transformers
def test_draws_sample_with_their_seeds(engine):
    """--samples K on transformers: draw k's requests are sampled after seeding with draw k's seed
    (per batch: transformers has no per-request generator), so the same draws asked again give the
    same texts, and the K draws of one prompt are not all the same."""
    from socbench.draws import draw_prompts

    prompts = [PromptRequest(item_id=f"d{i}", messages=persona("Who are you?", i),
                             sampling=SamplingSettings(temperature=1.0, max_tokens=8)) for i in range(3)]
    draws = draw_prompts(prompts, 4, 7)
    texts = [r.text for r in engine.generate(draws)]
    assert None not in texts and all(len(set(texts[i:i + 4])) > 1 for i in (0, 4, 8))
    assert [r.text for r in engine.generate(draws)] == texts
