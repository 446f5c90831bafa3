"""``socbench data import`` on an ISSP-sized file: 60,000 respondents x 400 variables, .dta and .sav.

Target (issue 14): well under a minute and under 2 GB. Each import runs in a fresh process
that reports its own peak resident memory; two sample plans are timed: SocioBench's
500/1000/2000 (only the kept rows become records) and a size above the respondent count,
which writes every respondent. The file is written with pyreadstat from seeded values
(80 five-point questions, 316 labelled or unlabelled attributes, C_ALPHAN over 30 countries, WEIGHT).
``--quick``: 1,000 respondents, each format with one of the plans.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench import common

COUNTRIES = (
    "AT AU BE CH CL CN CZ DE DK ES FI FR GB-GBN HR HU IL IN IS IT JP KR LT NO NZ PH RU SE SI SK US"
).split()
# Peak RSS from VmHWM: ru_maxrss survives exec and would report the parent's peak (the generated frame).
CHILD = (
    "import json, re, sys; from socbench.cli import main; rc = main(sys.argv[1:]); "
    "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1); "
    "print(json.dumps({'rc': rc, 'max_rss_mb': int(hwm) / 1024}))"
)


def write_files(folder: Path, rows: int, questions: int = 80, attributes: int = 316) -> list[Path]:
    import pyreadstat

    rng = np.random.default_rng(0)
    columns = {
        "C_ALPHAN": rng.choice(COUNTRIES, rows),
        "CASEID": np.arange(1, rows + 1, dtype=float),
        "WEIGHT": rng.uniform(0.3, 3, rows).round(4),
    }
    labels = {
        "C_ALPHAN": "Country Prefix ISO 3166 Code - alphanumeric",
        "CASEID": "Respondent ID number",
        "WEIGHT": "Weighting factor",
    }
    value_labels: dict[str, dict[int, str]] = {}
    for i in range(questions):
        name = f"V{i + 5}"
        columns[name] = rng.choice([1, 2, 3, 4, 5, 8, 9], rows).astype(float)
        labels[name] = f"Q{i + 1} question number {i + 1}"
        value_labels[name] = {
            1: "Strongly agree",
            2: "Agree",
            3: "Neither",
            4: "Disagree",
            5: "Strongly disagree",
            8: "Can't choose",
            9: "No answer",
        }
    for i in range(attributes):
        name, k = f"A{i}", 2 + i % 10
        columns[name] = rng.integers(1, k + 1, rows).astype(float)
        labels[name] = f"Attribute number {i}"
        if i % 7:
            value_labels[name] = {c: f"category {c} of attribute {i}" for c in range(1, k + 1)}
    frame = pd.DataFrame(columns)
    dta, sav = folder / "big.dta", folder / "big.sav"
    pyreadstat.write_dta(frame, dta, column_labels=labels, variable_value_labels=value_labels)
    pyreadstat.write_sav(frame, sav, column_labels=labels, variable_value_labels=value_labels)
    qa = [
        {
            "question_id": f"V{i + 5}",
            "question": f"Question {i + 1}",
            "answer": {
                "1": "Strongly agree",
                "2": "Agree",
                "3": "Neither",
                "4": "Disagree",
                "5": "Strongly disagree",
            },
        }
        for i in range(questions)
    ]
    (folder / "issp_qa_big.json").write_text(json.dumps(qa))
    return [dta, sav]


def run_import(source: Path, out: Path, sizes: str) -> dict:
    start = time.perf_counter()
    proc = subprocess.run(
        [common.PY, "-c", CHILD, "data", "import", str(source), "--out", str(out),
         "--qa", str(source.parent / "issp_qa_big.json"), "--sizes", sizes],
        capture_output=True,
        text=True,
        cwd=common.ROOT,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"import failed: {proc.stderr[-2000:]}")
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "seconds": round(time.perf_counter() - start, 2),
        "max_rss_mb": round(child["max_rss_mb"], 1),
        "load_avg": common.load_avg(),
    }


def main() -> None:
    args = common.parser(__doc__).parse_args()
    rows = 1_000 if args.quick else 60_000
    folder = Path(tempfile.mkdtemp(prefix="bench-import-"))
    files = write_files(folder, rows)
    plans = (("samples_500_1000_2000", "500,1000,2000"), ("all_respondents", "500,1000,2000,1000000"))
    # quick: each format and each plan once (.dta the first plan, .sav the second): two imports, not four
    pairs = list(zip(files, plans)) if args.quick else [(f, plan) for f in files for plan in plans]
    runs = {}
    for source, (plan, sizes) in pairs:
        key = f"{source.suffix[1:]}_{plan}"
        runs[key] = run_import(source, folder / f"out-{source.suffix[1:]}-{plan}", sizes)
        print(f"  {source.name} {plan}: {runs[key]}", flush=True)
    worst_s = max(r["seconds"] for r in runs.values())
    worst_mb = max(r["max_rss_mb"] for r in runs.values())
    common.report(
        "data_import",
        {"respondents": rows, "variables": 399, "worst_seconds": worst_s, "worst_max_rss_mb": worst_mb},
        "worst_seconds / 60 s",
        worst_s / 60,
        "< 1 minute and < 2048 MB per import",
        worst_s < 60 and worst_mb < 2048,
        {"runs": runs},
    )


if __name__ == "__main__":
    main()
