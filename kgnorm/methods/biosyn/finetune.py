"""A trained BioSyn linker fine-tuned on more (query, gold) pairs (`kgnorm retrain`: the links people
reviewed), warm-started from its own encoder, lambda and dictionary, never from scratch. The pairs
join the dictionary as BioSyn's training mentions do, so a reviewed surface form is found again
at once; the settings are the `default` preset's. The start vectors come from the base's exact
index and the dictionary is encoded whole only at the end (the pooled schedule,
kgnorm.methods.biosyn.train), so a few hundred reviews train in minutes on a CPU whatever the
ontology's size."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from kgnorm.errors import KgnormError
from kgnorm.progress import note

# written by the trainer, or describing what the base alone learnt from: not carried to the new model
OWN_META = ("method", "encoder", "sparse_weight", "sparse", "link", "names", "index", "hyper_parameters", "metrics",
            "training", "created_at", "format_version", "reviewed_file", "rerank", "files", "train_seconds")


@dataclass(frozen=True)
class LinkerFinetune:
    out: Path
    queries: int
    epochs: int
    seconds: float


def check_base(base: str | Path) -> dict[str, Any]:
    """The base linker's meta; a model retrain cannot warm-start (not BioSyn) is refused in one line."""
    from kgnorm.methods.model_dir import read_model_meta

    meta = read_model_meta(base)
    if meta.get("method") != "biosyn":
        raise KgnormError(f"--model {base}: retrain fine-tunes a BioSyn linker (kgnorm train biosyn); this is a "
                          f"{meta.get('method')!r} model")
    return meta


def base_vectors(model: Any, names: Sequence[str], quiet: bool) -> Any:
    """The base encoder's vectors of `names`: its exact (flat, fp32) index holds them for the base
    dictionary's names, so only the reviewed mentions' new texts are encoded; None when the index
    is approximate (training then encodes every name)."""
    import numpy as np

    index = model.index
    if index is None or index.kind != "flat" or index.fp16 or index.ntotal != len(model.dictionary):
        return None
    row = {n: i for i, n in enumerate(model.dictionary.names)}
    known = np.fromiter((row.get(n, -1) for n in names), dtype=np.int64, count=len(names))
    out = np.empty((len(names), model.encoder.dim), dtype=np.float32)
    if (known >= 0).any():
        out[known >= 0] = index.reconstruct(known[known >= 0])
    new = np.flatnonzero(known < 0)
    if len(new):
        out[new] = model.encode([names[i] for i in new])
    note(f"linker start: {int((known >= 0).sum()):,} name vectors from the base's index, {len(new):,} encoded", quiet)
    return out


def finetune_biosyn(base: str | Path, pairs: Sequence[tuple[str, set[str]]], out: str | Path, *,
                    max_minutes: float | None, epochs: int = 5, seed: int = 0, quiet: bool = False) -> LinkerFinetune:
    """Fine-tune the BioSyn model in `base` on `pairs` (normalized query, gold uids) into `out`."""
    from kgnorm.methods.biosyn.model import load_biosyn
    from kgnorm.methods.biosyn.recipe import PRESETS
    from kgnorm.methods.biosyn.train import BioSynConfig, train_biosyn
    from kgnorm.methods.model_dir import update_meta
    from kgnorm.methods.recipes import drop_checkpoints

    base, out = Path(base), Path(out)
    meta = check_base(base)
    if not pairs:
        raise KgnormError("no reviewed mention with a concept to train the linker on")
    model = load_biosyn(base, device="cpu")
    search = model.dictionary.with_mentions(list(pairs))
    start = base_vectors(model, search.names, quiet)
    hp = meta.get("hyper_parameters") or {}
    cfg = BioSynConfig(epochs=epochs, top_k=int(hp.get("top_k", 20)), dense_ratio=float(hp.get("dense_ratio", 0.5)),
                       learning_rate=float(hp.get("learning_rate", 1e-5)), batch_size=int(hp.get("batch_size", 16)),
                       seed=seed, exclude_query_name=PRESETS["default"]["exclude_query_name"], pool_above=0,
                       max_seconds=None if max_minutes is None else max_minutes * 60)
    onto = meta.get("ontology") if isinstance(meta.get("ontology"), dict) else {"name": meta.get("ontology")}

    def line(rec: dict) -> None:
        note(f"linker epoch {rec['epoch']}: loss {rec['loss'] if rec['loss'] is None else round(rec['loss'], 4)}, "
             f"{rec['seconds']:.0f}s", quiet)

    result = train_biosyn(model, search, list(pairs), None, out, cfg, resume=False, progress=not quiet,
                          ontology=onto, on_epoch=line, initial_vectors=start)
    update_meta(out, **{k: v for k, v in meta.items() if k not in OWN_META}, finetuned_from=str(base.resolve()))
    drop_checkpoints(out, False, quiet)
    note(f"linker: {result.epochs_completed} epoch(s) on {result.info['n_queries']:,} reviewed queries in "
         f"{result.train_seconds:.0f}s → {out}", quiet)
    return LinkerFinetune(out, int(result.info["n_queries"]), int(result.epochs_completed),
                          float(result.train_seconds))
