"""The code's shape, checked on its source: no import cycle (lazy imports included), a plain
library that never imports Prefect, and no private name imported from another module.

Imports are read with ``ast`` from every module under ``socbench/``, ``cli/``, ``tasks/``
and ``flows/``, at module level, inside functions (a lazy import is still a dependency) and under
``if TYPE_CHECKING:`` (a type-only import is a dependency of the reader and the checker). Importing ``a.b.c``
also runs the ``__init__`` of ``a`` and ``a.b``, so a module outside a package depends on
that package's ``__init__`` too: a cycle through a package's re-exports is a cycle.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("socbench", "cli", "tasks", "flows")
LAYERS = ("socbench.cli", "socbench.tasks", "socbench.flows")  # the repository's cli/, tasks/, flows/
NEVER_IN_LIBRARY = ("prefect", *LAYERS)


def module_name(path: Path) -> str:
    """The name a module is imported by: ``cli/flags.py`` installs as ``socbench.cli.flags``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(parts if parts[0] == "socbench" else ["socbench", *parts])


def in_library(name: str) -> bool:
    """A module of the plain library (the ``socbench/`` folder), not of the layers mapped into it."""
    return not any(name == layer or name.startswith(layer + ".") for layer in LAYERS)


def library_target(target: str) -> bool:
    return target.split(".")[0] == "prefect" or not in_library(target)


MODULES = {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


@functools.cache  # three tests read every module's imports: each module is parsed once
def imported(name: str) -> tuple[tuple[str, list[str]], ...]:
    """(module imported, names taken from it) for every import in module ``name``, type-only ones included."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if is_package(name) else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            found.append((target, [alias.name for alias in node.names]))
    return tuple(found)


def dependencies(name: str) -> set[str]:
    """Internal modules that importing ``name`` runs, including packages' ``__init__``."""
    deps = set()
    for target, names in imported(name):
        targets = [f"{target}.{n}" if f"{target}.{n}" in MODULES else target for n in names] or [target]
        for module in targets:
            parts = module.split(".")
            for i in range(1, len(parts) + 1):
                ancestor = ".".join(parts[:i])
                inside = name == ancestor or name.startswith(ancestor + ".")
                if ancestor in MODULES and (ancestor == module or not inside):
                    deps.add(ancestor)
    deps.discard(name)
    return deps


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_package_is_walked() -> None:
    assert {"socbench.types", "socbench.circular", "socbench.cli.flags", "socbench.tasks.score",
            "socbench.flows.issp"} <= set(MODULES)


def test_the_wheel_lists_every_package() -> None:
    """pyproject lists the packages (the repository's cli/, tasks/, flows/ map into socbench): a new
    subpackage left off the list would be missing from an installed socbench."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert listed == {name for name in MODULES if is_package(name)} | {"socbench._demo"}


def test_no_import_cycle_lazy_imports_included() -> None:
    graph = {name: dependencies(name) for name in MODULES}
    assert cycles(graph) == []


def test_the_cycle_finder_sees_lazy_and_package_cycles() -> None:
    graph = {"a": {"b"}, "b": {"a.c"}, "a.c": set(), "d": {"e"}, "e": {"d"}}
    assert cycles(graph) == [["d", "e"]]
    assert cycles({**graph, "a.c": {"a"}}) == [["a", "a.c", "b"], ["d", "e"]]


def test_the_library_never_imports_prefect_flows_tasks_or_the_cli() -> None:
    offenders = sorted(f"{name}: {target}" for name in MODULES if in_library(name)
                       for target, _ in imported(name) if library_target(target))
    assert offenders == []


@pytest.mark.slow  # runs Python in a subprocess
def test_the_library_imports_where_prefect_cannot() -> None:
    """Every library module imports in a process where ``import prefect`` fails."""
    library = sorted(name for name in MODULES if in_library(name))
    code = ("import importlib, sys\nsys.modules['prefect'] = None\n"
            f"for name in {library!r}:\n    importlib.import_module(name)\n"
            "loaded = [m for m, mod in sys.modules.items() if mod is not None]\n"
            f"layers = {NEVER_IN_LIBRARY!r}\n"
            "assert not [m for m in loaded if any(m == x or m.startswith(x + '.') for x in layers)]\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def test_no_private_name_is_imported_from_another_module() -> None:
    """``from m import _x`` couples to m's internals; a private module (``engines._chat``)
    may be used inside its own package only."""
    offenders = []
    for name in MODULES:
        package = name if is_package(name) else name.rpartition(".")[0]
        for target, names in imported(name):
            for taken in names:
                full = f"{target}.{taken}"
                own_private_module = full in MODULES and target == package
                if taken.startswith("_") and not taken.endswith("__") and not own_private_module:
                    offenders.append(f"{name}: from {target} import {taken}")
            private = [part for part in target.split(".") if part.startswith("_") and not part.endswith("__")]
            if private and not target.startswith(package + "."):
                offenders.append(f"{name}: imports private module {target}")
    assert offenders == []


EXPANSION_BLIND = ("tasks/extract.py", "tasks/score.py", "socbench/scoring.py", "socbench/extract.py")


def test_extraction_and_scoring_do_not_name_circular_evaluation() -> None:
    """Circular evaluation is an expansion at prompt building plus a reducer (``socbench.score_stage``):
    extraction and scoring read each request as it was shown, whatever expanded it."""
    named = [path for path in EXPANSION_BLIND
             if "circular" in (ROOT / path).read_text(encoding="utf-8").lower()]
    assert named == [], f"these name circular evaluation: {named}"


# ------------------------------------------------- processes: one owner, no sys.path edits

PROCESS_MODULE = ROOT / "socbench" / "processes.py"
STARTS_A_SERVER = ("SubprocessASGIServer", "prefect_test_harness")
SERVER_MODULES = ("prefect.testing", "prefect.server.api.server", "uvicorn")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes (a docstring may say what a function starts)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            found.add(id(body[0].value))
    return found


def server_starts(source: str) -> list[str]:
    """What in ``source`` starts a Prefect server: ``prefect server start`` as a command (a list
    ``[..., "server", "start", ...]`` or a string outside docstrings), Prefect's temporary server
    or test harness, or uvicorn running Prefect's app."""
    tree = ast.parse(source)
    docstrings, found = _docstrings(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple):
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            if any(a == "server" and b == "start" for a, b in zip(words, words[1:])):
                found.append(f"line {node.lineno}: a 'server start' command")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if re.search(r"\bserver start\b", node.value) or any(n in node.value for n in STARTS_A_SERVER):
                found.append(f"line {node.lineno}: {node.value[:60]!r}")
        elif isinstance(node, ast.Name | ast.Attribute | ast.alias):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) \
                else node.name
            if name in STARTS_A_SERVER or name.startswith(SERVER_MODULES):
                found.append(f"line {node.lineno}: {name}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(SERVER_MODULES):
            found.append(f"line {node.lineno}: from {node.module}")
    return found


def _project_python(*folders: str) -> list[Path]:
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


def test_only_the_process_module_starts_a_prefect_server() -> None:
    files = [p for p in _project_python("socbench", "cli", "tasks", "flows", "deployments", "bench", "tests")
             if p not in (PROCESS_MODULE, Path(__file__).resolve())]
    offenders = [f"{p.relative_to(ROOT)} {hit}" for p in files for hit in server_starts(p.read_text())]
    assert offenders == []
    assert server_starts(PROCESS_MODULE.read_text())  # the check sees the one that does


def test_the_server_start_check_sees_each_way_to_start_one() -> None:
    assert server_starts('"""Runs ``prefect server start``."""\nx = 1') == []
    for code in ('subprocess.run([BIN, "server", "start", "--port", "1"])',
                 'os.system("prefect server start")',
                 "from prefect.testing.utilities import prefect_test_harness",
                 "from prefect.server.api.server import SubprocessASGIServer", "import uvicorn"):
        assert server_starts(code), code


def sys_path_edits(source: str) -> list[str]:
    """Every use of ``sys.path`` (an insert, append or assignment), child code strings included."""
    tree = ast.parse(source)
    found = [f"line {n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "path"
             and isinstance(n.value, ast.Name) and n.value.id == "sys"]
    found += [f"line {n.lineno} (in a string)" for n in ast.walk(tree)
              if isinstance(n, ast.Constant) and isinstance(n.value, str) and "sys.path" in n.value
              and id(n) not in _docstrings(tree)]
    return found


def test_bench_and_deployments_import_as_packages_without_sys_path_edits() -> None:
    offenders = [f"{p.relative_to(ROOT)} {hit}" for p in _project_python("bench", "deployments")
                 for hit in sys_path_edits(p.read_text())]
    assert offenders == []
    assert sys_path_edits("import sys\nsys.path.insert(0, 'x')") == ["line 2"]
    assert sys_path_edits("CODE = 'import sys; sys.path[:0] = [\"bench\"]'") == ["line 1 (in a string)"]


# One idea per module name (issue 44): a name shared only by one idea's places in different layers or
# studies (the CLI's, the Prefect task's and the library's ``export``; ISSP's and MCQ's ``scoring``).
SHARED_NAMES = {
    "circular": "circular evaluation and its report section",
    "export": "the export: its CLI command, its Prefect task",
    "extract": "extraction: the library's, its Prefect task",
    "generic": "the study a new one inherits: its Task base, its flows",
    "issp": "the ISSP study: its Task, its flows",
    "mcq": "the MCQ study: its Task, its flows, its report section",
    "report": "the report: its CLI command, its Prefect tasks",
    "scoring": "scoring: ISSP's answers, MCQ's methods",
    "sweep": "the sweep: its library, its Prefect tasks, its flow",
}


def test_no_two_modules_share_a_name_for_different_ideas() -> None:
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        root = ROOT / ("socbench" if package == "socbench" else package)
        for path in root.rglob("*.py"):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                found.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    shared = {name: sorted(paths) for name, paths in found.items() if len(paths) > 1}
    assert set(shared) <= set(SHARED_NAMES), {k: v for k, v in shared.items() if k not in SHARED_NAMES}


def test_scikit_learn_is_imported_only_where_it_is_used() -> None:
    """scikit-learn takes ~1.2 s to import: no module imports it at its top (a multi-select F1 did, and
    every run paid for it); the few yardsticks that fit with it import it in the function that does."""
    offenders = [name for name, path in MODULES.items() for node in ast.parse(path.read_text()).body
                 if isinstance(node, (ast.Import, ast.ImportFrom))
                 and any(alias.name.startswith("sklearn") for alias in node.names)
                 or isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sklearn")]
    assert offenders == []
