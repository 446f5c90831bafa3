"""transformers backend: the reference implementation, and a fallback where vLLM is absent. Scoring packs
contexts and their continuations into few forward passes (``_packed``); ``structured`` requests get free
text (no constrained decoding in plain transformers).
"""

from __future__ import annotations

import gc
import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from socbench.engines import _chat, _packed
from socbench.engines.base import ResultSink
from socbench.engines.settings import HfSettings
from socbench.errors import EngineError
from socbench.models import ResolvedModel
from socbench.types import (
    EngineResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    PromptRequest,
    SamplingSettings,
)

log = logging.getLogger(__name__)


class HfEngine:
    """The Engine protocol on ``AutoModelForCausalLM``; the model loads on first use."""

    def __init__(self, model: ResolvedModel, settings: HfSettings | None = None) -> None:
        self.model = model
        self.settings = settings or HfSettings()
        self._model = None
        self._tokenizer = None
        self._warned_structured = False

    @property
    def identity(self) -> dict[str, str]:
        return {"backend": "hf", "model": self.model.name, "fingerprint": self.model.fingerprint,
                "dtype": self.settings.dtype}

    def load(self) -> None:
        """Load the model now (it otherwise loads on the first request)."""
        self._load()

    def _load(self):
        if self._model is not None:
            return self._model, self._tokenizer
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            if self.settings.resolved_threads():
                torch.set_num_threads(self.settings.resolved_threads())
            dtype = "auto" if self.settings.dtype == "auto" else getattr(torch, self.settings.dtype)
            self._tokenizer = AutoTokenizer.from_pretrained(self.model.path)
            model = AutoModelForCausalLM.from_pretrained(self.model.path, dtype=dtype)
            self._model = model.to(self.settings.resolved_device()).eval()
        except Exception as exc:
            raise EngineError(f"transformers could not load model {self.model.name} ({self.model.path}): "
                              f"{type(exc).__name__}: {exc}") from exc
        return self._model, self._tokenizer

    def close(self) -> None:
        """Drop the model; idempotent."""
        had_model, self._model, self._tokenizer = self._model is not None, None, None
        if had_model:
            import torch

            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()

    def generate(self, requests: Sequence[PromptRequest],
                 on_result: ResultSink | None = None) -> list[EngineResult]:
        """Batched (left-padded) generation; requests with equal sampling settings share a batch."""
        self._load()
        if any(r.structured for r in requests) and not self._warned_structured:
            log.warning("the hf backend cannot constrain output; structured requests get free text")
            self._warned_structured = True
        results = _chat.Results(requests, on_result)
        groups: dict[SamplingSettings, list[int]] = defaultdict(list)
        for i, request in enumerate(requests):
            groups[request.sampling].append(i)
        size = self.settings.batch_size
        for sampling, indices in groups.items():
            for start in range(0, len(indices), size):
                batch = indices[start:start + size]
                texts = self._generate_batch([requests[i] for i in batch], sampling)
                for i, text in zip(batch, texts):
                    results[i] = EngineResult(key=requests[i].key, text=requests[i].answer_prefix + text)
        return results

    def _generate_batch(self, batch: list[PromptRequest], sampling: SamplingSettings) -> list[str]:
        import torch

        model, tok = self._load()
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        ids = [_chat.prompt_ids(tok, r, r.answer_prefix) for r in batch]
        width = max(len(x) for x in ids)  # left-padded
        input_ids = torch.tensor([[pad] * (width - len(x)) + x for x in ids], device=model.device)
        mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids], device=model.device)
        kwargs = {"do_sample": sampling.temperature > 0, "max_new_tokens": sampling.max_tokens}
        if sampling.temperature > 0:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p)
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)  # seeded per batch, not per request
        with torch.no_grad():
            out = model.generate(input_ids=input_ids, attention_mask=mask, pad_token_id=pad, **kwargs)
        new = out[:, input_ids.shape[1]:]
        return [tok.decode(row, skip_special_tokens=True) for row in new]

    def option_logprobs(self, requests: Sequence[PromptRequest],
                        on_result: ResultSink | None = None) -> list[EngineResult]:
        """log P(code | prompt + answer prefix) per offered code; each prompt computed once."""
        _, tok = self._load()
        results = _chat.Results(requests, on_result)
        plans: dict[int, _chat.OptionPlan] = {}
        for i, request in enumerate(requests):
            plan = _chat.option_plan(tok, request)
            if plan.continuations:
                plans[i] = plan
            else:
                results[i] = EngineResult(key=request.key, error="no offered codes to score")
        order = list(plans)
        groups = [_packed.Group(plans[i].context, tuple(plans[i].continuations.values())) for i in order]
        got: dict[int, list[float | None]] = {i: [None] * len(plans[i].continuations) for i in order}
        for gid, cid, (logprob, _) in self._scores(groups):
            i = order[gid]
            got[i][cid] = logprob
            if None not in got[i]:
                logprobs = dict(zip(plans[i].continuations, got.pop(i)))
                results[i] = EngineResult(key=requests[i].key, option_logprobs=logprobs)
        return results

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest],
                      on_result: ResultSink | None = None) -> list[LoglikelihoodResult]:
        """Requests grouped by context: each context computed once for all its continuations."""
        model, tok = self._load()
        max_len = hf_context(model.config) or 1 << 30
        by_context: dict[tuple[int, ...], list[tuple[int, tuple[int, ...]]]] = defaultdict(list)
        for i, request in enumerate(requests):
            ctx, cont = _chat.loglikelihood_ids(tok, request)
            by_context[tuple(_chat.truncate_left(ctx, cont, max_len))].append((i, tuple(cont)))
        members = list(by_context.values())
        groups = [_packed.Group(ctx, tuple(c for _, c in m)) for ctx, m in by_context.items()]
        results = _chat.Results(requests, on_result)
        for gid, cid, (logprob, greedy) in self._scores(groups):
            i, cont = members[gid][cid]
            results[i] = LoglikelihoodResult(key=requests[i].key, logprob=logprob, n_tokens=len(cont),
                                             is_greedy=greedy)
        return results

    def _scores(self, groups: list[_packed.Group]):
        model, _ = self._load()
        return _packed.iter_scores(model, groups, self.settings.pack_tokens, self.settings.pack_rows)


def hf_context(config: Any) -> int | None:
    """The model's own context: ``max_position_embeddings`` (or the older names), of the text part;
    None when its config names none."""
    text = getattr(config, "get_text_config", lambda: config)()
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(text, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None
