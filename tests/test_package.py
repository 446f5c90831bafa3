"""socbench as users install it: a wheel with one top-level package, and the Python front door,
``socbench.evaluate``, run from a fresh virtual environment outside the checkout, as the README shows.

The fresh environment takes socbench from the wheel and its dependencies from the running one (the
project's lock, as ``make setup`` installs it), through a ``.pth`` file: no download, nothing of the
checkout on its path. Beside it, another package installs a top-level ``tasks`` module; both work.
"""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from support import FakeOpenAIServer
from support.processes import user_prefect_home

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # builds a wheel and a virtual environment, runs the flow in a subprocess


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, timeout=900, **kwargs)
    assert done.returncode == 0, f"{args}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of what it holds (setuptools writes ``build/`` beside its source)."""
    out, source = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("socbench", "cli", "tasks", "flows", "data/demo"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
          str(source)])
    [found] = out.glob("socbench-*.whl")
    return found


def _dependencies_pth() -> str:
    """The running environment's site-packages (where the lock is installed), not the checkout."""
    paths = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    return "\n".join(dict.fromkeys(paths + site.getsitepackages())) + "\n"


def test_the_wheel_installs_one_top_level_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        [top] = [n for n in archive.namelist() if n.endswith(".dist-info/top_level.txt")]
        assert archive.read(top).decode().split() == ["socbench"]
        roots = {name.split("/")[0] for name in archive.namelist()}
        data = [n for n in archive.namelist() if n.startswith("socbench/_demo/Dataset_all/")]
        templates = {n.rsplit("/", 1)[1] for n in archive.namelist()
                     if n.startswith("socbench/report/templates/")}
    assert roots == {"socbench", wheel.name.split("-py3")[0] + ".dist-info"}
    assert any(n.endswith("issp_qa_family.json") for n in data)  # the demo data travels with it
    assert templates == {"report.html.j2", "macros.html.j2", "report.css"}  # and report.html's templates


def test_evaluate_from_a_fresh_venv_beside_another_tasks_package(wheel: Path, tmp_path: Path,
                                                                 prefect_db: Path | None) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    lib = next((venv / "lib").glob("python3*/site-packages"))
    (lib / "lock.pth").write_text(_dependencies_pth())
    other = tmp_path / "other"  # a package of its own with a top-level ``tasks`` module
    (other / "tasks.py").parent.mkdir()
    (other / "tasks.py").write_text("WHOSE = 'other'\n")
    (other / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n'
                                          'build-backend = "setuptools.build_meta"\n'
                                          '[project]\nname = "other-tasks"\nversion = "1"\n'
                                          '[tool.setuptools]\npy-modules = ["tasks"]\n')
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(other),
          str(other)])
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel), *map(str, other.glob("*.whl"))])
    code = ("import socbench, tasks\n"
            "assert tasks.WHOSE == 'other' and socbench.__file__.startswith(sys.prefix), socbench.__file__\n"
            "r = socbench.evaluate('issp', api_type='openai', api_base=URL, model='fake-model',\n"
            "                      domain_id=3, interview_count=5, output_dir='results')\n"
            "print(r.complete, r.to_pandas().shape, sorted(r.metrics))\n")
    # its Prefect home with a user's database in place (``prefect_db``): the run's server does not migrate one
    home = user_prefect_home(tmp_path / "prefect", prefect_db)
    with FakeOpenAIServer() as server:
        done = _run([str(python), "-c", f"import sys\nURL = {server.url!r}\n{code}"], cwd=tmp_path,
                    env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-test",
                         **home, "HF_HUB_OFFLINE": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
    last = done.stdout.strip().splitlines()[-1]  # "True (29, 12) ['Family']": complete, items x columns
    assert last.startswith("True (") and last.endswith("['Family']"), done.stdout
    assert (tmp_path / "results" / "fake-model" / "Family_detailed.json").is_file()
