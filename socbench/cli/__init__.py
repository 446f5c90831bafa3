"""The ``socbench`` command: one console script, a subcommand per job.

Each subcommand module exposes ``register(subparsers)``; handlers return an exit code.
A ``SocbenchError`` becomes one line on stderr and exit code 2 (no traceback).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from socbench.errors import SocbenchError

# subcommand name -> module under socbench.cli (imported lazily so `socbench --help` is fast)
_COMMANDS = ("data", "issp", "mcq", "report")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors: one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="socbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in _COMMANDS:
        try:
            module = importlib.import_module(f"socbench.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"socbench.cli.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except SocbenchError as exc:
        print(f"socbench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("socbench: interrupted; finished requests are in the cache, rerun to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
