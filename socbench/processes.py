"""Every process socbench starts beside itself: free ports, health waits, process groups, a Prefect
server (``prefect server start --host 127.0.0.1``, reached through ``PREFECT_API_URL``: nothing of Prefect
imported), a throwaway PostgreSQL cluster, and the CPU environment. Each runs in its own session, so a
Ctrl-C reaches socbench, which then stops it in order."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
# Debian's postgresql (make setup installs it): the newest major version's tools
PG_BIN = max((p for p in Path("/usr/lib/postgresql").glob("*/bin") if p.parent.name.isdigit()),
             key=lambda p: int(p.parent.name),
             default=Path("/usr/lib/postgresql/15/bin"))

# vLLM on a CPU host (stack-notes): without a KV-cache size start-up asks for 92 % of RAM; the
# engine in-process starts in 3-5 s instead of 16-25 s; torch.compile costs 8-18 s on the first
# log-probs request. One value each, for every process socbench or its tests start.
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
           "TORCH_COMPILE_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false"}


def cpu_defaults(env: MutableMapping[str, str] | None = None) -> MutableMapping[str, str]:
    """``CPU_ENV`` where ``env`` (default: this process's environment) does not say otherwise."""
    env = os.environ if env is None else env
    for key, value in CPU_ENV.items():
        env.setdefault(key, value)
    return env


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(predicate: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.2) -> T:
    """``predicate()``'s first truthy value, polled until ``timeout_s``; else TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(interval_s)


def answers(url: str, timeout_s: float = 2.0) -> bool:
    """True if GET ``url`` answers 200 now."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status == 200
    except OSError:
        return False


def sigint_raises() -> None:
    """Ctrl-C raises KeyboardInterrupt here even if this process inherited SIGINT ignored: bash
    ignores it for a script's background jobs and Python keeps an inherited ignore, so `make ui`
    started from such a script sat through Ctrl-C on its own terminal (seen in a CI-like loop)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def start_group(args: list[str], env: MutableMapping[str, str] | None = None, log: Path | None = None,
                cwd: Path | None = None, orphan_safe: bool = False) -> subprocess.Popen[Any]:
    """``args`` in a session (and process group) of its own, output to ``log`` (else discarded).
    ``orphan_safe``: it gets SIGTERM when this process dies, however (``setpriv --pdeathsig``)."""
    if orphan_safe and shutil.which("setpriv"):
        args = ["setpriv", "--pdeathsig", "TERM", "--", *args]
    # the log closed here once started: the child has its own copy
    with log.open("ab") if log is not None else contextlib.nullcontext(subprocess.DEVNULL) as handle:
        return subprocess.Popen(args, env=dict(env if env is not None else os.environ), cwd=cwd,
                                stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True)


def group_alive(proc: subprocess.Popen[Any]) -> bool:
    """True while any process of ``proc``'s group exists (children included)."""
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(proc: subprocess.Popen[Any], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def stop_group(proc: subprocess.Popen[Any] | None, grace_s: float = 20.0,
               first: int = signal.SIGTERM) -> None:
    """``first`` to the whole group, SIGKILL what is left after ``grace_s``; returns once all have gone."""
    if proc is None:
        return
    for sig, wait_s in ((first, grace_s), (signal.SIGKILL, 10.0)):
        signal_group(proc, sig)
        with contextlib.suppress(subprocess.TimeoutExpired, TimeoutError):
            proc.wait(timeout=wait_s)
            wait_for(lambda: not group_alive(proc), wait_s, "the process group to exit", 0.05)
            return


RETRY = (429, 502, 503)  # what Prefect's own client retries: SQLite's "database is locked" comes back as 503


def transient(exc: BaseException) -> bool:
    """Worth asking again: a busy server's answer (``RETRY``), a timeout, a refused or reset connection."""
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in RETRY
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return isinstance(reason, (TimeoutError, ConnectionError, http.client.HTTPException))


def prefect_rest(url: str, path: str, body: dict | None = None, tries: int = 6,
                timeout_s: float = 60.0) -> Any:
    """One call to the Prefect REST API (JSON in, JSON out; a POST when there is a body). What
    ``transient`` names (a busy server rolled the call back, a loaded host did not answer in time) is
    retried after 1, 2, 4, ... s; the last try's error is raised."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}{path}", data=data, method="GET" if data is None else "POST",
                                     headers={"Content-Type": "application/json"})
    for n in range(tries):
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return json.loads(response.read() or b"null")
        except (OSError, http.client.HTTPException) as exc:
            if n == tries - 1 or not transient(exc):
                raise
        time.sleep(2**n)


@contextlib.contextmanager
def signals_held(*signums: int) -> Iterator[None]:
    """``signums`` that arrive inside are delivered when it ends, not midway: a Ctrl-C between a
    child's start and its ``Popen`` reaching the caller left that child running, unknown to the
    caller's stop (seen under load: `make ui` stopped while its server started). Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []  # a handler Python did not install (None) cannot be put back: left as it is
    previous = {n: signal.signal(n, lambda signum, frame: held.append(signum)) for n in signums
                if signal.getsignal(n) is not None}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in held:
            signal.raise_signal(signum)


class _Service:
    """``with``: ``start()``, and ``stop()`` however the body ends (also on a Ctrl-C while it starts)."""

    def __enter__(self) -> Any:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PrefectServer(_Service):
    """``prefect server start`` on 127.0.0.1 (a free port unless given), in its own session, with
    ``env``; ``private``: one run's server (no UI or background services, stopped when socbench dies)."""

    def __init__(self, env: MutableMapping[str, str] | None = None, port: int | None = None,
                 log: Path | None = None, private: bool = False, grace_s: float = 20.0) -> None:
        self.env = dict(os.environ if env is None else env)
        self.grace_s = grace_s  # SIGTERM, then SIGKILL for the group after this long
        self.port, self.log, self.private = port or free_port(), log, private
        self.port_given = port is not None
        self.proc: subprocess.Popen[Any] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api"

    def spawn(self) -> PrefectServer:
        """Start the process (no wait): the caller can do other work while it comes up."""
        # ``-m prefect``, not the console script: an installed socbench may share a venv without scripts
        args = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                "--port", str(self.port)]
        if self.private:
            args += ["--no-ui", "--no-scheduler", "--no-late-runs", "--analytics-off",
                     "--log-level", "WARNING"]
        env = {**self.env, "PREFECT_API_URL": self.api_url}  # its own CLI must not start a temporary one
        with signals_held(signal.SIGINT, signal.SIGTERM):
            self.proc = start_group(args, env, self.log, orphan_safe=self.private)
        return self

    def wait(self, timeout_s: float = 120.0) -> PrefectServer:
        """Until ``/api/health`` answers; one that exited (its free port taken meanwhile) is started once
        more on another. TimeoutError/RuntimeError name the log."""
        respawned = False

        def up() -> bool:
            nonlocal respawned
            if self.proc is None or self.proc.poll() is not None:
                if self.proc is not None and (respawned or self.port_given):
                    raise RuntimeError(f"the Prefect server exited with code {self.proc.returncode} "
                                       f"(log: {self.log})")
                if self.proc is not None:
                    self.port, respawned = free_port(), True
                self.spawn()
            return answers(f"{self.api_url}/health")

        try:
            wait_for(up, timeout_s, f"the Prefect server at {self.url} (log: {self.log})", 0.1)
        except TimeoutError:
            self.stop()
            raise
        return self

    def start(self, timeout_s: float = 120.0) -> PrefectServer:
        return self.spawn().wait(timeout_s)

    def stop(self) -> None:
        stop_group(self.proc, self.grace_s)
        self.proc = None


class Postgres(_Service):
    """A PostgreSQL cluster on 127.0.0.1 with one database; ``url`` is Prefect's asyncpg URL for it.
    Throwaway (a temporary folder, removed on stop), or kept in ``folder`` and started again from it
    (the demo's state). As root it runs as Debian's ``postgres`` user (initdb refuses root)."""

    READY = "socbench-ready"  # in ``folder`` once its database exists

    def __init__(self, folder: Path | None = None) -> None:
        self.database, self.port, self.bin_dir = "prefect", free_port(), PG_BIN
        self.kept = folder is not None
        self.folder = folder.resolve() if self.kept else Path(tempfile.mkdtemp(prefix="socbench-pg-"))
        self.data = self.folder / "data"

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{self.database}"

    @staticmethod
    def available(folder: Path | None = None) -> bool:
        """initdb is installed; as root, the ``postgres`` user exists and can reach ``folder``."""
        if not (PG_BIN / "initdb").is_file():
            return False
        if os.geteuid() != 0:
            return True
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return False
        parents = [] if folder is None else [p for p in folder.resolve().parents if p.exists()]
        return all(p.stat().st_mode & 0o001 for p in parents)

    def _as_owner(self, tool: str, *args: str) -> list[str]:
        command = [str(self.bin_dir / tool), *args]
        if os.geteuid() == 0:
            return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", *command]
        return command

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.folder)
        if done.returncode:
            raise RuntimeError(f"{Path(command[0]).name} failed ({done.returncode}): {done.stderr[-2000:]}")

    def start(self) -> Postgres:
        ready = self.folder / self.READY
        fresh = not ready.is_file()
        if fresh:
            shutil.rmtree(self.data, ignore_errors=True)  # an earlier start that did not finish
        self.folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        if fresh:
            self._run(self._as_owner("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                                     "--encoding=UTF8", "--no-sync"))
        # TCP only (a socket path in a deep folder can pass the 107-byte limit); a kept cluster stays durable
        options = f"-h 127.0.0.1 -p {self.port} -k '' -c max_connections=200"
        options += "" if self.kept else " -c fsync=off"
        self._run(self._as_owner("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"),
                                 "-o", options, "-w", "-t", "120", "start"))
        if fresh:
            self._run([str(self.bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                       "-U", "postgres", self.database])
            ready.touch()
        return self

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(self._as_owner("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop"),
                           capture_output=True, cwd=self.folder)
        if not self.kept:
            shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def prefect_server(env: MutableMapping[str, str] | None = None, log: Path | None = None,
                   postgres: bool = False) -> Iterator[dict[str, str]]:
    """A Prefect server for several processes; yields its clients' environment (``PREFECT_API_URL``).
    ``postgres``: its database is a throwaway cluster, as docs/scale-out.md asks for several workers."""
    env = dict(os.environ if env is None else env)
    with contextlib.ExitStack() as stack:
        if postgres:
            env["PREFECT_API_DATABASE_CONNECTION_URL"] = stack.enter_context(Postgres()).url
        server = stack.enter_context(PrefectServer(env, log=log))
        yield {**env, "PREFECT_API_URL": server.api_url}
