"""`socbench issp --api_type config` against vLLM's own OpenAI server (`tests/vllm_server.py`).

- Generate (structured) and logprobs modes give the same answers, item by item, as the in-process
  vLLM engine on the same prompts (issue 12, seen 4: the API sent a JSON schema, the in-process
  engine a regex, and answers differed; structured was off over the API). On the tiny model, fp32
  on both sides: the session's server and the session's in-process engine, no start of their own.
- The server killed mid-run leaves engine errors (not parse failures) and an incomplete run with
  no score, exit code 1 with one line naming the domain, the count and the first reason, and the
  domain and the run Failed in Prefect (seen 2); restarted, the same command sends exactly the
  missing requests (counted in the server's access log), exits 0 and ends with the files of an
  uninterrupted run. A run that made no progress (a misconfigured server refusing every prompt)
  followed by a healthy rerun answers every item (seen 1).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
from pathlib import Path

import pytest

from socbench.config import make_config
from socbench.data import build_items, load_domain
from socbench.domains import get_domain
from socbench.extract import distribution_of
from socbench.processes import prefect_rest
from socbench.prompts import build_domain_prompts
from support import CLI, FakeOpenAIServer
from support.cli import socbench
from support.records import read_detailed
from tests.test_reliability import cached_rows, without_timestamps
from tests.vllm_server import VllmServer

pytestmark = pytest.mark.slow
PROBE = 1  # a CLI run's preflight sends one tiny constrained request (is --structured honoured?)
KEY = {"OPENAI_API_KEY": "sk-unused"}  # in-process runs: the key a CLI run's environment gets
LOGPROB_TOLERANCE = 1e-4  # max |p_api - p_in_process| per option, fp32 on both sides (see the test)
KILLED_RUN = 12  # respondents of the run the server dies under: 72 requests, killed after 20 are answered


@pytest.fixture(scope="module")
def run_env(cli_api_env: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The CLI's own Prefect home; its flows on the session's Prefect API."""
    home = tmp_path_factory.mktemp("prefect-vllm-server")
    return dict(cli_api_env, PREFECT_HOME=str(home), PREFECT_MEMO_STORE_PATH=str(home / "memo.toml"),
                PREFECT_RESULTS_LOCAL_STORAGE_PATH=str(home / "results"), OPENAI_API_KEY="sk-unused")


def issp_args(url: str, model: str, demo_data: Path, out: Path, count: int, *extra: str) -> list[str]:
    return ["issp", "--api_type", "config", "--api_base", url, "--model", model, "--data_dir", str(demo_data),
            "--domain_id", "1", "--interview_count", str(count), "--output_dir", str(out), *extra]


def read(out: Path, model: str, kind: str = "detailed") -> dict:
    path = out / model / f"Citizenship_{kind}.json"
    return read_detailed(path) if kind == "detailed" else json.loads(path.read_text())


def last_run_states(env: dict) -> tuple[str, dict[str, str]]:
    """The state of the newest ``issp`` run of this test process on the run's Prefect API, and of its domain
    runs. The API may be shared by pytest-xdist's workers (tests/support/session_api.py): this process's
    runs are those whose parameters name a path in its temporary folder (``env``'s Prefect home is in it)."""
    url, ours = env["PREFECT_API_URL"], f"{Path(env['PREFECT_HOME']).parent}/"
    runs = prefect_rest(url, "/flow_runs/filter", {"flows": {"name": {"any_": ["issp"]}},
                                                   "sort": "START_TIME_DESC", "limit": 200})
    parent = next(run for run in runs if ours in json.dumps(run["parameters"]))
    domains = {"flow_runs": {"parent_flow_run_id": {"any_": [parent["id"]]}}}
    children = prefect_rest(url, "/flow_runs/filter", domains)
    return parent["state_type"], {run["name"]: run["state_type"] for run in children}


def by_item(detailed: dict, key: str) -> dict[str, object]:
    return {f"{d['person_id']}:{d['question_id']}": d[key] for d in detailed["details"]}


# ------------------------------------------------------------- same answers as in-process


@pytest.fixture()
def tiny_engine(engine_pool, tiny_model: Path):
    """The session's in-process vLLM on the tiny model, fp32 like ``vllm_server_tiny`` (the flows' tests'
    engine: ``--engine '{"dtype": "float32"}'``)."""
    return engine_pool.get("vllm", tiny_model, {"dtype": "float32"})


def same_prompts(demo_data: Path, count: int, mode: str) -> list:
    """The prompts `socbench issp` builds for domain 1 (``use_structured`` is on for both backends)."""
    config = make_config(api_type="config", api_base="http://127.0.0.1:1", model="tiny", domain_id=1,
                         interview_count=count, data_dir=str(demo_data), mode=mode)
    data = load_domain(config.data_dir, get_domain(1), config.dataset_size, config.interview_count)
    return build_domain_prompts(data, build_items(data), config)


def test_structured_generate_over_the_api_equals_in_process(tiny_server, tiny_engine, run_env, demo_data,
                                                              tmp_path):
    run = socbench(*issp_args(tiny_server.url, "tiny", demo_data, tmp_path, 5), env=KEY, code=None)
    assert run.returncode == 0, run.stderr[-3000:]
    detailed = read(tmp_path, "tiny")
    prompts = same_prompts(demo_data, 5, "generate")
    assert all(p.structured for p in prompts) and len(prompts) == len(detailed["details"]) > 20
    local = {p.item_id: r.text for p, r in zip(prompts, tiny_engine.generate(prompts))}
    assert by_item(detailed, "raw_reply") == local  # the very same replies, item by item
    assert detailed["parse_failures"] == detailed["engine_errors"] == 0 and detailed["complete"]


def test_verbalized_over_the_api_equals_in_process(tiny_server, tiny_engine, run_env, demo_data, tmp_path):
    """--mode verbalized (issue 45): vLLM's server and the in-process engine constrain the reply by the same
    regex, so the same stated distributions come back, item by item, each one a distribution."""
    args = issp_args(tiny_server.url, "tiny", demo_data, tmp_path, 3, "--mode", "verbalized")
    run = socbench(*args, env=KEY, code=None)
    assert run.returncode == 0, run.stderr[-3000:]
    detailed = read(tmp_path, "tiny-verbalized")
    prompts = same_prompts(demo_data, 3, "verbalized")
    local = {p.item_id: r.text for p, r in zip(prompts, tiny_engine.generate(prompts))}
    assert by_item(detailed, "raw_reply") == local and len(local) > 10
    readable = [d for d in detailed["details"] if d["parse_error"] is None]
    assert readable and all(sum(d["option_distribution"].values()) == pytest.approx(1) for d in readable)
    assert set(detailed["parse_failure_reasons"]) <= {"shares sum to 0"}  # a random model may say 0 to all


def test_logprobs_over_the_api_equal_in_process(tiny_server, tiny_engine, run_env, demo_data, tmp_path):
    """Probabilities within LOGPROB_TOLERANCE; the same most likely code for every item not a near-tie.

    Measured on SmolLM2: in fp32 the two agree exactly (largest difference 0). In bf16 (the CPU default)
    they differed by up to 0.055 in probability and one near-tie of 29 flipped: the engines
    batch differently (the server's batches are the requests in flight, the in-process engine
    takes all at once), so matmuls accumulate in another order, and bf16 logits are coarse
    enough (steps of ~0.06 near 10) that ties between codes are common. Hence fp32 here, where
    a different batch still sums in another order: up to 7e-6 seen under load, so 1e-4.
    """
    args = issp_args(tiny_server.url, "tiny", demo_data, tmp_path, 5, "--mode", "logprobs")
    run = socbench(*args, env=KEY, code=None)
    assert run.returncode == 0, run.stderr[-3000:]
    detailed = read(tmp_path, "tiny-logprobs")
    prompts = same_prompts(demo_data, 5, "logprobs")
    results = tiny_engine.option_logprobs(prompts)
    local = {p.item_id: distribution_of(r.option_logprobs, p.offered_codes) for p, r in zip(prompts, results)}
    api = by_item(detailed, "option_distribution")
    assert api.keys() == local.keys() and len(api) > 20
    worst = max(abs(api[item][code] - p) for item, dist in local.items() for code, p in dist.items())
    assert worst <= LOGPROB_TOLERANCE, worst
    # the same most likely code wherever the top two are farther apart than the engines may differ (a
    # random model's near-ties could flip on a rounding): that is all but a few items
    top2 = {item: sorted(dist.values())[-2:] for item, dist in local.items()}
    clear = {item for item, (second, first) in top2.items() if first - second > 2 * LOGPROB_TOLERANCE}
    assert len(clear) >= 0.9 * len(local), len(clear)
    answers = {item: max(dist, key=dist.get) for item, dist in local.items() if item in clear}
    assert {item: code for item, code in by_item(detailed, "llm_answer").items() if item in clear} == answers
    print(f"largest option-probability difference API vs in-process: {worst:.2e}")


# ------------------------------------------------------------- a server that dies mid-run


def killed_mid_run(server: VllmServer, args: list[str], env: dict, out: Path) -> tuple[int, int]:
    """Run ``args``, SIGKILL the server once 20 answers are cached; check the failed run; (items, kept)."""
    proc = subprocess.Popen([*CLI, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    deadline = time.monotonic() + 300
    while cached_rows(out) < 20 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    server.kill()  # SIGKILL to the server and its engine core: in-flight requests die with it
    assert not server.group_alive()
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, output[-3000:]
    [line] = [line for line in output.splitlines() if line.startswith("socbench: error:")]
    assert re.match(r"socbench: error: domain 1 Citizenship: \d+ engine errors, first: "
                    r"(.*connection error|HTTP 5)", line)
    assert last_run_states(env) == ("FAILED", {"issp-domain-1": "FAILED"})

    detailed, metrics = read(out, "tiny"), read(out, "tiny", "metrics")
    n, kept = len(detailed["details"]), cached_rows(out)
    assert 20 <= kept < n and metrics["engine_errors"] == n - kept > 0
    assert metrics["parse_failures"] == 0  # the failures are engine errors, not parse failures
    assert metrics["complete"] is False and metrics["accuracy"] is None and metrics["macro_f1"] is None
    assert all(("connection error" in r or "HTTP 5" in r) for r in metrics["engine_error_reasons"])
    summary = json.loads((out / "tiny" / "summary.json").read_text())
    assert summary["complete"] is False and summary["mean"]["accuracy"] is None
    board = (out / "report" / "leaderboard.md").read_text()
    assert "## Incomplete runs (not ranked)" in board and "| tiny | tiny | 1 | Citizenship" in board
    return n, kept


def refused_every_prompt(port: int, args: list[str], env: dict, out: Path) -> int:
    """Run ``args`` against a misconfigured server on ``port`` that refuses every prompt (a max length of
    64 tokens; the preflight's tiny probe fits): no progress at all; the items sent. The fault is injected
    with the fake server (a second start of vLLM's costs ~70 CPU s): what it tests, the healthy rerun,
    meets vLLM's real server on the same port (the engine cache's key holds host and port)."""
    with FakeOpenAIServer(model="tiny", max_model_len=64, port=port) as refusing:
        run = socbench(*args, env=KEY, code=None)
        assert run.returncode == 1, run.stderr[-3000:]
        failed = read(out, "tiny", "metrics")
        assert failed["engine_errors"] == failed["total_count"] > 0 and cached_rows(out) == 0
        assert refusing.stats().statuses["400"] == failed["total_count"]  # every prompt refused, once
        return failed["total_count"]


@pytest.mark.timeout(1500)  # a restart of vLLM's server: over 5 minutes at load 12-14 on 2 cores
def test_a_killed_server_and_one_refusing_every_prompt_then_a_healthy_restart(tiny_server, run_env, demo_data,
                                                                              tmp_path):
    """Two failures, one restart (a start of vLLM's server costs ~70 CPU s): the server killed mid-run
    (seen 2); then, on its port, a misconfigured one that refuses every prompt (``refused_every_prompt``):
    a run with no progress at all (seen 1: a Prefect task cache of ``vllm_generate`` used to serve the
    failed result again). Restarted healthy, each same command sends exactly its missing requests to
    vLLM's server, and the killed run ends with the files of an uninterrupted run."""
    killed, stuck, reference = tmp_path / "killed", tmp_path / "stuck", tmp_path / "reference"
    args = issp_args(tiny_server.url, "tiny", demo_data, killed, KILLED_RUN, "--concurrent_requests", "4")
    n, kept = killed_mid_run(tiny_server, args, run_env, killed)
    stuck_args = issp_args(tiny_server.url, "tiny", demo_data, stuck, 3)
    refused = refused_every_prompt(tiny_server.port, stuck_args, run_env, stuck)

    tiny_server.start()  # the same port, the cause fixed
    before = tiny_server.requests()
    rerun = socbench(*args, env=KEY, code=None)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert tiny_server.requests() - before == n - kept + PROBE  # exactly the missing requests
    assert last_run_states(run_env) == ("COMPLETED", {"issp-domain-1": "COMPLETED"})
    resumed = read(killed, "tiny", "metrics")
    assert resumed["complete"] is True and resumed["engine_errors"] == 0 and resumed["total_count"] == n

    before = tiny_server.requests()
    rerun = socbench(*stuck_args, env=KEY, code=None)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert tiny_server.requests() - before == refused + PROBE  # every item, none served from a cache
    healed = read(stuck, "tiny", "metrics")
    assert healed["complete"] is True and healed["engine_errors"] == 0 and not math.isnan(healed["accuracy"])

    args = issp_args(tiny_server.url, "tiny", demo_data, reference, KILLED_RUN, "--concurrent_requests", "4")
    first = socbench(*args, env=KEY, code=None)
    assert first.returncode == 0, first.stderr[-3000:]
    for kind in ("metrics", "detailed"):  # usage: what each run sent (the resumed one only what was missing)
        a, b = read(killed, "tiny", kind), read(reference, "tiny", kind)
        assert without_timestamps(a) == without_timestamps(b)


def test_draws_over_vllm_s_server_then_rescored_with_the_server_stopped(tiny_server, run_env, demo_data,
                                                                       tmp_path):
    """--samples K against vLLM's server: each draw is a request with its own seed; every item keeps
    its K draws, and a rerun with a larger K sends only the new draws (and the preflight probe).
    Then (issue 21, seen 11) rescoring the finished run needs no server; one line says so."""
    args = issp_args(tiny_server.url, "tiny", demo_data, tmp_path / "out", 2, "--temperature", "1")
    first = socbench(*args, "--samples", "3", env=KEY, code=None)
    assert first.returncode == 0, first.stderr[-3000:]
    details = read(tmp_path / "out", "tiny")["details"]
    assert details and all(len(d["draws"]) == 3 for d in details)
    before = tiny_server.requests()
    more = socbench(*args, "--samples", "4", env=KEY, code=None)
    assert more.returncode == 0, more.stderr[-3000:]
    assert tiny_server.requests() - before == len(details) + PROBE
    metrics = read(tmp_path / "out", "tiny", "metrics")["metrics"]
    assert metrics["samples"] == 4 and 0.25 <= metrics["draw_agreement"] <= 1

    tiny_server.stop()  # the ``tiny_server`` fixture starts it again for the tests after this one
    (tmp_path / "out" / "tiny" / "last_run.json").unlink()  # a real rerun, not the last run read back
    again = socbench(*args, "--samples", "4", env=KEY, code=None)
    assert again.returncode == 0, again.stderr[-3000:]
    notes = [line for line in again.stderr.splitlines() if "engine cache" in line]
    assert notes == [f"every answer of this run is in the engine cache ({tmp_path / 'out' / '.cache'}): "
                     f"the server at {tiny_server.url} is not used"]
    assert read(tmp_path / "out", "tiny", "metrics")["complete"] is True
