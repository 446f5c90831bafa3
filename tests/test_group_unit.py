"""``socbench issp --unit group`` (issue 45): one request per group x question, the group described in the
survey's own words, groups under the minimum size left out and counted, scored against the group's
weighted answer distribution; checked by hand on a real file written by R's haven (CES11 of carData)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from socbench.config import make_config
from socbench.errors import ConfigError
from socbench.studies import task_for
from socbench.studies.issp_group import GroupSamples, IsspGroupTask
from socbench.types import Answers, DomainData, EngineResult, Question, Respondent
from support.cli import socbench

QUESTION = Question("Q1", "Is it good?", {"1": "Yes", "2": "No", "3": "Maybe"})
PEOPLE = [  # (id, region, sex, weight, answer)
    (1, "North", "Woman", 1.0, "1"), (2, "North", "Woman", 3.0, "2"), (3, "North", "Woman", 1.0, "1"),
    (4, "North", "Man", 1.0, "3"), (5, "South", "Woman", 2.0, "3"), (6, "South", "Woman", 2.0, "3"),
    (7, "North", "Don't know", 1.0, "1"),
]


def domain() -> DomainData:
    """A small imported-style study grouped by region, with a declared sex role and design weights."""
    people = tuple(Respondent(pid, None, None, {"Region": region, "Gender": sex}, {"Q1": answer}, weight,
                              region) for pid, region, sex, weight, answer in PEOPLE)
    return DomainData(1, "Tiny", (QUESTION,), people, {}, "tiny", grouping="Region",
                      roles={"group": "Region", "sex": "Gender"}, issp_vocabulary=False)


def task(**flags: object) -> IsspGroupTask:
    found = task_for(make_config(unit="group", model="m", **flags))
    assert isinstance(found, IsspGroupTask)
    return found


def samples(study: IsspGroupTask) -> GroupSamples:
    return study.special_options(domain())


def test_group_flags_need_unit_group_and_say_so_in_one_line() -> None:
    for argv, named in ((("--groups", "sex"), "--groups"), (("--min_group_size", "5"), "--min_group_size"),
                        (("--unit", "group", "--mode", "logprobs"), "--unit group"),
                        (("--unit", "group", "--export", "sav"), "--export")):
        done = socbench("issp", *argv, "--dry_run", code=2)
        assert named in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_groups_are_the_survey_s_labels_and_small_ones_are_counted() -> None:
    """Region (the grouping variable) x the sex role, in the file's words; a group under the minimum and a
    respondent without a sex are left out and counted, never asked."""
    grouped = samples(task(min_group_size=2))
    assert [(g.id, g.members) for g in grouped.groups] == [
        ("North | Woman", (1, 2, 3)), ("North | Man", (4,)), ("South | Woman", (5, 6))]
    assert grouped.groups[0].description == {"Region": "North", "Gender": "Woman"}
    assert [(g.id, q) for g, q, _ in grouped.rows] == [("North | Woman", "Q1"), ("South | Woman", "Q1")]
    assert grouped.left_out == (("North | Man", "Q1", 1),)
    assert grouped.no_group == 1
    prompts = task(min_group_size=2).prompts(grouped)
    system, user = (m.content for m in prompts.requests[0].messages)
    assert '"Region": "North"' in system and '"Gender": "Woman"' in system and "country" not in system.lower()
    assert "1. Yes" in user and "percentage" in user and prompts.requests[0].mode == "verbalized"


def test_an_unknown_group_name_is_one_line_naming_the_attributes() -> None:
    line = (r"--groups Income: not an attribute of Tiny nor a role \(sex, age, education, religion, party, "
            r"employment\); its attributes: Gender, Region")
    with pytest.raises(ConfigError, match=line):
        samples(task(groups="Income"))


def test_scores_are_against_the_weighted_group_distribution_by_hand() -> None:
    """North women answer 1, 2, 1 with weights 1, 3, 1: (0.4, 0.6, 0); South women 3, 3: (0, 0, 1). The
    model says (50, 50, 0) for both: TV 0.1 and 1.0; uniform answers' TV 1/3 and 2/3."""
    study = task(groups="Gender", min_group_size=2)
    grouped = samples(study)
    prompts = study.prompts(grouped)
    reply = json.dumps({"1": 50, "2": 50, "3": 0})
    answers = Answers(tuple(EngineResult(r.key, reply) for r in prompts.requests), 0.0, {}, {})
    scored = study.score(grouped, prompts.plan, study.extract(prompts, answers))
    rows = {row["group"]: row for row in scored.extras["rows"]}
    assert rows["North | Woman"]["human"] == pytest.approx({"1": 0.4, "2": 0.6, "3": 0.0})
    assert rows["North | Woman"]["tv_model"] == pytest.approx(0.1)
    assert rows["South | Woman"]["tv_model"] == pytest.approx(1.0)
    norm = (1 / 3 + 2 / 3) / 2
    m = scored.metrics
    assert m["simbench"] == pytest.approx(np.mean([100 * (1 - 0.1 / norm), 100 * (1 - 1 / norm)]))
    counts = ("requests", "groups", "groups_left_out", "respondents_left_out", "rows_left_out")
    assert [m[name] for name in counts] == [2, 2, 1, 2, 1]


def test_an_unreadable_reply_is_a_parse_failure_not_a_score() -> None:
    study = task(groups="Gender", min_group_size=2)
    grouped = samples(study)
    prompts = study.prompts(grouped)
    answers = Answers(tuple(EngineResult(r.key, "I cannot say") for r in prompts.requests), 0.0, {}, {})
    scored = study.score(grouped, prompts.plan, study.extract(prompts, answers))
    assert scored.metrics["parse_failures"] == 2 and scored.metrics["skipped_no_answers"] == 2


# --------------------------------------------------------------------------- a real file, end to end


def planted(asked: list[str]):  # noqa: ANN201 -- the fake server's answer
    """A group's request (collected in ``asked``): shares 10, 20, 30, ... by option position; a
    respondent's: the first option."""

    def answer(prompt: str, codes: tuple[str, ...]) -> str:
        if "percentage" in prompt:  # the codes of its option lines (a constrained reply's regex has none)
            asked.append(prompt)
            shown = re.findall(r"^(\S+)\. ", prompt.split("Options:")[1], re.M)
            return json.dumps({code: 10 * (i + 1) for i, code in enumerate(shown)})
        return json.dumps({"answer": codes[0]})

    return answer


def by_hand(sav: Path, min_size: int) -> tuple[dict, dict, dict]:
    """From the file as pyreadstat reads it: per (province, gender, education) group of at least
    ``min_size`` and question, the weighted shares; the groups left out with their sizes; each question's
    codes."""
    import pyreadstat

    frame, meta = pyreadstat.read_sav(sav, apply_value_formats=False)
    labels = meta.variable_value_labels
    keys = ["province", "gender", "education"]
    for key in keys:
        frame[key] = frame[key].map(labels[key])
    codes = {q: [str(int(c)) for c in labels[q]] for q in ("abortion", "importance")}
    kept, out = {}, {}
    for values, group in frame.groupby(keys, sort=False):
        gid = " | ".join(values)
        if len(group) < min_size:
            out[gid] = len(group)
            continue
        for q in codes:
            answers = group[q].astype(int).astype(str)
            weights = np.array([group["weight"][answers == c].sum() for c in codes[q]])
            kept[gid, q] = weights / weights.sum()
    return kept, out, codes


@pytest.mark.slow  # Rscript writes the file; runs two flows on the session's Prefect API
def test_a_group_run_on_a_real_file_asks_groups_x_questions_and_scores_by_hand(
        api_url: str, tmp_path: Path) -> None:
    from fixtures.cardata import STUDIES, import_args, unavailable, write_battery
    from support.fake_openai import FakeOpenAIServer

    if unavailable():
        pytest.skip(unavailable())
    battery = write_battery(tmp_path / "cardata")
    ces11 = next(s for s in STUDIES if s.name == "CES11")
    data, out = tmp_path / "Dataset_all", tmp_path / "results"
    socbench("data", "import", *import_args(ces11, battery, "CES11.sav"), "--out", str(data),
             "--sizes", "all")
    kept, left_out, codes = by_hand(battery.file("CES11.sav"), 30)
    run = ("issp", "--api_type", "openai", "--model", "fake-model", "--data_dir", str(data), "--dataset_size",
           "all", "--output_dir", str(out), "--concurrent_requests", "16")
    asked: list[str] = []
    with FakeOpenAIServer(model="fake-model", answer=planted(asked)) as server:
        socbench(*run, "--api_base", server.url)  # per respondent first: its aggregate goes beside
        server.reset_stats()
        socbench(*run, "--api_base", server.url, "--unit", "group")
        seen = server.wait_idle()
        assert seen.requests == len(kept) + 1  # and the preflight's one probe of the server
        assert seen.last_body and "structured_outputs" in seen.last_body  # the distribution's constraint
    assert len(asked) == len(set(asked)) == len(kept)  # exactly groups x questions, each once
    record = json.loads((out / "fake-model-group" / "Ces11_unit.json").read_text())
    metrics, extras = record["metrics"], record["extras"]
    assert metrics["requests"] == len(kept) == 2 * len({g for g, _ in kept})
    assert extras["left_out_groups"] == left_out
    assert metrics["respondents_left_out"] == sum(left_out.values())
    assert extras["grouped_by"] == ["Province", "Gender", "Highest level of education"]
    model = {q: np.arange(1, len(c) + 1) / sum(range(1, len(c) + 1)) for q, c in codes.items()}
    rows = {(row["group"], row["question"]): row for row in extras["rows"]}
    assert set(rows) == set(kept)
    tv = {key: 0.5 * np.abs(model[key[1]] - human).sum() for key, human in kept.items()}
    uniform = {key: 0.5 * np.abs(1 / len(human) - human).sum() for key, human in kept.items()}
    group = ("ON | Female | bachelors", "importance")  # one group, every number by hand
    assert list(rows[group]["human"].values()) == pytest.approx(list(kept[group]))
    assert rows[group]["tv_model"] == pytest.approx(tv[group])
    norm = np.mean(list(uniform.values()))
    assert metrics["simbench"] == pytest.approx(np.mean([100 * (1 - t / norm) for t in tv.values()]))
    one_hot = {key: 1 - human[0] for key, human in kept.items()}  # the respondents all said the first option
    assert extras["per_respondent_run"] == "fake-model"
    assert metrics["respondent_simbench"] == pytest.approx(np.mean([100 * (1 - t / norm)
                                                                     for t in one_hot.values()]))


def test_a_bad_flag_in_any_unit_stops_the_run_before_any_work(monkeypatch) -> None:
    """A ``--groups`` name a unit's data lacks is the run's bad input (one ConfigError line from the
    preflight's plans), not one unreadable unit left to fail alone while the others run."""
    from socbench import pipeline
    from socbench.errors import DataError
    from socbench.task import Unit

    class TwoUnits:
        name, config = "two", make_config()

        def units(self):
            return [Unit(1, "A", "unit A"), Unit(2, "B", "unit B")]

        def load(self, unit):
            if unit.id == 1:
                raise DataError("A: unreadable")  # one unit's data: left out, it fails alone in the flow
            return unit

        def special_options(self, data):
            raise ConfigError("--groups Income: not an attribute of B")

    pipeline.forget()
    with pytest.raises(ConfigError, match="--groups Income"):
        pipeline.plans(TwoUnits())  # type: ignore[arg-type]
