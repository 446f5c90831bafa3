"""``python -m socbench.cli``: the ``socbench`` command."""

from socbench.cli import command

command()
