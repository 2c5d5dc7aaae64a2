"""`train biosyn` as a library call: the ontology's dictionary from the store, the mention files,
the preset, then `train_biosyn` (or, without training mentions, an untrained dictionary + index)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.methods.recipes import PIPELINE, finish, names_and_mentions, read_snapshot, set_threads
from kgnorm.progress import note

# What `train biosyn` runs without tuning flags, and BioSyn's own recipe (README: which
# BENCHMARKS.md figure chose the default).
PRESETS: dict[str, dict[str, Any]] = {
    "default": {"sparse_weight": 30.0, "exclude_query_name": True, "max_minutes": 45.0},
    "paper": {"sparse_weight": 0.0, "exclude_query_name": False, "max_minutes": None},
}


def train(out: str | Path, *, ontology: str, store: str | None = None, train: Path | None = None,
          dev: Path | None = None, input_format: str | None = None, encoder: Path | None = None,
          pooling: str = "mean", preset: str = "default", epochs: int = 10, top_k: int = 20,
          dense_ratio: float = 0.5, lr: float = 1e-5, weight_decay: float = 1e-2, batch_size: int = 16,
          max_length: int = 25, max_steps: int | None = None, merge_train: bool = True, seed: int = 0,
          resume: bool = True, threads: int | None = None, sparse_weight: float | None = None,
          exclude_query_name: bool | None = None, max_minutes: float | None = None,
          keep_checkpoints: bool = False, quiet: bool = False) -> Path:
    """Train BioSyn (Sung et al. 2020) into ``out``; options left None take the preset's value."""
    from kgnorm.methods.biosyn.model import BioSynModel
    from kgnorm.methods.biosyn.train import BioSynConfig, train_biosyn

    out = Path(out)
    if pooling not in ("cls", "mean"):
        raise KgnormError(f"--pooling must be cls or mean, got {pooling!r}")
    if preset not in PRESETS:
        raise KgnormError(f"unknown --preset {preset!r} ({', '.join(PRESETS)})")
    recipe = PRESETS[preset]
    sparse_weight = recipe["sparse_weight"] if sparse_weight is None else sparse_weight
    exclude_query_name = recipe["exclude_query_name"] if exclude_query_name is None else exclude_query_name
    max_minutes = recipe["max_minutes"] if max_minutes is None else max_minutes
    set_threads(threads)
    _, snap, _ = read_snapshot(store, ontology, hierarchy=False)
    dictionary, search_dict, train_pairs, dev_pairs = names_and_mentions(snap, train, dev, input_format, merge_train)
    model = BioSynModel.create(search_dict, encoder=encoder, pooling=pooling, max_length=max_length,
                               sparse_weight=sparse_weight)
    note(f"dictionary: {len(dictionary):,} names of {dictionary.concept_count:,} concepts"
         + (f" + {len(search_dict) - len(dictionary):,} training mentions" if search_dict is not dictionary else ""),
         quiet)
    onto = {"name": ontology, "version": snap.version}
    if train_pairs and epochs > 0:
        cfg = BioSynConfig(epochs=epochs, top_k=top_k, dense_ratio=dense_ratio, learning_rate=lr,
                           weight_decay=weight_decay, batch_size=batch_size, max_length=max_length, seed=seed,
                           max_steps_per_epoch=max_steps, initial_sparse_weight=sparse_weight,
                           exclude_query_name=exclude_query_name,
                           max_seconds=None if max_minutes is None else max_minutes * 60)

        def epoch_line(rec: dict) -> None:
            dev_acc = (rec.get("dev") or {}).get("acc@1")
            note(f"epoch {rec['epoch']}: loss {rec['loss'] if rec['loss'] is None else round(rec['loss'], 4)}, "
                 f"lambda {rec['sparse_weight']:.2f}, " + (f"dev Acc@1 {dev_acc:.4f}, " if dev_acc is not None else "")
                 + f"{rec['seconds']:.0f}s", quiet)

        result = train_biosyn(model, search_dict, train_pairs, dev_pairs, out, cfg, resume=resume,
                              progress=not quiet, ontology=onto, on_epoch=epoch_line)
        msg = (f"trained {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s on {result.n_queries:,} "
               f"queries")
        if result.best_dev_acc1 is not None:
            msg += f"; best dev Acc@1 {result.best_dev_acc1:.4f} at epoch {result.best_epoch}"
        note(msg, quiet)
    else:
        note(f"encoding {len(search_dict):,} dictionary names for the dense index …", quiet)
        model.build_index(progress=not quiet)
        model.save(out, ontology=onto, hyper_parameters={"pooling": pooling, "max_length": max_length,
                                                          "trained": False})
        note("no --train (or --epochs 0): wrote an untrained model (dictionary + index)", quiet)
    finish(out, keep_checkpoints, quiet, ontology=ontology, ontology_version=snap.version, text_pipeline=PIPELINE)
    note(f"model → {out}", quiet)
    return out
