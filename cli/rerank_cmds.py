"""`kgnorm train rerank`: a cross-encoder over a trained linker's top-k (kgnorm/methods/rerank)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import FormatOpt, KeepCheckpointsOpt, QuietOpt, ResumeOpt, SeedOpt, StoreOpt, ThreadsOpt, setup


def train_rerank_cmd(
    linker: Annotated[Path, typer.Option("--linker", help="A trained linker's model directory (e.g. BioSyn); "
                                         "referenced by the reranker, not copied.")],
    train: Annotated[Path, typer.Option("--train", help="Training mentions (.concept, PubTator or TSV).")],
    out: Annotated[Path, typer.Option("--out", help="Model directory to write.")],
    dev: Annotated[Optional[Path], typer.Option("--dev", help="Dev mentions: selects the epoch on Acc@1 of the "
                                                "reranked list.")] = None,
    input_format: FormatOpt = None,
    top_k: Annotated[int, typer.Option("--top-k", help="Linker candidates the cross-encoder rescores.")] = 20,
    encoder: Annotated[Optional[Path], typer.Option("--encoder", help="Any local Hugging Face encoder directory "
                                                    "(default: the offline MiniLM).")] = None,
    epochs: Annotated[int, typer.Option("--epochs")] = 2,
    batch_groups: Annotated[int, typer.Option("--batch-size", help="Mentions per step.")] = 8,
    train_candidates: Annotated[int, typer.Option(
        "--train-candidates", help="Candidates per training mention and step: the gold and the linker's "
                                   "highest-ranked negatives.")] = 8,
    lr: Annotated[float, typer.Option("--lr")] = 2e-5,
    max_length: Annotated[int, typer.Option("--max-length", help="Tokens of a (mention in sentence, name) pair.")] = 64,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps-per-epoch", help="Time-box each epoch.")] = None,
    max_minutes: Annotated[Optional[float], typer.Option("--max-minutes", help="Time budget (the best epoch is "
                                                         "kept).")] = 30.0,
    seed: SeedOpt = 0, resume: ResumeOpt = True, threads: ThreadsOpt = None,
    keep_checkpoints: KeepCheckpointsOpt = False, store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Train a cross-encoder that reranks a linker's top-k (residual: linker score + cross-encoder score; the
    linker's own candidates are the hard negatives)."""
    setup(quiet)
    from kgnorm.methods.rerank.recipe import train as train_rerank

    train_rerank(out, linker=linker, train=train, dev=dev, input_format=input_format, top_k=top_k, encoder=encoder,
                 epochs=epochs, batch_groups=batch_groups, train_candidates=train_candidates, lr=lr,
                 max_length=max_length, max_steps=max_steps, max_minutes=max_minutes, seed=seed, resume=resume,
                 threads=threads, keep_checkpoints=keep_checkpoints, store=store, quiet=quiet)
