"""`train biocom` as a library call: a corpus built by `kgnorm corpus build`, the dev mentions,
then `train_biocom` (it keeps or drops its own checkpoint)."""
from __future__ import annotations

from pathlib import Path

from kgnorm.errors import KgnormError
from kgnorm.methods.recipes import PIPELINE
from kgnorm.progress import note


def train(out: str | Path, *, ontology: str, corpus: Path, store: str | None = None, dev: Path | None = None,
          encoder: Path | None = None, epochs: int = 10, max_steps: int | None = None, lr: float = 1e-5,
          seed: int = 0, resume: bool = True, threads: int | None = None, index_names: str = "none",
          substitutions: int = 0, max_minutes: float | None = 45.0, keep_checkpoints: bool = False,
          quiet: bool = False) -> Path:
    """Train BioCoM (Ujiie et al.) into ``out``: 16 concepts x 2 sentences per batch."""
    from kgnorm.encoders.dense import default_encoder_path
    from kgnorm.mentions.readers import read_mentions
    from kgnorm.methods.biocom.train import BiocomConfig, train_biocom
    from kgnorm.methods.model_dir import update_meta
    from kgnorm.stores import open_store

    out = Path(out)
    with open_store(store, read_only=True) as st:
        info_row = st.ontology_info(ontology)
    if info_row is None:
        raise KgnormError(f"unknown ontology {ontology!r}: run `kgnorm ingest` first")
    dev_mentions = list(read_mentions(dev)) if dev else None
    cfg = BiocomConfig(epochs=epochs, max_steps=max_steps, lr=lr, seed=seed, threads=threads,
                       index_names=index_names, substitutions=substitutions, keep_checkpoint=keep_checkpoints,
                       max_seconds=None if max_minutes is None else max_minutes * 60)
    cfg.check()
    version = info_row.get("version") or ""
    result = train_biocom(Path(corpus), out, encoder or default_encoder_path(), dev=dev_mentions, config=cfg,
                          ontology=ontology, version=version, resume=resume)
    update_meta(out, ontology=ontology, ontology_version=version, text_pipeline=PIPELINE)
    msg = f"BioCoM: {result.steps} steps, {result.epochs_run} epoch(s) in {result.train_seconds:.0f}s, k={result.k}"
    if result.dev_metrics:
        msg += f", dev {result.dev_metrics}"
    note(msg + f" → {out}", quiet)
    return out
