"""User-facing errors: one line naming the file or setting and what is wrong.

The CLI turns a ``SocbenchError`` into that line on stderr and exit code 2, with no
traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class SocbenchError(Exception):
    """A problem with the user's input or environment, not with socbench."""

    exit_code = 2


class DataError(SocbenchError):
    """A data file or folder is missing, malformed or inconsistent."""


class ConfigError(SocbenchError):
    """A setting (flag, parameter, environment variable) has an invalid value."""


class ModelError(SocbenchError):
    """A model spec cannot be resolved to loadable weights."""


class EngineError(SocbenchError):
    """An inference backend cannot be started or reached."""
