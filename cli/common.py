"""Options every command shares (`--store`, `--quiet`) and small helpers for output."""
from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Callable, Optional

import typer

from kgnorm.errors import KgnormError

StoreOpt = Annotated[Optional[str], typer.Option(
    "--store", help="Graph store: a path or ladybug:///path (default ./kgnorm-data/graph, env KGNORM_STORE), "
                    "or a Neo4j URI bolt://… / neo4j://… / neo4j+s://…")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or chatter.")]
LockTimeoutOpt = Annotated[float, typer.Option(
    "--lock-timeout", help="Seconds to wait for an embedded store another process is writing to; "
                           "then the error names that process.")]
FormatOpt = Annotated[Optional[str], typer.Option(
    "--input-format", help="concept, pubtator or tsv (default: detected from the file).")]
EngineOpt = Annotated[str, typer.Option(
    "--engine", help="local (this process) or ray (a pool of Ray actors, each loading the model once; "
                     "pip install \"kgnorm[ray]\"). The output is the same.")]
WorkersOpt = Annotated[int, typer.Option("--workers", help="With --engine ray: actors (and the CPUs of a local Ray).")]
RayAddressOpt = Annotated[Optional[str], typer.Option(
    "--ray-address", help="With --engine ray: join this cluster (HOST:PORT) instead of starting a local Ray.")]
# the trainers' options are declared with their recipes (kgnorm/methods/options.py)


def setup(quiet: bool) -> None:
    from kgnorm.progress import set_quiet  # on use: the CLI starts without tqdm

    set_quiet(quiet)


def warn(message: str) -> None:
    """Warnings reach stderr even with --quiet: they change how a result should be read."""
    typer.echo(f"kgnorm: {message}", err=True)


def info(message: str, quiet: bool = False) -> None:
    """Human-facing status goes to stderr so stdout stays machine-readable."""
    from kgnorm.progress import note

    note(message, quiet)


def print_report(report: Any, quiet: bool) -> None:
    """A run's notes (always) and its summary lines (unless quiet), both to stderr."""
    for message in report.notes:
        warn(message)
    for line in report.summary():
        info(line, quiet)


def print_evaluation(report: dict[str, Any], fmt: str, lines_of: Callable[[dict[str, Any]], list[str]]) -> None:
    """An eval report: its notes to stderr, then JSON (``--format json``) or its table lines to stdout."""
    for message in report.pop("notes", []):
        warn(message)
    if fmt == "json":
        typer.echo(json.dumps(json_safe(report), indent=2))
        return
    for line in lines_of(report):
        typer.echo(line)


def parse_params(pairs: list[str] | None) -> dict[str, Any]:
    """`k=v` pairs; values parsed as JSON when they parse, else kept as strings."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise KgnormError(f"--param expects k=v, got {pair!r}")
        key, raw = pair.split("=", 1)
        key = key.strip()
        if not key.isidentifier():
            raise KgnormError(f"--param name {key!r} is not a valid parameter name")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def json_safe(x: Any) -> Any:
    """JSON has no NaN: undefined ratios become null (dicts and lists recursively)."""
    if isinstance(x, float) and x != x:
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def echo_stdout(text: str) -> None:
    sys.stdout.write(text)
    if not text.endswith("\n"):
        sys.stdout.write("\n")

