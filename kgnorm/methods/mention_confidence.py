"""Where a fitted mention confidence (kgnorm.nil.confidence) lives: in the detector's model directory,
under ``mention_confidence`` in its kgnorm-model.json, one entry per linking model it was fitted
with. A linking model is known by its method and creation time (not its path: a directory moved or
copied elsewhere keeps its confidence), so `annotate` finds the entry with no flag."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.methods.model_dir import read_model_meta, write_model_meta
from kgnorm.nil.confidence import MentionConfidence

KEY = "mention_confidence"


def linker_identity(model_dir: str | Path, meta: dict[str, Any] | None = None) -> dict[str, str]:
    meta = read_model_meta(model_dir) if meta is None else meta
    return {"method": str(meta.get("method", "")), "created_at": str(meta.get("created_at", "")),
            "ontology": str(meta.get("ontology") or ""), "path": str(Path(model_dir).resolve())}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("method") == b.get("method") and a.get("created_at") == b.get("created_at")


def stored_confidence(ner_dir: str | Path, linker: dict[str, str]) -> MentionConfidence | None:
    """The entry of `ner_dir` fitted with the linking model `linker` (:func:`linker_identity`), if any."""
    for entry in read_model_meta(ner_dir).get(KEY, []):
        if _same(entry.get("linker", {}), linker):
            return MentionConfidence.from_meta(entry)
    return None


def store_confidence(ner_dir: str | Path, confidence: MentionConfidence) -> None:
    """Add `confidence` to `ner_dir`'s meta, replacing the entry of the same linking model."""
    meta = read_model_meta(ner_dir)
    kept = [e for e in meta.get(KEY, []) if not _same(e.get("linker", {}), confidence.linker)]
    write_model_meta(ner_dir, {**meta, KEY: [*kept, confidence.to_meta()]})
