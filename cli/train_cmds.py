"""`kgnorm train METHOD`: one command per method of the registry, generated from the fields of its
recipe's ``Options`` (flags, defaults and help are declared there, once); the recipe does the work,
and `Workbench.train` runs the same recipes."""
from __future__ import annotations

import inspect
import typing
from dataclasses import MISSING, fields
from typing import Annotated, Any, Callable

import typer

from kgnorm.cli.common import QuietOpt, StoreOpt, setup
from kgnorm.cli.registry_group import RegistryGroup
from kgnorm.methods.options import flags_of


def _annotation(hint: Any) -> Any:
    """typer reads ``Optional[X]``; ``X | None`` is spelt that way here."""
    args = typing.get_args(hint)
    if type(None) in args and len(args) == 2:
        return typing.Optional[next(a for a in args if a is not type(None))]
    return hint


def options_command(cls: type, call: Callable[..., Any], name: str) -> Callable[..., None]:
    """A typer callback whose options are the fields of the dataclass ``cls`` in their order, then
    --store and --quiet; it calls ``call(cls(**options), store=, quiet=)``."""
    hints = typing.get_type_hints(cls)
    params = [inspect.Parameter(
        f.name, inspect.Parameter.KEYWORD_ONLY,
        default=inspect.Parameter.empty if f.default is MISSING else f.default,
        annotation=Annotated[_annotation(hints[f.name]), typer.Option(*flags_of(f), help=f.metadata.get("help"))])
        for f in fields(cls)]
    params += [inspect.Parameter("store", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=StoreOpt),
               inspect.Parameter("quiet", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=QuietOpt)]

    def command(**options: Any) -> None:
        store, quiet = options.pop("store"), options.pop("quiet")
        setup(quiet)
        call(cls(**options), store=store, quiet=quiet)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = inspect.getdoc(cls)
    command.__name__ = name
    return command


def command_for(name: str) -> Callable[..., None]:
    """The typer callback of `kgnorm train NAME`: the method's ``Options``, then --store and --quiet."""
    from kgnorm.methods.registry import method

    entry = method(name)

    def call(opts: Any, store: str | None, quiet: bool) -> None:
        from kgnorm.jobs.train import train

        train(name, opts.out, store=store, quiet=quiet,
              **{f.name: getattr(opts, f.name) for f in fields(opts) if f.name != "out"})

    return options_command(entry.options(), call, f"train_{name}_cmd")


class MethodCommands(RegistryGroup):
    """`kgnorm train`: its commands are the registry's methods, read each time the CLI runs (a
    method registered at run time, e.g. from a plug-in package, is a command too); a method's
    recipe is imported only when its command is named."""

    def entry_names(self) -> list[str]:
        from kgnorm.methods.registry import METHODS

        return list(METHODS)

    def entry_callback(self, name: str) -> Callable[..., None]:
        return command_for(name)


train_app = typer.Typer(cls=MethodCommands, help="Train a name encoder from an ontology in the store.",
                        no_args_is_help=True)
