"""A planted API key reaches the server and nothing else; nothing listens beyond 127.0.0.1.

The key comes from the environment (the Prefect Secret block path is tests/test_secret_block.py).
One real `socbench issp` run, with DEBUG logging and a server that echoes the key back in
401 errors, is then searched byte by byte: its console output, the result files, the engine
cache, and Prefect's whole state folder (database with flow-run parameters, logs and
artifacts; persisted task results).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sqlite3
import subprocess
from pathlib import Path

import pytest

from support import CLI, FakeOpenAIServer
from support.processes import user_prefect_home
from support.records import read_detailed

ROOT = Path(__file__).resolve().parents[1]
PLANTED = "sk-PLANTED-env-9d41b7c2e0"


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


@pytest.mark.slow  # runs the CLI in a subprocess
def test_planted_env_key_leaks_nowhere(tmp_path: Path, demo_data: Path, prefect_db: Path | None) -> None:
    home, out, cwd, tmp = (tmp_path / name for name in ("prefect", "out", "cwd", "tmp"))
    for folder in (cwd, tmp):
        folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    # a user's home with its database in place (``prefect_db``): its server starts without migrating it
    env.update(user_prefect_home(home, prefect_db))
    before = _logs_and_artifacts(home / "prefect.db")
    env.update({"OPENAI_API_KEY": PLANTED, "PREFECT_LOGGING_LEVEL": "DEBUG", "TMPDIR": str(tmp),
                "PREFECT_LOGGING_EXTRA_LOGGERS": "socbench"})
    # 401 bodies echo the Authorization header back, as OpenAI's "Incorrect API key" does
    with FakeOpenAIServer(model="../escape/fake-model", faults={"401": 0.2, "503": 0.2}) as server:
        run = subprocess.run(
            [*CLI, "issp", "--api_type", "config", "--api_base", server.url,
             "--model", "../escape/fake-model", "--data_dir", str(demo_data), "--domain_id", "1",
             "--interview_count", "5", "--output_dir", str(out)],
            env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
        stats = server.stats()
    assert run.returncode == 1, run.stderr[-3000:]  # 401s leave the run incomplete
    assert stats.requests > 0 and stats.with_auth == stats.requests  # the key was sent, as a header
    assert "DEBUG" in run.stderr  # the console really was at DEBUG level

    model_dir = out / "escape_fake-model"  # the model name could not climb out of --output_dir
    assert (model_dir / "summary.json").is_file() and not (tmp_path / "escape").exists()
    assert list(cwd.iterdir()) == []  # nothing written outside the output dir (and Prefect's state)
    details = read_detailed(model_dir / "Citizenship_detailed.json")["details"]
    assert any("bad key Bearer ***" in (d["engine_error"] or "") for d in details)  # echoed, then redacted

    assert PLANTED not in run.stdout and PLANTED not in run.stderr
    searched = _files(out) + _files(home) + _files(tmp)
    assert any(p.name.endswith(".sqlite") for p in searched) and any(p.name == "prefect.db" for p in searched)
    leaks = [p for p in searched if PLANTED.encode() in p.read_bytes()]
    assert leaks == []
    logs, artifacts = _logs_and_artifacts(home / "prefect.db")  # what was searched holds this run's
    assert logs > before[0] and artifacts > before[1]  # logs and artifacts


def _logs_and_artifacts(database: Path) -> tuple[int, int]:
    """(log records, artifacts) in a Prefect database; (0, 0) where there is none yet."""
    if not database.is_file():
        return 0, 0
    with contextlib.closing(sqlite3.connect(database)) as db:
        logs, artifacts = (db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                           for table in ("log", "artifact"))
    return logs, artifacts


def _outward_address() -> str | None:
    """This machine's address on its default route (no packet is sent), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_fake_server_listens_on_loopback_only() -> None:
    address = _outward_address()
    with FakeOpenAIServer() as server:
        assert server.url.startswith("http://127.0.0.1:")
        if address is None:
            pytest.skip("no non-loopback address to try")
        with pytest.raises(OSError):
            socket.create_connection((address, server.port), timeout=2).close()


BINDING = re.compile(r"0\.0\.0\.0|::/0|--host[= ]+(?!127\.0\.0\.1)\S+|host\s*=\s*[\"']{2}")


def test_nothing_started_by_socbench_binds_all_interfaces() -> None:
    """Every server the project starts (demo, docs, tests' helpers) names 127.0.0.1."""
    roots = ["socbench", "flows", "tasks", "deployments", "bench", "docs"]
    files = [p for r in roots for p in (ROOT / r).rglob("*") if p.suffix in (".py", ".md", ".yaml", ".sh")]
    files += [ROOT / name for name in ("Makefile", "prefect.yaml", "README.md") if (ROOT / name).exists()]
    offending = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files
                 for m in BINDING.finditer(p.read_text(encoding="utf-8", errors="replace"))]
    assert offending == []
    server_starts = [line for p in files for line in p.read_text(errors="replace").splitlines()
                     if re.search(r"\bserver start\b", line) or '"server", "start"' in line]
    assert server_starts and all("127.0.0.1" in line for line in server_starts), server_starts
