"""`kgnorm query` and `kgnorm ontologies`: Cypher reads, shared by both backends."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import LockTimeoutOpt, QuietOpt, StoreOpt, echo_stdout, parse_params, setup
from kgnorm.errors import KgnormError

FORMATS = ("table", "json", "csv")


def query(
    cypher: Annotated[Optional[str], typer.Argument(help="A Cypher statement.")] = None,
    file: Annotated[Optional[Path], typer.Option("--file", help="Read the statement from a .cypher file.")] = None,
    saved: Annotated[Optional[str], typer.Option("--saved", help="Run a saved query from cypher/queries by name.")] = None,
    param: Annotated[Optional[list[str]], typer.Option("--param", help="Bind $k: k=v (JSON when it parses).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table, json or csv.")] = "table",
    list_saved: Annotated[bool, typer.Option("--list", help="List the saved queries and exit.")] = False,
    write: Annotated[bool, typer.Option(
        "--write", help="Allow the statement to change the store (default: read-only; LadybugDB is opened "
                        "read-only, Neo4j sessions run in READ access mode).")] = False,
    store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False,
) -> None:
    """Run one Cypher statement against the store (read-only unless --write); `--saved NAME`
    runs one of the shipped queries."""
    setup(quiet)
    from kgnorm.cli.output import render
    from kgnorm.jobs.query import run_query, saved_queries, statement

    if list_saved:
        for name, first in saved_queries():
            echo_stdout(f"{name}\t{first}")
        return
    if fmt not in FORMATS:
        raise KgnormError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    text = statement(cypher, file, saved)
    result = run_query(text, parse_params(param), write=write, store=store, lock_timeout=lock_timeout)
    echo_stdout(render(result, fmt))


def ontologies(
    fmt: Annotated[str, typer.Option("--format", help="table, json or csv.")] = "table",
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """List the ontologies in the store with concept and edge counts."""
    setup(quiet)
    from kgnorm.cli.output import render
    from kgnorm.jobs.query import ontology_counts

    if fmt not in FORMATS:
        raise KgnormError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    echo_stdout(render(ontology_counts(store), fmt))
