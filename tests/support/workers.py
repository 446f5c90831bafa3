"""How ``make test`` spreads the suite over pytest-xdist's workers (``-n ... --dist loadscope``).

Why several workers on 2 cores: most of the slow tests wait (a server's start, Prefect's heartbeat and
crash detection, a worker's poll), so others run meanwhile. A module's tests stay on one worker, so its
module fixtures are built once; modules sharing one session server (vLLM's, on the tiny model) share a
worker; the longest groups start first, so the last to finish is a short one. A plain ``pytest`` run
(no ``-n``) keeps the file order.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

# modules that share a session server: one worker starts it once for all of them
# (the sweep's group: vLLM's tiny server and the Prefect server of real workers, conftest.workers_server)
SHARED = {"test_sweep": "sweep", "test_sweep_e2e": "sweep", "test_prefect_e2e": "sweep",
          "test_vllm_server": "vllm-server", "test_cost": "vllm-server", "test_mcq_server": "vllm-server",
          "test_batch_vllm": "vllm-server",  # vLLM's run-batch on the group's tiny model
          # one parametrisation of a module: the Ctrl-C test over vLLM's server, on the group's server
          "test_ctrl_c[vllm-server]": "vllm-server",
          # its flow runs on the pool's tiny engine (``shared_engines``), the one test_engine_vllm starts
          "test_roles": "test_engine_vllm"}
# independent tests, each its own unit: the module is long and shares nothing but session fixtures
SPLIT = frozenset({"test_bench"})
# the longest groups (minutes each, from `make test-timed`), started first
FIRST = ("sweep", "vllm-server", "test_ctrl_c", "test_engine_vllm", "test_prefect_ui",
         "test_cli_output", "test_yardsticks_cli", "test_hostile_files", "test_real_battery", "test_export",
         "test_run_checks",
         "test_ui_terminal", "test_package", "test_interview_sample", "test_example_study_run")


def group(nodeid: str) -> str:
    """The unit a test is scheduled with: its module, its modules' shared group, or itself."""
    module = PurePosixPath(nodeid.split("::")[0]).stem
    param = nodeid[nodeid.index("["):] if nodeid.endswith("]") else ""
    return nodeid if module in SPLIT else SHARED.get(module + param, SHARED.get(module, module))


def _rank(item: pytest.Item) -> int:
    unit = group(item.nodeid)
    if unit in FIRST:
        return FIRST.index(unit)
    return len(FIRST) if unit == item.nodeid else len(FIRST) + 1  # the split tests next: a minute each


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the scheduler takes the units in this order
        items.sort(key=_rank)  # stable: the file order within a rank


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadscope`` with this module's units in place of xdist's own scopes."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group(nodeid)

    return ByGroup(config, log)
