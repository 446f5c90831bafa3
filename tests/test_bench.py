"""A quick pass of every bench script (issue 30: "every bench/ script runs ... so none can rot again").

The scripts are found in the folder (a module of ``bench/`` with a ``main``), so a new one is run
here without a change to this file. Each runs as ``python -m bench.<name>`` with its quick arguments,
its output folder a temporary one (``SOCBENCH_BENCH_OUT``) and its Prefect runs on the session's API;
it must exit 0 and write its JSON record. The figures of a quick pass mean nothing: only that it runs.
Those whose engines live in their own process (``IN_PROCESS``) run as ``__main__`` in this one instead,
with what they would run in a fresh process of its own (``common.HERE``: a worker's pass, a first run)
in this one too, and their vLLM engines the session's pool's: a fresh process would import torch and
vLLM and start an engine again for each (~40 CPU s), the tests' process has them.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from bench.run_all import SCRIPTS as RUN_ALL
from support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.slow  # every test runs a script in a process of its own
ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(path.stem for path in (ROOT / "bench").glob("*.py")
                 if re.search(r"^def main\(", path.read_text(encoding="utf-8"), re.MULTILINE))
# Scripts with a test of their own below: they need more than their quick flag.
OWN_TEST = ("api_phases", "compare_results")
# Where a quick pass does not fit the suite (name: why). lm-evaluation-harness is not installed:
# arc_cp_vs_lmeval then measures socbench's side alone, as it does without its side venv.
SKIP = {"scale_out": "its quick pass (PostgreSQL, a Prefect server, vLLM's server, three workers, two "
                     "sweeps) took 592 s at load 6 on 2 cores: run `python -m bench.scale_out --quick` by "
                     "hand; tests/test_sweep.py runs the same workers and sweep"}
ARGS = {
    # the cheapest script through the runner (it has its own pass here too)
    "run_all": ["--quick", "--only", "ppi_reference"],
    # its lm-eval side would run from a side venv where one exists: not the project's code
    "arc_cp_vs_lmeval": ["--quick", "--lmeval_venv", "/nonexistent-lmeval-venv"],
}
RECORD = {"run_all": "summary"}  # the JSON a script writes, where it is not <name>.json
IN_PROCESS = ("api_path", "arc_cp_vs_lmeval", "demo", "demographic_model", "engines", "engines_bare",
              "orchestration", "pipeline_vs_bare", "ppi_reference", "prefix_cache", "threads")


def run(args: list[str], env: dict[str, str], out: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**env, "SOCBENCH_BENCH_OUT": str(out)}, timeout=600)
    assert proc.returncode == 0, f"{' '.join(args)}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n" \
                                 f"{proc.stderr[-4000:]}"
    return proc


def run_here(name: str, args: list[str], out: Path, monkeypatch: pytest.MonkeyPatch, engine_pool) -> None:
    """``python -m bench.<name> *args`` in this process, its fresh-process steps too (``common.HERE``), its
    vLLM engines the pool's; the environment it sets (``common.setup_env``) undone after."""
    from bench import common

    monkeypatch.setattr(common, "OUT_DIR", out)
    monkeypatch.setattr(common, "HERE", True)
    monkeypatch.setattr(sys, "argv", [f"bench/{name}.py", *args])
    saved = dict(os.environ)
    try:
        with engine_pool.installed():
            runpy.run_module(f"bench.{name}", run_name="__main__", alter_sys=True)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_every_script_is_found() -> None:
    assert set(RUN_ALL) <= set(SCRIPTS) and {"api_client", "engines_bare", "scale_out"} <= set(SCRIPTS)
    named = set(OWN_TEST) | set(SKIP) | set(ARGS) | set(IN_PROCESS)
    assert not named - set(SCRIPTS), "a name here is no script"


@pytest.mark.parametrize("name", [name for name in SCRIPTS if name not in OWN_TEST])
def test_quick_pass(name: str, tmp_path: Path, cli_api_env: dict[str, str], request,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    if name in SKIP:
        pytest.skip(SKIP[name])
    args = ARGS.get(name, ["--quick"])
    if name in ("api_path", "scale", "scale_memory"):  # their prompts are the real ISSP question sets'
        args = [*args, "--issp", str(request.getfixturevalue("shared_issp"))]
    if name in IN_PROCESS:
        run_here(name, args, tmp_path, monkeypatch, request.getfixturevalue("engine_pool"))
    else:
        run([f"bench.{name}", *args], cli_api_env, tmp_path)
    record = json.loads((tmp_path / f"{RECORD.get(name, name)}.json").read_text())
    assert record
    if name == "run_all":
        assert [row["rc"] for row in record] == [0], record


def test_api_phases(tmp_path: Path, cli_api_env: dict[str, str]) -> None:
    """The phase marks of one small run against the fake server (``bench/api_path.py --profile``'s)."""
    with FakeOpenAIServer() as server:
        proc = run(["bench.api_phases", "issp", "--api_type", "config", "--api_base", server.url, "--model",
                    "fake-model", "--domain_id", "1", "--interview_count", "2", "--output_dir",
                    str(tmp_path / "run")], cli_api_env, tmp_path)
    marks = dict(json.loads(proc.stderr.strip().splitlines()[-1]))
    assert {"load_data begin", "vllm_generate end", "report_run end", "end"} <= set(marks), marks


def test_compare_results(tmp_path: Path, cli_api_env: dict[str, str], capsys: pytest.CaptureFixture) -> None:
    """A quick run from this checkout (each of its runs a ``socbench`` process of its own), compared with
    itself: identical. The script's ``main`` runs in this process: it imports nothing heavy."""
    from bench import compare_results

    assert compare_results.main(["run", "--quick", "--out", str(tmp_path / "a")]) == 0
    assert json.loads((tmp_path / "a" / "results.json").read_text()).keys() == {"issp_plain", "mcq_circular"}
    capsys.readouterr()
    assert compare_results.main(["compare", str(tmp_path / "a"), str(tmp_path / "a")]) == 0
    assert "identical item by item" in capsys.readouterr().out
