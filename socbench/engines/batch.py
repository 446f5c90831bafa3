"""OpenAI's Batch API as the OpenAI-compatible backend's transport (``--batch``): the run's calls written as
the API's JSONL (``{custom_id, method, url, body}`` a line), uploaded (``/v1/files``, purpose ``batch``),
submitted (``/v1/batches``), polled and collected, each answer handed to ``finish`` as ``Transport`` does.

A batch outlives the process, so every one is recorded in the ``BatchLedger`` next to the engine cache
before anything waits on it: a rerun, a Prefect retry or a restarted worker polls the batch holding a call
instead of submitting it again (a call's ``custom_id`` is the hash of its path and body, so the same request
has the same id in every run). What a batch does not answer (expired, cancelled, failed, an error line)
goes back as an error: the run is incomplete and the next one sends exactly those calls.
A reply without usable content is not asked again (a batch has no second attempt): an empty reply is the
model's answer, an unusable one an error.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from socbench.engines._http import (
    RETRY_STATUS,
    Call,
    Unusable,
    backoff,
    redact,
    retry_after,
    run_sync,
    session,
)
from socbench.engines.openai_settings import OpenAISettings
from socbench.engines.usage import UsageMeter
from socbench.errors import ConfigError, DataError
from socbench.files import read_json, write_json

log = logging.getLogger("socbench")
ALIVE = frozenset({"validating", "in_progress", "finalizing", "cancelling"})  # the batch may still answer
Finish = Callable[[int, Any, "str | None"], Any]
Status = Callable[[str], None]
SUFFIX = ".batch.json"  # a BatchLedger record's file


def custom_id(call: Call) -> str:
    """The call's id in a batch: the hash of what it asks, the same in every run (and unique in a file)."""
    payload = json.dumps([call.path, call.body], sort_keys=True, separators=(",", ":"))
    return "sb-" + hashlib.sha256(payload.encode()).hexdigest()[:40]


def batch_line(call: Call, cid: str) -> bytes:
    """One line of the Batch API's input file (what ``vllm run-batch`` reads too)."""
    line = {"custom_id": cid, "method": "POST", "url": call.path, "body": call.body}
    return (json.dumps(line, separators=(",", ":")) + "\n").encode()


Line = tuple[str, bytes]  # (custom id, the input file's line)


def split(lines: Sequence[Line], max_requests: int, max_bytes: int) -> list[list[Line]]:
    """Consecutive chunks within the provider's limits per file (requests and bytes)."""
    chunks: list[list[Line]] = []
    size = 0
    for cid, line in lines:
        if len(line) > max_bytes:
            raise ConfigError(f"--batch: one request is {len(line):,} bytes, over the file limit "
                              f"batch_max_bytes={max_bytes:,}")
        if not chunks or len(chunks[-1]) >= max_requests or size + len(line) > max_bytes:
            chunks.append([])
            size = 0
        chunks[-1].append((cid, line))
        size += len(line)
    return chunks


def read_output(text: str) -> dict[str, dict[str, Any]]:
    """The output (or error) file's lines by ``custom_id``; a damaged line is skipped with a warning."""
    found: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            row = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            row = None
            log.warning("batch output: a line that is not JSON was skipped (%s...)", line[:60])
        if isinstance(row, dict) and isinstance(row.get("custom_id"), str):
            found[row["custom_id"]] = row
    return found


def answer_of(row: dict[str, Any], parse: Callable[[dict[str, Any]], Any],
              usage: UsageMeter | None = None) -> tuple[Any, str | None]:
    """``(value, None)`` or ``(None, reason)`` from one output line, parsed as the direct call's reply."""
    response = row.get("response") or {}
    status, body = response.get("status_code"), response.get("body")
    if row.get("error") or status != 200 or not isinstance(body, dict):
        error = row.get("error") or (body.get("error") if isinstance(body, dict) else None)
        message = error.get("message") if isinstance(error, dict) else error
        said = " ".join(str(message or "no answer").split())[:200]
        return None, f"batch: HTTP {status}: {said}" if status else f"batch: {said}"
    if usage is not None:
        usage.add_reply(body.get("usage"))
    try:
        return parse(body), None
    except Unusable as exc:
        return (exc.reply, None) if exc.reply is not None else (None, f"batch: {exc}")
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        return None, f"batch: malformed response ({type(exc).__name__}: {exc})"[:200]


def status_line(batch: dict[str, Any]) -> str:
    """``batch_abc in_progress: 120 of 500 done, 3 failed``: what the watcher shows while it waits."""
    counts = batch.get("request_counts") or {}
    done, total, failed = counts.get("completed", 0), counts.get("total", 0), counts.get("failed", 0)
    return f"batch {batch.get('id')} {batch.get('status')}: {done} of {total} done, {failed} failed"


@dataclass(frozen=True)
class BatchRecord:
    """One submitted (or about to be submitted) batch and the custom ids of the calls it holds."""

    name: str  # the input file's content hash: the record's file name
    path: str  # the endpoint, e.g. /v1/chat/completions
    input_file_id: str
    batch_id: str | None
    custom_ids: tuple[str, ...]
    created: float


class BatchLedger:
    """Where ``--batch`` records its batches, next to the engine cache: one JSON file per uploaded input file,
    written atomically (a temporary file, fsynced, renamed over), so a killed process leaves either the old
    record or the new one. A record is written when its file is uploaded, again with the batch's id as soon
    as the batch exists (before anything waits on it), and removed once its answers are collected. Safe for
    several processes (each record is its own file)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def records(self) -> list[BatchRecord]:
        """Every readable record, oldest first; a damaged one is skipped with a warning."""
        found = []
        for path in sorted(self.folder.glob(f"*{SUFFIX}")) if self.folder.is_dir() else []:
            try:
                data = read_json(path)
                found.append(BatchRecord(**{**data, "custom_ids": tuple(data["custom_ids"])}))
            except (DataError, TypeError, KeyError) as exc:
                log.warning("batch record %s is unreadable (%s); skipped", path, exc)
        return sorted(found, key=lambda record: record.created)

    def save(self, record: BatchRecord) -> None:
        """Write ``record`` so that it survives a kill at any point (fsync before and after the rename)."""
        write_json(self.folder / f"{record.name}{SUFFIX}", asdict(record))
        _sync_folder(self.folder)

    def drop(self, name: str) -> None:
        """Forget a collected batch (gone already: nothing to do)."""
        (self.folder / f"{name}{SUFFIX}").unlink(missing_ok=True)
        _sync_folder(self.folder)


def _sync_folder(folder: Path) -> None:
    """Make a rename or removal in ``folder`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class _Owners:
    """Which calls a custom id answers, while it is unanswered (the first answer is delivered)."""

    calls: Sequence[Call]
    finish: Finish
    by_id: dict[str, list[int]]

    def deliver(self, cid: str, value: Any, error: str | None) -> None:
        for index in self.by_id.pop(cid, ()):
            self.finish(index, value, error)


class BatchTransport:
    """``Transport``'s ``run_all`` over the Batch API; ``on_status`` hears each batch's state as it waits."""

    def __init__(self, settings: OpenAISettings, usage: UsageMeter, on_status: Status | None = None) -> None:
        if settings.batch_dir is None:
            raise ConfigError("--batch needs an engine cache folder (--cache_dir): its batches are recorded "
                              "there")
        self.settings = settings
        self.usage = usage
        self.ledger = BatchLedger(settings.batch_dir)
        self.on_status = on_status or (lambda line: log.info("%s", line))
        self.base = settings.api_base[0]  # a batch lives on one server: the first of --api_base

    def run_all(self, calls: Sequence[Call], finish: Finish) -> None:
        """Every call answered through batches (those already submitted are waited for, never resent);
        ``finish(i, value, error)`` each, as ``Transport``'s."""
        if calls:
            run_sync(lambda: self._main(calls, finish))

    async def _main(self, calls: Sequence[Call], finish: Finish) -> None:
        by_id: dict[str, list[int]] = {}
        for index, call in enumerate(calls):
            by_id.setdefault(custom_id(call), []).append(index)
        owners = _Owners(calls, finish, by_id)
        async with session(self.settings) as http:
            api = _Api(http, self.base, self.settings)
            mine = [r for r in self.ledger.records() if not by_id.keys().isdisjoint(r.custom_ids)]
            held = {cid for record in mine for cid in record.custom_ids}
            mine += await self._submit(api, owners, [cid for cid in by_id if cid not in held])
            await self._wait(api, owners, mine)
        for cid in list(by_id):  # unanswered: a record dropped meanwhile; sent next run
            owners.deliver(cid, None, "batch: no answer recorded for this request")

    async def _submit(self, api: _Api, owners: _Owners, todo: list[str]) -> list[BatchRecord]:
        """The calls no batch holds, as new batches (one endpoint each, within the file limits)."""
        first = {cid: owners.calls[owners.by_id[cid][0]] for cid in todo}
        records = []
        for path in sorted({call.path for call in first.values()}):
            lines = [(cid, batch_line(call, cid)) for cid, call in first.items() if call.path == path]
            for chunk in split(lines, self.settings.batch_max_requests, self.settings.batch_max_bytes):
                content = b"".join(line for _, line in chunk)
                name = hashlib.sha256(content).hexdigest()[:16]
                uploaded = await api.upload(f"socbench-{name}.jsonl", content)
                if uploaded is None:
                    for cid, _ in chunk:
                        owners.deliver(cid, None, "batch: the input file could not be uploaded")
                    continue
                # recorded before the batch is created: a kill between the two is adopted by the next run
                record = BatchRecord(name, path, uploaded, None, tuple(c for c, _ in chunk), time.time())
                self.ledger.save(record)
                records.append(record)
        return records

    async def _wait(self, api: _Api, owners: _Owners, records: list[BatchRecord]) -> None:
        """Poll every batch of ours until it ends; collect each as it does."""
        pending, shown = list(records), {}
        while pending:
            alive = []
            for record in pending:
                record = await self._recorded(api, record)
                batch = await self._look(api, record)
                if batch is not None and shown.get(record.name) != (line := status_line(batch)):
                    shown[record.name] = line
                    self.on_status(line)
                if batch is None or batch.get("status") in ALIVE:
                    alive.append(record)
                else:
                    await self._collect(api, owners, record, batch)
            pending = alive
            if pending:
                await asyncio.sleep(self.settings.batch_poll_s)

    @staticmethod
    async def _look(api: _Api, record: BatchRecord) -> dict[str, Any] | None:
        """The batch's state; None while it cannot be had (not created yet, the server unreachable). A batch
        the server refused to create, or no longer knows, is ended: its requests go to the next run."""
        if record.batch_id is None:
            refused = 400 <= api.last_status < 500 and api.last_status not in RETRY_STATUS
            return {"id": "(not created)", "status": f"refused (HTTP {api.last_status})"} if refused else None
        batch = await api.ask("GET", f"/v1/batches/{record.batch_id}")
        if batch is None and api.last_status == 404:  # gone from the server: its requests go again
            return {"id": record.batch_id, "status": "unknown to the server"}
        return batch

    async def _recorded(self, api: _Api, record: BatchRecord) -> BatchRecord:
        """``record`` with its batch's id: the batch created now (found first, if a killed run created it)
        and recorded at once, before anything waits on it; unchanged while the server cannot be reached."""
        if record.batch_id is not None:
            return record
        batch = await api.find(record.input_file_id) or await api.create(record.input_file_id, record.path)
        if batch is None:
            return record
        record = replace(record, batch_id=batch["id"])
        self.ledger.save(record)
        return record

    async def _collect(self, api: _Api, owners: _Owners, record: BatchRecord, batch: dict[str, Any]) -> None:
        """Deliver the output and error files' answers; what neither holds is an error (sent next run)."""
        rows: dict[str, dict[str, Any]] = {}
        for key in ("error_file_id", "output_file_id"):  # the output's answer wins
            if batch.get(key):
                text = await api.ask("GET", f"/v1/files/{batch[key]}/content", text=True)
                rows.update(read_output(text or ""))
        for cid, row in rows.items():
            if cid in owners.by_id:
                call = owners.calls[owners.by_id[cid][0]]
                owners.deliver(cid, *answer_of(row, call.parse, self.usage))
        why = _ended_why(batch)
        for cid in record.custom_ids:
            owners.deliver(cid, None, why)
        self.ledger.drop(record.name)


def _ended_why(batch: dict[str, Any]) -> str:
    """Why a request of an ended batch has no answer (``failed``: the batch's first error)."""
    errors = ((batch.get("errors") or {}).get("data") or [{}])
    first = errors[0].get("message") if errors and isinstance(errors[0], dict) else None
    return f"batch {batch.get('id')} {batch.get('status')}: no answer" + (f" ({first})" if first else "")


class _Api:
    """The files and batches endpoints, each call retried on 429/5xx and dropped connections."""

    def __init__(self, http: Any, base: str, settings: OpenAISettings) -> None:
        self.http, self.base, self.settings = http, base, settings
        self.last_status = 0  # of the latest call (404 on a batch: the server does not know it)

    async def upload(self, filename: str, content: bytes) -> str | None:
        import aiohttp

        def form() -> aiohttp.FormData:
            data = aiohttp.FormData()
            data.add_field("purpose", "batch")
            data.add_field("file", content, filename=filename, content_type="application/jsonl")
            return data

        reply = await self.ask("POST", "/v1/files", data=form)
        return reply.get("id") if isinstance(reply, dict) else None

    async def create(self, file_id: str, path: str) -> dict[str, Any] | None:
        body = {"input_file_id": file_id, "endpoint": path, "completion_window": self.settings.batch_window,
                "metadata": {"source": "socbench"}}
        return await self.ask("POST", "/v1/batches", json=body)

    async def find(self, file_id: str) -> dict[str, Any] | None:
        """The batch made from ``file_id`` (a run killed after creating it, before recording it), if any."""
        listing = await self.ask("GET", "/v1/batches", params={"limit": "100"})
        return next((b for b in (listing or {}).get("data") or [] if b.get("input_file_id") == file_id), None)

    async def ask(self, method: str, path: str, text: bool = False, data: Callable[[], Any] | None = None,
                  **kwargs: Any) -> Any:
        """The reply's JSON (or text); None after the retries, with a warning (the caller decides)."""
        import aiohttp

        reason, self.last_status = "", 0
        for attempt in range(self.settings.max_retries + 1):
            after = None
            try:
                async with self.http.request(method, self.base + path, data=data() if data else None,
                                             **kwargs) as response:
                    body, self.last_status = await response.text(), response.status
                    after = retry_after(response.headers.get("Retry-After"))
                    if response.status == 200:
                        return body if text else json.loads(body)
                    reason = f"HTTP {response.status}: {' '.join(body.split())[:200]}"
                    if response.status not in RETRY_STATUS:
                        break
            except (aiohttp.ClientError, TimeoutError, json.JSONDecodeError) as exc:
                reason = f"{type(exc).__name__}: {exc}"
            if attempt < self.settings.max_retries:
                await asyncio.sleep(backoff(self.settings, attempt, after))
        log.warning("batch API %s %s failed: %s", method, path, redact(self.settings, reason))
        return None
