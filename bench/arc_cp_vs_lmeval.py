"""Target 3: ARC-Easy test CP (CP-RAW, CP-LN) with socbench vs lm-evaluation-harness acc/acc_norm.

lm-evaluation-harness is never a project dependency: it runs from a side venv
(``--lmeval_venv``, default /tmp/lmeval), made with
``python3.11 -m venv /tmp/lmeval && /tmp/lmeval/bin/pip install --find-links /opt/wheels
lm-eval "torch==2.13.0+cpu" transformers accelerate``. Without it the lm-eval side is
"not measured". Both sides read the same items (socbench's packaged ARC-Easy test, written
to a JSONL for an lm-eval task with arc_easy's prompt) and the same model (the embedded
SmolLM2-135M-Instruct, bf16). Both timings are end to end: a fresh process each, model load
included. Usage: ``python bench/arc_cp_vs_lmeval.py [--quick] [--limit N]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

TASK_YAML = """task: arc_easy_socbench
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
output_type: multiple_choice
test_split: test
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{choices.label.index(answerKey)}}}}"
doc_to_choice: "{{{{choices.text}}}}"
metric_list:
  - metric: acc
  - metric: acc_norm
"""


def socbench_side(limit: int | None, out: Path) -> tuple[float, dict]:
    cmd = [common.PY, "-m", "cli", "mcq", "--dataset", "arc-easy", "--method", "cp",
           "--model", "smollm2-135m-instruct", "--output_dir", str(out)]
    if limit:
        cmd += ["--limit", str(limit)]
    seconds, proc, load = common.timed(lambda: subprocess.run(cmd, capture_output=True, text=True,
                                                              cwd=common.ROOT))
    if proc.returncode:
        raise SystemExit(f"socbench mcq failed: {proc.stderr[-2000:]}")
    found = {}
    for path in out.rglob("*.json"):
        text = path.read_text()
        if '"CP-RAW"' in text or '"cp_raw"' in text:
            found[str(path)] = json.loads(text)
    return seconds, {"files": found, "load": load, "stdout_tail": proc.stdout[-1500:]}


def lmeval_side(venv: Path, limit: int | None, work: Path) -> tuple[float, dict] | None:
    if not (venv / "bin" / "lm_eval").exists():
        return None
    from socbench.mcq.datasets import load_mcq
    from socbench.models import resolve_model

    data = load_mcq("arc-easy", limit=limit)
    rows = [{"id": str(i), "question": it.question, "answerKey": it.labels[it.gold],
             "choices": {"text": list(it.texts),
                         "label": list(it.labels)}} for i, it in enumerate(data.items)]
    jsonl = work / "arc_easy_test.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (work / "arc_easy_socbench.yaml").write_text(TASK_YAML.format(data=jsonl))
    model = resolve_model("smollm2-135m-instruct").path
    cmd = [str(venv / "bin" / "lm_eval"), "--model", "hf", "--model_args",
           f"pretrained={model},dtype=bfloat16",
           "--tasks", "arc_easy_socbench", "--include_path", str(work), "--device", "cpu",
           "--batch_size", "32", "--output_path", str(work / "results")]
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    seconds, proc, load = common.timed(lambda: subprocess.run(cmd, capture_output=True, text=True, env=env))
    if proc.returncode:
        raise SystemExit(f"lm_eval failed: {proc.stderr[-3000:]}")
    results = [json.loads(p.read_text()) for p in (work / "results").rglob("results*.json")]
    return seconds, {"results": results[-1]["results"] if results else None, "load": load, "items": len(rows)}


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--limit", type=int, default=None, help="first N items (default: all 2,376)")
    p.add_argument("--lmeval_venv", default="/tmp/lmeval")
    args = p.parse_args()
    common.setup_env()
    limit = 200 if args.quick and args.limit is None else args.limit
    work = Path(tempfile.mkdtemp(prefix="bench-arc-"))
    ours_s, ours = socbench_side(limit, work / "socbench")
    theirs = lmeval_side(Path(args.lmeval_venv), limit, work)
    figures = {"socbench_s": round(ours_s, 1)}
    extra = {"socbench": ours, "limit": limit, "quick": args.quick}
    if theirs is None:
        figures["lmeval_s"] = "not measured (no side venv at " + args.lmeval_venv + ")"
        common.report("arc_cp_vs_lmeval", figures, "lm-eval/socbench time", float("nan"),
                      ">= 3x faster, same CP-RAW accuracy", None, extra)
        return
    figures["lmeval_s"] = round(theirs[0], 1)
    extra["lmeval"] = theirs[1]
    ratio = theirs[0] / ours_s
    common.report("arc_cp_vs_lmeval", figures, "lm-eval/socbench time", ratio,
                  ">= 3x faster, same CP-RAW accuracy (compare accuracies in the JSON)", ratio >= 3, extra)


if __name__ == "__main__":
    main()
