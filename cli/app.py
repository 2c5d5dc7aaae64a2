"""The `kgnorm` command: wires library pieces; every failure is one line and a non-zero exit."""
from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from kgnorm.cli import (annotate_cmds, biocom_cmds, check_cmds, encoder_cmds, export_cmds, hierarchy_cmds, ingest, link_cmds,
                        retrain_cmds,
                        match_cmds, pretrain_cmds, query, serve_cmds, train_cmds)
from kgnorm.errors import KgnormError

try:  # recent typer vendors its own click; older ones use click itself
    from typer._click import exceptions as _cx
except ImportError:  # pragma: no cover
    from click import exceptions as _cx


def _tidy_help() -> None:
    """Recent typer prints `<bool>` after every on/off flag and `{path}` around required
    arguments in help; show flags bare and arguments as PATH (older typer: nothing to do)."""
    core = getattr(typer, "core", None)
    option = getattr(core, "TyperOption", None)
    if option is not None and hasattr(option, "display_type_rich"):
        shown = option.display_type_rich

        def display_type_rich(self, ctx):
            return None if getattr(self, "is_flag", False) else shown(self, ctx)

        option.display_type_rich = display_type_rich
    argument = getattr(core, "TyperArgument", None)
    if argument is not None and hasattr(argument, "_usage_display_name"):
        def usage_name(self) -> str:
            name = (self.metavar or self.name or "arg").upper()
            name = name if self.required else f"[{name}]"
            return name + ("…" if self.nargs != 1 else "")

        argument._usage_display_name = usage_name


def _version(value: bool) -> None:
    if value:
        from kgnorm import __version__

        typer.echo(f"kgnorm {__version__}")
        raise typer.Exit()


_tidy_help()
app = typer.Typer(name="kgnorm", help="Knowledge-graph workbench for biomedical concept normalization.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print kgnorm's version and exit.")] = False) -> None:
    """Knowledge-graph workbench for biomedical concept normalization."""


app.add_typer(ingest.app, name="ingest")
app.command("query")(query.query)
app.command("ontologies")(query.ontologies)
app.command("compact")(ingest.compact_cmd)
app.command("check")(check_cmds.check_cmd)

app.add_typer(train_cmds.train_app, name="train")  # one command per registered method

eval_app = typer.Typer(help="Evaluate models (linking, hierarchy, relatedness).", no_args_is_help=True)
eval_app.command("link")(link_cmds.eval_link_cmd)
eval_app.command("hierarchy")(hierarchy_cmds.eval_hierarchy_cmd)
eval_app.command("relatedness")(encoder_cmds.eval_relatedness_cmd)
eval_app.command("annotate")(annotate_cmds.eval_annotate_cmd)
eval_app.command("match")(match_cmds.eval_match_cmd)
eval_app.command("place")(match_cmds.eval_place_cmd)
app.add_typer(eval_app, name="eval")

corpus_app = typer.Typer(help="Entity-linked sentence corpora for BioCoM.", no_args_is_help=True)
corpus_app.command("build")(biocom_cmds.corpus_build_cmd)
app.add_typer(corpus_app, name="corpus")

app.command("link")(link_cmds.link_cmd)
app.command("annotate")(annotate_cmds.annotate_cmd)
app.command("calibrate")(annotate_cmds.calibrate_cmd)
app.command("hypernyms")(hierarchy_cmds.hypernyms_cmd)
app.command("embed")(link_cmds.embed_cmd)
app.command("pretrain")(pretrain_cmds.pretrain_cmd)
app.command("match")(match_cmds.match_cmd)
app.command("place")(match_cmds.place_cmd)
app.command("serve")(serve_cmds.serve_cmd)
app.command("retrain")(retrain_cmds.retrain_cmd)
app.add_typer(export_cmds.export_app, name="export")


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or bool(os.environ.get("KGNORM_DEBUG"))
    args = [a for a in args if a != "--debug"]
    try:
        rc = app(args=args, prog_name="kgnorm", standalone_mode=False)
        if rc == 130:  # typer returns (not raises) 130 for a Ctrl-C it turned into Abort
            typer.echo("kgnorm: interrupted; store unchanged", err=True)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:  # click turns Ctrl-C into Abort; every store write is one transaction
        typer.echo("kgnorm: interrupted; store unchanged", err=True)
        sys.exit(130)
    except _cx.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KgnormError as exc:
        if debug:
            raise
        from kgnorm.stores.base import redact  # on use: the CLI starts without the store layer

        typer.echo(f"kgnorm: error: {redact(str(exc))}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        typer.echo("kgnorm: interrupted; store unchanged", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug or an unexpected library failure: still one line
        if debug:
            raise
        from kgnorm.stores.base import redact

        msg = redact(" ".join(str(exc).split()))
        typer.echo(f"kgnorm: error: {type(exc).__name__}: {msg} (rerun with --debug for a traceback)", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
