"""`kgnorm match` as a library: read two ontologies from the store, rank the target's concepts for
every source concept with a model's encoder, decide the mappings (kgnorm.matching.matcher), and
hand them out as an SSSOM file and as MAPS_TO edges of one Run. Ranking and writing are separate
calls, so the CLI writes its file before it touches the store."""
from __future__ import annotations

import hashlib
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.matching.matcher import Calibration, Decision, MatchSide, calibrate, curated_pairs, decide, dense_candidates
from kgnorm.matching.sssom import Mapping, MappingSet, write_sssom

FRAME_COLUMNS = ["subject_id", "subject_label", "predicate_id", "object_id", "object_label",
                 "mapping_justification", "confidence", "score", "comment"]
XREF_MODES = ("use", "ignore")


@dataclass
class ModelInfo:
    """What the SSSOM metadata and the Run node say about the model."""

    path: Path
    method: str
    version: str


@dataclass
class MatchResult:
    source: MatchSide
    target: MatchSide
    versions: tuple[str, str]
    model: ModelInfo
    xrefs: str
    calibration: Calibration
    decisions: list[Decision]
    candidates: dict[str, list[tuple[str, float]]] = field(default_factory=dict)

    def mapping_set(self) -> MappingSet:
        from kgnorm import __version__

        rows = [Mapping(d.source_uid, d.predicate, d.target_uid, d.justification, d.confidence,
                        self.source.labels.get(d.source_uid, ""), self.target.labels.get(d.target_uid, ""),
                        comment=d.comment) for d in self.decisions]
        meta = {"mapping_set_id": f"https://w3id.org/sssom/kgnorm/{self.source.ontology}-{self.target.ontology}"
                                  ".sssom.tsv",
                "mapping_set_description": f"kgnorm match {self.source.ontology} -> {self.target.ontology} "
                                           f"(xrefs {self.xrefs}; exactMatch threshold {self.calibration.threshold:.4f}, "
                                           f"calibrated on {self.calibration.fitted_on})",
                "license": "https://creativecommons.org/publicdomain/zero/1.0/",
                "mapping_tool": f"kgnorm match, {self.model.method} model {self.model.path}",
                "mapping_tool_version": f"kgnorm {__version__}; model {self.model.version}",
                # subject_source / object_source want CURIEs of the ontologies: the store names them only
                "subject_source_version": self.versions[0], "object_source_version": self.versions[1],
                "mapping_date": date.today().isoformat()}
        return MappingSet(rows, meta)

    def rows(self) -> list[dict[str, Any]]:
        return [{"subject_id": d.source_uid, "subject_label": self.source.labels.get(d.source_uid, ""),
                 "predicate_id": d.predicate, "object_id": d.target_uid,
                 "object_label": self.target.labels.get(d.target_uid, ""), "mapping_justification": d.justification,
                 "confidence": d.confidence, "score": d.score, "comment": d.comment} for d in self.decisions]


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
    """The model's `encode` and what identifies it (method, creation time, digest of its meta)."""
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.registry import load_encoder

    meta = read_model_meta(model)
    meta_file = Path(model) / "kgnorm-model.json"
    digest = hashlib.sha1(meta_file.read_bytes()).hexdigest()[:12] if meta_file.is_file() else "unknown"
    info = ModelInfo(Path(model).resolve(), meta["method"], f"{meta['method']} {meta.get('created_at', '')} "
                                                            f"({digest})".replace("  ", " "))
    encoder = load_encoder(model)
    return remembered(disk_cached(encoder.encode, model)), info


VECTOR_CACHE_MIN = 4096   # calls with at least this many texts (a target ontology's names) are cached on disk


def disk_cached(encode: Any, model: str | Path, min_texts: int = VECTOR_CACHE_MIN) -> Any:
    """`encode` whose big calls (a whole ontology's names: MEDIC 2012's 75k take minutes on 2 cores)
    are kept in ``<cache>/match-vectors/<digest>.npy``, keyed by the model directory's content and the
    texts in order: the same target ontology version and model find their vectors again; another
    model, a retrained one or a changed ontology encode afresh (the key is the set of texts: the
store may return them in another order). Smaller calls (a source's chunks)
    are encoded as they come. ``KGNORM_MATCH_CACHE=0`` turns it off."""
    import os

    import numpy as np

    from kgnorm.exports import cache_dir, model_digest

    if os.environ.get("KGNORM_MATCH_CACHE", "1") == "0":
        return encode
    digest: list[str] = []

    def cached(texts: Any) -> Any:
        texts = list(texts)
        if len(texts) < min_texts:
            return encode(texts)
        if not digest:
            digest.append(model_digest(model))
        keys = sorted(set(texts))       # kept in sorted order: the same names in another order hit
        row = {t: i for i, t in enumerate(keys)}
        order = np.fromiter((row[t] for t in texts), dtype=np.int64, count=len(texts))
        h = hashlib.sha1(digest[0].encode())
        for t in keys:
            h.update(t.encode("utf-8") + b"\0")
        path = cache_dir() / "match-vectors" / f"{h.hexdigest()[:24]}.npy"
        if path.is_file():
            try:
                vecs = np.load(path, mmap_mode="r")
                if vecs.shape[0] == len(keys):
                    return np.asarray(vecs[order])
            except (OSError, ValueError):
                pass  # a broken cache file: encode again and replace it
        vecs = np.asarray(encode(keys), dtype=np.float32)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            with open(tmp, "wb") as fh:
                np.save(fh, vecs)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache: the vectors are still right, only not kept
        return vecs[order]
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


def parse_threshold(threshold: str | float) -> float | None:
    """None for ``auto``; a cosine in [-1, 1] otherwise."""
    if isinstance(threshold, str) and threshold.strip().lower() == "auto":
        return None
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise KgnormError(f"--threshold must be auto or a number, got {threshold!r}") from None
    if not -1.0 <= value <= 1.0:
        raise KgnormError(f"--threshold is a cosine, between -1 and 1: got {value}")
    return value


def match_ontologies(source: str, target: str, model: str | Path, *, threshold: str | float = "auto",
                     xrefs: str = "use", top_k: int = 10, store: str | None = None) -> MatchResult:
    """Map every concept of `source` to `target`. ``xrefs="ignore"`` strips the cross-references
    between the two first (a blind run); ``threshold="auto"`` fits it on the xrefs they share."""
    if xrefs not in XREF_MODES:
        raise KgnormError(f"--xrefs must be one of {', '.join(XREF_MODES)}, got {xrefs!r}")
    if top_k < 1:
        raise KgnormError(f"--top-k must be >= 1, got {top_k}")
    fixed = parse_threshold(threshold)
    src, tgt, versions = read_sides(source, target, store)
    if xrefs == "ignore":
        src, tgt = src.without_ids_of(tgt), tgt.without_ids_of(src)
    encode, info = model_encoder(model)
    candidates = dense_candidates(encode, src, tgt, top_k=top_k)
    if fixed is not None:
        cal = Calibration(threshold=fixed, fitted_on="the given threshold")
    else:
        cal = calibrate(candidates, curated_pairs(src, tgt)) if xrefs == "use" else Calibration()
    decisions = decide(src, tgt, candidates, cal, use_ids=xrefs == "use")
    return MatchResult(src, tgt, versions, info, xrefs, cal, decisions, candidates)


def write_sssom_file(result: MatchResult, output: str | Path | None) -> None:
    """The SSSOM TSV to `output` (complete or not at all) or stdout."""
    from kgnorm.jobs.link import open_output

    with ExitStack() as stack:
        fh = open_output(stack, output) if output is not None else sys.stdout
        write_sssom(result.mapping_set(), fh)


def write_mappings(result: MatchResult, store: str | None = None, lock_timeout: float = 30.0) -> tuple[str, int]:
    """The mappings as MAPS_TO edges of one Run (the same match written again replaces it);
    (run uid, edges written)."""
    from kgnorm.jobs.store import open_writer
    from kgnorm.stores import RunRecord, RunWrite
    from kgnorm.stores.base import MappingEdge
    from kgnorm.stores.run_ids import run_uid

    s, t = result.source.ontology, result.target.ontology
    params = {"source": s, "target": t, "xrefs": result.xrefs, "threshold": round(result.calibration.threshold, 6),
              "calibrated_on": result.calibration.fitted_on, "versions": list(result.versions)}
    uid = run_uid("match", model=str(result.model.path), **params)
    edges = {(d.source_uid, d.target_uid, d.predicate): MappingEdge(d.source_uid, d.target_uid, d.predicate,
                                                                    float(d.confidence), d.justification, s, t)
             for d in result.decisions}
    counts: dict[str, int] = {}
    for e in edges.values():
        counts[e.predicate] = counts.get(e.predicate, 0) + 1
    run = RunRecord(uid, "match", result.model.method, str(result.model.path), params=params, metrics=counts)
    with open_writer(store, lock_timeout=lock_timeout) as st:
        st.write_run(RunWrite(run, mappings=list(edges.values())))
    return uid, len(edges)


def evaluate_match(gold: str | Path, predictions: str | Path, negatives: str | Path | None = None) -> list[Any]:
    """`kgnorm eval match`: a PredicateScore per predicate (kgnorm.matching.scores)."""
    from kgnorm.matching.scores import score_mappings
    from kgnorm.matching.sssom import read_sssom

    neg = read_sssom(negatives) if negatives is not None else None
    return score_mappings(read_sssom(gold), read_sssom(predictions), neg)


def evaluate_place(gold: str | Path, predictions: str | Path) -> Any:
    """`kgnorm eval place`: MRR and Hits@1/5 of the true parents (the gold file's skos:broadMatch
    rows, or every row where it has none) in a `kgnorm place` TSV."""
    from kgnorm.jobs.place import read_ranking
    from kgnorm.matching.scores import score_placement
    from kgnorm.matching.sssom import BROAD, read_sssom

    mset = read_sssom(gold)
    rows = [m for m in mset.mappings if m.predicate_id in (BROAD, "rdfs:subClassOf")] or mset.mappings
    truth: dict[str, set[str]] = {}
    for m in rows:
        truth.setdefault(m.subject_id, set()).add(m.object_id)
    return score_placement(read_ranking(predictions), truth)
