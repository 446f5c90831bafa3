"""Which processes are alive, read from ``/proc`` (Linux), for "nothing left running" checks; pty output."""

from __future__ import annotations

import os
import select
import shutil
from pathlib import Path


def _stat_fields(pid: str) -> list[str]:
    """``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, session, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _pids() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit()]


def session_members(sid: int) -> list[int]:
    """Live processes (zombies excluded) of session ``sid``."""
    found = []
    for pid in _pids():
        try:
            fields = _stat_fields(pid)
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(pid))
    return found


def processes_with_env(key: str, value: str) -> list[int]:
    """Live processes whose environment has ``key=value`` (a value unique to one test run)."""
    needle = f"{key}={value}".encode()
    found = []
    for pid in _pids():
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            if needle in env and _stat_fields(pid)[0] != "Z":
                found.append(int(pid))
        except OSError:
            continue
    return found


def user_prefect_home(home: Path, database: Path | None) -> dict[str, str]:
    """The environment of a user's Prefect home at ``home``, its database a copy of ``database`` where given
    (``conftest.prefect_db``): socbench's own Prefect API then starts on it as on a user's later runs."""
    home.mkdir(parents=True, exist_ok=True)
    if database is not None:
        shutil.copyfile(database, home / "prefect.db")
    return {"PREFECT_HOME": str(home), "PREFECT_MEMO_STORE_PATH": str(home / "memo.toml"),
            "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(home / "results")}


def readable(fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` has something to read (or has hung up) within ``timeout_s``. ``poll``, not ``select``:
    ``select`` refuses a descriptor numbered 1024 or more, which a long-lived test worker reaches."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(timeout_s * 1000))
