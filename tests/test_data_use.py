"""Issue 31, item 6: licensed data stays where its licence allows.

An imported study is ``data_use: local``: its prompts go only to in-process engines and to servers on
loopback or private-network addresses. Any other host is refused before a connection is attempted
(exit 2, one line) unless ``--allow_remote_data`` acknowledges it: then one stderr line names study
and host and ``summary.json`` records it. No traffic leaves this machine: the tests' own loopback
listeners are declared non-local through ``$SOCBENCH_REMOTE_HOSTS``, and the one unresolvable name
is never looked up (resolution is faked or the name listed there too).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from fixtures.sorted_survey import import_sorted_survey
from socbench.config import RunConfig, make_config
from socbench.data_use import REMOTE_HOSTS, check_data_use, data_use, is_local_host
from socbench.domains import get_domain
from socbench.errors import ConfigError
from socbench.manifest import read_manifest
from support import CLI
from support.cli import socbench
from support.fake_openai import FakeOpenAIServer


def check_use(config: RunConfig, domains: list) -> str | None:
    """The check as the study makes it, from a run's configuration."""
    return check_data_use(config.engine_settings(), config.dataset_dir, domains, config.allow_remote_data)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_sorted_survey(tmp_path_factory.mktemp("licensed"))


@pytest.fixture
def listener():
    """A loopback socket that listens and never accepts: ``connected()`` says whether anyone tried."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)

    def connected() -> bool:
        try:
            server.accept()[0].close()
            return True
        except BlockingIOError:
            return False

    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1", connected
    server.close()


@pytest.mark.parametrize("host, local", [("127.0.0.1", True), ("localhost", True), ("::1", True),
                                         ("10.1.2.3", True), ("192.168.7.8", True), ("172.16.0.9", True),
                                         ("8.8.8.8", False), ("100.64.0.1", False)])
def test_loopback_and_private_addresses_are_local(host: str, local: bool) -> None:
    assert is_local_host(host) is local


def test_a_name_that_does_not_resolve_or_is_listed_is_not_local(monkeypatch) -> None:
    def no_such_name(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)
    assert not is_local_host("llm-api.invalid")
    monkeypatch.undo()
    monkeypatch.setenv(REMOTE_HOSTS, "127.0.0.1, example.org")
    assert not is_local_host("127.0.0.1") and is_local_host("localhost")


def test_imported_is_local_demo_is_remote_a_manifest_may_say_so(imported: Path, demo_data: Path,
                                                                 tmp_path: Path) -> None:
    domain = get_domain("values", imported)
    assert "data_use: local" in (imported / "socbench.yaml").read_text()  # recorded at import
    assert data_use(imported, domain) == "local"
    assert data_use(demo_data, get_domain(1, demo_data)) == "remote"  # synthetic (socbench data synth)
    said = tmp_path / "socbench.yaml"  # the user's edit of the imported manifest
    said.write_text((imported / "socbench.yaml").read_text().replace("data_use: local", "data_use: remote"))
    assert data_use(tmp_path, read_manifest(said).domains[0]) == "remote"


def test_check_refuses_names_and_acknowledges(imported: Path, demo_data: Path, monkeypatch) -> None:
    monkeypatch.setenv(REMOTE_HOSTS, "llm-api.invalid")  # never resolved
    values = [get_domain("values", imported)]
    remote = {"api_type": "config", "api_base": "https://llm-api.invalid/v1", "model": "m"}
    with pytest.raises(ConfigError, match=r"--api_base: refused to send the licensed data of Values "
                                          r"\(data_use: local\) to llm-api.invalid.*--allow_remote_data"):
        check_use(make_config(data_dir=str(imported), **remote), values)
    line = check_use(make_config(data_dir=str(imported), allow_remote_data=True, **remote), values)
    assert line == ("sending the licensed data of Values (data_use: local) to llm-api.invalid, as "
                    "--allow_remote_data acknowledges")
    for local in ({"api_type": "config", "api_base": "http://10.0.0.5:8000/v1,http://localhost:8001",
                   "model": "m"}, {"api_type": "hf", "model": "smollm2-135m-instruct"}):
        assert check_use(make_config(data_dir=str(imported), **local), values) is None
    assert check_use(make_config(data_dir=str(demo_data), **remote), [get_domain(1)]) is None


def _args(data: Path, url: str, out: Path, *extra: str) -> list[str]:
    return ["issp", "--api_type", "config", "--api_base", url, "--model", "fake-model",
            "--data_dir", str(data), "--interview_count", "4", "--output_dir", str(out), *extra]


def _issp(env: dict, data: Path, url: str, out: Path, *extra: str, remote: str = "127.0.0.1"):
    return subprocess.run([*CLI, *_args(data, url, out, *extra)], capture_output=True, text=True,
                          timeout=300, env={**env, REMOTE_HOSTS: remote})


@pytest.mark.slow  # runs the CLI in a subprocess, and a flow on the session's Prefect API
def test_cli_refuses_before_any_connection_and_runs_when_acknowledged(imported, listener, tmp_path,
                                                                     api_url, cli_in_process, capsys,
                                                                     monkeypatch) -> None:
    url, connected = listener
    run = _issp(os.environ, imported, url, tmp_path / "out")  # the real process: exit 2, one line
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 2 and len(lines) == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert "refused to send the licensed data of Values (data_use: local) to 127.0.0.1" in lines[0]
    monkeypatch.setenv(REMOTE_HOSTS, "llm-api.invalid")  # a named host: the same refusal, in this process
    assert cli_in_process(_args(imported, "https://llm-api.invalid/v1", tmp_path / "out")) == 2
    assert "refused to send the licensed data of Values (data_use: local) to llm-api.invalid" in \
        capsys.readouterr().err
    assert not connected() and not (tmp_path / "out").exists()
    with FakeOpenAIServer() as server:  # its flows on the session's Prefect API
        run = socbench(*_args(imported, server.url, tmp_path / "out", "--allow_remote_data"),
                       env={REMOTE_HOSTS: "127.0.0.1"})
        assert server.stats().requests > 0
    notes = [line for line in run.stderr.splitlines() if "licensed" in line]
    assert notes == ["sending the licensed data of Values (data_use: local) to 127.0.0.1, as "
                     "--allow_remote_data acknowledges"]
    summary = json.loads((tmp_path / "out" / "fake-model" / "summary.json").read_text())
    assert summary["data"]["sent_remote"] == {"studies": ["Values"], "hosts": ["127.0.0.1"],
                                              "acknowledged": "--allow_remote_data"}


@pytest.mark.slow  # runs the flow on a Prefect API
def test_the_flow_refuses_too_as_a_worker_runs_it(imported, listener, tmp_path, api_url, monkeypatch) -> None:
    """A deployment run has no CLI preflight: the flow refuses at its start, and so does each domain's first
    stage (a sweep's runs), before the engine starts."""
    from socbench.flows.issp import issp
    from socbench.studies import task_for
    from socbench.tasks.load_data import load_data

    url, connected = listener
    monkeypatch.setenv(REMOTE_HOSTS, "127.0.0.1")
    config = make_config(api_type="config", api_base=url, model="m", data_dir=str(imported),
                         output_dir=str(tmp_path / "out"), interview_count=4)
    state = issp(config, return_state=True)
    assert state.is_failed() and "refused to send the licensed data of Values" in state.message
    with pytest.raises(ConfigError, match="refused to send the licensed data of Values"):
        load_data.fn(task_for(config), task_for(config).unit(get_domain("values", imported).id))
    assert not connected()
