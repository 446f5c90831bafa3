"""Prompt rendering shared by the vLLM and transformers backends, and the one option-scoring planner (theirs,
and the OpenAI-compatible backend's over a server's ``/tokenize``), so all tokenize alike: chat prompts
through the chat template (no special tokens added again), raw prompts and loglikelihood with the
tokenizer's default encoding, continuations split off lm-evaluation-harness's way (the context's trailing
whitespace moves onto them).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from socbench import verbalized
from socbench.engines.base import ResultSink
from socbench.types import Code, LoglikelihoodRequest, PromptRequest

MAX_SINGLE_STEP_CODES = 128  # vLLM's cap on logprob_token_ids per request (larger sets are split)


@dataclass(frozen=True)
class OptionPlan:
    """How one request's codes are scored, in-process and over a server alike: ``single_token`` (each code
    one distinct token, read after the context in one step), ``continuation`` (each code plus ``suffix``,
    the closing quote, a token sequence) or ``top`` (a server without ``/tokenize``: codes looked up by
    text among the top log-probs, ``-inf`` when absent)."""

    method: Literal["single_token", "continuation", "top"]
    continuations: dict[Code, tuple[int, ...]]  # code -> its token ids after the context
    context: tuple[int, ...] = ()  # in-process: the prompt's token ids
    suffix: str = ""  # continuation: the closing quote after each code


def prompt_text(tokenizer, request: PromptRequest) -> str:
    """The text the model sees before it answers (chat template or raw user content)."""
    if not request.chat:
        return "".join(m.content for m in request.messages)
    messages = [{"role": m.role, "content": m.content} for m in request.messages]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def encode(tokenizer, text: str, *, special: bool) -> list[int]:
    return list(tokenizer(text, add_special_tokens=special)["input_ids"])


def started(request: PromptRequest) -> str:
    """The answer prefix that starts an unstructured reply (a structured one is the JSON alone)."""
    return "" if request.structured else request.answer_prefix


def prompt_ids(tokenizer, request: PromptRequest, suffix: str = "") -> list[int]:
    """Token ids of the prompt (plus ``suffix``, e.g. the answer prefix)."""
    return encode(tokenizer, prompt_text(tokenizer, request) + suffix, special=not request.chat)


def split_trailing_space(context: str, continuation: str) -> tuple[str, str]:
    """Move the context's trailing whitespace onto the continuation (lm-eval's rule)."""
    stripped = context.rstrip()
    return stripped, context[len(stripped):] + continuation


def option_plan(tokenizer, request: PromptRequest) -> OptionPlan:
    """In-process: one shared context, one token sequence per code; trailing whitespace (of the answer
    prefix for chat, of the whole text for raw prompts) moves onto the codes."""
    text = prompt_text(tokenizer, request)
    if request.chat:
        prefix, lead = split_trailing_space(request.answer_prefix, "")
        text += prefix
    else:
        text, lead = split_trailing_space(text + request.answer_prefix, "")
    context = tuple(encode(tokenizer, text, special=not request.chat))
    return _plan(request.offered_codes, text, lambda code: _encode_piece(tokenizer, lead + code), context)


def server_texts(prefix: str, codes: Sequence[str]) -> set[str]:
    """Texts whose tokenization by a server's ``/tokenize`` ``server_plan`` needs (the prefix's trailing
    space goes with the code)."""
    closing = _closing(prefix)
    return {prefix.rstrip()} | {prefix + c for c in codes} | {prefix + c + closing for c in codes}


def server_plan(prefix: str, codes: Sequence[str], tokens: dict[str, list[int]] | None) -> OptionPlan:
    """Over a server: the plan from its tokenization of ``server_texts`` (None: it has no tokenizer, or a
    code merges into the prefix, no clean boundary: ``top``)."""
    if tokens is None:
        return OptionPlan("top", {})

    def tail(text: str) -> tuple[int, ...] | None:
        head, full = tokens[prefix.rstrip()], tokens[text]
        return tuple(full[len(head):]) if full[:len(head)] == head and len(full) > len(head) else None

    plan = _plan(codes, prefix, lambda piece: tail(prefix + piece))
    return OptionPlan("top", {}) if None in plan.continuations.values() else plan


def _closing(context: str) -> str:
    return '"' if context.rstrip().endswith('"') else ""


def _plan(codes: Sequence[str], context: str, tokens: Callable[[str], Any],
          ids: tuple[int, ...] = ()) -> OptionPlan:
    """The one rule of both planners: every code one distinct token, read in one step, else each code plus
    the closing quote as a token sequence. ``tokens(text)``: the ids ``text`` adds after ``context``."""
    single = {code: tokens(code) for code in codes}
    first = [t[0] for t in single.values() if t is not None and len(t) == 1]
    if codes and len(first) == len(codes) == len(set(first)):
        return OptionPlan("single_token", single, ids)
    closing = _closing(context)
    return OptionPlan("continuation", {code: tokens(code + closing) for code in codes}, ids, closing)


@functools.lru_cache(maxsize=4096)
def _encode_piece(tokenizer, text: str) -> tuple[int, ...]:
    """An option code's tokens: the same few codes come back in every prompt (4 of the 5 tokenizer
    calls per prompt in logprobs mode, ~15 % of the pipeline's time on the tiny model)."""
    return tuple(encode(tokenizer, text, special=False))


def loglikelihood_ids(tokenizer, request: LoglikelihoodRequest) -> tuple[list[int], list[int]]:
    """(context ids, continuation ids) as lm-evaluation-harness splits them."""
    context, continuation = split_trailing_space(request.context, request.continuation)
    whole = encode(tokenizer, context + continuation, special=True)
    ctx = encode(tokenizer, context, special=True)
    cont = whole[len(ctx):]
    if whole[: len(ctx)] != ctx:  # the join merged across the boundary: encode apart
        cont = encode(tokenizer, continuation, special=False)
    return ctx or [prefix_token(tokenizer)], cont


def prefix_token(tokenizer) -> int:
    """Token that stands for an empty context (BOS, else EOS), as lm-eval does."""
    token = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if token is None:
        raise ValueError("an empty context needs a BOS or EOS token, and this tokenizer has neither")
    return token


def truncate_left(context: list[int], continuation: list[int], max_len: int) -> list[int]:
    """Drop the oldest context tokens so context + continuation fits ``max_len``."""
    room = max_len - len(continuation)
    if room < 1:
        raise ValueError(f"continuation of {len(continuation)} tokens does not fit max length {max_len}")
    return context[-room:]


def _either(texts: Iterable[str]) -> str:
    """Regex alternatives matching one of ``texts`` (longest first, so "10" wins over "1")."""
    return "|".join(re.escape(text) for text in sorted(texts, key=len, reverse=True))


def answer_regex(codes: tuple[Code, ...]) -> str:
    """``{"answer": "<code>"}`` with the code one of ``codes``."""
    return r'\{"answer": "(' + _either(codes) + r')"\}'


NUMBER_REGEX = r'\{"answer": -?\d{1,9}(\.\d{1,6})?\}'  # a numeric question's reply; its range: extraction


def constraint_regex(request: PromptRequest) -> str:
    """The structured reply's regex: a number for a numeric question, a verbalized distribution, one of
    the offered codes, or for a multi-select set (``choose_all``) a JSON list of the options' texts."""
    if request.numeric is not None:
        return NUMBER_REGEX
    if request.mode == "verbalized":
        return verbalized.regex(request.option_order)
    if not request.choose_all:
        return answer_regex(request.offered_codes)
    one = "(" + _either(json.dumps(text, ensure_ascii=False) for _, text in request.options) + ")"
    return r'\{"answer": \[(' + one + "(, " + one + r')*)?\]\}'


def answer_schema(request: PromptRequest) -> dict:
    """The structured reply's JSON schema: a verbalized distribution, a number in the range, one of the
    offered codes, or a list of the options' texts."""
    if request.mode == "verbalized":
        return verbalized.schema(request.option_order)
    answer: dict[str, Any] = {"type": "string", "enum": list(request.offered_codes)}
    if request.numeric is not None:
        answer = {"type": "number", "minimum": request.numeric[0], "maximum": request.numeric[1]}
    if request.choose_all:
        answer = {"type": "array", "items": {"type": "string", "enum": [text for _, text in request.options]}}
    return {"type": "object", "properties": {"answer": answer}, "required": ["answer"],
            "additionalProperties": False}


class Results(list[Any]):
    """One result per request, in request order, each told to ``on_result`` at once as it is set (the cache
    persists it)."""

    def __init__(self, requests: Sequence[Any], on_result: ResultSink | None) -> None:
        super().__init__([None] * len(requests))
        self.on_result = on_result

    def __setitem__(self, index: Any, result: Any) -> None:
        super().__setitem__(index, result)
        if self.on_result is not None:
            self.on_result(index, result)
