"""Checks a run before any flow or model starts: each failure is one ``SocbenchError`` line naming the
setting or file. A unit's own files are checked here only in a single-unit run (in a run over several, it
fails on its own and the others still run). Only prompts that could be too long are tokenized: a byte-level
BPE or byte-fallback token stands for at least one byte, so a prompt has at most its UTF-8 bytes plus
``SPECIAL_MARGIN`` tokens. A backend's settings are checked by its own rules: vLLM builds its ``VllmConfig``
from ``--engine`` and the model's ``config.json`` (no weights; seconds), so settings a model cannot take are
one line with vLLM's reason, not tracebacks after a minute; transformers' device and dtype against torch.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socbench import pipeline
from socbench.engines.openai_settings import api_bases
from socbench.engines.session import get_engine
from socbench.engines.settings import EngineSettings, HfSettings, VllmSettings, vllm_version
from socbench.errors import ConfigError, EngineError, first_problem
from socbench.studies import task_for
from socbench.task import Unit
from socbench.types import GENERATED, PromptRequest

if TYPE_CHECKING:
    from socbench.models import ResolvedModel

log = logging.getLogger("socbench")

CHECKED_WHOLE = 3  # prompts (the longest) counted whole, to check the piecewise count
SPECIAL_MARGIN = 3  # tokens a tokenizer may add that stand for no byte of the text (BOS, EOS, dummy prefix)


def reply_tokens(request: PromptRequest) -> int:
    """Tokens the answer needs: ``max_tokens``, or the longest scored code (tokens: at most its bytes)."""
    if request.mode == "logprobs":
        return max((len(code.encode()) for code in request.offered_codes), default=1)
    return request.sampling.max_tokens


class TokenCounter:
    """Exact token counts of prompts sharing long parts: HF tokenizers cut at special tokens first, so a
    count is its pieces' plus one per special token, each piece tokenized once (where ``exact`` finds that
    false, prompts are encoded whole)."""

    def __init__(self, tokenizer) -> None:
        from socbench.engines._chat import encode

        self._encode = lambda text, special: len(encode(tokenizer, text, special=special))
        specials = {str(t) for t in [*tokenizer.all_special_tokens, *tokenizer.get_added_vocab()] if t}
        # no special tokens: ``(?!)`` never matches, a text is one piece
        self._split = re.compile("|".join(map(re.escape, sorted(specials, key=len, reverse=True))) or "(?!)")
        self._added = {special: self._encode("", special) for special in (False, True)}
        self._piece = functools.cache(lambda piece: self._encode(piece, False))
        self._whole = False

    def _by_pieces(self, text: str, special: bool) -> int:
        pieces = self._split.split(text)
        return self._added[special] + len(pieces) - 1 + sum(map(self._piece, filter(None, pieces)))

    def exact(self, text: str, special: bool) -> int:
        """The count, checked against the whole text's (the first prompts, until one disagrees)."""
        whole = self._encode(text, special)
        self._whole = self._whole or whole != self._by_pieces(text, special)
        return whole

    def count(self, text: str, special: bool) -> int:
        return self._encode(text, special) if self._whole else self._by_pieces(text, special)


def unit_overflow(prompts: Sequence[PromptRequest], tokenizer, context: int) -> tuple[int, int]:
    """How many ``prompts`` (with replies) exceed ``context`` tokens, counting those whose bytes could, and
    the tokens the longest needs with its reply."""
    from socbench.engines._chat import prompt_text

    texts = [prompt_text(tokenizer, r) + r.answer_prefix for r in prompts]
    room = [context - reply_tokens(r) for r in prompts]
    candidates = sorted((i for i, text in enumerate(texts) if len(text.encode()) + SPECIAL_MARGIN > room[i]),
                        key=lambda i: -len(texts[i]))
    counter, over, longest = TokenCounter(tokenizer), 0, 0
    for rank, i in enumerate(candidates):
        measure = counter.exact if rank < CHECKED_WHOLE else counter.count
        n = measure(texts[i], not prompts[i].chat)
        if n > room[i]:
            over += 1
            longest = max(longest, n + context - room[i])
    return over, longest


def check_prompt_lengths(prompts: dict[Unit, list[PromptRequest]], tokenizer, context: int,
                         where: str) -> None:
    """Every prompt and its reply fit ``context`` tokens (from ``where``); else one ConfigError line."""
    overflows = [(unit, *o) for unit, p in prompts.items() if (o := unit_overflow(p, tokenizer, context))[0]]
    if not overflows:
        return
    (unit, over, longest), others = overflows[0], ", ".join(str(o[0].id) for o in overflows[1:])
    also = f" (also {'units' if len(overflows) > 2 else 'unit'} {others})" if others else ""
    raise ConfigError(
        f"{unit.label}: {over} of {len(prompts[unit])} prompts are longer "
        f"than the model's context{also}: the longest needs {longest} tokens with its reply, the "
        f"context is {context} ({where}); use a longer --engine max_model_len on a model that has it, "
        f"or fewer persona attributes (the manifest's persona_attributes: include:)")


def check_output_dir(output_dir: Path, flag: str = "--output_dir", *, create: bool = True) -> None:
    """The output folder can be created and written. ``create=False``: the nearest existing folder must be
    writable, nothing is created (an import that fails later leaves no empty folder behind)."""
    folder = output_dir
    while not create and not folder.exists() and folder.parent != folder:
        folder = folder.parent
    try:
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        elif not folder.is_dir():
            raise NotADirectoryError(20, "not a folder", str(folder))
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise ConfigError(f"{flag} {output_dir}: cannot write there ({exc.strerror or exc})") from None


def check_server(api_base: str, model: str | None = None, api_key: str | None = None,
                 timeout_s: float = 5.0, key_env: str = "OPENAI_API_KEY") -> None:
    """Every OpenAI-compatible base URL answers, accepts the key and lists ``model`` in ``/v1/models`` (a
    server without a model list is not checked further)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    for url in api_bases(api_base):
        try:  # GET <url>/v1/models: its status and JSON body (None: an error's, or not JSON)
            with urllib.request.urlopen(urllib.request.Request(f"{url}/v1/models", headers=headers),
                                        timeout=timeout_s) as response:
                status, body = response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            status, body = exc.code, None
        except json.JSONDecodeError:
            status, body = 200, None
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise EngineError(f"--api_base {url}: server unreachable ({reason})") from None
        if status in (401, 403):
            raise ConfigError(f"--api_key_env {key_env}: the server at {url} refused the key (HTTP {status})")
        data = body.get("data") if isinstance(body, dict) else None
        served = [str(m.get("id")) for m in data if isinstance(m, dict)] if isinstance(data, list) else None
        if model is not None and served is not None and model not in served:
            raise ConfigError(f"--model {model!r}: the server at {url} does not serve it; "
                              f"it serves: {', '.join(served) or 'nothing'}")


def check_engine(engine: EngineSettings) -> int | None:
    """The backend can be used (a server answers and serves ``--model``; or the model resolves and its
    backend accepts the settings), before any weights load; the model's context (None: a server)."""
    if engine.api_type == "openai":
        key = os.environ.get(engine.api_key_env)
        if key is None and engine.api_key_env != "OPENAI_API_KEY":
            raise ConfigError(f"--api_key_env {engine.api_key_env}: that environment variable is not set")
        check_server(engine.api_base or "", engine.model, (key or "").strip() or None,
                     key_env=engine.api_key_env)
        return None
    from socbench.models import resolve_model

    model = resolve_model(engine.model)
    if engine.api_type == "hf":
        return check_hf(model, HfSettings.from_options(engine.engine_args))
    return check_vllm(model, VllmSettings.for_host(engine.engine_args))


# ``vllm.LLM`` turns these dict arguments into vLLM config objects before ``EngineArgs``
_CONFIG_OBJECTS = {"structured_outputs_config": "StructuredOutputsConfig",
                   "profiler_config": "ProfilerConfig",
                   "attention_config": "AttentionConfig", "kv_transfer_config": "KVTransferConfig",
                   "compilation_config": "CompilationConfig"}


def _engine_args(model: ResolvedModel, kwargs: dict[str, Any]):
    """``EngineArgs`` as ``vllm.LLM.__init__`` builds them (its dict arguments made config objects)."""
    import vllm.config
    from vllm.config.compilation import CompilationMode
    from vllm.engine.arg_utils import EngineArgs

    kwargs = dict(kwargs)
    for name, cls_name in _CONFIG_OBJECTS.items():
        value = kwargs.get(name)
        if name == "compilation_config" and isinstance(value, int):
            kwargs[name] = vllm.config.CompilationConfig(mode=CompilationMode(value))
        elif isinstance(value, dict):
            kwargs[name] = getattr(vllm.config, cls_name)(**value)
    return EngineArgs(model=str(model.path), **kwargs)


def _reason(exc: BaseException) -> str:
    """A backend's own words for a refusal, one line (pydantic: the first error's message)."""
    with contextlib.suppress(Exception):  # not a pydantic error
        return " ".join(first_problem(exc)[2].split())  # type: ignore[arg-type]
    return " ".join(str(exc).split()) or type(exc).__name__


def check_vllm(model: ResolvedModel, settings: VllmSettings) -> int:
    """vLLM's own configuration for ``model``; its context length (a refusal: one ConfigError line)."""
    from socbench.engines.vllm import apply_vllm_env, llm_kwargs

    apply_vllm_env(settings)
    # building a config logs a dozen INFO/WARNING lines; vLLM re-applies its own logging configuration
    # on the way, so a logger's level would not hold: logging below ERROR is off meanwhile
    logging.disable(logging.WARNING)
    try:
        config = _engine_args(model, llm_kwargs(settings)).create_engine_config()
    except Exception as exc:  # noqa: BLE001 - any refusal of vLLM's is the user's settings
        logging.disable(logging.NOTSET)
        log.debug("vLLM refused the settings", exc_info=True)
        raise ConfigError(f"--engine: vLLM {vllm_version()} refuses these settings for model {model.name}: "
                          f"{_reason(exc)}") from None
    finally:
        logging.disable(logging.NOTSET)
    return int(config.model_config.max_model_len)


def check_hf(model: ResolvedModel, settings: HfSettings) -> int | None:
    """transformers settings against torch (device, dtype, threads) and the model's config; its
    context length (tokens)."""
    import torch
    from transformers import AutoConfig

    from socbench.engines.hf import hf_context

    try:
        kind = torch.device(settings.resolved_device()).type
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"--engine device={settings.device!r}: not a torch device "
                          f"({_reason(exc)})") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"--engine device={settings.device!r}: this host has no CUDA device (torch "
                          f"{torch.__version__}); use cpu or auto")
    if kind not in ("cpu", "cuda", "mps", "xpu"):
        raise ConfigError(f"--engine device={settings.device!r}: socbench runs transformers on cpu or cuda")
    if kind == "cuda" and settings.dtype == "bfloat16" and not torch.cuda.is_bf16_supported():
        raise ConfigError("--engine dtype='bfloat16': this GPU has no bfloat16; use float16 or float32")
    try:
        config = AutoConfig.from_pretrained(model.path)
    except Exception as exc:  # noqa: BLE001 - transformers' reason, one line
        raise ConfigError(f"--model {model.name}: transformers cannot read its config "
                          f"({_reason(exc)})") from None
    return hf_context(config)


def check_run(config: Any) -> None:
    """A run of any Task: its units and data, the task's own checks and the output folder; then, unless the
    engine cache answers every request (a rerun rescores with the server down), the engine and that every
    prompt fits the model's context. The prompts built here are the ones the flow sends (remembered)."""
    study = task_for(config)
    for note in study.check():
        log.warning(note)
    plans = pipeline.plans(study)
    check_output_dir(config.output_dir)
    settings = config.engine_settings()
    requests = pipeline.all_requests(plans)
    if requests and not pipeline.uncached(get_engine(settings), requests):
        used = f"the server at {settings.api_base}" if settings.api_type == "openai" else settings.model
        log.warning("every answer of this run is in the engine cache (%s): %s is not used",
                    settings.cache_dir, used)
        return
    context = check_engine(settings)
    if settings.api_type == "openai" and getattr(config, "mode", None) in GENERATED and config.use_structured:
        # with --structured over the API, a tiny constrained request (OpenAIEngine.check_structured)
        from socbench.engines.registry import create_engine

        create_engine("openai", settings.model, settings=settings.backend_options()).check_structured()
    if context is not None:
        chat = {unit: [r for r in found.prompts.requests if isinstance(r, PromptRequest)]
                for unit, found in plans.items()}
        vllm = settings.api_type == "vllm"
        where = "--engine max_model_len" if vllm and settings.engine_args.get("max_model_len") else \
            "the model's own max_model_len" if vllm else "the model's config"
        check_prompt_lengths(chat, model_tokenizer(settings), context, where)


def model_tokenizer(settings: EngineSettings):
    """The tokenizer the backend uses: the model folder's, unless ``--engine tokenizer`` names another."""
    from transformers import AutoTokenizer

    from socbench.models import resolve_model

    folder = settings.engine_args.get("tokenizer") or resolve_model(settings.model).path
    # no limit of its own: it would warn about every prompt longer than the model (we count those)
    return AutoTokenizer.from_pretrained(folder, model_max_length=sys.maxsize)
