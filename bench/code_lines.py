"""Code lines (issue 44's rule): over every tracked ``.py`` file outside ``tests/`` and ``bench/``, the lines
that hold a token other than a comment and are not part of a docstring (a line of a multi-line string that
is not a docstring counts). Physical lines beside. Usage: ``python -m bench.code_lines [--by-file]``.
"""

from __future__ import annotations

import ast
import io
import subprocess
import tokenize
from pathlib import Path

from bench import common

ROOT = Path(__file__).resolve().parents[1]
TARGET = 12_000  # issue 44
NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENCODING, tokenize.ENDMARKER}


def docstring_lines(tree: ast.AST) -> set[int]:
    """The lines of every module, class and function docstring."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return found


def code_lines(source: str) -> int:
    """The lines holding a token other than a comment, outside docstrings."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in NOT_CODE:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstring_lines(ast.parse(source)))


def files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    return [ROOT / name for name in listed if not name.startswith(("tests/", "bench/"))]


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--by-file", action="store_true", help="each file's code and physical lines")
    args = p.parse_args()  # --quick: the same count (it takes a second)
    counts = {path: (code_lines(text := path.read_text(encoding="utf-8")), len(text.splitlines()))
              for path in files()}
    for path, (code, physical) in sorted(counts.items(), key=lambda kv: -kv[1][0]) if args.by_file else ():
        print(f"{code:6d} {physical:6d}  {path.relative_to(ROOT)}")
    code = sum(c for c, _ in counts.values())
    common.report("code_lines", {"code_lines": code, "physical_lines": sum(p for _, p in counts.values()),
                                 "files": len(counts)}, "code lines / 12,000", code / TARGET,
                  f"<= {TARGET:,} code lines", code <= TARGET)


if __name__ == "__main__":
    main()
