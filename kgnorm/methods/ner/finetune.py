"""A trained detector fine-tuned on more annotated texts (`kgnorm retrain`: the documents people
marked done), warm-started from its own encoder and head, never from scratch: a few dozen
documents would not teach a fresh head what the corpus it was trained on did. The settings the
detector was trained with (CRF, dictionary features, windows) are kept; the rate is lower than a
first training's, since the weights start where they are good."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from kgnorm.errors import KgnormError
from kgnorm.ner.corpus import AnnotatedText
from kgnorm.progress import note

FINETUNE_LR = 1e-4  # a third of a first training's peak rate (3e-4)
KEPT_META = ("types_map", "levers", "ontology", "ontology_version")  # what inference reads besides the weights


@dataclass(frozen=True)
class NerFinetune:
    """What a fine-tuning did: steps, documents, seconds."""

    out: Path
    documents: int
    spans: int
    steps: int
    seconds: float


def base_types(base: str | Path) -> tuple[str, ...]:
    from kgnorm.methods.model_dir import read_model_meta

    meta = read_model_meta(base)
    if meta.get("method") != "ner":
        raise KgnormError(f"--ner {base}: a trained detector's directory (kgnorm train ner), not a {meta.get('method')!r} "
                          "model")
    return tuple(meta["types"])


def finetune_ner(base: str | Path, docs: Sequence[AnnotatedText], out: str | Path, *, max_minutes: float | None,
                 epochs: float = 10, seed: int = 0, quiet: bool = False) -> NerFinetune:
    """Fine-tune the detector in `base` on `docs` (their spans typed with `base`'s types) into `out`."""
    from kgnorm.methods.model_dir import read_model_meta, update_meta
    from kgnorm.methods.ner.model import NAMES_FILE
    from kgnorm.methods.ner.train import NerConfig, train_ner
    from kgnorm.methods.recipes import drop_checkpoints

    base, out = Path(base), Path(out)
    types = base_types(base)
    meta = read_model_meta(base)
    hp: dict[str, Any] = meta.get("hyper_parameters") or {}
    names = None
    if meta.get("dictionary_features"):
        names = (base / NAMES_FILE).read_text(encoding="utf-8").splitlines()
    cfg = NerConfig(crf=bool(meta.get("crf")), dictionary_features=bool(meta.get("dictionary_features")),
                    init_from=str(base.resolve()), max_length=int(meta.get("max_length", 256)),
                    stride=int(meta.get("stride", 64)), batch_size=int(hp.get("batch_size", 8)),
                    learning_rate=FINETUNE_LR, warmup_steps=10, epochs=epochs, seed=seed,
                    max_seconds=None if max_minutes is None else max_minutes * 60)
    kept = {k: meta[k] for k in KEPT_META if k in meta}
    result = train_ner(list(docs), None, out, types, None, cfg, names, resume=False, progress=not quiet,
                       meta={**kept, "finetuned_from": str(base.resolve())})
    if result.best_epoch is None:
        raise KgnormError(f"the detector's budget ended before a step ran; nothing usable in {out}")
    update_meta(out, train_seconds=round(result.train_seconds, 1))
    drop_checkpoints(out, False, quiet)
    n_spans = sum(len(d.spans) for d in docs)
    n_partial = sum(d.known is not None for d in docs)
    partial = f" and {n_partial:,} partly reviewed piece(s)" if n_partial else ""
    note(f"detector: {result.global_step:,} steps on {len(docs) - n_partial:,} done document(s){partial} ({n_spans:,} "
         f"mentions) in {result.train_seconds / 60:.1f} min → {out}", quiet)
    return NerFinetune(out, len(docs), n_spans, int(result.global_step), float(result.train_seconds))
