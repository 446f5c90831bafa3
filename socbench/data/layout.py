"""Where a SocioBench ``Dataset_all`` folder keeps its files, and which sample a run reads.

Sample sizes are never substituted: a missing ``A_GroundTruth_sampling<N>`` folder is an error
listing the sizes that exist (the original code silently evaluated the 500 sample).
"""

from __future__ import annotations

from pathlib import Path

from socbench.domains import QA_FOLDER
from socbench.errors import ConfigError, DataError
from socbench.manifest import MANIFEST_NAMES

SAMPLE_PREFIX = "A_GroundTruth_sampling"
ALL_SIZE = "all"  # the sample folder holding every respondent: A_GroundTruth_samplingall


def dataset_root(data_dir: Path) -> Path:
    """The ``Dataset_all`` folder: ``data_dir`` itself or its ``Dataset_all`` child."""
    data_dir = Path(data_dir).expanduser()
    if not data_dir.is_dir():
        raise DataError(f"--data_dir {data_dir}: folder not found")
    for candidate in (data_dir, data_dir / "Dataset_all"):
        if (candidate / QA_FOLDER).is_dir() or any((candidate / n).is_file() for n in MANIFEST_NAMES):
            return candidate
    raise DataError(f"--data_dir {data_dir}: no '{QA_FOLDER}' folder there or in {data_dir / 'Dataset_all'} "
                    f"(expected a SocioBench Dataset_all folder)")


def inside_folder(root: Path, path: Path) -> None:
    """A symbolic link (to a file or a sample folder) that leads out of the data folder ``root`` is an
    error, so a data folder is read only from itself."""
    real = path.resolve()
    if not real.is_relative_to(Path(root).resolve()):
        raise DataError(f"{path}: a link out of the data folder {root} (to {real}); copy it in instead")


def available_sizes(root: Path) -> list[int | str]:
    """Sample sizes with an ``A_GroundTruth_sampling<N>`` folder, ascending; ``all`` (every
    respondent, ``data import --sizes all``) last."""
    sizes = [p.name[len(SAMPLE_PREFIX):] for p in Path(root).glob(f"{SAMPLE_PREFIX}*") if p.is_dir()]
    return [*sorted(int(s) for s in sizes if s.isdigit()), *([ALL_SIZE] if ALL_SIZE in sizes else [])]


def sample_dir(root: Path, dataset_size: int | str) -> Path:
    """The folder of one sample size (``all``: ``A_GroundTruth_samplingall``); never falls back to
    another size."""
    if dataset_size != ALL_SIZE and (isinstance(dataset_size, bool) or not isinstance(dataset_size, int)
                                     or dataset_size < 1):
        raise ConfigError(f"--dataset_size {dataset_size!r}: expected a positive integer or 'all'")
    folder = Path(root) / f"{SAMPLE_PREFIX}{dataset_size}"
    if not folder.is_dir():
        sizes = ", ".join(map(str, available_sizes(root))) or "none"
        raise DataError(f"{folder}: sample folder for --dataset_size {dataset_size} not found; sizes "
                        f"present: {sizes}")
    return folder


def parse_interview_count(value: int | str) -> int | None:
    """``N`` -> N, ``"all"`` -> None (all respondents)."""
    if isinstance(value, str) and value.strip().lower() == "all":
        return None
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if isinstance(value, bool) or count < 1:
        raise ConfigError(f"--interview_count {value!r}: expected a positive integer or 'all'")
    return count
