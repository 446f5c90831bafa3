"""Test session setup: project-local state, engine env for the CPU build, shared fixtures.

Environment is set before anything imports prefect or vllm (stack-notes: Prefect reads
PREFECT_HOME at import; vLLM on CPU needs a KV-cache size and in-process engine).
"""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Before numpy/scipy load OpenBLAS (it reads this once): the tests' matrices are small, and OpenBLAS's
# second thread only spun; a LogisticRegression fit of test_synth took 2.0 CPU s with it, 0.3 s without.
# Not OMP_NUM_THREADS: the engines' torch threads stay as a user gets them.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from socbench.cli.prefect_api import drain as drain_prefect_workers
from socbench.cli.prefect_api import use_everywhere
from socbench.processes import Postgres, PrefectServer, cpu_defaults, prefect_server
from tests.support.prefect_cli import prefect_commands
from tests.support.session_api import FOLDER_ENV, Controller, Shared

pytest_plugins = ["tests.support.guard",  # a test not marked slow fails where it starts a process
                  "tests.support.lingering",  # nor may Prefect records outlive their API
                  "tests.support.workers"]  # `make test`'s grouping and order over xdist's workers

ROOT = Path(__file__).resolve().parents[1]
# beside the checkout; SOCBENCH_SHARED_ISSP points elsewhere (a worktree one level deeper)
SHARED_ISSP = Path(os.environ.get("SOCBENCH_SHARED_ISSP") or ROOT.parent / "shared" / "issp")
DEMO_DATA = ROOT / "data" / "demo" / "Dataset_all"
STARTUP_S = 480  # a Prefect server's start-up, waited for: minutes on a loaded 2-core host

_STATE = Path(tempfile.mkdtemp(prefix="socbench-tests-"))
_HOME = Path(os.environ.get("SOCBENCH_HOME", str(ROOT / ".socbench")))
for key, value in {
    "SOCBENCH_HOME": str(_HOME),
    "PREFECT_HOME": str(_STATE / "prefect"),
    "PREFECT_MEMO_STORE_PATH": str(_STATE / "prefect" / "memo_store.toml"),
    "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(_STATE / "prefect" / "results"),
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    # kept between sessions and shared by the workers, as socbench keeps it (``apply_vllm_env``): vLLM
    # inspects a model's architecture in a subprocess (~20 CPU s: it imports vLLM) unless it is cached there
    "VLLM_CACHE_ROOT": str(_HOME / "vllm"),
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    # OpenMP threads (torch's libgomp, read when torch loads) sleep between ops instead of spinning: on a
    # host with more runnable processes than cores (3 workers on 2) an in-process vLLM engine's 2 threads
    # burned CPU waiting for each other: SmolLM2's 24 tokens took 12-19 CPU s, 2.2-2.6 passive. Not the count.
    "OMP_WAIT_POLICY": "PASSIVE",
}.items():
    os.environ.setdefault(key, value)
cpu_defaults()


@pytest.fixture(scope="session")
def battery(tmp_path_factory: pytest.TempPathFactory):
    """Issue 42's battery of real public survey files (``fixtures/cardata.py``), written once."""
    from fixtures.cardata import unavailable, write_battery

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    return write_battery(tmp_path_factory.mktemp("cardata"))


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
def memo_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run cache folder (``socbench.memo``) for the session's synthetic runs: runs on the same people
    and answers fit the demographic model once and read it back, as a real rerun does."""
    return tmp_path_factory.mktemp("memo-cache")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-weight Qwen2 model with a ChatML template, built locally in seconds."""
    from support.tiny_model import build_tiny_model

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


def _server(folder: Path, postgres: Postgres | None = None) -> PrefectServer:
    """A Prefect server (not started) with its database in ``folder``, or on ``postgres``: the one
    socbench starts for a run of its own (no UI, scheduler or late-runs service: a third of the CPU
    to start, and it came up where the full server timed out at load 13), stopped if pytest dies."""
    database = postgres.url if postgres else f"sqlite+aiosqlite:///{folder / 'prefect.db'}"
    folder.mkdir(parents=True, exist_ok=True)  # not PREFECT_HOME's database: ephemeral runs use that
    env = {**os.environ, "PREFECT_API_DATABASE_CONNECTION_URL": database}
    return PrefectServer(env, log=folder / "prefect-server.log", private=True)


def prefect_api(folder: Path, postgres: bool = False, server: PrefectServer | None = None):
    """A Prefect server as the API of this context's in-process flows, its database in ``folder``
    (``postgres``: a throwaway PostgreSQL cluster, as for several workers; ``server``: one already
    spawned); yields its URL, and stops it after draining Prefect's workers into it."""
    if postgres and not Postgres.available():
        pytest.skip("PostgreSQL not found (make setup installs Debian's postgresql)")
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(Postgres()) if postgres else None
        server = server or _server(folder, cluster)
        stack.callback(server.stop)
        if server.proc is None:
            server.spawn()
        server.wait(STARTUP_S)
        yield from on_api(server.api_url)


def on_api(url: str):
    """The API at ``url`` as this context's Prefect API; yields it; drains Prefect's workers into it after."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: url}):
        before = os.environ.get("PREFECT_API_URL")
        # in the environment too, as the CLI does for its own API: threads without this context use it,
        # and a CLI run in this process (``cli.main``) starts no server of its own
        use_everywhere(url)
        try:
            yield url
        finally:
            # Prefect's log and event workers outlive a flow run, bound to the API they started on:
            # drained while it still answers, the next flow starts new ones on its API. Left bound to a
            # stopped API, every later event waited on reconnects and the process sat for minutes at exit.
            drain_prefect_workers()
            use_everywhere(before)


_SESSION_API: list[PrefectServer | Shared] = []  # spawned (or asked for) at collection if a test will use it
_CONTROLLER: list[Controller] = []  # pytest-xdist's controller: the server its workers share


def _uses_session_api(item: pytest.Item) -> bool:
    """Whether the test asks for this file's ``api_url`` (directly or through ``cli_api_env``), not a
    module's own (tests/test_sweep.py has one on PostgreSQL)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.get("api_url") if info is not None else None
    return bool(defs) and Path(defs[-1].func.__code__.co_filename) == Path(__file__)


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist's controller: one session Prefect API for all its workers (``support/session_api.py``),
    spawned once a worker asks for it; the workers find it through the environment they inherit."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    folder = _STATE / "prefect-api"
    os.environ[FOLDER_ENV] = str(folder)
    _CONTROLLER.append(Controller(folder, lambda: _server(folder), STARTUP_S).start())


def pytest_collection_finish(session: pytest.Session) -> None:
    """Spawn the session's Prefect API as soon as the tests are known, if one of them uses it (a worker
    of pytest-xdist asks its controller for the one they share): it boots (~25 CPU s, a minute or more on
    a loaded host) while the tests before it run.
    Then the garbage collector leaves what collection built (modules, test items) alone from here on and
    runs a tenth as often: the fast suite spent 10 CPU s in it, 7.5 s in full collections rescanning that."""
    if any(_uses_session_api(item) for item in session.items):
        shared = os.environ.get(FOLDER_ENV) if hasattr(session.config, "workerinput") else None
        own = shared is None
        _SESSION_API.append(_server(_STATE / "prefect-api").spawn() if own else Shared(Path(shared)).want())
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def pytest_unconfigure(config: pytest.Config) -> None:
    for server in _SESSION_API:  # spawned, but no test got to use it (deselected, interrupted)
        server.stop()
    for controller in _CONTROLLER:  # every worker has ended (and drained its records into the API)
        controller.stop()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before each test: Prefect's console logging on an open stream (``support.cli``), so a flow's log
    line is never held back by a finished test's closed capture and printed into a later test's output."""
    from support.cli import prefect_console_on_open_stream

    prefect_console_on_open_stream()


@pytest.fixture(scope="session")
def api_url():
    """One Prefect API for every in-process flow test and CLI run of the session."""
    yield from prefect_api(_STATE / "prefect-api", server=_SESSION_API[0] if _SESSION_API else None)


def prefect_env(tmp_path: Path) -> dict:
    """Project-local Prefect state for a server, its workers and the ``prefect`` commands."""
    home = tmp_path / "prefect"
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**os.environ,
            "PREFECT_HOME": str(home),
            "PREFECT_MEMO_STORE_PATH": str(home / "memo_store.toml"),
            "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(home / "results"),
            # a worker's poll costs the server ~33 ms of CPU: every 5 s, a run waits at most that to start
            "PREFECT_WORKER_QUERY_SECONDS": "5",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "SOCBENCH_PROJECT_DIR": str(ROOT),
            "TMPDIR": str(tmp_path / "tmp"),
            "PYTHONUNBUFFERED": "1"}  # the test reads the worker's log as it is written


def prefect_cli(env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``prefect ...`` (the venv's console script) in the project root."""
    return subprocess.run([str(Path(sys.executable).parent / "prefect"), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=check, timeout=900)


@pytest.fixture(scope="session")
def workers_server(tmp_path_factory: pytest.TempPathFactory):
    """A Prefect server with automations for the deployments run by real process workers (test_prefect_e2e,
    test_sweep_e2e: one group on one xdist worker, so it starts once: ~30 CPU s), and the project's
    deployments (prefect.yaml, deployments/gpu.yaml) with their work pools, the zombie-runs automation and
    the engine limit of test_sweep_e2e's GPU host ``gpubox``; yields its clients' environment.
    On a throwaway PostgreSQL where installed, as docs/scale-out.md asks once several workers poll it: on
    SQLite a loaded host's server logged 1,826 "database is locked" and a watched deployment run never
    returned. The tests find their own runs by name."""
    folder = tmp_path_factory.mktemp("workers-server")
    # the services these tests use (automations, events, concurrency leases), not the UI or schedules
    lean = {f"PREFECT_SERVER_SERVICES_{name}_ENABLED": "false"
            for name in ("SCHEDULER", "LATE_RUNS", "PAUSE_EXPIRATIONS", "CANCELLATION_CLEANUP")}
    env = {**prefect_env(folder), **lean, "PREFECT_UI_ENABLED": "false"}
    with prefect_server(env, folder / "server.log", postgres=Postgres.available()) as env:
        # as a user sets a server up (docs/scale-out.md), in one process (``support.prefect_cli``: six
        # ``prefect`` processes spent ~3 CPU s each importing): test_sweep_e2e's GPU host limit and the
        # zombie-runs automation too (no run of test_prefect_e2e sends the heartbeats it watches)
        prefect_commands(env, ROOT, *(["work-pool", "create", pool, "--type", "process", "--overwrite"]
                                      for pool in ("socbench-local", "socbench-gpu")),
                         ["--no-prompt", "deploy", "--all"],
                         ["--no-prompt", "deploy", "--all", "--prefect-file", "deployments/gpu.yaml"],
                         ["gcl", "create", "socbench-gpus-gpubox", "--limit", "1"],
                         ["automation", "create", "--from-file", "deployments/zombie-runs.yaml"])
        yield env


@pytest.fixture(scope="session")
def cli_api_env(api_url: str) -> dict[str, str]:
    """The environment of a ``socbench`` subprocess that runs its flows on the session's Prefect API
    (``api_url``): without ``PREFECT_API_URL`` each run starts a Prefect server of its own (~25 CPU s).
    A test of what a user's run does on its own API (Ctrl-C, nothing left running) leaves it out."""
    return {**os.environ, "PREFECT_API_URL": api_url, "OPENAI_API_KEY": "sk-test"}


@pytest.fixture(scope="session")
def prefect_db(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A copy of the session API's database once that API answers: a Prefect home of a user's run with its
    database in place, as after a user's first run (a server's start on it: 11 CPU s; on a fresh one, which
    migrates it: 21). None where this session spawned no API (a file run alone): the home starts empty."""
    import sqlite3

    if not _SESSION_API:
        return None
    server = _SESSION_API[0].wait(STARTUP_S)
    database = server.database if isinstance(server, Shared) else _STATE / "prefect-api" / "prefect.db"
    copy = tmp_path_factory.mktemp("prefect-db") / "prefect.db"
    with contextlib.closing(sqlite3.connect(database)) as source, \
            contextlib.closing(sqlite3.connect(copy)) as target:
        source.backup(target)
    return copy


@pytest.fixture()
def cli_in_process():
    """``socbench ...`` in this process (``support.cli``): its exit code, argparse's own errors included;
    the environment defaults the CLI sets are undone after. Error paths are tested this way, and
    one real subprocess per promise (exit 2, one line, no traceback; exit 1; Ctrl-C) stays."""
    from support.cli import cli_environment, exit_code

    with cli_environment():
        yield exit_code


@pytest.fixture(scope="session")
def engine_pool():
    """In-process engines shared by the session (see ``support.engines``), closed at its end."""
    from support.engines import EnginePool

    pool = EnginePool()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture()
def shared_engines(engine_pool):
    """Inside the test, a flow's in-process vLLM engine is the session's one for its model and settings."""
    with engine_pool.installed():
        yield engine_pool


# ------------------------------------------------------------- vLLM's own OpenAI server


def _serve(model_dir: Path, name: str, folder: Path, dtype: str = "bfloat16", aliases: tuple[str, ...] = ()):
    """Start vLLM's OpenAI server on ``model_dir``, yield it, stop it; no process may be left."""
    from tests.vllm_server import VllmServer

    server = VllmServer(model_dir, name, folder / "server.log", dtype=dtype, aliases=aliases)
    try:
        yield server.start()
    finally:
        server.stop()
        assert not server.group_alive(), "a vLLM server process outlived its fixture"


@pytest.fixture(scope="session")
def vllm_server_tiny(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """vLLM's OpenAI server on the tiny model, served as ``tiny`` and as ``tiny-b`` (a second model for
    the sweep, without a second server's ~40 CPU s start), fp32 so its log-probs equal transformers',
    max length 2048, one per session. Tests may ``kill()`` and ``start()`` it again on the same port;
    use ``tiny_server`` to get it running."""
    yield from _serve(tiny_model, "tiny", tmp_path_factory.mktemp("vllm-tiny"), dtype="float32",
                      aliases=("tiny-b",))


@pytest.fixture()
def tiny_server(vllm_server_tiny):
    """``vllm_server_tiny``, (re)started if an earlier test left it stopped."""
    return vllm_server_tiny.start()
