"""User-facing errors: one line naming the file or setting and what is wrong. The CLI turns a
``SocbenchError`` into that line on stderr and exit code 2, no traceback; anything else is a bug."""

from __future__ import annotations

from collections.abc import Iterable


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


def first_problem(exc: Exception, skip: int = 0) -> tuple[str, object, str]:
    """(dotted location less its first ``skip`` parts, input, message) of a pydantic ``ValidationError``'s
    first error."""
    err = exc.errors()[0]  # type: ignore[attr-defined]
    where = ".".join(str(part) for part in err["loc"][skip:])
    message = err["msg"].removeprefix("Value error, ").replace("\n", " ")
    return where, err.get("input"), message


def problem(exc: Exception, skip: int = 0) -> str:
    """A bad file's pydantic error as every file problem reads: ``field 'a.b': message (+N more)``; ``skip``:
    leading parts of the location the caller names itself (a record's index)."""
    where, _, message = first_problem(exc, skip)
    count = exc.error_count()  # type: ignore[attr-defined]
    more = f" (+{count - 1} more)" if count > 1 else ""
    return f"field '{where}': {message}{more}" if where else f"{message}{more}"


def validated(model: type, values: object, *, within: str | None = None, context: dict | None = None):
    """``model.model_validate(values)``; a bad value becomes one ConfigError line naming its flag: the last
    field name of the error's location (``--seed 'x': ...``), or ``within``, the flag carrying a JSON object
    (``--engine bogus=1: unknown setting``). A value named like a key is never shown."""
    from pydantic import ValidationError

    try:
        return model.model_validate(values, context=context)
    except ValidationError as exc:
        where, value, message = first_problem(exc)
        if exc.errors()[0]["type"] == "extra_forbidden":
            message = "unknown setting"
        shown = "***" if "key" in where.lower() else repr(value)
        if within is not None:
            raise ConfigError(f"{within} {where}={shown}: {message}") from None
        names = [part for part in exc.errors()[0]["loc"] if isinstance(part, str)]
        if not names:
            raise ConfigError(message) from None
        raise ConfigError(f"--{names[-1]} {shown}: {message}") from None


def incomplete_reason(engine_errors: int, reasons: Iterable[str]) -> str | None:
    """``"K engine errors, first: <reason>"``: why a unit is incomplete (None: every request answered)."""
    if not engine_errors:
        return None
    first = next(iter(reasons), "unknown")
    return f"{engine_errors} engine error{'s' * (engine_errors != 1)}, first: {first}"


class RunFailed(Exception):
    """A run that ended Failed, carrying its outcome: Prefect raises a Failed state's data when a
    deployment run's result is asked for, and accepts only an exception there."""

    def __init__(self, message: str, outcome: object) -> None:
        super().__init__(message, outcome)
        self.message, self.outcome = message, outcome

    def __str__(self) -> str:
        return self.message
