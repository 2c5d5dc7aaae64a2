"""`kgnorm match` as a library: read two ontologies from the store, rank the target's concepts for
every source concept with a model's encoder, decide the mappings (kgnorm.matching.matcher), and
hand them out as an SSSOM file and as MAPS_TO edges of one Run. Ranking and writing are separate
calls, so the CLI writes its file before it touches the store."""
from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.matching.matcher import (Calibration, Decision, MatchSide, calibrate, curated_pairs, decide, dense_candidates,
                                     lexically_mapped)
from kgnorm.jobs.ontology_pair import XREF_MODES, ModelInfo, model_encoder, read_sides
from kgnorm.matching.sssom import Mapping, MappingSet, write_sssom

FRAME_COLUMNS = ["subject_id", "subject_label", "predicate_id", "object_id", "object_label",
                 "mapping_justification", "confidence", "score", "comment"]


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
        cal = (calibrate(candidates, curated_pairs(src, tgt), lexical=lexically_mapped(src, tgt, candidates))
               if xrefs == "use" else Calibration())
    decisions = decide(src, tgt, candidates, cal, use_ids=xrefs == "use")
    return MatchResult(src, tgt, versions, info, xrefs, cal, decisions, candidates)


def write_sssom_file(result: MatchResult, output: str | Path | None) -> None:
    """The SSSOM TSV to `output` (complete or not at all) or stdout."""
    from kgnorm.jobs.run import open_output

    with ExitStack() as stack:
        fh = open_output(stack, output) if output is not None else sys.stdout
        write_sssom(result.mapping_set(), fh)


def write_mappings(result: MatchResult, store: str | None = None, lock_timeout: float = 30.0) -> tuple[str, int]:
    """The mappings as MAPS_TO edges of one Run (the same match written again replaces it);
    (run uid, edges written)."""
    from kgnorm.jobs.run import model_run, write_whole_run
    from kgnorm.stores import RunWrite
    from kgnorm.stores.base import MappingEdge

    s, t = result.source.ontology, result.target.ontology
    params = {"source": s, "target": t, "xrefs": result.xrefs, "threshold": round(result.calibration.threshold, 6),
              "calibrated_on": result.calibration.fitted_on, "versions": list(result.versions)}
    edges = {(d.source_uid, d.target_uid, d.predicate): MappingEdge(d.source_uid, d.target_uid, d.predicate,
                                                                    float(d.confidence), d.justification, s, t)
             for d in result.decisions}
    counts: dict[str, int] = {}
    for e in edges.values():
        counts[e.predicate] = counts.get(e.predicate, 0) + 1
    run = model_run("match", result.model.path, result.model.method, params, params, counts)
    write_whole_run(store, RunWrite(run, mappings=list(edges.values())), lock_timeout)
    return run.uid, len(edges)


def evaluate_match(gold: str | Path, predictions: str | Path, negatives: str | Path | None = None) -> list[Any]:
    """`kgnorm eval match`: a PredicateScore per predicate (kgnorm.matching.scores)."""
    from kgnorm.matching.scores import score_mappings
    from kgnorm.matching.sssom import read_sssom

    neg = read_sssom(negatives) if negatives is not None else None
    return score_mappings(read_sssom(gold), read_sssom(predictions), neg)
