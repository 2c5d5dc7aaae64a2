"""`train biocom` as a library call: a corpus built by `kgnorm corpus build`, the dev mentions,
then `train_biocom` (it keeps or drops its own checkpoint)."""
from __future__ import annotations

from dataclasses import MISSING, dataclass, replace
from pathlib import Path

from kgnorm.methods.options import keep_checkpoints, option, out_option
from kgnorm.errors import KgnormError
from kgnorm.methods.recipes import PIPELINE
from kgnorm.progress import note


@dataclass(kw_only=True)
class Options:
    """Train BioCoM: 16 concepts × 2 sentences per batch, Multi-Similarity loss."""

    ontology: str = option(MISSING, help='Ontology the corpus was built from.')
    corpus: Path = option(MISSING, help='A directory written by `kgnorm corpus build`.')
    out: Path = out_option()
    dev: Path | None = option(None, help='Dev mentions (PubTator/.concept/TSV) to pick the epoch and k of the vote.')
    encoder: Path | None = option(None, help='Local HF encoder dir (default: offline MiniLM).')
    epochs: int = option(10)
    max_steps: int | None = option(None, help='Stop after this many steps in all.')
    lr: float = option(1e-05)
    seed: int = option(0)
    resume: bool = option(True, '--resume/--no-resume')
    threads: int | None = option(None)
    index_names: str = option('none', help="Besides the corpus sentences, also index the corpus dictionary's names as context-free entries: none (the paper), preferred (one per concept) or all; concepts the text never mentions become reachable.")
    substitutions: int = option(0, help='Extra training rows per corpus row with the mention replaced by another dictionary name of its concept (0: off).')
    max_minutes: float | None = option(45.0, help='Budget for the optimisation steps (dev evaluations excluded); training stops inside an epoch once it is spent and the stopped model is evaluated like an epoch.')
    keep_checkpoints: bool = keep_checkpoints()


def train(opts: Options, store: str | None = None, quiet: bool = False) -> Path:
    """Train BioCoM (Ujiie et al.) into ``out``: 16 concepts x 2 sentences per batch."""
    from kgnorm.encoders.dense import default_encoder_path
    from kgnorm.mentions.readers import read_mentions
    from kgnorm.methods.biocom.train import BiocomConfig, train_biocom
    from kgnorm.methods.model_dir import update_meta
    from kgnorm.stores import open_store

    opts = replace(opts, out=Path(opts.out))
    with open_store(store, read_only=True) as st:
        info_row = st.ontology_info(opts.ontology)
    if info_row is None:
        raise KgnormError(f"unknown ontology {opts.ontology!r}: run `kgnorm ingest` first")
    dev_mentions = list(read_mentions(opts.dev)) if opts.dev else None
    cfg = BiocomConfig(epochs=opts.epochs, max_steps=opts.max_steps, lr=opts.lr, seed=opts.seed, threads=opts.threads,
                       index_names=opts.index_names, substitutions=opts.substitutions, keep_checkpoint=opts.keep_checkpoints,
                       max_seconds=None if opts.max_minutes is None else opts.max_minutes * 60)
    cfg.check()
    version = info_row.get("version") or ""
    result = train_biocom(Path(opts.corpus), opts.out, opts.encoder or default_encoder_path(), dev=dev_mentions, config=cfg,
                          ontology=opts.ontology, version=version, resume=opts.resume)
    update_meta(opts.out, ontology=opts.ontology, ontology_version=version, text_pipeline=PIPELINE)
    msg = (f"BioCoM: {result.global_step} steps, {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s, "
           f"k={result.info['k']}")
    if result.info["dev"]:
        msg += f", dev {result.info['dev']}"
    note(msg + f" → {opts.out}", quiet)
    return opts.out
