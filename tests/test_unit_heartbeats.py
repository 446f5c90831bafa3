"""A unit flow's own heartbeats: only where a worker's frequency asks for them (bench/api_path.py measures
the rest: at Prefect's default each unit's end waited ~0.5 s for the heartbeat thread)."""

from __future__ import annotations

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

from socbench.flows import unit_heartbeats


def _inside(frequency: int | None) -> int | None:
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: frequency}), unit_heartbeats():
        return get_current_settings().flows.heartbeat_frequency


def test_unit_flows_send_heartbeats_only_at_a_frequency_set_below_prefects_default() -> None:
    before = get_current_settings().flows.heartbeat_frequency
    assert _inside(180) is None  # Prefect's default: the parent's heartbeats, from the same process, suffice
    assert _inside(600) is None
    assert _inside(30) == 30  # the workers' for deployments/zombie-runs.yaml: a dead worker's unit is Crashed
    assert _inside(None) is None  # the CLI's private API: none at all
    assert get_current_settings().flows.heartbeat_frequency == before  # nothing left changed
