"""Issue 15, row 1: ARC-Easy test CP, socbench (`socbench mcq --method cp`) vs lm-evaluation-harness.

Both sides end to end (a fresh process each, model load included), the embedded
SmolLM2-135M-Instruct in one dtype on both sides (``--dtype``, default the host's: bf16 on a GPU or a
CPU that computes it, fp32 elsewhere), the same items (socbench's packaged ARC-Easy test, written to a
JSONL for an lm-eval task with arc_easy's prompt). The sides alternate, ``--repeats`` times
each, after one untimed warm-up of each (dataset caches, Prefect's database); the load average
is recorded after every pass. The check is per item: lm-eval's own per-option log-likelihoods
(``--log_samples``) against socbench's CP-RAW scores, its ``acc`` against CP-RAW.

lm-evaluation-harness is never a project dependency: it runs from a side venv
(``--lmeval_venv``, default /tmp/lmeval), made with ``python3.11 -m venv /tmp/lmeval &&
/tmp/lmeval/bin/pip install --find-links /opt/wheels lm-eval "torch==2.13.0+cpu" transformers
accelerate``. Without it the lm-eval side is "not measured".
``--quick``: the untimed pass of each side alone, on 2 items and the tiny random model.
Usage: ``python -m bench.arc_cp_vs_lmeval [--quick] [--limit 300] [--repeats 2] [--api_type auto]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench import common
from socbench.engines.settings import cuda_available, default_dtype

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


def socbench_pass(limit: int | None, out: Path, api_type: str, dtype: str, env: dict[str, str],
                  model: str) -> tuple[float, dict]:
    cmd = [
        common.PY,
        "-m",
        "socbench.cli",
        "mcq",
        "--dataset",
        "arc-easy",
        "--method",
        "cp",
        "--api_type",
        api_type,
        "--model",
        model,
        "--output_dir",
        str(out),
        "--engine",
        json.dumps({"dtype": dtype}),
    ]
    if limit:
        cmd += ["--limit", str(limit)]
    seconds, proc, load = common.timed(lambda: socbench_mcq(cmd, env))
    if proc.returncode:
        raise SystemExit(f"socbench mcq failed: {proc.stderr[-2000:]}")
    results = json.loads(next(out.rglob("arc-easy_results.json")).read_text())
    predictions = [
        json.loads(line) for line in next(out.rglob("arc-easy_predictions.jsonl")).read_text().splitlines()
    ]
    scores = {p["id"]: p["scores"] for p in predictions if p["method"] == "CP-RAW"}
    return seconds, {
        "load": load,
        "accuracy": results["accuracy"],
        "backend": results.get("backend"),
        "engine": results.get("engine"),
        "cp_raw_scores": scores,
    }


def socbench_mcq(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """``cmd`` in a fresh process (``common.HERE``: ``socbench.cli.main`` in this one, under ``env``)."""
    if not common.HERE:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=common.ROOT, env=env, check=False)
    from socbench.cli import main

    os.environ.update(env)
    codes: list[int] = []
    stdout = common.here(lambda: codes.append(main(cmd[3:])))
    return subprocess.CompletedProcess(cmd, codes[0], stdout, "")


def lmeval_task(limit: int | None, work: Path) -> list[str]:
    """Write the items and the task; the socbench item ids in lm-eval's doc order."""
    from socbench.mcq.datasets import load_mcq

    data = load_mcq("arc-easy", limit=limit)
    rows = [
        {
            "id": it.id,
            "question": it.question,
            "answerKey": it.labels[it.gold],
            "choices": {"text": list(it.texts), "label": list(it.labels)},
        }
        for it in data.items
    ]
    jsonl = work / "arc_easy_test.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (work / "arc_easy_socbench.yaml").write_text(TASK_YAML.format(data=jsonl))
    return [r["id"] for r in rows]


def lmeval_pass(venv: Path, work: Path, out: Path, batch: int, dtype: str, env: dict[str, str],
                model_name: str) -> tuple[float, dict]:
    from socbench.models import resolve_model

    model = resolve_model(model_name).path
    cmd = [
        str(venv / "bin" / "lm_eval"),
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model},dtype={dtype}",
        "--tasks",
        "arc_easy_socbench",
        "--include_path",
        str(work),
        "--device",
        "cpu",
        "--batch_size",
        str(batch),
        "--output_path",
        str(out),
        "--log_samples",
    ]
    seconds, proc, load = common.timed(
        lambda: subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    )
    if proc.returncode:
        raise SystemExit(f"lm_eval failed: {proc.stderr[-3000:]}")
    results = json.loads(next(out.rglob("results*.json")).read_text())["results"]["arc_easy_socbench"]
    samples = [json.loads(line) for line in next(out.rglob("samples_*.jsonl")).read_text().splitlines()]
    loglikelihoods = {s["doc"]["id"]: [float(r[0][0]) for r in s["resps"]] for s in samples}
    return seconds, {
        "load": load,
        "acc": results["acc,none"],
        "acc_norm": results["acc_norm,none"],
        "loglikelihoods": loglikelihoods,
    }


def compare(ours: dict, theirs: dict) -> dict:
    """Per item: the same CP-RAW choice? how far apart are the per-option log-likelihoods?"""
    same = diffs = 0
    worst = 0.0
    for item, lls in theirs["loglikelihoods"].items():
        scores = ours["cp_raw_scores"][item]
        same += max(range(len(lls)), key=lls.__getitem__) == max(range(len(scores)), key=scores.__getitem__)
        worst = max(worst, *(abs(a - b) for a, b in zip(lls, scores)))
        diffs += 1
    cp_raw = ours["accuracy"]["0"]["CP-RAW"]
    return {
        "items": diffs,
        "same_cp_raw_choice": same,
        "max_abs_loglikelihood_diff": round(worst, 4),
        "cp_raw": cp_raw,
        "lmeval_acc": theirs["acc"],
        "accuracy_gap_pt": round(100 * (cp_raw - theirs["acc"]), 2),
    }


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--limit", type=int, default=300, help="first N items (0: all 2,376)")
    p.add_argument("--repeats", type=int, default=2, help="timed passes per side, alternating")
    p.add_argument("--api_type", default="auto", help="socbench backend (auto, hf, vllm)")
    p.add_argument("--lmeval_venv", default="/tmp/lmeval")
    p.add_argument("--lmeval_batch", type=int, default=16)
    p.add_argument("--dtype", default=default_dtype(cuda_available()), help="both sides (default: host's)")
    args = p.parse_args()
    common.setup_env(prefect=True)
    limit = (2 if args.quick else args.limit) or None
    model = str(common.tiny_model()) if args.quick else "smollm2-135m-instruct"
    repeats = 0 if args.quick else args.repeats  # quick: the warm-up pass alone
    work = Path(tempfile.mkdtemp(prefix="bench-arc-"))
    venv = Path(args.lmeval_venv)
    have_lmeval = (venv / "bin" / "lm_eval").exists()
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    if have_lmeval:
        lmeval_task(limit, work)
    ours_runs, theirs_runs = [], []
    for n in range(repeats + 1):  # pass 0 of each side is the untimed warm-up
        ours_runs.append(socbench_pass(limit, work / f"socbench-{n}", args.api_type, args.dtype, env,
                                       model))
        if have_lmeval:
            lmeval_out = work / f"lmeval-{n}"
            theirs_runs.append(lmeval_pass(venv, work, lmeval_out, args.lmeval_batch, args.dtype, env,
                                           model))
        print(
            f"pass {n}: socbench {ours_runs[-1][0]:.1f} s"
            + (f", lm-eval {theirs_runs[-1][0]:.1f} s" if have_lmeval else "")
            + f" (load {common.load_avg()})",
            flush=True,
        )
    ours_s = [s for s, _ in ours_runs[1:]] or [ours_runs[0][0]]
    figures = {
        "items": limit or "all",
        "socbench_s": [round(s, 1) for s in ours_s],
        "socbench_median_s": round(statistics.median(ours_s), 1),
    }
    extra = {
        "loads": {"socbench": [r["load"] for _, r in ours_runs]},
        "backend": ours_runs[-1][1]["backend"],
        "accuracy": ours_runs[-1][1]["accuracy"],
        "repeats": repeats,
        "dtype": args.dtype,
    }
    if not have_lmeval:
        figures["lmeval_s"] = f"not measured (no side venv at {venv})"
        common.report(
            "arc_cp_vs_lmeval",
            figures,
            "lm-eval/socbench time",
            float("nan"),
            ">= 3x faster, CP-RAW within 0.5 pt of acc",
            None,
            extra,
        )
        return
    theirs_s = [s for s, _ in theirs_runs[1:]] or [theirs_runs[0][0]]
    figures.update(
        lmeval_s=[round(s, 1) for s in theirs_s], lmeval_median_s=round(statistics.median(theirs_s), 1)
    )
    check = compare(ours_runs[-1][1], theirs_runs[-1][1])
    extra.update(
        loads={**extra["loads"], "lmeval": [r["load"] for _, r in theirs_runs]},
        oracle=check,
        lmeval_acc_norm=theirs_runs[-1][1]["acc_norm"],
    )
    ratio = statistics.median(theirs_s) / statistics.median(ours_s)
    met = ratio >= 3 and abs(check["accuracy_gap_pt"]) <= 0.5
    print(f"  oracle: {check}")
    common.report(
        "arc_cp_vs_lmeval",
        figures,
        "lm-eval/socbench time (medians)",
        ratio,
        ">= 3x faster, CP-RAW within 0.5 pt of lm-eval acc",
        met,
        extra,
    )


if __name__ == "__main__":
    main()
