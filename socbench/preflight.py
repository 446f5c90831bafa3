"""Checks a run's settings before any flow or model starts, so mistakes cost seconds.

Each failure is one ``SocbenchError`` line naming the setting. Problems inside one domain's
files are checked here only when the run has that one domain (then they are the whole run's
problem: one line, exit 2); in a run over several, that domain fails on its own and the
others still run.
"""

from __future__ import annotations

import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from socbench.config import RunConfig
from socbench.data.loaders import dataset_root, load_domain, sample_dir
from socbench.domains import select_domains
from socbench.engines.settings import EngineSettings
from socbench.errors import ConfigError, EngineError

if TYPE_CHECKING:
    from socbench.mcq.config import McqConfig


def check_output_dir(output_dir: Path, flag: str = "--output_dir") -> None:
    """The output folder can be created and written (``flag`` names it in the error)."""
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=output_dir, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise ConfigError(f"{flag} {output_dir}: cannot write there ({exc.strerror or exc})") from None


def check_server(api_base: str, timeout_s: float = 5.0) -> None:
    """Every OpenAI-compatible base URL answers (any HTTP status counts as reachable)."""
    for url in (u.strip().rstrip("/") for u in api_base.split(",")):
        try:
            urllib.request.urlopen(f"{url}/models", timeout=timeout_s).close()
        except urllib.error.HTTPError:
            continue  # reachable; auth or routing problems surface per request with their reason
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise EngineError(f"--api_base {url}: server unreachable ({reason})") from None


def check_engine(engine: EngineSettings) -> None:
    """The backend can be reached: a server answers (and its key variable is set), or a model resolves."""
    if engine.api_type == "openai":
        check_server(engine.api_base or "")
        if os.environ.get(engine.api_key_env) is None and engine.api_key_env != "OPENAI_API_KEY":
            raise ConfigError(f"--api_key_env {engine.api_key_env}: that environment variable is not set")
    else:
        from socbench.models import resolve_model

        resolve_model(engine.model)


def check_run(config: RunConfig) -> None:
    """Data folder, sample size, domains (a lone domain's files too), output folder, engine."""
    domains = select_domains(config.domain_id, config.start_domain_id, config.dataset_dir)
    sample_dir(dataset_root(config.dataset_dir), config.dataset_size)
    if len(domains) == 1:
        load_domain(config.dataset_dir, domains[0], config.dataset_size, config.interview_count)
    check_output_dir(config.output_dir)
    check_engine(config.engine)


def check_mcq(config: McqConfig) -> None:
    """Dataset (and its circular expansion), output folder and engine, before Prefect or a model starts."""
    from socbench.mcq.datasets import load_mcq

    data = load_mcq(config.dataset, limit=config.limit, fewshot=max(config.k_shot) > 0)
    settings = config.circular_settings()
    if settings is not None:
        from socbench.mcq.circular import check_circular

        check_circular(data, settings)
    check_output_dir(config.output_dir)
    check_engine(config.engine)
