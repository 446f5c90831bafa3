"""Turn a model spec (built-in name, HF folder, ``.gguf`` file) into a loadable HF folder, whose
``fingerprint`` goes into every cache key.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from socbench.errors import ModelError
from socbench.files import file_sha256
from socbench.models.smollm2 import BUILTIN_MODELS, MARKER, builtin_gguf, ensure_converted

DEFAULT_MODEL = "smollm2-135m-instruct"
WEIGHT_PATTERNS = ("*.safetensors", "*.bin")
_ID_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
             "chat_template.jinja", "special_tokens_map.json", MARKER)

@dataclass(frozen=True)
class ResolvedModel:
    """A model ready to load: ``path`` is an HF folder (config, tokenizer, weights)."""

    name: str  # what the user asked for, e.g. "smollm2-135m-instruct" or the folder name
    path: Path
    source: str  # where it came from, for logs and reports
    fingerprint: str  # content identity for cache keys (16 hex chars)


def socbench_home() -> Path:
    """Where converted models live: ``$SOCBENCH_HOME`` or ``~/.cache/socbench``."""
    return Path(os.environ.get("SOCBENCH_HOME") or Path.home() / ".cache" / "socbench").expanduser()


def model_slug(name: str) -> str:
    """A single safe path component for a model name (output folders, cache folders)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name.strip().rstrip("/\\")).strip("._-")
    slug = re.sub(r"\.{2,}", ".", slug)
    return slug or "model"


def resolve_model(spec: str) -> ResolvedModel:
    """Resolve a spec; errors name the spec or folder and what is missing."""
    spec = str(spec).strip()
    if not spec:
        raise ModelError("--model is empty: give a built-in name, an HF model folder or a .gguf file")
    if spec in BUILTIN_MODELS:
        model = BUILTIN_MODELS[spec]
        gguf, version = builtin_gguf(model)
        source = f"{model.description} ({model.distribution} {version})"
        return _converted(gguf, spec, source, model.distribution, version)
    path = Path(spec).expanduser()
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise ModelError(f"model file {path} not found")
        return _converted(path, path.stem, f"GGUF {path.resolve()}")
    if path.is_dir():
        return _folder(path, name=path.resolve().name, source=f"folder {path.resolve()}")
    if path.exists():
        raise ModelError(f"model {spec!r}: {path} is a file, not an HF model folder or a .gguf file")
    raise ModelError(f"model {spec!r} not found: not a built-in name ({', '.join(sorted(BUILTIN_MODELS))}), "
                     "an existing HF model folder or a .gguf file")


def _folder(path: Path, name: str, source: str) -> ResolvedModel:
    """An HF folder needs config.json and weights; say which is missing."""
    path = path.resolve()
    if not (path / "config.json").is_file():
        raise ModelError(f"model folder {path}: no config.json")
    if not any(next(path.glob(p), None) for p in WEIGHT_PATTERNS):
        raise ModelError(f"model folder {path}: no weights (*.safetensors or *.bin)")
    return ResolvedModel(name=name, path=path, source=source, fingerprint=folder_fingerprint(path))


def folder_fingerprint(path: Path) -> str:
    """Hash of config/tokenizer files and weight names + sizes: cheap even for large models."""
    digest = hashlib.sha256()
    for name in _ID_FILES:
        file = path / name
        if file.is_file():
            digest.update(name.encode() + b"\0" + hashlib.sha256(file.read_bytes()).digest())
    weights = sorted(f for p in WEIGHT_PATTERNS for f in path.glob(p))
    digest.update(json.dumps([[f.name, f.stat().st_size] for f in weights]).encode())
    return digest.hexdigest()[:16]


def _converted(gguf: Path, name: str, source: str, package: str | None = None,
               version: str | None = None) -> ResolvedModel:
    """A GGUF's HF folder in ``$SOCBENCH_HOME/models`` (converted once): a built-in model's under its name,
    a user's file's under its name and content (two files of one name never share a folder)."""
    stat = gguf.stat()  # the file's hash, memoised per (path, size, mtime): repeated resolves stay fast
    sha = _sha(gguf.resolve(), stat.st_size, stat.st_mtime_ns)
    folder = model_slug(name) if package else f"{model_slug(gguf.stem)}-{sha[:12]}"
    provenance = {"package": package, "package_version": version, "gguf_sha256": sha}
    target = ensure_converted(gguf, socbench_home() / "models" / folder, provenance)
    return _folder(target, name=name, source=source)


@functools.cache
def _sha(path: Path, size: int, mtime_ns: int) -> str:
    return file_sha256(path)
