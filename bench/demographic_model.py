"""Time of the cross-fitted demographic baseline on a real-sized domain (budget: <= 15 s).

A synthetic domain shaped like an ISSP module: 1,000 respondents, 30 questions with 4-5 codes,
200 attributes (age as a number, 199 categorical with 2-12 levels, some rare, 3% missing);
answers depend on age and a few attributes. Wall and CPU seconds, with the load average (the
host's 2 cores are shared), go to ``demographic_model.json`` in the bench output folder; so does
what the score stage pays for all yardsticks of that domain (``socbench.yardsticks.domain_yardsticks``:
the demographic model, SimBench and structure figures for it and for an LLM's answers; groups: age
band and one other attribute).
``--cap N``: each fit learns from at most N respondents (default: the model's ``training_cap``; 0: no cap,
the model before issue 43); given, the yardsticks are not timed: at 10,000 respondents, the cap's accuracy
against none's.
Usage: ``python -m bench.demographic_model [--quick] [--respondents 1000] [--questions 30]
[--attributes 200] [--cap N]``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

import numpy as np

from bench import common
from socbench.metrics.demographic import demographic_model, encode_attributes, training_cap
from socbench.metrics.persona_groups import age_group
from socbench.types import ScoredItem
from socbench.yardsticks import domain_yardsticks

BUDGET_S = 15.0


def synthetic_domain(respondents: int, questions: int, attributes: int, seed: int = 0):
    """(items, attributes): ScoredItems with true codes, and person id -> attribute dict."""
    rng = np.random.default_rng(seed)
    levels = rng.integers(2, 13, size=attributes)
    ages = rng.integers(18, 90, size=respondents)
    people = {}
    for pid in range(respondents):
        attrs = {"Age of respondent": f"{ages[pid]} years"}
        for a in range(1, attributes):
            if rng.random() > 0.03:
                attrs[f"attribute {a}"] = f"level {min(int(rng.zipf(1.6)), levels[a]) - 1}"
        people[pid] = attrs
    items = []
    for q in range(questions):
        k = 4 + q % 2
        codes = tuple(str(c) for c in range(1, k + 1))
        for pid in range(respondents):
            lean = (ages[pid] - 18) / 72 * (k - 1) + (people[pid].get(f"attribute {q + 1}") == "level 0")
            code = codes[int(np.clip(round(lean + rng.normal(0, 1.0)), 0, k - 1))]
            items.append(ScoredItem(pid, f"Q{q}", "DE", code, None, False, "not asked", False, codes))
    return items, people


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--respondents", type=int, default=1000)
    p.add_argument("--questions", type=int, default=30)
    p.add_argument("--attributes", type=int, default=200)
    p.add_argument("--cap", type=int, help="at most N respondents a fit (default: the model's); 0: no cap")
    args = p.parse_args()
    if args.quick:
        args.respondents, args.questions, args.attributes = 200, 4, 20
    items, people = synthetic_domain(args.respondents, args.questions, args.attributes)
    load_before = os.getloadavg()
    wall, cpu = time.perf_counter(), time.process_time()
    encoded = encode_attributes(people)
    encode_s = time.perf_counter() - wall
    cap = training_cap(encoded.matrix.shape[1]) if args.cap is None else args.cap or len(people)
    result = demographic_model(items, people, encoded=encoded, cap=cap)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    record = {"name": "demographic_model", "respondents": args.respondents, "questions": args.questions,
              "attributes": args.attributes, "cap": cap, "matrix_columns": encoded.matrix.shape[1],
              "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
              "encode_seconds": round(encode_s, 2), "budget_seconds": BUDGET_S, "met_wall": wall <= BUDGET_S,
              "met_cpu": cpu <= BUDGET_S, "accuracy": round(result.metrics["accuracy"], 3),
              "macro_f1": round(result.metrics["macro_f1"], 3), "fallbacks": result.fallbacks,
              "load_avg_before": [round(x, 2) for x in load_before],
              "load_avg_after": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count()}
    if args.cap is None:
        record.update(yardsticks_seconds(items, people))
    print(json.dumps(record, indent=2))
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / "demographic_model.json").write_text(json.dumps(record, indent=2))


def yardsticks_seconds(items: list[ScoredItem], people: dict) -> dict[str, float]:
    """Wall and CPU seconds of every yardstick of the domain, the LLM answering by a hash."""
    groups = {pid: {"age_group": str(age_group(attrs["Age of respondent"])),
                    "attribute 1": attrs.get("attribute 1", "missing")} for pid, attrs in people.items()}
    answered = [replace(item, parse_error=None, groups=groups[item.person_id],
                        predicted_code=item.offered_codes[(item.person_id * 7 + len(item.question_id))
                                                          % len(item.offered_codes)])
                for item in items]
    wall, cpu = time.perf_counter(), time.process_time()
    domain_yardsticks(answered, people)
    return {"yardsticks_wall_seconds": round(time.perf_counter() - wall, 2),
            "yardsticks_cpu_seconds": round(time.process_time() - cpu, 2)}


if __name__ == "__main__":
    main()
