"""`kgnorm pretrain`: an encoder self-aligned on the ontologies' synonyms (kgnorm.pretraining)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import QuietOpt, ResumeOpt, SeedOpt, StoreOpt, ThreadsOpt, info, setup


def pretrain_cmd(
    ontology: Annotated[list[str], typer.Option("--ontology", help="Ontology in the store whose names are "
                                                "learnt (repeat the option for several).")],
    out: Annotated[Path, typer.Option("--out", help="Encoder directory to write (plain Hugging Face).")],
    encoder: Annotated[Optional[Path], typer.Option(
        "--encoder", help="Any local Hugging Face encoder directory to start from (default: the offline MiniLM).")] = None,
    max_minutes: Annotated[Optional[float], typer.Option(
        "--max-minutes", help="Time budget of the training steps; the run stops inside an epoch and keeps a "
                              "checkpoint (--resume with a larger budget continues).")] = None,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over every name (each name about once).")] = 5,
    concepts_per_batch: Annotated[int, typer.Option("--concepts-per-batch")] = 64,
    names_per_concept: Annotated[int, typer.Option("--names-per-concept")] = 2,
    lr: Annotated[float, typer.Option("--lr")] = 2e-5,
    pooling: Annotated[str, typer.Option("--pooling", help="mean or cls (use the same when linking).")] = "mean",
    max_length: Annotated[int, typer.Option("--max-length")] = 25,
    hierarchy: Annotated[bool, typer.Option(
        "--hierarchy/--no-hierarchy", help="Add the hierarchy term: a parent's name as a weaker positive.")] = False,
    hierarchy_margin: Annotated[float, typer.Option(
        "--hierarchy-margin", help="Cosine up to which a name is pulled towards its parent's names.")] = 0.4,
    checkpoint_steps: Annotated[int, typer.Option("--checkpoint-steps", help="Checkpoint every N steps.")] = 200,
    seed: SeedOpt = 0,
    resume: ResumeOpt = True,
    threads: ThreadsOpt = None,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Pretrain a name encoder on ontology synonyms (SapBERT-style Multi-Similarity self-alignment)."""
    setup(quiet)
    from kgnorm.jobs.pretrain import pretrain

    def log_line(rec: dict) -> None:
        info(f"step {rec['step']} (epoch {rec['epoch'] + 1}): loss {rec['loss']:.4f}, mined pairs "
             f"{rec['positive_pairs']:.0f}+ / {rec['negative_pairs']:.0f}-, {rec['seconds']:.0f}s", quiet)

    result = pretrain(ontology, out, store=store, encoder=encoder, max_minutes=max_minutes, threads=threads,
                      resume=resume, progress=not quiet, on_log=log_line, epochs=epochs,
                      concepts_per_batch=concepts_per_batch, names_per_concept=names_per_concept, lr=lr,
                      pooling=pooling, max_length=max_length, hierarchy=hierarchy,
                      hierarchy_margin=hierarchy_margin, checkpoint_steps=checkpoint_steps, seed=seed)
    how = "all epochs" if result.complete else "stopped by the budget; --resume continues"
    info(f"pretrained {result.steps} step(s), {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s "
         f"({how}){' after resuming' if result.resumed else ''}", quiet)
    info(f"encoder → {out} (pass it as --encoder, pooling {pooling})", quiet)
