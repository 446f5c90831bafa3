"""vLLM's own OpenAI server (``python -m vllm.entrypoints.openai.api_server`` from ``.venv``) for tests.

``VllmServer(model_dir, name).start()`` launches it on 127.0.0.1 in its own process group
(the server starts a ``VLLM::EngineCore`` child even in-process mode), waits until
``/v1/models`` answers, and logs to a file whose uvicorn access lines tell how many
requests reached it (``requests()``). ``kill()`` is a crash (SIGKILL to the whole group);
``start()`` again brings it back on the same port; ``stop()`` is SIGTERM, then SIGKILL, and
leaves no process behind. Start-up: ~70 CPU s for the tiny model (each process imports vLLM),
~20-40 s idle, minutes on a loaded 2-core box; SmolLM2 36-73 s more (stack-notes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from socbench.processes import cpu_defaults, free_port, group_alive, start_group, stop_group, wait_for

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"


class VllmServer:
    """One vLLM OpenAI server process group; restartable on the same port."""

    def __init__(self, model_dir: Path, name: str, log_path: Path, *, dtype: str = "bfloat16",
                 max_model_len: int = 2048, port: int | None = None, extra: tuple[str, ...] = (),
                 aliases: tuple[str, ...] = ()) -> None:
        self.model_dir, self.name, self.log_path = Path(model_dir), name, Path(log_path)
        self.aliases = aliases  # more names it serves the same model under (a second "model" for free)
        self.dtype, self.max_model_len, self.extra = dtype, max_model_len, extra
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self.startup_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        python = str(PYTHON if PYTHON.exists() else sys.executable)
        return [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model_dir),
                "--served-model-name", self.name, *self.aliases, "--host", "127.0.0.1",
                "--port", str(self.port),
                "--dtype", self.dtype, "--max-model-len", str(self.max_model_len), "--enforce-eager",
                "--block-size", "32", "--max-num-batched-tokens", "16384", "--seed", "0", *self.extra]

    def start(self, timeout_s: float = 600.0) -> VllmServer:
        """Launch and wait for ``/v1/models`` (a no-op when already running); at load 10-12 on 2 cores
        the tiny model took over 240 s (two processes import vLLM: the server and its engine core)."""
        if self.running():
            return self
        env = cpu_defaults({**os.environ, "TORCH_COMPILE_DISABLE": "1", "PYTHONUNBUFFERED": "1"})
        began = time.monotonic()
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== start {time.strftime('%H:%M:%S')}: {' '.join(self.command())}\n".encode())
        self.proc = start_group(self.command(), env, self.log_path, cwd=ROOT)

        def ready() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vLLM server exited with {self.proc.returncode}: {self.log_tail()}")
            return self.served_models() is not None

        try:
            wait_for(ready, timeout_s, "vLLM's OpenAI server", interval_s=0.5)
        except TimeoutError:
            self.stop()
            raise RuntimeError(f"vLLM server not ready after {timeout_s:.0f} s: {self.log_tail()}") from None
        self.startup_s = time.monotonic() - began
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def served_models(self) -> list[str] | None:
        try:
            with urllib.request.urlopen(f"{self.url}/v1/models", timeout=2) as response:
                return [m["id"] for m in json.load(response)["data"]]
        except (OSError, ValueError, KeyError):
            return None

    def kill(self) -> None:
        """A crash: SIGKILL to the server and its engine-core child at once."""
        if self.proc is not None:
            stop_group(self.proc, grace_s=10, first=signal.SIGKILL)

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM to the group, then SIGKILL whatever is left; idempotent."""
        if self.proc is not None:
            stop_group(self.proc, grace_s)

    def group_alive(self) -> bool:
        """True while any process of the server's group exists (the engine core included)."""
        return self.proc is not None and group_alive(self.proc)

    def requests(self, path: str = "/v1/chat/completions") -> int:
        """POSTs to ``path`` the server has logged (uvicorn access log), over every start."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text.count(f'"POST {path} HTTP/1.1"')

    def log_tail(self, n: int = 2000) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text[-n:]
