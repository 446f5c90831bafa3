"""``make test-fast`` starts nothing: a test not marked ``slow`` fails where it starts a process.

Enforced rather than trusted, in every run (``make test`` too, so CI catches a new unmarked test):
while such a test sets up or runs, these fail it, naming what it started —
- any child process: ``subprocess`` (``asyncio``'s too), ``os.fork``/``exec``/``spawn``/``system``,
  ``multiprocessing`` (CLI runs, vLLM's server, Prefect's API server or test harness, a browser);
- an in-process model: socbench's transformers and vLLM engines loading, ``transformers``'
  ``from_pretrained``, ``vllm.LLM``, building the tiny model or converting SmolLM2;
- importing torch, transformers or vLLM (seconds before any model loads);
- a Prefect flow run.
The call raises, and the test fails even if the code under test swallowed that error.
Threads in the test process (the fake OpenAI server) are allowed: they start no process.
"""

from __future__ import annotations

import functools
import importlib
import multiprocessing.process
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn",
                            "os.system", "os.exec"})
HEAVY_IMPORTS = frozenset({"torch", "transformers", "vllm"})
# (module, attribute path) of calls that load a model in-process or run a flow; wrapped once imported.
LOADERS = (
    ("socbench.engines.hf", "HfEngine._load"),
    ("socbench.engines.vllm", "VllmEngine._engine"),
    ("support.tiny_model", "build_tiny_model"),
    ("socbench.models.smollm2", "convert_gguf"),
    ("transformers.modeling_utils", "PreTrainedModel.from_pretrained"),
    ("vllm", "LLM.__init__"),
    ("prefect.flow_engine", "run_flow"),
)


class StartsSomething(RuntimeError):
    """Raised where an unmarked test starts a process, loads a model or runs a flow."""


class _State:
    test: str | None = None  # node id of the guarded test running now
    found: list[str] = []
    wrapped: set[tuple[str, str]] = set()


def _flag(what: str) -> None:
    message = (f"{_State.test} is not marked slow but {what}: mark it @pytest.mark.slow (`make test-fast` "
               "runs only tests that start no process, engine, model or Prefect API)")
    _State.found.append(message)
    raise StartsSomething(message)


def _audit(event: str, args: tuple) -> None:
    if _State.test is None:
        return
    if event in PROCESS_EVENTS:
        command = args[1] if event == "subprocess.Popen" else args[:2]
        _flag(f"starts a process ({event}: {str(command)[:200]})")
    elif event == "import" and args[0] in HEAVY_IMPORTS:
        _State.found.append(f"{_State.test} is not marked slow but imports {args[0]} (seconds): "
                            "mark it @pytest.mark.slow")


def _guarded(name: str, call: Callable) -> Callable:
    @functools.wraps(call)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _State.test is not None:
            _flag(f"calls {name}")
        return call(*args, **kwargs)

    return wrapper


def _start_process(self: multiprocessing.process.BaseProcess) -> None:
    _flag(f"starts a process (multiprocessing: {self.name})")


def _wrap_loaded() -> None:
    """Wrap the LOADERS whose modules are imported by now (the rest are wrapped once they are)."""
    for module_name, path in LOADERS:
        if (module_name, path) in _State.wrapped or module_name not in sys.modules:
            continue
        owner: Any = importlib.import_module(module_name)
        *parents, attr = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        raw = owner.__dict__[attr]
        if isinstance(raw, classmethod):
            setattr(owner, attr, classmethod(_guarded(f"{module_name}.{path}", raw.__func__)))
        else:
            setattr(owner, attr, _guarded(f"{module_name}.{path}", raw))
        _State.wrapped.add((module_name, path))


def pytest_configure(config: pytest.Config) -> None:
    sys.addaudithook(_audit)
    start = multiprocessing.process.BaseProcess.start

    @functools.wraps(start)
    def guarded_start(self: multiprocessing.process.BaseProcess) -> None:
        if _State.test is not None:
            _start_process(self)
        start(self)

    multiprocessing.process.BaseProcess.start = guarded_start
    for module_name in ("socbench.engines.hf", "socbench.engines.vllm", "support.tiny_model"):
        importlib.import_module(module_name)  # light modules: wrapped before any test can use them


@pytest.hookimpl(wrapper=True)
def _phase(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker("slow") is not None:
        return (yield)
    _wrap_loaded()
    _State.test, _State.found = item.nodeid, []
    try:
        return (yield)
    finally:  # fails the test even where the code under test caught StartsSomething
        _State.test = None
        _wrap_loaded()
        if _State.found:
            pytest.fail("\n".join(dict.fromkeys(_State.found)), pytrace=False)


pytest_runtest_setup = _phase
pytest_runtest_call = _phase
