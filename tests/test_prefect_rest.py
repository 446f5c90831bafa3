"""``socbench.processes.prefect_rest`` and `make demo`'s watcher over it: a busy Prefect server's 503
(SQLite "database is locked", the call rolled back), a call that times out and a connection reset
are retried with backoff; other errors are not. The watcher never raises on the API's account.

A CI run lost three tests to one such 503 while seeding runs through the REST API; issue 29: on a
loaded host the demo's watcher timed out once, raised, and tore down the run it was watching.
"""

from __future__ import annotations

import importlib.util
import json
import threading
import time
import urllib.error
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from socbench.processes import prefect_rest
from tests.conftest import ROOT


class Api:
    """A stand-in Prefect API: ``faults[path]`` is how many calls to ``path`` fail first, each as
    ``how`` says ("busy": 503, "reset": the connection closed unanswered, "slow": no answer in time);
    then POST echoes its body (201) and GET answers ``answers[path]`` in turn (the last one stays)."""

    def __init__(self, how: str, faults: dict[str, int], answers: dict[str, list] | None = None) -> None:
        self.how, self.faults, self.answers, self.seen = how, dict(faults), answers or {}, []
        self.release = threading.Event()  # ends a "slow" answer's wait
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _fault(self) -> bool:
                api.seen.append(self.path)
                if api.faults.get(self.path, 0) <= 0:
                    return False
                api.faults[self.path] -= 1
                if api.how == "busy":
                    self._send(503, {"exception_message": "Service Unavailable"})
                elif api.how == "slow":
                    api.release.wait(5)
                self.close_connection = True  # "reset" (and a late "slow"): no answer on this connection
                return True

            def _send(self, code: int, body: object) -> None:
                self.send_response(code)
                self.end_headers()
                self.wfile.write(json.dumps(body).encode())

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self._fault():
                    found = api.answers.get(self.path)
                    self._send(201 if found is None and self.path == "/busy" else 200 if found else 404,
                               found[0] if found else body)

            def do_GET(self) -> None:  # noqa: N802
                if not self._fault():
                    queue = api.answers.get(self.path) or [None]
                    answer = queue.pop(0) if len(queue) > 1 else queue[0]
                    self._send(200 if self.path in api.answers else 404, answer)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Api:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()


@pytest.fixture
def no_waiting(monkeypatch) -> Iterator[list[float]]:
    """The backoff's sleeps, recorded instead of slept (the answers are what is tested)."""
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    yield slept


@pytest.mark.parametrize("how", ["busy", "reset", "slow"])
def test_a_busy_reset_or_silent_answer_is_retried_and_the_answer_returned(how: str, no_waiting) -> None:
    with Api(how, {"/busy": 2}) as api:
        assert prefect_rest(api.url, "/busy", {"name": "x"}, timeout_s=0.5) == {"name": "x"}
    assert api.seen == ["/busy"] * 3 and no_waiting == [1, 2]


def test_other_errors_are_raised_at_once(no_waiting) -> None:
    with Api("busy", {}) as api, pytest.raises(urllib.error.HTTPError) as raised:
        prefect_rest(api.url, "/missing", {})
    assert raised.value.code == 404 and api.seen == ["/missing"] and no_waiting == []


def test_the_last_try_raises_what_it_got(no_waiting) -> None:
    with Api("reset", {"/busy": 9}) as api, pytest.raises(ConnectionError):
        prefect_rest(api.url, "/busy", {}, tries=3)
    assert api.seen == ["/busy"] * 3 and no_waiting == [1, 2]


def _demo():
    """``deployments/local_demo.py``, a script: loaded from its file (no ``sys.path`` edit)."""
    spec = importlib.util.spec_from_file_location("local_demo", ROOT / "deployments" / "local_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUN = "/flow_runs/r1"
STATES = [{"state": {"type": t, "name": t.title()}} for t in ("RUNNING", "RUNNING", "COMPLETED")]


def test_the_watcher_says_once_that_the_api_is_silent_and_follows_the_run_to_its_end(capsys, monkeypatch,
                                                                                     no_waiting) -> None:
    """Twelve calls for the run's state get no answer (four watcher polls of three tries): one line,
    then one when it answers again, and the run followed to Completed; nothing raised."""
    answers = {RUN: list(STATES), "/flow_runs/filter": [[]]}
    with Api("reset", {}, answers) as api:
        demo = _demo()
        gone_asked = []
        real_sleep = no_waiting.append

        def sleep(seconds: float) -> None:  # the first poll answers Running; then the API goes silent
            real_sleep(seconds)
            if len(no_waiting) == 1:
                api.faults[RUN] = 12
        monkeypatch.setattr(time, "sleep", sleep)
        assert demo.watch(api.url, {"id": "r1"}, "issp/all-domains", lambda: gone_asked.append(1)) is True
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "demo: issp/all-domains: Running", out
    assert sum("does not answer" in line for line in out) == 1 and "RemoteDisconnected" in out[1], out
    assert out[2].startswith("demo: the Prefect API answers again"), out
    assert out[3:] == ["demo: issp/all-domains: Completed"], out
    assert len(gone_asked) >= 4  # asked after each silent poll, and between polls


def test_the_watcher_ends_when_a_process_the_run_needs_has_exited(capsys, no_waiting) -> None:
    with Api("reset", {RUN: 99}) as api:
        assert _demo().watch(api.url, {"id": "r1"}, "issp/all-domains", lambda: "the worker exited") is False
    assert capsys.readouterr().out.splitlines() == ["demo: the worker exited; the run cannot go on"]


def test_the_demo_skips_a_converted_model_and_converts_a_missing_one(tmp_path, monkeypatch) -> None:
    """``convert_model`` reads the conversion marker through ``socbench.models`` (a merge once broke that
    import and only ``make demo`` met it): a finished build is left alone, a missing one is converted."""
    from contextlib import ExitStack

    from socbench.models import DEFAULT_MODEL, model_slug
    from socbench.models.smollm2 import MARKER

    demo, started = _demo(), []
    monkeypatch.setattr(demo, "start", lambda stack, command, env, log: started.append(command))
    env = {"SOCBENCH_HOME": str(tmp_path)}
    with ExitStack() as stack:
        demo.convert_model(stack, env)  # nothing converted yet
        assert len(started) == 1 and "resolve_model" in started[0][-1]
        folder = tmp_path / "models" / model_slug(DEFAULT_MODEL)
        folder.mkdir(parents=True)
        (folder / MARKER).write_text(json.dumps({"gguf_sha256": "x"}))
        demo.convert_model(stack, env)  # converted: left alone
    assert len(started) == 1
