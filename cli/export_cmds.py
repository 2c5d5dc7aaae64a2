"""`kgnorm export reviewed`: parse options, call kgnorm.review.export, print its summary."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import QuietOpt, StoreOpt, print_report, setup

export_app = typer.Typer(help="Write graph data out as files kgnorm's readers take back.", no_args_is_help=True)


@export_app.command("reviewed")
def export_reviewed_cmd(
    output: Annotated[Path, typer.Option("--output", help="File to write (whole or not at all).")],
    fmt: Annotated[str, typer.Option("--format", help="pubtator or bioc (each reviewed document's text with its "
                                     "reviewed mentions), or concept (.concept lines: the training-mention file "
                                     "`train biosyn --reviewed` takes).")] = "concept",
    ontology: Annotated[Optional[str], typer.Option(
        "--ontology", help="Only the links to this ontology's concepts (default: every reviewed link).")] = None,
    reviewer: Annotated[Optional[str], typer.Option(
        "--reviewer", help="Only this reviewer's answers: their newest review of each mention, whoever reviewed "
                           "it after them (default: each mention's current review).")] = None,
    resolved_only: Annotated[bool, typer.Option(
        "--resolved-only", help="Leave out the mentions two reviewers answered differently.")] = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """The mentions whose current review chose a concept (accept, concept; nil as -1 where the format's
    reader takes it back; not_a_mention left out), as a corpus."""
    setup(quiet)
    from kgnorm.review.export import check_format, export_reviewed

    report = export_reviewed(store, output, check_format(fmt), ontology=ontology, reviewer=reviewer,
                             resolved_only=resolved_only)
    print_report(report, quiet)
