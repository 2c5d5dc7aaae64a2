"""`kgnorm match`, `kgnorm place`, `kgnorm eval match`, `kgnorm eval place`: two ontologies in the
store -> SSSOM file and MAPS_TO edges (kgnorm.jobs.match), or PREDICTED_IS_A edges across
ontologies (kgnorm.jobs.place); and their scores against a reference."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import QuietOpt, StoreOpt, info, setup

SourceOpt = Annotated[str, typer.Option("--source", help="The ontology whose concepts are mapped.")]
TargetOpt = Annotated[str, typer.Option("--target", help="The ontology they are mapped to.")]
ModelOpt = Annotated[Path, typer.Option("--model", help="A trained model directory: its encoder ranks names.")]
XrefsOpt = Annotated[str, typer.Option("--xrefs", help="use: take the xrefs and alt ids between the two as "
                                                       "mappings; ignore: match blind (for evaluation).")]
FormatOpt = Annotated[str, typer.Option("--format", help="table or json.")]


def match_cmd(
    source: SourceOpt, target: TargetOpt, model: ModelOpt,
    output: Annotated[Optional[Path], typer.Option("--output", help="SSSOM TSV to write (default stdout).")] = None,
    write: Annotated[bool, typer.Option("--write/--no-write", help="Store MAPS_TO edges and a Run node.")] = True,
    threshold: Annotated[str, typer.Option("--threshold", help="auto (fitted on the shared xrefs, else the dev "
                                                               "default) or a cosine.")] = "auto",
    xrefs: XrefsOpt = "use",
    top_k: Annotated[int, typer.Option("--top-k", help="Target candidates ranked per source concept.")] = 10,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Map every concept of --source to --target: exact, broad and narrow matches as SSSOM."""
    setup(quiet)
    from kgnorm.jobs.match import match_ontologies, write_mappings, write_sssom_file

    result = match_ontologies(source, target, model, threshold=threshold, xrefs=xrefs, top_k=top_k, store=store)
    write_sssom_file(result, output)
    cal = result.calibration
    info(f"{len(result.decisions)} mapping(s) of {len(result.source.names)} {source} concept(s); "
         f"threshold {cal.threshold:.4f} ({cal.fitted_on})", quiet)
    if write:
        uid, n = write_mappings(result, store)
        info(f"wrote {n} MAPS_TO edge(s) as run {uid}", quiet)


def place_cmd(
    source: SourceOpt, target: TargetOpt, model: ModelOpt,
    top_k: Annotated[int, typer.Option("--top-k", help="Parents ranked per concept.")] = 5,
    unmatched_only: Annotated[bool, typer.Option("--unmatched-only", help="Only concepts with no exactMatch "
                                                                          "in the target.")] = False,
    xrefs: XrefsOpt = "use",
    output: Annotated[Optional[Path], typer.Option("--output", help="TSV to write (default stdout).")] = None,
    write: Annotated[bool, typer.Option("--write/--no-write", help="Store PREDICTED_IS_A edges and a Run node.")] = True,
    write_top_k: Annotated[int, typer.Option("--write-top-k", help="How many ranks to store as edges.")] = 1,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Rank parents in --target's hierarchy for concepts of --source."""
    setup(quiet)
    from kgnorm.jobs.place import place_concepts, write_placement, write_tsv

    placement = place_concepts(source, target, model, top_k=top_k, unmatched_only=unmatched_only, xrefs=xrefs,
                               store=store)
    write_tsv(placement, output)
    if write:
        uid, n = write_placement(placement, write_top_k, store)
        info(f"wrote {n} PREDICTED_IS_A edge(s) for {len(placement.ranked)} concept(s) as run {uid}", quiet)


def eval_match_cmd(
    gold: Annotated[Path, typer.Option("--gold", help="Reference mappings (SSSOM TSV).")],
    predictions: Annotated[Path, typer.Option("--predictions", help="Predicted mappings (SSSOM TSV).")],
    negatives: Annotated[Optional[Path], typer.Option("--negatives", help="Known wrong mappings (SSSOM TSV).")] = None,
    format: FormatOpt = "table", quiet: QuietOpt = False,
) -> None:
    """Precision, recall and F1 per predicate, on subjects the reference maps."""
    setup(quiet)
    from kgnorm.jobs.match import evaluate_match

    _print([s.row() for s in evaluate_match(gold, predictions, negatives)], format)


def eval_place_cmd(
    gold: Annotated[Path, typer.Option("--gold", help="True parents: SSSOM TSV, subject skos:broadMatch object.")],
    predictions: Annotated[Path, typer.Option("--predictions", help="A `kgnorm place --output` TSV.")],
    format: FormatOpt = "table", quiet: QuietOpt = False,
) -> None:
    """MRR and Hits@1/5 of the true parent."""
    setup(quiet)
    from kgnorm.jobs.place import evaluate_place

    _print([evaluate_place(gold, predictions).row()], format)


def _print(rows: list[dict], format: str) -> None:
    if format == "json":
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    if format != "table":
        raise typer.BadParameter(f"--format must be table or json, got {format!r}")
    cols = list(rows[0]) if rows else []
    cells = [[f"{r[c]:.4f}" if isinstance(r[c], float) else str(r[c]) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    typer.echo("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for row in cells:
        typer.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)))
