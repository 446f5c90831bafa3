"""``socbench.memo``: computed once, read back on a rerun, never read for other inputs or other code."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from socbench import memo as memo_module
from socbench.memo import code_fingerprint, content_key, memo


def counted(value: object) -> tuple[list[int], object]:
    calls: list[int] = []

    def compute() -> object:
        calls.append(1)
        return value
    return calls, compute


def test_computed_once_then_read_back(tmp_path: Path) -> None:
    value = {"a": [1, 2.5, None], "nan": math.nan, "nested": {"k": "v"}}
    calls, compute = counted(value)
    key = content_key("x", (1, 2), {"w": 0.5})
    first, again = memo(tmp_path, key, compute), memo(tmp_path, key, compute)
    assert calls == [1] and (tmp_path / "memo" / f"{key}.json").is_file()
    assert first["a"] == again["a"] == [1, 2.5, None] and math.isnan(again["nan"])
    assert first["nested"] == again["nested"] == {"k": "v"}
    assert list(first) == list(again) == list(value)  # key order kept: a rerun writes the same files


def test_keys_follow_every_input_and_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    key = content_key("x", [(1, "a")], {"w": 1.0})
    assert key == content_key("x", [(1, "a")], {"w": 1.0})
    assert len({key, content_key("x", [(1, "b")], {"w": 1.0}), content_key("x", [(1, "a")], {"w": 1.5}),
                content_key("y", [(1, "a")], {"w": 1.0}), content_key("x", [(1, "a")], None)}) == 5
    monkeypatch.setattr(memo_module, "code_fingerprint", lambda: "other code")
    assert content_key("x", [(1, "a")], {"w": 1.0}) != key
    assert len(code_fingerprint()) == 64


def test_no_folder_a_broken_file_or_a_read_only_folder_compute(tmp_path: Path) -> None:
    calls, compute = counted([1])
    assert memo(None, "k", compute) == memo(None, "k", compute) == [1] and calls == [1, 1]
    broken = tmp_path / "memo" / "k.json"
    broken.parent.mkdir()
    broken.write_text('{"half":')
    assert memo(tmp_path, "k", compute) == [1] and calls == [1, 1, 1] and broken.read_text() == "[1]"
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the folder should be: nothing can be stored under it
    assert memo(blocked, "k", compute) == [1] and calls == [1, 1, 1, 1]


PEAK = """
import tracemalloc
from socbench.memo import content_key
rows = tuple((i, f"answer {i}", "x" * 40) for i in range(20_000))
content_key("items", rows[:2])  # its imports and caches: not the part's cost
tracemalloc.start()
content_key("items", rows)
print(tracemalloc.get_traced_memory()[1])
"""


@pytest.mark.slow  # the peak is measured in a process of its own
def test_a_long_part_is_hashed_in_memory_bounded_by_one_element() -> None:
    """A domain's items at a whole survey's size: the key follows every element and field, and no repr of
    the whole part is built (the old key built one: ~1 GB for 2.8 million items)."""
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Part:
        name: str
        rows: tuple

    rows = tuple((i, f"answer {i}", "x" * 40) for i in range(20_000))
    key = content_key("items", Part("a", rows), list(rows))
    changed = rows[:9_000] + ((9_000, "answer 9000", "y" * 40),) + rows[9_001:]
    assert key == content_key("items", Part("a", rows), list(rows))
    assert len({key, content_key("items", Part("a", changed), list(rows)),
                content_key("items", Part("b", rows), list(rows)),
                content_key("items", Part("a", rows), list(changed))}) == 4
    peak = int(subprocess.run([sys.executable, "-c", PEAK], capture_output=True, text=True,
                              check=True).stdout)  # alone: tracemalloc counts every thread of a process
    assert peak < len(repr(rows)) / 20, peak  # the whole repr: 1.4 MB


def test_slotted_records_pickle_as_their_arguments() -> None:
    """Items and scored items pickle through ``attrgetter`` (dataclasses' own pickling of a slots class runs
    Python per field: seconds a content key at a whole survey's size), and come back equal, with an item's
    codes again the tuple every item with those options shares."""
    import pickle

    from socbench.types import Item, ScoredItem

    item = Item(7, "Q1", "DE", (("1", "Agree"), ("2", "Disagree")), "2", False, None, (0.0, 9.0))
    scored = ScoredItem(7, "Q1", "DE", "2", "1", False, None, False, item.offered_codes, {"1": 1.0},
                        {"sex": "Female"}, None, '{"answer": "1"}', ("1",), None)
    back = pickle.loads(pickle.dumps([item, scored]))
    assert back == [item, scored] and back[0].offered_codes is item.offered_codes
    assert Item.__reduce__(item) == (Item, (7, "Q1", "DE", item.options, "2", False, None, (0.0, 9.0)))
