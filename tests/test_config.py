"""Each configuration declared once: flags, flow parameters and library arguments are the
pydantic records (``RunConfig``, ``McqConfig``, with one ``EngineSettings`` inside), and
every mistake is one line, exit 2, before Prefect or a model starts.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import resource
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from socbench.cli import build_parser, main
from socbench.cli.flags import config_from_args
from socbench.config import RunConfig, from_flat, make_config, settings_of
from socbench.engines import session
from socbench.engines.settings import EngineSettings, VllmSettings, _warn_removed, vllm_arguments
from socbench.errors import ConfigError
from socbench.mcq.mcq_config import McqConfig
from support import CLI
from tests.conftest import ROOT

# the original system's AsyncEngineArgs block, pasted as it is
SEED_ENGINE = {"trust_remote_code": True, "tensor_parallel_size": 4, "gpu_memory_utilization": 0.98,
               "max_model_len": 20480, "enable_chunked_prefill": True, "enable_prefix_caching": True,
               "max_num_seqs": 4096, "max_num_batched_tokens": 10240, "enforce_eager": True,
               "disable_custom_all_reduce": True, "use_v2_block_manager": True,
               "disable_async_output_proc": True}
REMOVED = ("use_v2_block_manager", "disable_async_output_proc")


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("command, model, backend", [("issp", RunConfig, "vllm"), ("mcq", McqConfig, "auto")])
def test_every_setting_is_a_flag_with_its_default_in_help(command, model, backend, capsys) -> None:
    text = _help(command, capsys)
    for name in settings_of(model):
        assert f"--{name}" in text, name
    for flag in ("--api_type", "--api_base", "--api_key_env", "--concurrent_requests", "--request_timeout_s",
                 "--cache_dir", "--engine"):  # one engine record: every backend on both commands
        assert flag in text
    assert "(default: smollm2-135m-instruct)" in text and "(default: <output_dir>/.cache)" in text
    assert f"CPU; the choice is recorded; socbench mcq's default) (default: {backend})" in text
    assert "(default: results)" in text


def test_flags_in_snake_and_kebab_case_fill_the_nested_record() -> None:
    args = build_parser().parse_args(["issp", "--data-dir", "d", "--start_domain_id", "3",
                                      "--api-type", "config", "--api_base", "http://127.0.0.1:9/v1",
                                      "--model", "m", "--cache-dir", "c",
                                      "--engine", '{"max_retries": 2}', "--no-persona", "--no-structured"])
    config = config_from_args(RunConfig, args)
    assert config.data_dir == Path("d") and config.start_domain_id == 3 and config.no_persona
    assert config.structured is False and config.run_name == "m-no_persona"
    assert config.engine == EngineSettings(api_type="openai", model="m", api_base="http://127.0.0.1:9/v1",
                                           engine_args={"max_retries": 2}, cache_dir=Path("c"))


def test_one_engine_record_for_issp_and_mcq_and_the_session_keys_on_it(tmp_path) -> None:
    flat = {"api_type": "config", "api_base": "http://127.0.0.1:9/v1", "model": "m", "output_dir": tmp_path}
    issp, mcq = make_config(**flat), from_flat(McqConfig, flat)
    assert issp.engine == mcq.engine and issp.engine.api_type == "openai"  # 'config' is the OpenAI backend
    assert issp.engine.cache_dir == tmp_path / ".cache"  # beside the results, unless --cache_dir is given
    assert make_config(output_dir=tmp_path, cache_dir=tmp_path / "c").engine.cache_dir == tmp_path / "c"
    try:
        engine = session.get_engine(issp.engine)
        assert session.get_engine(mcq.engine) is engine and engine.identity["backend"] == "openai"
    finally:
        session.close_engines()
    # the flows' parameter round trip (Prefect validates the record from its JSON form); the
    # derived cache folder is not written, so a new output_dir there moves the cache with it
    assert RunConfig.model_validate(json.loads(issp.model_dump_json())) == issp
    assert RunConfig.model_validate_json(issp.model_dump_json()) == issp  # pydantic's JSON mode takes no Path
    moved = RunConfig.model_validate({**issp.model_dump(), "output_dir": tmp_path / "other"})
    assert moved.engine.cache_dir == tmp_path / "other" / ".cache"


def test_flows_take_the_config_record_and_prefect_yaml_nests_it() -> None:
    from socbench.flows.issp import issp
    from socbench.flows.mcq import mcq

    spec = {d["name"]: d for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]}
    for flow, name, model in ((issp, "all-domains", RunConfig), (mcq, "arc-easy", McqConfig)):
        assert set(flow.parameters.properties) == {"config", "api_key_secret"}
        parameters = flow.validate_parameters(spec[name]["parameters"])
        assert isinstance(parameters["config"], model)
        assert parameters["config"].engine.model == "smollm2-135m-instruct"
        assert str(ROOT) not in json.dumps(flow.parameters.model_dump())  # no path of this machine


def test_seed_engine_block_is_accepted_removed_keys_warn_once(caplog) -> None:
    _warn_removed.cache_clear()
    caplog.set_level(logging.WARNING, logger="socbench")
    config = make_config(engine=SEED_ENGINE)
    make_config(engine=SEED_ENGINE)  # built again (as Prefect does): still one warning
    warnings = [r.getMessage() for r in caplog.records if r.name == "socbench"]
    assert len(warnings) == 1 and all(key in warnings[0] for key in REMOVED) and "removed" in warnings[0]
    assert config.engine.engine_args == {k: v for k, v in SEED_ENGINE.items() if k not in REMOVED}
    kwargs = VllmSettings.for_host(config.engine.engine_args).engine_kwargs()  # what vllm.LLM receives
    for key, value in config.engine.engine_args.items():
        assert kwargs[key] == value, key


def test_unknown_engine_key_names_it_and_cpu_knobs_stay_accepted() -> None:
    with pytest.raises(ConfigError, match=r"^--engine no_such_arg=1: unknown setting \(not in vLLM"):
        make_config(engine={"no_such_arg": 1})
    with pytest.raises(ConfigError, match="--engine model"):
        make_config(engine={"model": "x"})
    knobs = {"in_process": True, "kv_cache_space_gib": 1, "submit_window": 64, "cpu_threads": 1}
    assert make_config(engine=knobs).engine.engine_args == knobs
    with pytest.raises(ConfigError, match="--engine batch_size=0"):
        make_config(api_type="hf", engine={"batch_size": 0})
    with pytest.raises(ConfigError, match="--engine torch_threads=0"):  # its bound, not preflight
        make_config(api_type="hf", engine={"torch_threads": 0})


@pytest.mark.slow  # imports vLLM
def test_engine_keys_are_vllms_own_definition() -> None:
    """The names read from the source are exactly what vLLM's EngineArgs and LLM take."""
    from vllm import LLM
    from vllm.engine.arg_utils import EngineArgs

    taken = {f.name for f in dataclasses.fields(EngineArgs)} | set(inspect.signature(LLM.__init__).parameters)
    public = {name for name in taken if not name.startswith("_")}
    assert vllm_arguments() == frozenset(public - {"self", "model", "kwargs"})


BAD_SETTINGS = [
    (["issp", "--domian_id", "1"], "unrecognized arguments: --domian_id"),
    (["issp", "prompts", "--domain_id", "1", "--domian_id", "1"], "unrecognized arguments: --domian_id"),
    (["issp", "--engine", '{"no_such_arg": 1}'], "--engine no_such_arg=1: unknown setting"),
    (["issp", "--engine", "{dtype: float32}"], "argument --engine: not JSON"),
    (["issp", "--start_domain_id", "5"], "--start_domain_id 5"),
    (["issp", "--concurrent_requests", "0"], "--concurrent_requests '0'"),
    (["mcq", "--api_type", "config"], "--api_type config needs --api_base"),
    (["mcq", "--api_type", "openai", "--api_base", "http://127.0.0.1:9"], "--api_base http://127.0.0.1:9"),
]


@pytest.mark.parametrize("args, needle", BAD_SETTINGS)
def test_bad_settings_are_one_line_exit_2_before_anything_starts(args: list[str], needle: str, tmp_path: Path,
                                                                cli_in_process, capsys) -> None:
    """In this process: not marked slow, so tests/support/guard.py fails it if the CLI started a
    process (Prefect's API), loaded a model or imported torch/vLLM on the way to the error."""
    started = time.process_time()
    code = cli_in_process([*args, "--output_dir", str(tmp_path)])
    cpu = time.process_time() - started
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and needle in lines[0], err
    assert "Traceback" not in err
    assert cpu < 4, f"{cpu:.1f} s of CPU"  # no retries, no waiting on a server


@pytest.mark.slow  # runs the CLI in a subprocess
def test_bad_settings_are_one_line_exit_2_in_a_second(tmp_path: Path) -> None:
    """The promise as a user meets it (once for every case above): a real process, exit 2, one line."""
    args, needle = BAD_SETTINGS[2]  # past argparse: the engine record is validated
    before = _children_cpu_seconds()
    result = subprocess.run([*CLI, *args, "--output_dir", str(tmp_path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    cpu = _children_cpu_seconds() - before
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and needle in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    # CPU time, not wall time (a loaded machine stretches the latter): about 0.5 s, no Prefect,
    # no model and no retries (importing Prefect alone costs ~2 s, a model far more).
    assert cpu < 4, f"{cpu:.1f} s of CPU"


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.slow  # runs the CLI in a subprocess
def test_seed_block_on_the_command_line_gets_past_validation(tmp_path: Path) -> None:
    result = subprocess.run([*CLI, "issp", "--engine", json.dumps(SEED_ENGINE),
                             "--data_dir", str(tmp_path / "none")], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    warning, error = result.stderr.splitlines()
    assert result.returncode == 2 and "--data_dir" in error  # the next check failed, not the engine block
    assert "--engine use_v2_block_manager, disable_async_output_proc: removed" in warning


def _options(parser) -> dict[str, set[str]]:
    """Sub-command -> every option string it accepts (``issp prompts`` as ``issp-prompts``)."""
    found: dict[str, set[str]] = {}
    for action in parser._subparsers._group_actions:  # argparse keeps its sub-parsers here
        for name, sub in action.choices.items():
            nested = {n: s for a in (sub._subparsers._group_actions if sub._subparsers else [])
                      for n, s in a.choices.items()}
            found[name] = set(sub._option_string_actions) | {o for s in nested.values()
                                                             for o in s._option_string_actions}
    return found


DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_documented_commands_use_only_flags_that_exist() -> None:
    """Every ``--flag`` on a ``socbench ...`` line of the README and docs/ is a flag of that sub-command."""
    import re

    options = _options(build_parser())
    checked = 0
    for document in DOCUMENTS:
        lines = document.read_text().splitlines()
        for number, line in enumerate(lines):
            text = line.strip()
            if not text.startswith("socbench "):
                continue
            while text.endswith("\\") and number + 1 < len(lines):  # continued on the next line
                number += 1
                text = text[:-1] + " " + lines[number].strip()
            words = text.split()
            command = "issp-prompts" if words[1:3] == ["issp", "prompts"] else words[1]
            for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", text):
                assert flag in options[command], f"{document.name}: {flag} is not a flag of {command}: {text}"
                checked += 1
    assert checked > 30


def test_cli_reference_documents_every_flag() -> None:
    """docs/cli.md names every flag of every sub-command (the README shows only the main ones)."""
    import re

    def spelling(flag: str) -> str:  # --data-dir and --data_dir are one flag
        return "--" + flag[2:].replace("-", "_")

    reference = (ROOT / "docs" / "cli.md").read_text()
    documented = {spelling(flag) for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", reference)}
    missing = sorted({f"socbench {command} {option}" for command, found in _options(build_parser()).items()
                      for option in found if option.startswith("--") and option != "--help"
                      and spelling(option) not in documented})
    assert missing == []


def test_help_shows_the_default_a_run_gets() -> None:
    """``socbench mcq``'s engine defaults to ``auto`` (its record's default), ``issp``'s to ``vllm``."""
    assert settings_of(McqConfig)["api_type"].default == McqConfig().engine.api_type == "auto"
    assert settings_of(RunConfig)["api_type"].default == RunConfig().engine.api_type == "vllm"


@pytest.mark.parametrize("args, needle", [
    (["report", "r", "--resamples", "0"], "argument --resamples: expected a positive integer, got '0'"),
    (["data", "synth", "--out", "o", "--seed", "-1"], "argument --seed: expected a non-negative integer"),
    (["data", "validate", "--data_dir", "d", "--dataset_size", "x"], "--dataset_size 'x': expected a"),
    (["estimate", "r", "--cost_model", "-1"], "--cost-model: expected a positive number, got '-1'"),
    (["estimate", "r", "--fraction", "1"], "argument --fraction: expected a fraction between 0 and 1"),
])
def test_a_typed_flag_s_bad_value_is_argparse_s_one_line(args: list[str], needle: str, capsys) -> None:
    """Typed flags (cli.flags.checked: one pydantic type each; validate's: RunConfig's fields) say what
    they expected, exit 2."""
    from tests.support.cli import exit_code

    assert exit_code(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and needle in err, err
