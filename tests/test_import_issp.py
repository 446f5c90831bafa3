"""ISSP microdata built from the real codebooks (``../shared/issp/codebooks``), imported.

A Stata file from the Family codebook (upper-case names, a WEIGHT, repeated labels) and an
SPSS file from the Religion codebook (lower-case names) are written with pyreadstat, imported
with their real question sets, and the result is checked field by field against the
codebook, for nested and reproducible country-stratified samples with per-country counts
from an independent water-filling, against ``data validate``, and through one run.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures import issp_microdata as micro
from socbench.cli import main
from support.records import read_detailed

SIZES = (500, 1000, 2000)
METADATA = re.compile(r"Study Number|Archive Version|Digital Object|of interview|data-collection|"
                      r"Case substitution|Flag variable", re.IGNORECASE)
CASES = {
    "dta": ("issp_profile_family.json", "family", 3),
    "sav": ("issp_profile_Religion.json", "religion", 7),
}


def _import(source: Path, qa: Path, out: Path, seed: int = 42, sizes: tuple[int, ...] = SIZES) -> int:
    return main(["data", "import", str(source), "--out", str(out), "--qa", str(qa),
                 "--sizes", ",".join(map(str, sizes)), "--seed", str(seed)])


@pytest.fixture(scope="module", params=sorted(CASES))
def imported(request, shared_issp: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    fmt = request.param
    book_name, slug, domain_id = CASES[fmt]
    codebook = micro.read_codebook(shared_issp / "codebooks" / book_name)
    data = micro.build(codebook, fmt)
    folder = tmp_path_factory.mktemp(f"issp-{fmt}")
    source = micro.write(data, folder / f"ZA_{slug}.{fmt}")
    qa = shared_issp / "qa" / f"issp_qa_{slug}.json"
    assert _import(source, qa, folder / "Dataset_all") == 0
    out = folder / "Dataset_all"
    return {
        "fmt": fmt,
        "data": data,
        "codebook": codebook,
        "source": source,
        "qa": qa,
        "slug": slug,
        "id": domain_id,
        "out": out,
        "folder": folder,
        # each sample file read once for the module's tests (up to 2,000 records of ~400 attributes)
        "sample": functools.cache(lambda size: _records(out, size, slug)),
    }


def _records(out: Path, size: int, slug: str) -> list[dict]:
    return json.loads((out / f"A_GroundTruth_sampling{size}" / f"issp_answer_{slug}.json").read_text())


def _expected_value(value, labels: dict[int, str] | None) -> str:
    if isinstance(value, str):
        return value
    code = int(value) if float(value).is_integer() else value
    return labels[code].strip() if labels and code in labels else str(code)


def test_layout_and_every_field_against_the_codebook(imported: dict) -> None:
    out, slug, data = imported["out"], imported["slug"], imported["data"]
    written = json.loads((out / "q&a" / f"issp_qa_{slug}.json").read_text())
    book = {entry["domain"].lower(): entry["content"] for entry in imported["codebook"]}
    for record in written:  # the question set as given, plus each question's missing codes from the file
        missing = record.pop("missing")
        labels = book[record["question_id"].lower()]
        assert all(labels[code].strip().startswith(missing[code][:20]) for code in missing)
        assert not set(missing) & set(record["answer"])
    assert written == json.loads(imported["qa"].read_text())
    qa_ids = {q["question_id"].lower(): q["question_id"] for q in json.loads(imported["qa"].read_text())}
    names = {name.lower(): name for name in data.frame.columns}
    questions = {names[key]: qid for key, qid in qa_ids.items()}
    # the persona is the codebook's background block: its module items are numbered Q1a, O2, ...; the
    # study's and the interview's metadata are not the respondent's (the respondent id is kept: a role)
    items = {name for name in data.frame.columns
             if re.match(r"\s*[QO]\d", data.labels[name]) or METADATA.search(data.labels[name])}
    keys = micro.attribute_keys(data, set(questions) | {"WEIGHT"} | items)
    if imported["fmt"] == "dta":  # Family: Q6, Q8, Q16-17 and Q32-34 are attitudes and others' traits
        assert {"V21", "V28", "V37", "V40", "V65", "V66", "V67"} <= items - set(questions)
    book = {entry["domain"]: entry for entry in imported["codebook"]}
    records = imported["sample"](2000)
    assert len(records) == 2000
    checked = records[::7]  # their rows as plain dicts: indexing a pandas row per field took seconds
    rows = data.frame.iloc[[r["person_id"] - imported["id"] * 10**7 - 1 for r in checked]].to_dict("records")
    for record, row in zip(checked, rows, strict=True):
        expected = {keys[name]: _expected_value(row[name], data.value_labels.get(name)) for name in keys}
        assert record["attributes"] == expected
        assert record["questions_answer"] == {qid: int(row[name]) for name, qid in questions.items()}
        assert record.get("weight") == (pytest.approx(row["WEIGHT"]) if "WEIGHT" in row else None)
        for name, key in keys.items():  # the labels are the codebook's own (within the format's limits)
            limit = 80 if imported["fmt"] == "dta" else 256
            assert key.split(f" ({name})")[0] == (book[name]["meaning"][:limit].strip() or name)
    manifest = (out / "socbench.yaml").read_text()
    assert f"id: {imported['id']}" in manifest and f"slug: {slug}" in manifest


def _water_filling(available: dict[str, int], size: int) -> tuple[dict[str, int], int]:
    """Countries at or below the level keep all; the others get ``level`` or ``level + 1``."""
    level = 0
    while sum(min(n, level + 1) for n in available.values()) <= size:
        level += 1
    return {c: min(n, level) for c, n in available.items()}, size - sum(
        min(n, level) for n in available.values()
    )


def test_samples_are_nested_stratified_and_counted(imported: dict) -> None:
    out, slug = imported["out"], imported["slug"]
    samples = {size: imported["sample"](size) for size in SIZES}
    ids = {size: {r["person_id"] for r in records} for size, records in samples.items()}
    assert ids[500] < ids[1000] < ids[2000]
    sha = hashlib.sha256(imported["source"].read_bytes()).hexdigest()
    for size, records in samples.items():
        country = next(k for k in records[0]["attributes"] if "ISO 3166" in k and "alphanumeric" in k)
        counts: dict[str, int] = {}
        for record in records:
            counts[record["attributes"][country]] = counts.get(record["attributes"][country], 0) + 1
        floor, extra = _water_filling(micro.COUNTRY_SIZES, size)
        assert set(counts) == set(micro.COUNTRY_SIZES) and sum(counts.values()) == size
        assert sum(counts[c] - floor[c] for c in counts) == extra
        assert all(counts[c] - floor[c] in (0, 1) and counts[c] <= micro.COUNTRY_SIZES[c] for c in counts)
        stats = json.loads(
            (out / f"A_GroundTruth_sampling{size}" / f"sampling_stats_{slug}.json").read_text()
        )
        assert stats["country_distribution"] == counts and stats["actual_size"] == size
        assert (stats["random_seed"], stats["source_sha256"], stats["source_respondents"]) == (
            42,
            sha,
            sum(micro.COUNTRY_SIZES.values()),
        )


def test_same_seed_same_bytes_other_seed_other_sample(imported: dict) -> None:
    """Imported again with only the smallest size: a sample is the prefix of one seeded draw order, so
    the same seed writes the same bytes whatever other sizes were asked for; another seed, another sample."""
    again, other = imported["folder"] / "again", imported["folder"] / "other"
    assert _import(imported["source"], imported["qa"], again, sizes=SIZES[:1]) == 0
    assert _import(imported["source"], imported["qa"], other, seed=43, sizes=SIZES[:1]) == 0
    name = f"A_GroundTruth_sampling{SIZES[0]}/issp_answer_{imported['slug']}.json"
    assert (again / name).read_bytes() == (imported["out"] / name).read_bytes()
    first = {r["person_id"] for r in imported["sample"](SIZES[0])}
    assert first != {r["person_id"] for r in _records(other, SIZES[0], imported["slug"])}


def test_the_report_shows_what_the_prompts_hold(imported: dict) -> None:
    """The import report's "shown" list is the persona of the prompts (a respondent with every attribute
    answered): no study number, archive version, DOI, case id or interview date (issue 42: the report
    listed them as shown, the prompt left them out)."""
    from socbench.data import load_domain
    from socbench.data.loaders import persona_keep
    from socbench.domains import get_domain
    from socbench.prompts.persona import country_words, persona_attributes

    out, data = imported["out"], imported["data"]
    report = (out / f"import_report_{imported['slug']}.md").read_text()
    shown = next(line for line in report.splitlines() if line.startswith("- shown: "))
    domain = get_domain(imported["slug"], out)
    (person, *_) = load_domain(out, domain, 500).respondents
    keys = {key for record in imported["sample"](500) for key in record["attributes"]}
    keep = persona_keep(domain)  # the manifest's persona filter, as the loader applies it
    everything = replace(person, attributes={key: "x" for key in keys if keep(key)})
    prompted = set(persona_attributes(everything, country_words(person))) - {"Country"}
    names = micro.attribute_keys(data, set())
    listed = {" ".join(key.split()) for name, key in names.items()
              if re.search(rf'(?:^- shown: |, ){re.escape(name)} "', shown)}
    assert listed == prompted and len(listed) > 20
    assert not METADATA.search(shown) and "ID Number of Respondent" not in shown
    assert "- not shown, the respondent id, never shown (1): CASEID" in report
    assert re.search(r"- left out, study metadata \(study number, archive version, DOI\) \(3\): (V1|studyno)",
                     report)


def test_validates(imported: dict, capsys) -> None:
    capsys.readouterr()
    assert (
        main(["data", "validate", "--data_dir", str(imported["out"]), "--dataset_size", "500", "--json"])
        == 0
    )
    report = json.loads(capsys.readouterr().out)["domains"][str(imported["id"])]
    n_questions = len(json.loads(imported["qa"].read_text()))
    assert report["respondents"] == 500 and report["questions"] == n_questions
    assert report["countries"] == len(micro.COUNTRY_SIZES) and report["unmapped_respondents"] == []
    assert report["scoreable_items"] + report["excluded_items"] == 500 * n_questions
    assert report["scoreable_items"] > 0


@pytest.mark.slow  # runs the CLI flow on a Prefect API with the tiny model
def test_runs_through_socbench_issp(imported: dict, api_url: str, tiny_model: Path, tmp_path: Path,
                                    monkeypatch) -> None:
    if imported["fmt"] != "dta":
        pytest.skip("one run is enough: the .dta import")
    # Every labelled variable is an attribute (as in the archive's answer files): ~13k-token prompts,
    # beyond the tiny model's 2,048 positions (an engine error per prompt, exit 1). RoPE extends.
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    import vllm.envs

    vllm.envs.disable_envs_cache()  # an engine started earlier in this session froze vLLM's environment
    results = tmp_path / "results"
    assert (
        main(
            [
                "issp",
                "--data_dir",
                str(imported["out"]),
                "--domain_id",
                imported["slug"],
                "--interview_count",
                "3",
                "--model",
                str(tiny_model),
                "--engine",
                '{"dtype": "float32", "max_model_len": 16384}',
                "--output_dir",
                str(results),
            ]
        )
        == 0
    )
    (detailed,) = results.rglob("Family_detailed.json")
    payload = read_detailed(detailed)
    assert len({d["person_id"] for d in payload["details"]}) == 3 and payload["total_count"] > 0
    assert {d["country_code"] for d in payload["details"]} <= set(micro.COUNTRY_SIZES)
