"""Where a fitted mention confidence (kgnorm.nil.confidence) lives: in the detector's model directory,
under ``mention_confidence`` in its kgnorm-model.json, one entry per linking model it was fitted
with. A linking model is known by its method and creation time (not its path: a directory moved or
copied elsewhere keeps its confidence), so `annotate` finds the entry with no flag. A run routed by
type (kgnorm.methods.router) has one entry per type, each known by that type's linker."""
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


def stored_confidence(ner_dir: str | Path, linker: dict[str, str], mention_type: str = "") -> MentionConfidence | None:
    """The entry of `ner_dir` fitted with the linking model `linker` (:func:`linker_identity`) on
    mentions of `mention_type` ("": all types), if any."""
    for entry in read_model_meta(ner_dir).get(KEY, []):
        if _same(entry.get("linker", {}), linker) and entry.get("type", "") == mention_type:
            return MentionConfidence.from_meta(entry)
    return None


def store_confidence(ner_dir: str | Path, confidence: MentionConfidence) -> None:
    """Add `confidence` to `ner_dir`'s meta, replacing the entry of the same linking model and type."""
    meta = read_model_meta(ner_dir)
    kept = [e for e in meta.get(KEY, []) if not (_same(e.get("linker", {}), confidence.linker)
                                                 and e.get("type", "") == confidence.type)]
    write_model_meta(ner_dir, {**meta, KEY: [*kept, confidence.to_meta()]})


def linkers_by_type(model: str | Path, meta: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Mention type (casefolded; "": every type no other key names) -> the identity of the linker
    that links it: each route's for a router (kgnorm.methods.router; its ``*`` route under ""),
    the model's own under "" for any other."""
    routes = meta.get("routes")
    if not routes:
        return {"": linker_identity(model, meta)}
    metas = meta.get("member_meta") or [read_model_meta(p) for p in routes.values()]
    return {("" if t == "*" else t.strip().casefold()): linker_identity(p, m)
            for (t, p), m in zip(routes.items(), metas)}


def stored_confidences(ner_dir: str | Path, model: str | Path,
                       meta: dict[str, Any]) -> dict[str, MentionConfidence | None]:
    """Type -> the confidence annotate applies to that type's mentions (kgnorm.nil.confidence_for):
    the entry fitted with the type's linker on that type, else the one fitted with it on all types."""
    out: dict[str, MentionConfidence | None] = {}
    for typ, linker in linkers_by_type(model, meta).items():
        out[typ] = stored_confidence(ner_dir, linker, typ) or (stored_confidence(ner_dir, linker) if typ else None)
    return out
