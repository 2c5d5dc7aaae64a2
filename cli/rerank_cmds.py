"""`kgnorm train rerank`: a cross-encoder over a trained linker's top-k (kgnorm/methods/rerank)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.models import CommandInfo

from kgnorm.cli.common import FormatOpt, QuietOpt, StoreOpt, setup

ThreadsOpt = Annotated[Optional[int], typer.Option("--threads", help="torch CPU threads.")]
ResumeOpt = Annotated[bool, typer.Option("--resume/--no-resume", help="Continue an interrupted run in --out.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Random seed (same seed and data: same run).")]
KeepCheckpointsOpt = Annotated[bool, typer.Option(
    "--keep-checkpoints", help="Keep the training checkpoints in --out once the model is written.")]


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


def with_rerank(train_app: typer.Typer) -> typer.Typer:
    """`kgnorm train`'s commands (the registry's methods) plus `rerank`, which trains over a linker's
    directory rather than from an ontology, so it is not a registry method."""
    base = type(train_app)

    class WithRerank(base):  # type: ignore[misc, valid-type]
        @property
        def registered_commands(self) -> list[CommandInfo]:
            return [*super().registered_commands, CommandInfo(name="rerank", callback=train_rerank_cmd)]

        @registered_commands.setter
        def registered_commands(self, value: list[CommandInfo]) -> None:
            """typer.Typer sets an empty list; the list is computed."""

    return WithRerank(help=train_app.info.help, no_args_is_help=True)
