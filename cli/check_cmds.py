"""`kgnorm check`: parse options, call kgnorm.jobs.check, print its findings; exit 1 when not sound."""
from __future__ import annotations

import json
from typing import Annotated

import typer

from kgnorm.cli.common import LockTimeoutOpt, QuietOpt, StoreOpt, echo_stdout, setup
from kgnorm.errors import KgnormError

FORMATS = ("text", "json")


def check_cmd(
    fmt: Annotated[str, typer.Option("--format", help="text (a line per finding, then the verdict) or json.")] = "text",
    store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False,
) -> None:
    """Read the whole store and report, a line each, what is inconsistent (edges of no run, runs
    staged but never published, mentions without their document, offsets outside a text, reviews
    whose mention is gone, journaled reviews not in the store, ontologies whose concept count
    differs from their load); orphans are notes. Exit 0 when sound, 1 otherwise: the first thing
    to run after a crash."""
    setup(quiet)  # the findings are the result: printed whatever --quiet says
    if fmt not in FORMATS:
        raise KgnormError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    from kgnorm.jobs.check import check_store

    report = check_store(store, lock_timeout=lock_timeout)
    if fmt == "json":
        echo_stdout(json.dumps(report.record(), ensure_ascii=False))
    else:
        echo_stdout("\n".join(report.lines()))
    if not report.sound:
        raise typer.Exit(1)
