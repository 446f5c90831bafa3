"""Regenerate this example study: the SPSS file from ``socbench.data.example_study``, then import it.

    .venv/bin/python data/example_study/make_example.py

Writes ``wellbeing_survey.sav`` and ``questions.txt`` here and runs the same command a user
would, ``socbench data import ... --out data/example_study/Dataset_all``. Nothing is typed by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

IMPORT_ARGS = ["--questions", f"@{HERE / 'questions.txt'}", "--weight", "WTFINAL", "--slug", "wellbeing",
               "--name", "Wellbeing", "--sizes", "100,500"]


def main() -> int:
    from socbench.cli import main as socbench
    from socbench.data.example_study import write_study

    sav = write_study(HERE)
    out = HERE / "Dataset_all"  # regenerated whole: the shipped domain is replaced
    return socbench(["data", "import", str(sav), "--out", str(out), *IMPORT_ARGS, "--replace"])


if __name__ == "__main__":
    sys.exit(main())
