"""A real ISSP codebook's shape imported from its labels: every substantive code offered and scored.

The Family codebook (``../shared/issp/codebooks``) is written as a Stata file with pyreadstat,
every variable with its real value labels, answers drawn over every labelled code (missing
codes included), plus a 0-10 life-satisfaction scale labelled only at its ends whose own
missing codes are 98/99, so its 8 and 9 are answers while "8 Can't choose" and "9 No answer"
are missing codes of the agree/disagree items beside it. Imported with ``--questions`` (the
curated question set's ids), nothing may fall into "code not offered".
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from fixtures import issp_microdata as micro
from socbench.cli import main
from socbench.data.loaders import load_domain
from socbench.data.options import INVALID_CODE, build_items
from socbench.domains import get_domain
from socbench.scoring import score_items
from socbench.types import Extraction

SCALE = {0: "Completely dissatisfied", 10: "Completely satisfied", 98: "Can't choose", 99: "No answer"}
# Codes the codebook labels for one country only ("TW: women should decide"): from labels alone
# they are options for everyone; the curated set keeps them for that country's override.
COUNTRY_ONLY = {"V12": {"6"}, "V13": {"6"}, "V35": {"5"}}
# Enough respondents that every labelled code (at most 13 per variable, drawn uniformly) is drawn dozens
# of times; the property does not grow with the file, the cost does (the builder writes 3,000 rows).
ROWS = 500


def test_family_codebook_every_substantive_code_offered_and_scored(shared_issp: Path, tmp_path: Path,
                                                                    capsys) -> None:
    data = micro.build(micro.read_codebook(shared_issp / "codebooks" / "issp_profile_family.json"), "dta")
    frame = data.frame.iloc[:ROWS].copy()
    frame["LIFESAT"] = np.random.default_rng(11).choice([*range(11), 98, 99], len(frame)).astype(float)
    source = micro.write(
        micro.Microdata(frame, {**data.labels, "LIFESAT": "How satisfied are you with your life"},
                        {**data.value_labels, "LIFESAT": SCALE}),
        tmp_path / "ZA5900.dta",
    )
    qa_file = shared_issp / "qa" / "issp_qa_family.json"
    curated = {q["question_id"]: q for q in json.loads(qa_file.read_text())}
    out = tmp_path / "Dataset_all"
    size = len(frame)
    argv = ["--questions", ",".join([*curated, "LIFESAT"]), "--slug", "family", "--sizes", str(size)]
    assert main(["data", "import", str(source), "--out", str(out), *argv]) == 0, capsys.readouterr().err
    imported = {q["question_id"]: q for q in json.loads((out / "q&a" / "issp_qa_family.json").read_text())}

    assert imported["LIFESAT"]["answer"] == {"0": SCALE[0], **{str(c): str(c) for c in range(1, 10)},
                                             "10": SCALE[10]}
    assert imported["LIFESAT"]["missing"] == {"98": "Can't choose", "99": "No answer"}
    assert imported["V5"]["missing"].keys() == {"8", "9"}  # the agree items' own missing codes
    assert imported["V59"]["answer"].keys() == {"1", "2", "6"}  # three options, nothing invented
    for qid, question in curated.items():  # every code the curated set offers is offered
        extra = set(imported[qid]["answer"]) - set(question["answer"])
        assert set(question["answer"]) <= set(imported[qid]["answer"])
        assert extra == COUNTRY_ONLY.get(qid, set()), qid

    items = build_items(load_domain(out, get_domain("family", out), size))
    assert not [i for i in items if i.excluded_reason == INVALID_CODE]  # each code: offered or missing
    scoreable = [i for i in items if i.excluded_reason is None]
    perfect = {i.item_id: Extraction(code=i.true_code, failure=None, distribution=None)
               for i in scoreable}
    scored = score_items(items, perfect)
    assert len(scored) == len(scoreable) and all(s.correct for s in scored)
    seen = Counter((s.question_id, s.true_code) for s in scored)
    for qid, question in imported.items():  # every substantive code of every question is scored
        assert all(seen[(qid, code)] > 0 for code in question["answer"]), qid
    excluded = Counter(i.excluded_reason for i in items if i.question_id == "V5" and i.excluded_reason)
    assert set(excluded) == {"missing code 9 (No answer)", next(r for r in excluded if "Can't choose" in r)}
    assert seen[("LIFESAT", "8")] and seen[("LIFESAT", "9")]  # answers there, missing codes in V5
