"""The segment store: several processes write one cache folder at once and read each other's answers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cache import CountingEngine, req

from socbench.engines import CachedEngine, create_engine
from socbench.engines.cache import HEADER, SEGMENTS_DIR, SegmentCache, open_store, partition

ROOT = Path(__file__).resolve().parents[1]

WRITER = '''
import json, sys, time
from pathlib import Path
from socbench.engines import CachedEngine
from socbench.engines.cache import SegmentCache
from socbench.types import EngineResult, Message, PromptRequest

class Backend:
    """Answers anything; counts what it is asked (a hit never reaches it)."""
    def __init__(self, name, pace_s=0.0):
        self.name, self.pace_s, self.asked = name, pace_s, 0
    identity = property(lambda self: {"backend": "test", "model": "shared"})
    def generate(self, requests, on_result=None):
        out = []
        for i, r in enumerate(requests):
            self.asked += 1
            out.append(EngineResult(r.key, text=f"{self.name}:{r.item_id}"))
            if on_result:
                on_result(i, out[-1])
            time.sleep(self.pace_s)
        return out
    def close(self):
        pass

def reqs(prefix, n):
    return [PromptRequest(item_id=f"{prefix}{i}", messages=(Message("user", f"{prefix} {i}"),),
                          offered_codes=("1", "2")) for i in range(n)]

if __name__ == "__main__":
    folder, me, other, n, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    backend = Backend(me, pace_s=0.002)
    engine = CachedEngine(backend, SegmentCache(folder))
    if mode == "forever":  # report each stored answer until killed
        for i in range(10**6):
            engine.generate(reqs(me, i + 1)[i:])
            print(i + 1, flush=True)
    engine.generate(reqs(me, n) + reqs("shared", 20))  # both processes answer the shared ones too
    (folder.parent / f"{me}.done").touch()
    deadline = time.monotonic() + 120
    while not (folder.parent / f"{other}.done").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    asked = backend.asked
    theirs = engine.generate(reqs(other, n))
    print(json.dumps({"asked_for_theirs": backend.asked - asked, "cached": sum(r.cached for r in theirs),
                      "texts": sorted({r.text.split(":")[0] for r in theirs})}))
    engine.close()
'''


def _writer(tmp_path: Path, *args: str) -> subprocess.Popen:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, str(script), str(tmp_path / "cache"), *args], env=env,
                            stdout=subprocess.PIPE, text=True)


@pytest.mark.slow  # runs writer processes
def test_two_processes_write_at_once_and_read_each_others_answers(tmp_path):
    n = 150
    procs = [_writer(tmp_path, "a", "b", str(n), "once"), _writer(tmp_path, "b", "a", str(n), "once")]
    reports = [json.loads(proc.communicate(timeout=180)[0].strip().splitlines()[-1]) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    assert reports[0] == {"asked_for_theirs": 0, "cached": n, "texts": ["b"]}
    assert reports[1] == {"asked_for_theirs": 0, "cached": n, "texts": ["a"]}
    store = SegmentCache(tmp_path / "cache")
    assert len(store.segments()) == 2  # one segment per writing process, no lock between them
    assert len(store) == 2 * n + 20  # the shared answers stored twice are one answer each


@pytest.mark.slow  # runs writer processes
def test_killed_writer_keeps_every_reported_answer_and_a_torn_line_is_ignored(tmp_path):
    proc = _writer(tmp_path, "k", "-", "0", "forever")
    reported = 0
    assert proc.stdout is not None
    while reported < 60:
        reported = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    store = SegmentCache(tmp_path / "cache")
    [segment] = store.segments()
    with open(segment, "a") as handle:  # what a kill in the middle of a write leaves
        handle.write("0123abcd\tgenerate\t{\"text\": \"half")
    assert len(store) >= reported
    engine = CachedEngine(CountingEngine(), store)
    assert len(engine.unanswered("generate", [req(0)])) == 1  # reads still work past the torn line
    store.put("f" * 64, "generate", "{}")
    store.flush()
    assert store.get_many(["f" * 64]) == {"f" * 64: "{}"}
    assert len(store.segments()) == 2  # a new process never appends to a dead writer's segment


def test_cache_contract_on_segments(tmp_path):
    """A rerun asks nothing, failures are asked again, an interrupted run resumes where it stopped."""
    folder = tmp_path / "cache"
    first = CachedEngine(CountingEngine(errors_for=frozenset({"p3"})), SegmentCache(folder))
    first.generate([req(i) for i in range(10)])
    assert len(first.cache) == 9  # the failure is not stored
    first.close()
    again = CachedEngine(CountingEngine(die_after=2), SegmentCache(folder))
    with pytest.raises(RuntimeError, match="backend died"):
        again.generate([req(i) for i in range(14)])
    assert again.backend.calls == [("generate", ["p3", "p10", "p11", "p12", "p13"])]
    last = CachedEngine(CountingEngine(), SegmentCache(folder))
    results = last.generate([req(i) for i in range(14)])
    assert last.backend.calls == [("generate", ["p11", "p12", "p13"])]
    assert [r.cached for r in results] == [True] * 11 + [False] * 3


def test_foreign_files_and_damaged_lines_are_skipped(tmp_path, caplog):
    folder = tmp_path / "cache"
    store = SegmentCache(folder)
    store.put("a" * 64, "generate", '{"text": "x"}')
    store.close()
    (folder / "notes.seg").write_text("hello\n" + "b" * 64 + "\tgenerate\t{}\n")
    (folder / "other.seg").write_text(HEADER + "\nnot a record\n" + "c" * 64 + "\tgenerate\t{}\n")
    reader = SegmentCache(folder)
    assert reader.get_many(["a" * 64, "b" * 64, "c" * 64]) == {"a" * 64: '{"text": "x"}', "c" * 64: "{}"}
    assert "notes.seg is not a socbench segment" in caplog.text and "1 damaged line" in caplog.text


def test_the_engine_record_picks_the_store_and_each_backend_has_its_own_folder(tmp_path):
    engine = create_engine("openai", "m", settings={"api_base": "http://127.0.0.1:9/v1"}, cache_dir=tmp_path,
                           cache_store="segments")
    assert isinstance(engine.cache, SegmentCache)
    assert engine.cache.path == tmp_path / SEGMENTS_DIR / partition(engine.backend.identity)
    assert not list(engine.cache.path.iterdir())  # nothing is written before the first answer
    assert open_store("sqlite", tmp_path, {}).path == tmp_path / "engine-cache.sqlite"


def test_rerun_reads_fast_enough(tmp_path):
    """One model's full ISSP run (~28k answers per domain) must be read in well under a second."""
    store = SegmentCache(tmp_path / "cache")
    keys = [f"{i:064x}" for i in range(30_000)]
    for key in keys:
        store.put(key, "generate", '{"text": "{\\"answer\\": \\"2\\"}", "error": null}')
    store.flush()
    began = time.perf_counter()
    assert len(SegmentCache(tmp_path / "cache").get_many(keys)) == len(keys)
    assert time.perf_counter() - began < 2.0
