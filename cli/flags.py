"""Flags: derived from the run configurations' fields, or declared with ``flag`` for the rest; each in the
original system's snake_case (``--data_dir``) and in kebab-case. A configuration's flags are validated by
the configuration itself (``socbench.config.from_flat``), so a bad value reads as for a flow parameter.
"""

from __future__ import annotations

import argparse
import json
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, NonNegativeInt, PositiveInt, TypeAdapter, ValidationError

from socbench.config import Setting, from_flat, settings_of


def flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, name: str, **kwargs: Any) -> None:
    """Add ``--name_with_underscores`` and ``--name-with-dashes`` as one option."""
    snake = name.replace("-", "_")
    kwargs.setdefault("dest", snake)
    parser.add_argument(*dict.fromkeys((f"--{snake}", f"--{name.replace('_', '-')}")), **kwargs)


def checked(kind: Any, what: str) -> Callable[[str], Any]:
    """An argparse type that pydantic validates (``PositiveInt``, ``Annotated[float, Field(lt=1)]``): a bad
    value is argparse's one line, ``argument --flag: expected <what>, got '<text>'``."""
    adapter = TypeAdapter(kind)

    def parse(text: str) -> Any:
        try:
            return adapter.validate_python(text)
        except ValidationError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    return parse


positive_int = checked(PositiveInt, "a positive integer")
non_negative_int = checked(NonNegativeInt, "a non-negative integer")


def json_object(text: str) -> dict[str, Any]:
    """A JSON object given on the command line (``--engine '{"dtype": "float32"}'``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc.msg} at character {exc.pos}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"dtype\": \"float32\"}}', "
                                         f"got {text!r}")
    return value


def _help(setting: Setting, required: bool) -> str:
    """The field's description and its default (unless there is nothing to show)."""
    text, default = (setting.field.description or "").replace("%", "%%"), setting.default
    if required or default is None or default is False or default in ({}, ()):
        return text
    shown = ",".join(map(str, default)) if isinstance(default, tuple) else str(default)
    return f"{text} (default: {shown})"


def add_config_flags(parser: argparse.ArgumentParser, model: type[BaseModel],
                     only: Iterable[str] | None = None, required: Iterable[str] = (),
                     positional: Iterable[str] = ()) -> None:
    """One flag per setting of ``model`` (``only`` those, if given; ``positional``: arguments); absent flags
    keep the configuration's defaults, which ``--help`` shows; a field without one is required."""
    for setting in settings_of(model).values():
        if only is not None and setting.name not in only:
            continue
        field = setting.field
        needed = setting.name in required or field.is_required()
        kwargs: dict[str, Any] = {"help": _help(setting, needed)}
        if setting.name in positional:
            parser.add_argument(setting.name, **kwargs)
            continue
        kwargs.update({"required": True} if needed else {"default": argparse.SUPPRESS})
        # a field's types: a union's members but None, else the annotation itself
        kinds = [arg for arg in typing.get_args(field.annotation) if arg is not type(None)] \
            if typing.get_origin(field.annotation) in (typing.Union, types.UnionType) else [field.annotation]
        if bool in kinds:
            kwargs["action"] = "store_true" if setting.default is False else argparse.BooleanOptionalAction
        elif any(kind is dict or typing.get_origin(kind) is dict for kind in kinds):
            kwargs.update(type=json_object, metavar="JSON")
        elif len(kinds) == 1 and typing.get_origin(kinds[0]) is typing.Literal:  # its values, for the help
            kwargs["metavar"] = "{" + ",".join(map(str, typing.get_args(kinds[0]))) + "}"
        else:
            kwargs["metavar"] = setting.name.upper()
        flag(parser, setting.name, **kwargs)


def config_from_args(model: type[BaseModel], args: argparse.Namespace) -> Any:
    """The configuration from the flags given; validated as a whole."""
    names = settings_of(model)
    return from_flat(model, {key: value for key, value in vars(args).items() if key in names})
