"""Where a ``socbench issp`` run's wall time goes: the CLI run with marks at its phases.

Run as ``python -m bench.api_phases issp <flags>`` (``bench/api_path.py --profile`` does): the
same process as ``python -m socbench.cli``, with marks (seconds since start) when the Prefect API server
is spawned, when the flow module is imported, when the API answers, at each stage task's start
and end, at the run's report and at the API's stop; printed as one JSON list on stderr, and the run's
exit code is this script's. The hooks go in after the flow module is imported, so the marks do not move
the imports they time.
"""

from __future__ import annotations

import importlib
import json
import sys
import time

START = time.perf_counter()
MARKS: list[tuple[str, float]] = []
STAGES = ("load_data", "vllm_generate", "score", "report")


def mark(name: str) -> None:
    MARKS.append((name, round(time.perf_counter() - START, 3)))


def around(owner, name: str, label: str) -> None:
    """Marks before and after ``owner.name(...)``."""
    inner = getattr(owner, name)

    def marked(*args, **kwargs):
        mark(f"{label} begin")
        try:
            return inner(*args, **kwargs)
        finally:
            mark(f"{label} end")

    setattr(owner, name, marked)


def hook_flow() -> None:
    import socbench.tasks.report
    from socbench.processes import PrefectServer

    around(PrefectServer, "wait", "api wait")
    around(PrefectServer, "stop", "api stop")
    around(socbench.tasks.report.report_run, "fn", "report_run")
    for stage in STAGES:
        around(getattr(importlib.import_module(f"socbench.tasks.{stage}"), stage), "fn", stage)


class FlowImportHook:
    """Imports ``flows.issp`` with marks around it, then puts the other hooks in."""

    def find_spec(self, name, path, target=None):
        if name != "socbench.flows.issp":
            return None
        sys.meta_path.remove(self)
        mark("import flows.issp begin")
        module = importlib.import_module(name)
        mark("import flows.issp end")
        hook_flow()
        return module.__spec__


def main() -> None:
    import socbench.cli.prefect_api as api

    around(api, "spawn_early", "spawn API")
    sys.meta_path.insert(0, FlowImportHook())
    from socbench.cli import main as cli_main

    sys.argv = ["socbench", *sys.argv[1:]]
    try:
        code = cli_main()
    except SystemExit as exc:
        code = exc.code
    mark("end")
    print(json.dumps(MARKS), file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
