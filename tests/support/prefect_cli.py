"""Several ``prefect ...`` commands in one process, in order: what a user types one by one.

Why: each ``prefect`` process spends ~3 CPU s importing Prefect's CLI (and a ``deploy`` imports the flows
again) before it does anything; the sweep's server is set up with six commands (its pools, the project's
two deployment files, the GPU host's engine limit, the zombie-runs automation). Each command runs through
the console script's own entry point (``prefect.cli.app``, reading ``sys.argv``), so it parses and
behaves as typed; the batch stops at the first that exits non-zero and says which.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

SCRIPT = """
import json, sys
from prefect.cli import app
for args in json.loads(sys.argv[1]):
    sys.argv = ["prefect", *args]
    try:
        app()
    except SystemExit as exc:
        if exc.code not in (0, None):
            print("prefect " + " ".join(args) + f": exit {exc.code}", file=sys.stderr)
            sys.exit(1)
"""


def prefect_commands(env: Mapping[str, str], cwd: Path, *commands: Sequence[str]) -> None:
    """Each of ``commands`` (a ``prefect`` command line without ``prefect``), in one process in ``cwd``."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps([list(c) for c in commands])],
                          env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
