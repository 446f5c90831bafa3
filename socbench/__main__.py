import sys

from socbench.cli import main

sys.exit(main())
