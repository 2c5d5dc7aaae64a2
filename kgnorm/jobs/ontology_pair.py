"""What `match` and `place` both read: the two ontologies' sides from the store (names, xrefs, alt
ids, parents; kgnorm.matching.matcher.MatchSide) and the model's encoder: names the model's
dictionary holds take their stored vectors, other big calls are cached on disk (a whole ontology's
names take minutes on 2 cores), and each distinct text is encoded once per run."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.matching.matcher import MatchSide

__all__ = ["XREF_MODES", "ModelInfo", "read_side", "read_sides", "model_encoder", "disk_cached", "remembered",
           "VECTOR_CACHE_MIN"]

XREF_MODES = ("use", "ignore")


@dataclass
class ModelInfo:
    """What the SSSOM metadata and the Run node say about the model."""

    path: Path
    method: str
    version: str


def read_side(store: Any, ontology: str) -> tuple[MatchSide, str]:
    """An ontology's live concepts (names, xrefs, alt ids, parents) and its version."""
    info = store.ontology_info(ontology)
    if info is None:
        known = ", ".join(o["ontology"] for o in store.ontologies()) or "none"
        raise KgnormError(f"unknown ontology {ontology!r} in the store (loaded: {known}); run `kgnorm ingest` first")
    labels: dict[str, str] = {}
    names: dict[str, list[str]] = {}
    ids: dict[str, list[str]] = {}
    for uid, name, syns, alts, xrefs, obsolete in store.query(
            "MATCH (c:Concept) WHERE c.ontology = $o RETURN c.uid, c.name, c.synonyms, c.alt_ids, c.xrefs, c.obsolete",
            {"o": ontology}).rows:
        all_names = [n for n in [name, *(syns or [])] if n]
        if obsolete or not all_names:
            continue
        labels[uid], names[uid] = name or all_names[0], all_names
        ids[uid] = [*(xrefs or []), *(alts or [])]
    parents: dict[str, list[str]] = {}
    for child, parent in store.run_saved("ontology_is_a", {"ontology": ontology}).rows:
        if child in names and parent in names:
            parents.setdefault(child, []).append(parent)
    return MatchSide(ontology, labels, names, parents, ids), info.get("version") or ""


def read_sides(source: str, target: str, store: str | None) -> tuple[MatchSide, MatchSide, tuple[str, str]]:
    from kgnorm.stores import open_store

    if source == target:
        raise KgnormError(f"--source and --target are both {source!r}: match two different ontologies")
    with open_store(store, read_only=True) as st:
        s, sv = read_side(st, source)
        t, tv = read_side(st, target)
    return s, t, (sv, tv)


def model_encoder(model: str | Path) -> tuple[Any, ModelInfo]:
    """The model's `encode` and what identifies it (method, creation time, digest of its meta).

    Names are normalized as the model's linker normalizes what it links (its text pipeline: the
    encoder was trained on such names), and a name the model's dictionary holds takes its stored
    vector (kgnorm.linking.stored_vectors; ``KGNORM_NAME_VECTORS=encode`` encodes every name):
    a target that is the model's own ontology needs no encoding at all. Other names are encoded,
    the big calls cached on disk (:func:`disk_cached`)."""
    from kgnorm.linking.linker import pipeline_from_meta
    from kgnorm.linking.stored_vectors import exact_name_rows, stored_name_vectors, stored_or_encoded
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.registry import load_encoder

    meta = read_model_meta(model)
    meta_file = Path(model) / "kgnorm-model.json"
    digest = hashlib.sha1(meta_file.read_bytes()).hexdigest()[:12] if meta_file.is_file() else "unknown"
    info = ModelInfo(Path(model).resolve(), meta["method"], f"{meta['method']} {meta.get('created_at', '')} "
                                                            f"({digest})".replace("  ", " "))
    encoder = load_encoder(model)
    pipeline = pipeline_from_meta(meta)
    index = getattr(encoder, "index", None)
    rows = exact_name_rows(getattr(encoder, "dictionary", None), index) if stored_name_vectors() else None
    if rows:
        def vectors(texts: Any) -> Any:
            return stored_or_encoded(texts, rows, index, index.dim, encoder.encode)
    else:
        vectors = disk_cached(encoder.encode, model)

    once = remembered(vectors)

    def encode(texts: Any) -> Any:
        return once([pipeline.normalize_name(t) for t in texts])
    return encode, info


VECTOR_CACHE_MIN = 4096   # calls with at least this many texts (a target ontology's names) are cached on disk


def disk_cached(encode: Any, model: str | Path, min_texts: int = VECTOR_CACHE_MIN) -> Any:
    """`encode` whose big calls (a whole ontology's names: MEDIC 2012's 75k take minutes on 2 cores)
    are kept in ``<cache>/match-vectors/<digest>.npy``, keyed by the model directory's content and the
    texts in order: the same target ontology version and model find their vectors again; another
    model, a retrained one or a changed ontology encode afresh (the key is the set of texts: the
store may return them in another order). Smaller calls (a source's chunks)
    are encoded as they come. ``KGNORM_MATCH_CACHE=0`` turns it off."""
    import os

    from kgnorm.model_cache import cached_vectors, model_digest

    if os.environ.get("KGNORM_MATCH_CACHE", "1") == "0":
        return encode
    digest: list[str] = []

    def cached(texts: Any) -> Any:
        texts = list(texts)
        if len(texts) < min_texts:
            return encode(texts)
        if not digest:
            digest.append(model_digest(model))
        return cached_vectors("match-vectors", digest[0], texts, encode)
    return cached


def remembered(encode: Any) -> Any:
    """`encode` that encodes each distinct text once: `place` ranks the target's names twice (own
    names, parents' names) and would otherwise encode them twice."""
    import numpy as np

    memo: dict[str, Any] = {}

    def cached(texts: Any) -> Any:
        texts = list(texts)
        new = [t for t in dict.fromkeys(texts) if t not in memo]
        if new:
            memo.update(zip(new, encode(new)))
        return np.stack([memo[t] for t in texts]) if texts else encode([])
    return cached
