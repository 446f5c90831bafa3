"""Repeated draws per item (``--samples K``): the expansion's pieces, and a run against the project's
fake server whose answers are random with a known distribution (``test_draws_match_the_server``)."""

from __future__ import annotations

import itertools
import json
import math
import random
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from socbench.config import RunConfig
from socbench.draws import draw_prompts, fleiss_kappa, item_of, modal_extraction, reduce_draws
from socbench.errors import ConfigError
from socbench.types import Extraction, Message, PromptRequest, SamplingSettings
from support.cli import socbench
from support.fake_openai import FakeOpenAIServer
from support.records import read_detailed
from tests.test_yardsticks_cli import write_data

SHARES = {"1": 0.5, "2": 0.3, "3": 0.2}  # the fake server's answer distribution (code 4 never)


def _extraction(code: str | None, *, engine_error: str | None = None) -> Extraction:
    return Extraction(code, None if code or engine_error else "no answer", engine_error=engine_error)


def test_fleiss_kappa_of_the_textbook_table() -> None:
    """Fleiss (1971) as Wikipedia works it: 10 subjects, 14 raters, 5 categories -> 0.210."""
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.210, abs=5e-4)
    assert fleiss_kappa([[5, 0], [0, 5]]) == 1.0 and math.isnan(fleiss_kappa([[5], [5]]))


def test_the_modal_draw_is_the_item_s_answer() -> None:
    chosen, agreement = modal_extraction([_extraction(c) for c in ("2", "1", "1", None, "2")], 5)
    assert chosen.code == "2" and agreement == 0.4  # a tie goes to the code drawn first
    assert chosen.distribution == {"2": 0.5, "1": 0.5}  # shares of the readable draws
    failed, agreement = modal_extraction([_extraction("1"), _extraction(None, engine_error="HTTP 500")], 2)
    assert failed.engine_error == "HTTP 500" and agreement is None  # incomplete: a rerun asks it again
    unread, agreement = modal_extraction([_extraction(None), _extraction(None)], 2)
    assert unread.failure == "no answer" and agreement is None


def test_each_draw_has_its_own_seed_and_cache_key() -> None:
    prompt = PromptRequest("7:V5", (Message("user", "Pick one"),), sampling=SamplingSettings(temperature=1.0))
    five, eight = draw_prompts([prompt], 5, 42), draw_prompts([prompt], 8, 42)
    assert [p.sampling.seed for p in eight] == list(range(42, 50))
    assert {item_of(p.item_id) for p in eight} == {"7:V5"}
    assert len({p.key for p in eight}) == 8 and {p.key for p in five} < {p.key for p in eight}
    assert draw_prompts([prompt], 1, 42) == [prompt]
    reduced, record = reduce_draws({p.item_id: _extraction("1") for p in five}, 5, 42)
    assert list(reduced) == ["7:V5"] and record["draw_agreement"] == 1.0 and record["draw_seed_0"] == 42


@pytest.mark.parametrize(("values", "needle"), [({"samples": 5}, "needs --temperature > 0"),
                                                ({"samples": 3, "temperature": 1, "circular": "circular"},
                                                 "not with --circular")])
def test_bad_samples_settings_are_one_line(values: dict, needle: str) -> None:
    from socbench.config import from_flat

    with pytest.raises(ConfigError, match=needle):
        from_flat(RunConfig, values)


SEEDS: list[int | None] = []  # each answer's seed (the preflight's probe has none)


def sampled(prompt: str, codes: tuple[str, ...], seed: int | None) -> str:
    """A sampling model: a code from ``SHARES``, drawn with the request's seed and the prompt."""
    SEEDS.append(seed)
    rng = random.Random(f"{seed}:{prompt}")
    return json.dumps({"answer": rng.choices(list(SHARES), weights=list(SHARES.values()))[0]})


def expected_agreement(k: int) -> float:
    """E[modal count / k] of k draws from ``SHARES``, by enumeration."""
    total = 0.0
    for draws in itertools.product(SHARES, repeat=k):
        total += math.prod(SHARES[c] for c in draws) * max(Counter(draws).values()) / k
    return total


@pytest.mark.slow  # runs flows on the session's Prefect API
def test_draws_match_the_server(api_url: str, tmp_path: Path) -> None:
    data, out = write_data(tmp_path), tmp_path / "out"
    people, questions = 40, 2
    with FakeOpenAIServer(answer=sampled) as server:  # in this process: it fills SEEDS
        args = ("issp", "--api_type", "config", "--api_base", server.url, "--model", "fake-model",
                "--data_dir", str(data), "--domain_id", "1", "--interview_count", str(people),
                "--output_dir", str(out),
                "--temperature", "1", "--concurrent_requests", "16")
        SEEDS.clear()
        socbench(*args, "--samples", "5")
        first = Counter(seed for seed in SEEDS if seed is not None)
        detailed = read_detailed(out / "fake-model" / "Citizenship_detailed.json")
        SEEDS.clear()
        socbench(*args, "--samples", "8")
        second = Counter(seed for seed in SEEDS if seed is not None)
    items = people * questions
    sent = first[42]  # one request per distinct prompt: respondents with the same persona share theirs
    assert items * 0.5 < sent <= items
    assert first == {seed: sent for seed in range(42, 47)}  # draw k seeded 42 + k, once per prompt
    assert second == {seed: sent for seed in range(47, 50)}  # the rerun sends only the 3 new draws
    details = detailed["details"]
    pooled = Counter()
    for item in details:
        shares = item["option_distribution"]
        assert sum(shares.values()) == pytest.approx(1)  # the 5 draws' shares; the answer is a mode
        assert shares[item["llm_answer"]] == max(shares.values())
        pooled.update({code: share * 5 for code, share in shares.items()})
    draws = people * questions * 5
    for code, p in SHARES.items():  # within 4 standard errors of the server's distribution
        assert pooled[code] / draws == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / draws))
    metrics = json.loads((out / "fake-model" / "Citizenship_metrics.json").read_text())["metrics"]
    assert metrics["samples"] == 8
    assert metrics["draw_agreement"] == pytest.approx(expected_agreement(8), abs=0.08)
    assert abs(metrics["draw_fleiss_kappa"]) < 0.1  # every item draws from one distribution: no agreement
    (row,) = json.loads((out / "fake-model" / "summary.json").read_text())["domains"]
    assert (row["samples"], row["draw_agreement"]) == (8, metrics["draw_agreement"])
    board = pd.read_csv(out / "report" / "leaderboard.csv")  # the leaderboard has them too
    overall = board.loc[board["domain"] == "ALL", "draw_agreement"].item()
    assert overall == pytest.approx(row["draw_agreement"])
    assert "## Repeated draws" in (out / "report" / "leaderboard.md").read_text()
    assert "Fleiss&#39; kappa across draws" in (out / "report" / "report.html").read_text()  # and the report
    socbench("export", str(out / "fake-model"))  # the long export: one row per draw too
    long = pd.read_csv(out / "fake-model" / "export" / "answers_long.csv")
    drawn = long[long["row_kind"] == "draw"]
    assert len(long[long["row_kind"] == "answer"]) == items and len(drawn) == items * 8
    assert sorted(set(drawn["draw"])) == list(range(1, 9))
