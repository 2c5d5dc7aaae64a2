"""`kgnorm ingest FORMAT PATH`, one command per loader of kgnorm.ontologies.registry (generated from
its entry: help, options), kgnorm.jobs.ingest doing the work; and `kgnorm compact`."""
from __future__ import annotations

import inspect
import typing
from dataclasses import MISSING, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Optional

import typer

from kgnorm.cli.common import LockTimeoutOpt, QuietOpt, StoreOpt, info, setup
from kgnorm.cli.registry_group import RegistryGroup
from kgnorm.cli.train_cmds import _annotation
from kgnorm.methods.options import flags_of

if TYPE_CHECKING:
    from kgnorm.ontologies.registry import Loader

PathArg = Annotated[Path, typer.Argument(help="Source file or directory.")]
NameOpt = Annotated[Optional[str], typer.Option("--ontology", help="Ontology name in the store (default per format).")]
DryRunOpt = Annotated[bool, typer.Option(
    "--dry-run", help="Parse and print what replacing the stored version would do to its links (kept, moved, "
                      "orphaned) and concepts (added, removed, merged); the store is only read.")]


def _ingest(fmt: str, path: Path, name: str | None, allow_dangling: bool, store: str | None,
            quiet: bool, lock_timeout: float, dry_run: bool = False, **options: Any) -> None:
    setup(quiet)
    from kgnorm.jobs.ingest import ingest

    ingest(fmt, path, name, allow_dangling, store, lock_timeout, quiet, dry_run=dry_run, **options)


def command_for(entry: Loader) -> Callable[..., None]:
    """The typer callback of `kgnorm ingest NAME`: PATH, --ontology, --allow-dangling, the loader's
    own options (the fields of its ``options`` dataclass, in order), --dry-run where it offers
    one, then --store, --lock-timeout and --quiet; its help is the loader's ``reads``."""
    cls = entry.options_class()
    hints = typing.get_type_hints(cls)
    kw = inspect.Parameter.KEYWORD_ONLY
    dangling = Annotated[bool, typer.Option("--allow-dangling", help=entry.dangling_help)]
    params = [inspect.Parameter("path", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=PathArg),
              inspect.Parameter("ontology", kw, default=None, annotation=NameOpt),
              inspect.Parameter("allow_dangling", kw, default=False, annotation=dangling)]
    params += [inspect.Parameter(
        f.name, kw, default=inspect.Parameter.empty if f.default is MISSING else f.default,
        annotation=Annotated[_annotation(hints[f.name]), typer.Option(*flags_of(f), help=f.metadata.get("help"))])
        for f in fields(cls)]
    if entry.dry_run:
        params.append(inspect.Parameter("dry_run", kw, default=False, annotation=DryRunOpt))
    params += [inspect.Parameter("store", kw, default=None, annotation=StoreOpt),
               inspect.Parameter("lock_timeout", kw, default=30.0, annotation=LockTimeoutOpt),
               inspect.Parameter("quiet", kw, default=False, annotation=QuietOpt)]
    own = [f.name for f in fields(cls)]

    def command(**given: Any) -> None:
        options = {k: given.pop(k) for k in own}
        _ingest(entry.name, given["path"], given["ontology"], given["allow_dangling"], given["store"],
                given["quiet"], given["lock_timeout"], given.get("dry_run", False), **options)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = entry.reads
    command.__name__ = entry.name
    return command


class LoaderCommands(RegistryGroup):
    """`kgnorm ingest`: its commands are the registry's loaders (kgnorm.ontologies.registry), read
    each time the CLI runs, as `kgnorm train` reads the methods (a loader registered at run time is
    a command too); a loader's options are imported only when its command is named."""

    def entry_names(self) -> list[str]:
        from kgnorm.ontologies.registry import LOADERS

        return list(LOADERS)

    def entry_callback(self, name: str) -> Callable[..., None]:
        from kgnorm.ontologies.registry import LOADERS

        return command_for(LOADERS[name])


app = typer.Typer(cls=LoaderCommands, help="Load an ontology into the graph store (replaces an ontology of the same name).",
                  no_args_is_help=True)


def compact_cmd(store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False) -> None:
    """Reclaim the space an embedded store keeps after ontologies were replaced (LadybugDB has
    no vacuum): the store is copied into a fresh file that takes its place."""
    setup(quiet)
    from kgnorm.jobs.compact import compact_store

    uri, s = compact_store(store, lock_timeout=lock_timeout)
    info(f"compacted {uri}: {s.mb_before:.1f} MB → {s.mb_after:.1f} MB ({s.nodes:,} nodes, {s.edges:,} edges) "
         f"in {s.seconds:.1f}s", quiet)
