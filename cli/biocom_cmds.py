"""`kgnorm corpus build`: the entity-linked sentences `train biocom` learns from (Ujiie et al.)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgnorm.cli.common import QuietOpt, StoreOpt, info, setup


def corpus_build_cmd(
    ontology: Annotated[str, typer.Option("--ontology", help="Ontology whose names are matched.")],
    text: Annotated[list[Path], typer.Option("--text", help="PubTator or plain-text file (repeat the option).")],
    out: Annotated[Path, typer.Option("--out", help="Corpus directory to write (Parquet + corpus.json).")],
    cap: Annotated[int, typer.Option("--cap", help="Sentences kept per concept (seeded sample).")] = 20,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    abbreviations: Annotated[bool, typer.Option(
        "--abbreviations/--no-abbreviations",
        help="Label a document's short forms with the concept of their long form when it is a dictionary "
             "name (`long form (SF)` definitions).")] = True,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Entity-linked sentences by longest dictionary match over token boundaries."""
    setup(quiet)
    from kgnorm.jobs.corpus import build_corpus

    summary = build_corpus(ontology, text, out, cap=cap, seed=seed, abbreviations=abbreviations, store=store)
    n_abbr = summary.manifest["counts"]["abbreviation_matches"]
    info(f"{summary.documents:,} documents, {summary.sentences:,} sentences, {summary.matches:,} matches "
         f"({n_abbr:,} through document abbreviations) → "
         f"{summary.rows:,} rows for {summary.concepts_matched:,} of {summary.concepts_in_dictionary:,} concepts "
         f"in {summary.seconds:.1f}s → {out}", quiet)
