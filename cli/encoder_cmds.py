"""`kgnorm eval relatedness`: Spearman of a model's cosine similarities against human relatedness
scores (kgnorm.jobs.relatedness does the work)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import QuietOpt, StoreOpt, info, json_safe, setup
from kgnorm.errors import KgnormError


def eval_relatedness_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory (any method).")],
    pairs: Annotated[list[Path], typer.Option(
        "--pairs", help="UMNSRS-style CSV (Mean,Stdev,Term1,Term2,CUI1,CUI2); repeat for several files.")],
    baseline: Annotated[Optional[list[str]], typer.Option(
        "--baseline", help="Also score word-vectors: the mean of the model's own word vectors (BNE, DAN).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Spearman between cosine similarity and human relatedness scores (BNE §4.3)."""
    setup(quiet)
    if fmt not in ("table", "json"):
        raise KgnormError(f"--format must be table or json, got {fmt!r}")
    from kgnorm.jobs.relatedness import evaluate_relatedness

    report = evaluate_relatedness(model, pairs, baseline or [])
    for line in report.notes:
        info(line, quiet)
    rows = json_safe(report.rows)
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    typer.echo(f"{'file':24s} {'model':12s} {'pairs':>6s} {'used':>6s} {'unenc':>6s} {'spearman':>9s} {'all':>7s}")

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.4f}"

    for r in rows:
        typer.echo(f"{Path(r['file']).name[:24]:24s} {r['name'][:12]:12s} {r['n_pairs']:6d} {r['n_used']:6d} "
                   f"{r['n_unencodable']:6d} {num(r['spearman']):>9s} {num(r['spearman_all']):>7s}")
