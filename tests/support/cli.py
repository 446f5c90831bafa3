"""``socbench ...`` in this process (``cli.main``): what a test whose promise is not about the process
itself (exit code of the real binary, a real stdout/stderr, Ctrl-C, nothing left running, a fresh venv)
runs, instead of a subprocess that spends 2-5 CPU s importing Python, Prefect, pandas and scikit-learn.
A flow run needs the session's Prefect API (the ``api_url`` fixture) to be active."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence


def exit_code(argv: Sequence[str]) -> int:
    """``socbench argv`` here: its exit code, argparse's own exits (--help, bad flags) included."""
    from socbench.cli import main

    try:
        return main(list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)


@contextlib.contextmanager
def cli_environment(env: Mapping[str, str] | None = None) -> Iterator[None]:
    """The environment defaults the CLI sets (and ``env``) while inside, undone after; the engines a run
    left open (a preflight error: a process would exit) closed."""
    from socbench.cli.inprocess import QUIET
    from socbench.engines import session

    updates = {**{key: os.environ.get(key, value) for key, value in QUIET.items()}, **(env or {})}
    before = {key: os.environ.get(key) for key in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        session.close_engines()
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def socbench(*argv: str, env: Mapping[str, str] | None = None,
             code: int | None = 0) -> subprocess.CompletedProcess:
    """``socbench argv`` in this process with ``env`` added, its output captured as a subprocess's is
    (socbench's warnings too: a process prints them through logging's last resort, pytest catches them
    here); asserts exit ``code`` (``None``: any) and no traceback."""
    out, err = io.StringIO(), io.StringIO()
    warnings, logger = logging.StreamHandler(err), logging.getLogger("socbench")
    warnings.setLevel(logging.WARNING)
    logger.addHandler(warnings)
    try:
        with cli_environment({"OPENAI_API_KEY": "sk-test", **(env or {})}), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            returncode = exit_code(argv)
    finally:
        logger.removeHandler(warnings)
    done = subprocess.CompletedProcess(["socbench", *argv], returncode, out.getvalue(), err.getvalue())
    assert code is None or returncode == code, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done
