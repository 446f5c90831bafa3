"""The ``socbench`` command: one console script, a subcommand per job.

Each subcommand module exposes ``register(subparsers)``; handlers return an exit code. A ``SocbenchError``
becomes one line on stderr and exit code 2 (no traceback); Ctrl-C, one line and exit code 130.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import logging
import os
import sys

from socbench.cli.interrupt import exit_interrupted, interruptible
from socbench.errors import SocbenchError

_MODULES = ("data", "inprocess", "report", "export", "estimate")  # inprocess: every study (issp, mcq)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors: one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="socbench", description=__doc__.splitlines()[0])
    from socbench.studies import STUDIES

    commands = ("data", *STUDIES, "report", "export", "estimate")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser,
                                metavar="{" + ",".join(commands) + "}")
    for name in _MODULES:
        importlib.import_module(f"socbench.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["issp", "prompts"]:  # its own parser (``issp-prompts``): ``issp`` has no sub-command
        argv = ["issp-prompts", *argv[2:]]  # slot in which a mistyped flag's value would read as one
    args = build_parser().parse_args(argv)
    try:
        with interruptible():
            return int(args.handler(args) or 0)
    except SocbenchError as exc:
        print(f"socbench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        exit_interrupted()


def command() -> None:
    """The console script: ``main()``, then, once the atexit handlers ran (Prefect's log and event
    flushes), the process ends without the interpreter's teardown: freeing every module and object one by
    one took 3-5 s at the end of each run on a loaded 2-core host, with every file already written."""
    code = [1]  # an uncaught exception's (its traceback is printed before the atexit handlers run)

    def end() -> None:  # registered first, so it runs last; logging's own handler (registered at import) is
        logging.shutdown()  # the one it would skip
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe (``| head``), a closed stream
                stream.flush()
        os._exit(code[0])

    atexit.register(end)
    try:
        code[0] = main()
    except SystemExit as exc:  # argparse's exit, ``sys.exit("message")``
        code[0] = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        raise
    sys.exit(code[0])


if __name__ == "__main__":
    command()
