"""``python -m socbench.cli``: the ``socbench`` command."""

import sys

from socbench.cli import main

sys.exit(main())
