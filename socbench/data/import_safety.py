"""What an import may write over, and what a domain's files say about where they came from.

Why: overwriting a domain but keeping its other sample sizes gives one domain two surveys. So an
existing domain is written only with ``--replace`` (old files removed once the new one is in place),
and each ``sampling_stats_<slug>.json`` names its source's sha256 for ``data validate`` to compare.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from socbench.data.layout import SAMPLE_PREFIX, available_sizes, inside_folder
from socbench.domains import ISSP_BY_SLUG, QA_FOLDER
from socbench.errors import ConfigError, DataError
from socbench.files import read_json
from socbench.manifest import DomainSpec, Manifest

SOCIOBENCH = "SocioBench files (no sampling_stats with a source)"


def stats_name(slug: str) -> str:
    return f"sampling_stats_{slug}.json"


def sample_folders(root: Path) -> list[Path]:
    """Every ``A_GroundTruth_sampling<N>`` folder of ``root``, by size (``...samplingall`` last)."""
    return [root / f"{SAMPLE_PREFIX}{size}" for size in available_sizes(root)]


def domain_files(root: Path, slug: str, entry: DomainSpec | None = None) -> list[Path]:
    """Every file of domain ``slug`` in ``root``: its question file, and in each sample folder
    its answer file and sampling stats (the manifest entry's own file names too)."""
    questions = {f"{QA_FOLDER}/issp_qa_{slug}.json", getattr(entry, "question_file", None)} - {None, ""}
    answers = {f"issp_answer_{slug}.json", stats_name(slug), getattr(entry, "answer_file", None)} - {None, ""}
    candidates = [root / name for name in sorted(questions)]
    candidates += [folder / name for folder in sample_folders(root) for name in sorted(answers)]
    return [path for path in candidates if path.is_file() or path.is_symlink()]


def _stats_source(path: Path) -> str | None:
    """``"<file> (sha256 <first 12>)"`` from one sampling stats file, None when it names none."""
    with suppress(DataError):
        stats = read_json(path)
        sha = stats.get("source_sha256") if isinstance(stats, dict) else None
        if isinstance(sha, str) and sha:
            return f"{stats.get('source_file') or 'unnamed file'} (sha256 {sha[:12]})"
    return None


def mixed_sources(root: Path, slug: str, answer_file: str) -> str | None:
    """One line when the domain's sample folders (those holding its answer file) come from different
    sources (``SOCIOBENCH`` when a folder's stats name none), else None."""
    sources = {folder.name: _stats_source(folder / stats_name(slug)) or SOCIOBENCH
               for folder in sample_folders(root) if (folder / answer_file).is_file()}
    if len(set(sources.values())) < 2:
        return None
    shown = "; ".join(f"{folder}: {source}" for folder, source in sources.items())
    return (f"{root}: the sample folders of '{slug}' come from different sources ({shown}); "
            f"import the survey again with --replace")


def check_existing(out: Path, slug: str, earlier: DomainSpec | None, replace: bool) -> list[Path]:
    """The old domain's files (to remove once the new one is written, with ``replace``); without
    ``replace``, an existing domain is one ConfigError line naming it and its source."""
    for folder in (out / QA_FOLDER, *sample_folders(out)):
        if folder.exists():
            inside_folder(out, folder)  # never write through a link out of the data folder
    files = domain_files(out, slug, earlier)
    if (not files and earlier is None) or replace:
        return files
    known = earlier or ISSP_BY_SLUG.get(slug)
    sources = sorted({s for f in files if f.name == stats_name(slug) and (s := _stats_source(f))})
    source = ", ".join(sources) if sources else SOCIOBENCH if files else "its manifest entry only"
    raise ConfigError(f"--out {out}: domain {known.name if known else slug!r} (slug {slug}"
                      f"{f', id {known.id}' if known else ''}) already exists there, from {source}: add "
                      "--replace to replace it whole (every sample size), or import under another --slug")


def remove_stale(old: Iterable[Path], written: Iterable[Path], keep: Iterable[Path]) -> list[Path]:
    """Remove the old domain's files the new import did not write (``keep``: never removed, the
    import's own inputs), then sample folders left empty; the paths removed."""
    spared = {p.absolute() for p in written} | {p.resolve() for p in keep}
    removed = [p for p in old if p.absolute() not in spared and (p.is_symlink() or p.resolve() not in spared)]
    for path in removed:
        path.unlink(missing_ok=True)
        if path.parent.name.startswith(SAMPLE_PREFIX):
            with suppress(OSError):
                path.parent.rmdir()  # only when empty
    return removed


def remove_empty(folders: Iterable[Path]) -> None:
    """Remove the folders an import created, deepest first, where they are still empty."""
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        with suppress(OSError):
            folder.rmdir()


def merged_manifest(base: Manifest | None, entry: DomainSpec) -> Manifest:
    """The folder's manifest with ``entry`` (replacing its slug's domain, the domains by id); a name another
    domain has is one line naming it (ids and slugs are unique by construction: ``importer._entry``)."""
    others = [d for d in (base.domains if base else []) if d.slug != entry.slug]
    clash = next((d for d in others if d.name.lower() == entry.name.lower()), None)
    if clash is not None:
        raise ConfigError(f"--name {entry.name!r}: domain {clash.id} (slug {clash.slug}) of the folder "
                          f"already has that name (names name the result files); choose another --name")
    return Manifest(title=base.title if base else "", domains=sorted([*others, entry], key=lambda d: d.id))
