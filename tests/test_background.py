"""socbench.background: work beside the caller gives what the caller would have computed, raises what it
would have raised, never re-runs the caller's script, and a process that dies costs only time."""

from __future__ import annotations

import gc
import json
import math
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from bench.demographic_model import synthetic_domain
from socbench.background import CHUNK, FEW_COLLECTIONS, Beside, cores, few_collections
from socbench.yardsticks import begin_demographic

pytestmark = pytest.mark.skipif(cores() < 2, reason="work runs apart only with a second core")


def test_small_work_runs_in_the_caller_when_asked() -> None:
    calls = []
    later = Beside(False, lambda x: calls.append(x) or x * 2, 21)
    assert calls == []  # nothing yet: computed at result()
    assert later.result() == 42 and calls == [21]


def _summary(*args: list) -> list[tuple[int, object, object]]:
    return [(len(a), a[0], a[-1]) for a in args]


@pytest.mark.slow  # starts a process
def test_work_apart_returns_its_result_and_raises_its_error() -> None:
    later = Beside(True, math.fsum, [0.1] * 10)
    assert later.result() == math.fsum([0.1] * 10)
    assert not Path(later._folder).exists()  # nothing of the work's data left behind
    with pytest.raises(ValueError, match="invalid literal"):
        Beside(True, int, "not a number").result()
    # a long list travels in pickles of CHUNK elements, each with its own memo; every element arrives
    shared = {"sex": "female"}
    items = [(n, shared) for n in range(2 * CHUNK + 7)]
    assert Beside(True, _summary, items, [1.0], items[:3]).result() == _summary(items, [1.0], items[:3])


@pytest.mark.slow  # starts a process, then kills it
def test_a_process_that_dies_leaves_the_work_to_the_caller() -> None:
    later = Beside(True, math.fsum, [0.5, 0.25])
    later._process.kill()  # type: ignore[union-attr]  # as the OOM killer would
    assert later.result() == 0.75
    cancelled = Beside(True, math.fsum, [1.0])
    folder = Path(cancelled._folder)
    cancelled.cancel()
    assert cancelled._process is None and not folder.exists()


@pytest.mark.slow  # starts a process
def test_the_demographic_yardstick_apart_equals_the_one_computed_in_the_caller() -> None:
    items, people = synthetic_domain(300, 4, 12)
    answered = [replace(item, predicted_code=item.offered_codes[item.person_id % 4], parse_error=None)
                for item in items]
    here = begin_demographic(answered, people, apart=False).result()
    apart = begin_demographic(answered, people, apart=True)
    assert apart._process is not None
    assert json.dumps(apart.result(), sort_keys=True) == json.dumps(here, sort_keys=True)  # NaN != NaN
    assert set(here) >= {"record", "simbench", "structure", "profiles"}


@pytest.mark.slow  # starts a process
def test_only_a_middle_sized_domain_is_fitted_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``APART_ITEMS`` a process costs more than it saves; above ``ALONE_ITEMS`` its copy of the items
    costs more memory than its core saves time: both are fitted in the caller."""
    import socbench.yardsticks as yardsticks

    items, people = synthetic_domain(40, 2, 3)
    monkeypatch.setattr(yardsticks, "APART_ITEMS", len(items) + 1)
    assert begin_demographic(items, people)._process is None
    monkeypatch.setattr(yardsticks, "APART_ITEMS", 1)
    monkeypatch.setattr(yardsticks, "ALONE_ITEMS", len(items) - 1)
    assert begin_demographic(items, people)._process is None
    monkeypatch.setattr(yardsticks, "ALONE_ITEMS", len(items))
    apart = begin_demographic(items, people)
    assert apart._process is not None
    apart.cancel()


@pytest.mark.slow  # runs a script in a child process
def test_a_script_without_a_main_guard_runs_once(tmp_path: Path) -> None:
    """multiprocessing's spawn re-runs the caller's script in the child (a notebook's or a script's
    without ``if __name__ == "__main__"``): this process must not."""
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent("""
        import math
        from socbench.background import Beside
        print("script ran", flush=True)
        print(Beside(True, math.fsum, [1.0, 2.0]).result(), flush=True)
    """))
    found = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                           check=False)
    assert found.stdout.split("\n")[:2] == ["script ran", "3.0"], found.stdout + found.stderr


def test_work_that_cannot_be_pickled_runs_in_the_caller() -> None:
    later = Beside(True, lambda: "computed here")  # a lambda: no pickle, so no process
    assert later._process is None and later.result() == "computed here"


def test_few_collections_sets_the_run_thresholds_and_restores_the_callers() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), few_collections():
        assert gc.get_threshold() == FEW_COLLECTIONS
        with few_collections():  # the CLI's around the flow's: the inner one restores the outer one's
            pass
        assert gc.get_threshold() == FEW_COLLECTIONS
        raise RuntimeError("a run that fails")
    assert gc.get_threshold() == before
