"""The sweep record (checked before any run starts), how it cuts runs, and how it reads their outcomes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from socbench.errors import ConfigError
from socbench.outcomes import BatchRecord, DispatchedDomain
from socbench.sweep import SweepConfig, SweepModel, settle
from socbench.types import DomainResult

SERVERS = ["http://gpu1:8000/v1", "http://gpu2:8000/v1"]


def sweep(**values) -> SweepConfig:
    return SweepConfig.model_validate({"run": {"output_dir": "out", "interview_count": 3},
                                       "models": [{"model": "a"}, {"model": "b"}], **values})


def test_each_model_runs_the_shared_settings_on_its_own_engine():
    config = sweep(models=[{"model": "/models/big", "engine_args": {"tensor_parallel_size": 4}},
                           {"api_type": "openai", "model": "served", "api_base": SERVERS,
                            "concurrent_requests": 256}])
    big, served = config.run_config(0), config.run_config(1)
    assert (big.interview_count, big.engine.model, big.engine.engine_args) == (3, "/models/big",
                                                                               {"tensor_parallel_size": 4})
    assert served.engine.api_base == ",".join(SERVERS) and served.engine.concurrent_requests == 256
    assert big.engine.cache_dir == Path("out/.cache") and big.engine.cache_store == "segments"
    assert [m.slots for m in config.models] == [4, 0]  # a GPU model holds its GPUs, a server nothing
    assert SweepModel(api_type="hf", model="m").slots == 1
    assert SweepModel(model="m", engine_slots=2).slots == 2


@pytest.mark.parametrize(("values", "message"), [
    ({"run": {"engine": {"model": "x"}}}, "run.engine: a sweep sets each engine under models"),
    ({"models": [{"model": "a"}, {"model": "a"}]}, "models[1]: writes to the same results as models[0]"),
    ({"deployment": "issp-domains"}, "deployment 'issp-domains': expected <flow name>/<deployment name>"),
    ({"models": [{"model": "a", "deployment": "gpu"}]}, "deployment 'gpu'"),
    ({"models": [{"api_type": "openai", "model": "a"}]}, "needs --api_base"),
    ({"models": [{"model": "a", "engine_args": {"no_such_arg": 1}}]}, "no_such_arg"),
    ({"models": [{"api_type": "openai", "model": "a", "api_base": ["ftp://x"]}]}, "is not an http(s) URL"),
])
def test_a_bad_sweep_fails_before_any_run_naming_what_is_wrong(values, message):
    with pytest.raises((ConfigError, ValueError), match=re.escape(message)):
        sweep(**values)


def test_engine_limit_takes_only_the_host_placeholder():
    assert sweep(engine_limit="gpus-{host}").engine_limit == "gpus-{host}"
    with pytest.raises(ValueError, match="the only placeholder is {host}"):
        sweep(engine_limit="gpus-{pool}")


def test_domains_are_cut_into_runs_per_model_and_placed_on_their_deployment():
    config = sweep(domains_per_run=2, models=[{"model": "a"}, {"model": "b", "domains_per_run": 5,
                                                               "deployment": "issp-domains/gpu"}])
    units = config.units({0: [1, 2, 3, 4, 6], 1: [1, 2, 3, 4, 6]})
    assert [(u.model, u.domain_ids, u.deployment) for u in units] == [
        (0, (1, 2), "issp-domains/local"), (0, (3, 4), "issp-domains/local"), (0, (6,), "issp-domains/local"),
        (1, (1, 2, 3, 4, 6), "issp-domains/gpu")]
    assert [u.domain_ids for u in sweep().units({1: [7, 8, 9]})] == [(7, 8, 9)]  # default: one run per model


def _result(domain_id: int) -> DomainResult:
    return DomainResult(domain_id, f"D{domain_id}", "m", 1, 1, {}, 0, {}, {}, {}, {}, 1)


def test_settle_reads_done_running_and_failed_over_every_attempt():
    crashed = BatchRecord(0, (1, 2, 3), True, "Crashed: no heartbeat",
                          (DispatchedDomain(1, True, "", _result(1)), DispatchedDomain(2, False, "")), "r1")
    domains = (DispatchedDomain(1, False, "Failed: bad file"), DispatchedDomain(2, True, "", _result(2)))
    failed = BatchRecord(1, (1, 2), True, "Failed: 1 domain(s) failed", domains, "r2")
    first = settle([crashed, failed])
    assert sorted(first.results) == [(0, 1), (1, 2)]
    assert first.failed == {(0, 2): "Crashed: no heartbeat", (0, 3): "Crashed: no heartbeat",
                            (1, 1): "Failed: bad file"}
    assert first.pending(2, [1, 2, 3]) == {0: [2, 3], 1: [1, 3]}  # (1, 3) was never dispatched

    retry = BatchRecord(0, (2, 3), False, "", (DispatchedDomain(2, True, "", _result(2)),), "r3")
    second = settle([crashed, failed, retry])
    assert (0, 2) in second.results and second.running == {(0, 3)} and second.running_runs == ["r3"]
    assert (0, 3) not in second.failed and second.pending(2, [1, 2, 3]) == {1: [1, 3]}
