"""``python -m cli``: the ``socbench`` command."""

import sys

from cli import main

sys.exit(main())
