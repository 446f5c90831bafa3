"""A local OpenAI Batch API on the fake server: the files and batches endpoints as OpenAI documents them.

``POST /v1/files`` (multipart: ``purpose=batch``, ``file``), ``GET /v1/files/{id}/content``; ``POST
/v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``), ``GET /v1/batches/{id}``, ``GET
/v1/batches`` (the list), ``POST /v1/batches/{id}/cancel``. A batch moves one state a look (validating ->
in_progress -> finalizing -> completed), answering ``per_look`` lines a look while in progress; ``hold()``
keeps every batch in progress until ``release()``. Lines are answered by the fake model (``fake_model``);
a line whose custom id hashes into ``fail_share`` goes to the error file as HTTP 500; ``expire_after=N``
ends a batch ``expired`` after N lines, the rest in the error file as OpenAI words it. A file that breaks
the rules (a line's url not the endpoint, a repeated custom id, more than ``max_requests`` lines) fails
the batch's validation. ``batch_stats()``: what the server was sent.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .fake_openai import FakeOpenAIServer

EXPIRED = {"code": "batch_expired",
           "message": "This request could not be executed before the completion window expired."}
CANCELLED = {"code": "batch_cancelled", "message": "This request was not executed: the batch was cancelled."}


@dataclass
class BatchStats:
    submitted: Counter = field(default_factory=Counter)  # custom id -> in how many created batches
    batches: list[str] = field(default_factory=list)  # ids, in creation order
    uploads: int = 0
    looks: int = 0  # GETs of one batch


@dataclass
class _Batch:
    data: dict[str, Any]
    lines: list[dict[str, Any]]
    done: int = 0


class FakeBatchServer(FakeOpenAIServer):
    """The fake OpenAI server with the Batch API; ``FakeBatchServer(per_look=..., fail_share=...)``."""

    def __init__(self, *, per_look: int = 1 << 30, fail_share: float = 0.0, expire_after: int | None = None,
                 max_requests: int = 50_000, **overrides: Any) -> None:
        super().__init__(**overrides)
        self.per_look, self.fail_share, self.expire_after = per_look, fail_share, expire_after
        self.max_requests = max_requests
        self.held = False
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.counts = BatchStats()

    def app(self) -> web.Application:
        app = super().app()
        app.router.add_post("/v1/files", self.upload)
        app.router.add_get("/v1/files/{id}/content", self.content)
        app.router.add_post("/v1/batches", self.create)
        app.router.add_get("/v1/batches", self.listing)
        app.router.add_get("/v1/batches/{id}", self.look)
        app.router.add_post("/v1/batches/{id}/cancel", self.cancel)
        return app

    def hold(self) -> None:
        self._call(lambda: setattr(self, "held", True))

    def release(self) -> None:
        self._call(lambda: setattr(self, "held", False))

    def batch_stats(self) -> BatchStats:
        def copy() -> BatchStats:
            c = self.counts
            return BatchStats(Counter(c.submitted), list(c.batches), c.uploads, c.looks)
        return self._call(copy)

    def state(self, batch_id: str) -> str:
        return self._call(lambda: self.batches[batch_id].data["status"])

    def cancel_all(self) -> None:
        """Cancel every batch still waiting or running (as ``POST /v1/batches/{id}/cancel`` does)."""
        def cancel() -> None:
            for batch in self.batches.values():
                if batch.data["status"] in ("validating", "in_progress"):
                    batch.data["status"] = "cancelling"
        self._call(cancel)

    async def upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("purpose") != "batch" or not hasattr(form.get("file"), "file"):
            error = {"error": {"message": "purpose=batch and a file are required"}}
            return web.json_response(error, status=400)
        upload = form["file"]
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = upload.file.read()  # type: ignore[union-attr]
        self.counts.uploads += 1
        return web.json_response({"id": file_id, "object": "file", "bytes": len(self.files[file_id]),
                                  "filename": upload.filename, "purpose": "batch"})  # type: ignore[union-attr]

    async def content(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["id"])
        if data is None:
            raise web.HTTPNotFound()
        return web.Response(body=data, content_type="application/jsonl")

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("input_file_id") not in self.files or body.get("completion_window") != "24h":
            return web.json_response({"error": {"message": "unknown input_file_id or window"}}, status=400)
        batch_id = f"batch_{len(self.batches) + 1}"
        lines = [json.loads(line) for line in self.files[body["input_file_id"]].decode().splitlines() if line]
        data = {"id": batch_id, "object": "batch", "endpoint": body["endpoint"], "errors": None,
                "input_file_id": body["input_file_id"], "completion_window": "24h", "status": "validating",
                "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
                "request_counts": {"total": 0, "completed": 0, "failed": 0}, "metadata": body.get("metadata")}
        self.batches[batch_id] = _Batch(data, lines)
        self.counts.batches.append(batch_id)
        self.counts.submitted.update(line.get("custom_id") for line in lines)
        return web.json_response(data)

    async def listing(self, request: web.Request) -> web.Response:
        newest = [b.data for b in reversed(self.batches.values())]
        return web.json_response({"object": "list", "data": newest, "has_more": False})

    async def look(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            raise web.HTTPNotFound()
        self.counts.looks += 1
        self._advance(batch)
        return web.json_response(batch.data)

    async def cancel(self, request: web.Request) -> web.Response:
        batch = self.batches[request.match_info["id"]]
        if batch.data["status"] in ("validating", "in_progress"):
            batch.data["status"] = "cancelling"
        return web.json_response(batch.data)

    def _advance(self, batch: _Batch) -> None:
        """One step of the batch's life (a look at it is what moves it)."""
        status = batch.data["status"]
        if status == "validating":
            self._validate(batch)
        elif status == "in_progress":
            if self.expire_after is not None and batch.done >= self.expire_after:
                self._end(batch, "expired", EXPIRED)
            elif batch.done >= len(batch.lines):
                batch.data["status"] = "finalizing"
            elif not self.held:
                batch.done = min(len(batch.lines), batch.done + self.per_look,
                                 self.expire_after if self.expire_after is not None else len(batch.lines))
            batch.data["request_counts"] = self._counts(batch)
        elif status == "finalizing":
            self._end(batch, "completed", None)
        elif status == "cancelling":
            self._end(batch, "cancelled", CANCELLED)

    def _validate(self, batch: _Batch) -> None:
        ids = [line.get("custom_id") for line in batch.lines]
        wrong = [line for line in batch.lines if line.get("url") != batch.data["endpoint"]
                 or line.get("method") != "POST" or not isinstance(line.get("body"), dict)]
        problem = ("a line's url is not the batch's endpoint" if wrong else
                   "custom_id values must be unique" if len(set(ids)) != len(ids) else
                   f"more than {self.max_requests} requests" if len(ids) > self.max_requests else None)
        if problem:
            errors = [{"code": "invalid_request", "message": problem}]
            batch.data["errors"] = {"object": "list", "data": errors}
            batch.data["status"] = "failed"
            return
        batch.data["status"] = "in_progress"
        batch.data["request_counts"] = self._counts(batch)

    def _failing(self, custom_id: str) -> bool:
        return int(hashlib.sha256(custom_id.encode()).hexdigest()[:12], 16) / 16 ** 12 < self.fail_share

    def _counts(self, batch: _Batch) -> dict[str, int]:
        failed = sum(self._failing(line["custom_id"]) for line in batch.lines[:batch.done])
        return {"total": len(batch.lines), "completed": batch.done - failed, "failed": failed}

    def _end(self, batch: _Batch, status: str, missing: dict[str, str] | None) -> None:
        """The output and error files of what was done; the rest (expired, cancelled) in the error file."""
        out, errors = [], []
        for index, line in enumerate(batch.lines):
            row: dict[str, Any] = {"id": f"batch_req_{index}", "custom_id": line["custom_id"], "error": None}
            if index >= batch.done:
                errors.append({**row, "response": None, "error": missing})
            elif self._failing(line["custom_id"]):
                body = {"error": {"message": "injected 500", "type": "server_error"}}
                errors.append({**row, "response": {"status_code": 500, "request_id": f"r{index}",
                                                   "body": body}})
            else:
                chat = line["url"].endswith("/chat/completions")
                reply = self._model.model.reply(chat, line["body"], None)
                out.append({**row, "response": {"status_code": 200, "request_id": f"r{index}",
                                                "body": reply}})
        for key, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch.data[key] = file_id
        batch.data.update(status=status, request_counts=self._counts(batch))
        batch.data[f"{status}_at"] = int(time.time())
