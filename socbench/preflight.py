"""Checks a run's settings before any flow or model starts: each failure is one ``SocbenchError``
line naming the setting. A domain's own files are checked here only in a single-domain run;
in a run over several, that domain fails on its own and the others still run.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from socbench.config import RunConfig
from socbench.data.loaders import dataset_root, sample_dir
from socbench.data.variables import read_variables
from socbench.data_use import check_data_use
from socbench.domains import select_domains
from socbench.engines.session import get_engine
from socbench.engines.settings import EngineSettings
from socbench.errors import ConfigError, EngineError
from socbench.prompt_checks import check_prompt_lengths, run_prompts, uncached

log = logging.getLogger("socbench")

if TYPE_CHECKING:
    from socbench.mcq.config import McqConfig
    from socbench.types import McqData


def check_output_dir(output_dir: Path, flag: str = "--output_dir", *, create: bool = True) -> None:
    """The output folder can be created and written (``flag`` names it in the error). With
    ``create=False`` nothing is created: the nearest existing folder must be writable (an
    import that fails later then leaves no empty folder behind)."""
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


def _get_models(url: str, api_key: str | None, timeout_s: float) -> tuple[int, object]:
    """(HTTP status, parsed JSON body or None) of ``GET <url>/v1/models``."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{url}/v1/models", headers=headers),
                                    timeout=timeout_s) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except json.JSONDecodeError:
        return 200, None


def check_server(api_base: str, model: str | None = None, api_key: str | None = None,
                 timeout_s: float = 5.0, key_env: str = "OPENAI_API_KEY") -> None:
    """Every OpenAI-compatible base URL answers, accepts the key (401/403 names ``--api_key_env``)
    and lists ``model`` in ``/v1/models`` (else a ConfigError naming ``--model``); a server
    without a model list is not checked further."""
    for url in (u.strip().rstrip("/").removesuffix("/v1") for u in api_base.split(",")):
        try:
            status, body = _get_models(url, api_key, timeout_s)
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


def check_structured(config: RunConfig) -> None:
    """With ``--structured`` over the API, a tiny constrained request (``OpenAIEngine.check_structured``)."""
    if config.engine.api_type != "openai" or config.mode != "generate" or not config.use_structured:
        return
    from socbench.engines.registry import create_engine

    engine = config.engine
    create_engine(engine.api_type, engine.model, settings=engine.backend_options()).check_structured()


def check_engine(engine: EngineSettings) -> int | None:
    """The backend can be used: a server answers, accepts the key and serves ``--model``; or the
    model resolves and its backend accepts the settings (vLLM's own configuration, transformers'
    device and dtype), before any weights load. The model's context in tokens (None: a server)."""
    if engine.api_type == "openai":
        key = os.environ.get(engine.api_key_env)
        if key is None and engine.api_key_env != "OPENAI_API_KEY":
            raise ConfigError(f"--api_key_env {engine.api_key_env}: that environment variable is not set")
        check_server(engine.api_base or "", engine.model, (key or "").strip() or None,
                     key_env=engine.api_key_env)
        return None
    from socbench.engines.engine_check import check_hf, check_vllm
    from socbench.engines.settings import HfSettings, VllmSettings
    from socbench.models import resolve_model

    model = resolve_model(engine.model)
    if engine.api_type == "hf":
        return check_hf(model, HfSettings.from_options(engine.engine_args))
    return check_vllm(model, VllmSettings.for_host(engine.engine_args))


def check_run(config: RunConfig) -> None:
    """Data folder, sample size, domains, where their data may go (``socbench.data_use``), a lone
    domain's files, output folder; then, unless
    the engine cache answers every prompt (then nothing is sent: a rerun rescores with the server
    down or the GPU elsewhere), the engine and that every prompt fits the model's context."""
    domains = select_domains(config.domain_id, config.start_domain_id, config.dataset_dir)
    sample_dir(dataset_root(config.dataset_dir), config.dataset_size)
    acknowledged = check_data_use(config, domains)  # licensed data: before anything is sent
    if acknowledged:
        log.warning(acknowledged)
    if config.export_wide:
        if not config.export:
            raise ConfigError("--export_wide: name the formats with --export (e.g. --export sav)")
        for domain in domains:  # --wide needs what the import kept of the source file
            read_variables(dataset_root(config.dataset_dir), domain.slug)
    prompts = run_prompts(config, domains)  # a lone domain's files are read here (an error is the run's)
    check_output_dir(config.output_dir)
    settings = config.engine_settings()
    if prompts and not uncached(get_engine(settings), prompts):
        used = f"the server at {settings.api_base}" if settings.api_type == "openai" else settings.model
        log.warning("every answer of this run is in the engine cache (%s): %s is not used",
                    settings.cache_dir, used)
        return
    context = check_engine(settings)
    check_structured(config)
    if context is not None:
        check_prompt_lengths(prompts, _tokenizer(settings), context, _context_source(settings))


def _tokenizer(settings: EngineSettings):
    """The tokenizer the backend uses (vLLM and transformers both load the model folder's, unless
    ``--engine tokenizer`` names another)."""
    from transformers import AutoTokenizer

    from socbench.models import resolve_model

    folder = settings.engine_args.get("tokenizer") or resolve_model(settings.model).path
    # no limit of its own: it would warn about every prompt longer than the model (we count those)
    return AutoTokenizer.from_pretrained(folder, model_max_length=sys.maxsize)


def _context_source(settings: EngineSettings) -> str:
    if settings.api_type == "vllm" and settings.engine_args.get("max_model_len"):
        return "--engine max_model_len"
    return "the model's own max_model_len" if settings.api_type == "vllm" else "the model's config"


def check_mcq(config: McqConfig) -> McqData:
    """Dataset (and its circular expansion), output folder and engine, before Prefect or a model
    starts; the data read, so the caller need not read it again."""
    from socbench.mcq.datasets import load_mcq

    data = load_mcq(config.dataset, limit=config.limit, fewshot=max(config.k_shot) > 0)
    settings = config.expansion
    if settings is not None:
        from socbench.mcq.circular import check_circular

        check_circular(data, settings)
    check_output_dir(config.output_dir)
    check_engine(config.engine_settings())
    return data
