"""`kgnorm corpus build` and `kgnorm train biocom` (Ujiie et al., contrastive context matching)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import KeepCheckpointsOpt, QuietOpt, StoreOpt, info, setup
from kgnorm.errors import KgnormError


def _ontology_records(store: str | None, ontology: str):
    from kgnorm.graph.views import read_ontology
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        snap = read_ontology(st, ontology, with_edges=False)
    records = [{"uid": c.uid, "name": c.name, "synonyms": c.synonyms} for c in snap.concepts]
    return records, snap


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
    from kgnorm.methods.biocom.corpus import build_corpus

    records, snap = _ontology_records(store, ontology)
    summary = build_corpus(records, text, out, ontology=ontology, version=snap.version, cap=cap, seed=seed,
                           abbreviations=abbreviations)
    n_abbr = summary.manifest["counts"]["abbreviation_matches"]
    info(f"{summary.documents:,} documents, {summary.sentences:,} sentences, {summary.matches:,} matches "
         f"({n_abbr:,} through document abbreviations) → "
         f"{summary.rows:,} rows for {summary.concepts_matched:,} of {summary.concepts_in_dictionary:,} concepts "
         f"in {summary.seconds:.1f}s → {out}", quiet)


def train_biocom_cmd(
    ontology: Annotated[str, typer.Option("--ontology", help="Ontology the corpus was built from.")],
    corpus: Annotated[Path, typer.Option("--corpus", help="A directory written by `kgnorm corpus build`.")],
    out: Annotated[Path, typer.Option("--out", help="Model directory to write.")],
    dev: Annotated[Optional[Path], typer.Option("--dev", help="Dev mentions (PubTator/.concept/TSV) to pick the "
                                                "epoch and k of the vote.")] = None,
    encoder: Annotated[Optional[Path], typer.Option("--encoder", help="Local HF encoder dir (default: offline MiniLM).")] = None,
    epochs: Annotated[int, typer.Option("--epochs")] = 10,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", help="Stop after this many steps in all.")] = None,
    lr: Annotated[float, typer.Option("--lr")] = 1e-5,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    resume: Annotated[bool, typer.Option("--resume/--no-resume")] = True,
    threads: Annotated[Optional[int], typer.Option("--threads")] = None,
    index_names: Annotated[str, typer.Option(
        "--index-names", help="Besides the corpus sentences, also index the corpus dictionary's names as "
                              "context-free entries: none (the paper), preferred (one per concept) or all; "
                              "concepts the text never mentions become reachable.")] = "none",
    substitutions: Annotated[int, typer.Option(
        "--substitutions", help="Extra training rows per corpus row with the mention replaced by another "
                                "dictionary name of its concept (0: off).")] = 0,
    max_minutes: Annotated[Optional[float], typer.Option(
        "--max-minutes", help="Budget for the optimisation steps (dev evaluations excluded); training stops "
                              "inside an epoch once it is spent and the stopped model is evaluated like an epoch.")] = 45.0,
    keep_checkpoints: KeepCheckpointsOpt = False,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train BioCoM: 16 concepts × 2 sentences per batch, Multi-Similarity loss."""
    setup(quiet)
    from kgnorm.methods.biocom.train import BiocomConfig, train_biocom
    from kgnorm.encoders.dense import default_encoder_path
    from kgnorm.mentions.readers import read_mentions
    from kgnorm.methods.model_dir import update_meta
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        info_row = st.ontology_info(ontology)
    if info_row is None:
        raise KgnormError(f"unknown ontology {ontology!r}: run `kgnorm ingest` first")
    dev_mentions = list(read_mentions(dev)) if dev else None
    cfg = BiocomConfig(epochs=epochs, max_steps=max_steps, lr=lr, seed=seed, threads=threads,
                       index_names=index_names, substitutions=substitutions, keep_checkpoint=keep_checkpoints,
                       max_seconds=None if max_minutes is None else max_minutes * 60)
    cfg.check()
    result = train_biocom(corpus, out, encoder or default_encoder_path(), dev=dev_mentions, config=cfg,
                          ontology=ontology, version=info_row.get("version") or "", resume=resume)
    update_meta(out, ontology=ontology, ontology_version=info_row.get("version") or "",
                text_pipeline={"lowercase": True, "normalize": True, "abbreviations": True, "composites": True})
    msg = f"BioCoM: {result.steps} steps, {result.epochs_run} epoch(s) in {result.train_seconds:.0f}s, k={result.k}"
    if result.dev_metrics:
        msg += f", dev {result.dev_metrics}"
    info(msg + f" → {out}", quiet)
