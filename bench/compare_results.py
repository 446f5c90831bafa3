"""Results item by item before and after a refactor: run the same small ISSP and MCQ runs from two
checkouts and compare every result file they write.

``python bench/compare_results.py run --repo CHECKOUT --out DIR`` runs ``socbench issp`` (plain,
circular, all_possible in logprobs mode, relabelled with shuffled options) on three demo domains
and ``socbench mcq --circular`` on five ARC items, all against the project's deterministic test
server (``tests/support/fake_openai.py``: answers are a hash of the prompt, so a changed prompt
shows as a changed answer), and stores every result file, normalised (no times, no paths; a domain's
item lines folded into its record: ``fold_lines``), in ``DIR/results.json``. ``... compare DIR_A DIR_B``
prints the first differences and exits 1 if any; keys only in B (fields a newer version adds) are listed
apart and are not differences. ``run --quick`` (the tests' pass) runs only ``QUICK``, the ISSP one on one
domain. ``run --data DIR`` runs only ``SCALE``: every respondent of domain 1 of a data folder (issue 43's
comparison at 1,000 respondents, on the folder ``bench/scale.py`` imports).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from socbench.processes import answers, free_port, wait_for

ROOT = Path(__file__).resolve().parents[1]
MODEL = "fake-model"
ISSP = ["--domain_id", "{domain}", "--interview_count", "6", "--concurrent_requests", "8"]
RUNS: dict[str, list[str]] = {
    "issp_plain": ["issp"],
    "issp_circular": ["issp", "--circular", "circular"],
    "issp_all_logprobs": ["issp", "--circular", "all_possible", "--max_variants", "8", "--mode", "logprobs"],
    "issp_relabel_shuffled": ["issp", "--circular", "circular", "--circular_labels", "relabel",
                              "--shuffle_options"],
    "issp_samples": ["issp", "--samples", "3", "--temperature", "0.7"],
    "mcq_circular": ["mcq", "--dataset", "arc-easy", "--method", "cp,mcp", "--circular", "circular",
                     "--limit", "5"],
}
SCALE = ["issp", "--data_dir", "{data}", "--domain_id", "1", "--dataset_size", "all",
         "--interview_count", "all", "--concurrent_requests", "64"]
DOMAINS = ["1", "3", "7"]
QUICK = ("issp_plain", "mcq_circular")
VOLATILE = {"timestamp", "timing", "created", "wall_s", "seconds", "elapsed_s", "started", "finished",
            "generated_at", "run_seconds", "duration_s", "api_base", "source", "data_dir",
            "records",  # port; checkout; summary.json pooled.records: each domain record's timestamp
            "format",  # the results format's version (3: items as JSON Lines), not a result
            "fingerprint"}  # last_run.json's hash of socbench's code: two checkouts always differ
RESULT_SUFFIXES = {".json", ".jsonl", ".csv"}


def start_server() -> tuple[subprocess.Popen, str]:
    """The fake OpenAI server of this checkout, as its documented script; waits until it answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "support.fake_openai", "--port", str(port)],
                            cwd=ROOT / "tests", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: proc.poll() is not None or answers(f"{url}/v1/models"), 60, "the fake server")
    except TimeoutError:
        proc.kill()
        raise
    if proc.poll() is not None:
        raise RuntimeError(f"fake server exited with {proc.returncode}")
    return proc, url


def command(repo: Path) -> list[str]:
    """``socbench`` of ``repo``: its own venv where it has one; ``cli`` was a top-level package before the
    wheel mapped it into ``socbench.cli``."""
    python = repo / ".venv" / "bin" / "python"
    mapped = "socbench.cli" in (repo / "pyproject.toml").read_text(encoding="utf-8")
    return [str(python if python.exists() else sys.executable), "-m", "socbench.cli" if mapped else "cli"]


def run_all(repo: Path, out: Path, quick: bool = False, data: Path | None = None) -> dict[str, Any]:
    """Every run of ``RUNS`` (``quick``: of ``QUICK``, on one domain; ``data``: ``SCALE`` on that folder)
    from ``repo``'s code; the normalised result files keyed by run."""
    home = Path(tempfile.mkdtemp(prefix="compare-prefect-"))
    env = dict(os.environ, PYTHONPATH=str(repo), PREFECT_HOME=str(home), OPENAI_API_KEY="sk-bench",
               PREFECT_MEMO_STORE_PATH=str(home / "memo.toml"),
               PREFECT_RESULTS_LOCAL_STORAGE_PATH=str(home / "results"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false", HF_HUB_OFFLINE="1")
    server, url = start_server()
    results: dict[str, Any] = {}
    runs = {"issp_scale": [a.format(data=data) for a in SCALE]} if data else RUNS
    try:
        for name, argv in runs.items():
            if quick and name not in QUICK:
                continue
            folder = out / "runs" / name
            engine = ["--api_type", "openai", "--api_base", url, "--model", MODEL,
                      "--output_dir", str(folder)]
            domains = (DOMAINS[:1] if quick else DOMAINS) if argv[0] == "issp" and not data else [None]
            for domain in domains:
                extra = [a.format(domain=domain) for a in ISSP] if domain else []
                cmd = [*command(repo), *argv, *engine, *extra]
                started = time.monotonic()
                proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True,
                                      timeout=7200 if data else 900)
                print(f"{name} {domain or ''}: rc {proc.returncode}, {time.monotonic() - started:.0f} s",
                      flush=True)
                log = folder / f"stdout{domain or ''}.txt"
                folder.mkdir(parents=True, exist_ok=True)  # a run refused before it starts makes none
                log.write_text(proc.stdout + "\n--- stderr\n" + proc.stderr)
                if proc.returncode != 0:
                    raise RuntimeError(f"{name}: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
            results[name] = collect(folder)
    finally:
        server.terminate()
        server.wait(10)
    return results


def collect(folder: Path) -> dict[str, Any]:
    """Every result file under ``folder`` (not the cache, not the report's figures), normalised."""
    files = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.suffix not in RESULT_SUFFIXES or ".cache" in rel.parts or rel.parts[0].startswith("stdout"):
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            files[str(rel)] = normalise(json.loads(text), str(folder))
        elif path.suffix == ".jsonl":
            files[str(rel)] = [normalise(json.loads(line), str(folder)) for line in text.splitlines() if line]
        else:
            files[str(rel)] = text.splitlines()
    return fold_lines(files)


def fold_lines(files: dict[str, Any]) -> dict[str, Any]:
    """Each domain's ``_items.jsonl`` and ``_respondents.jsonl`` (results format 3) back into its
    ``_detailed.json`` as ``details`` and ``persona_groups``, the one document of the formats before: two
    checkouts on either side of the change compare item by item."""
    for name in [n for n in files if n.endswith("_items.jsonl")]:
        stem = name.removesuffix("_items.jsonl")
        record = files.get(f"{stem}_detailed.json")
        if isinstance(record, dict):
            record["details"] = files.pop(name)
            people = files.pop(f"{stem}_respondents.jsonl", [])
            record["persona_groups"] = {str(p["person_id"]): {k: v for k, v in p.items() if k != "person_id"}
                                        for p in people}
    return files


def normalise(value: Any, folder: str) -> Any:
    """``value`` without the keys that differ from run to run (times) and with paths made relative."""
    if isinstance(value, dict):
        return {k: normalise(v, folder) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalise(v, folder) for v in value]
    if isinstance(value, str):
        return value.replace(folder, "<out>")
    return value


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where ``a`` and ``b`` differ, item by item (lists element-wise, dicts key by key)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}/{k}: only in {'A' if k in a else 'B'}" for k in sorted(set(a) ^ set(b))]
        for key in sorted(set(a) & set(b)):
            out += differences(a[key], b[key], f"{where}/{key}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = [f"{where}: {len(a)} vs {len(b)} entries"] if len(a) != len(b) else []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{where}[{i}]")
        return out
    if isinstance(a, float) and isinstance(b, float) and (a == b or (a != a and b != b)):
        return []
    return [] if a == b else [f"{where}: {a!r} vs {b!r}"]


def split_added(found: list[str]) -> tuple[list[str], list[str]]:
    """(changed or missing values, keys only in B): a key B adds changes nothing A had."""
    added = [line for line in found if line.endswith(": only in B")]
    return [line for line in found if not line.endswith(": only in B")], added


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run every case from a checkout; write DIR/results.json")
    run.add_argument("--repo", type=Path, default=ROOT)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--quick", action="store_true", help="two runs, one domain: a smoke test")
    run.add_argument("--data", type=Path, help="only every respondent of domain 1 of this data folder")
    compare = sub.add_parser("compare", help="compare two DIRs written by run")
    compare.add_argument("a", type=Path)
    compare.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        data = args.data.resolve() if args.data else None
        results = run_all(args.repo.resolve(), args.out.resolve(), args.quick, data)
        (args.out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True))
        count = sum(len(v) if isinstance(v, list) else 1
                    for files in results.values() for v in files.values())
        print(f"{args.out / 'results.json'}: {sum(map(len, results.values()))} files, {count} records")
        return 0
    a, b = (normalise(json.loads((d / "results.json").read_text()), "<out>") for d in (args.a, args.b))
    changed, added = split_added(differences(a, b))
    for line in changed[:40]:
        print(line)
    if added:  # new fields are not differences in what was computed: listed by name
        names = Counter(line.rsplit("/", 1)[-1].removesuffix(": only in B") for line in added)
        listed = ", ".join(f"{name} ({n})" for name, n in sorted(names.items()))
        print(f"{len(added)} keys only in B (added): {listed}")
    print(f"{len(changed)} differences" if changed else "identical item by item")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
