"""``socbench.processes.prefect_api``: a busy Prefect server's 503 (SQLite "database is locked", the
call rolled back) is retried the way Prefect's own client retries it; other errors are not.

A CI run lost three tests to one such 503 while seeding runs through the REST API.
"""

from __future__ import annotations

import json
import threading
import urllib.error
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from socbench.processes import prefect_api


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """Answers 503 to the first POST to /busy, then 201 with the body it got; 404 elsewhere."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.path)
            code = 404 if self.path != "/busy" else 503 if seen.count("/busy") == 1 else 201
            self.send_response(code)
            self.end_headers()
            self.wfile.write(body if code == 201 else b'{"exception_message": "Service Unavailable"}')

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()


def test_a_503_is_retried_and_the_answer_returned(server: tuple[str, list[str]]) -> None:
    url, seen = server
    assert prefect_api(url, "/busy", {"name": "x"}) == {"name": "x"}
    assert seen == ["/busy", "/busy"]


def test_other_errors_are_raised_at_once(server: tuple[str, list[str]]) -> None:
    url, seen = server
    with pytest.raises(urllib.error.HTTPError) as raised:
        prefect_api(url, "/missing", {})
    assert raised.value.code == 404 and json.loads(raised.value.read())["exception_message"]
    assert seen == ["/missing"]
