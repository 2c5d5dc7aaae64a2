"""A typer group whose commands come from a registry (`kgnorm ingest`'s loaders, `kgnorm train`'s
methods) and are built only when named: `kgnorm ingest obo FILE` builds the `obo` command alone,
so no other loader's options and no method's recipe are imported to run it."""
from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any, Callable, Iterable

from typer.core import TyperGroup
from typer.main import get_command_from_info
from typer.models import CommandInfo


class LazyCommands(MutableMapping):
    """The group's commands by name: the names are the registry's, read on each look-up (an entry
    registered at run time is a command too); a command is built the first time it is asked for."""

    def __init__(self, names: Callable[[], Iterable[str]], build: Callable[[str], Any]) -> None:
        self._names, self._build, self._built = names, build, {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in list(self._names()):
                raise KeyError(name)
            self._built[name] = self._build(name)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names()))

    def __len__(self) -> int:
        return len(list(self._names()))

    def __contains__(self, name: object) -> bool:
        return name in list(self._names())


class RegistryGroup(TyperGroup):
    """A TyperGroup over a registry; a subclass names its entries (:meth:`entry_names`) and the typer
    callback of one (:meth:`entry_callback`)."""

    def __init__(self, **attrs: Any) -> None:
        attrs.pop("commands", None)  # typer passes the (empty) commands registered on the Typer
        super().__init__(**attrs)
        self.commands = LazyCommands(self.entry_names, self._command)

    def entry_names(self) -> Iterable[str]:
        raise NotImplementedError

    def entry_callback(self, name: str) -> Callable[..., None]:
        raise NotImplementedError

    def _command(self, name: str) -> Any:
        # pretty_exceptions_short: typer's default, what the eagerly built commands were given
        return get_command_from_info(CommandInfo(name=name, callback=self.entry_callback(name)),
                                     pretty_exceptions_short=True, rich_markup_mode=self.rich_markup_mode)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)
