"""`kgnorm hypernyms` as a library: rank the level-K concepts under a root as hypernyms of names
(a model's held-out test names by default), then store the top ranks as PREDICTED_IS_A edges
of one Run. Ranking and writing are two calls so that the CLI prints its TSV before it writes."""
from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from kgnorm.errors import KgnormError
from kgnorm.graph.levels import check_level
from kgnorm.jobs.models import model_split
from kgnorm.progress import note

COLUMNS = ("name", "rank", "hypernym_uid", "hypernym_name", "score")


@dataclass
class HypernymRanking:
    """The hits of one ranking and what its Run node records."""

    model: Path
    method: str
    ontology: str
    root: str
    level: int
    top_k: int
    names: Path | list[str] | None     # None: the split's held-out test names
    queries: list[tuple[str, str | None]]  # (name, its concept when it is an ontology name)
    hits: list[Any]                    # kgnorm.linking.hypernyms.HypernymHit, by query then rank
    class_names: dict[str, list[str]]

    def rows(self) -> list[dict[str, Any]]:
        """One dict per hit, keyed by COLUMNS (the TSV's columns)."""
        return [{"name": h.query, "rank": h.rank, "hypernym_uid": h.uid,
                 "hypernym_name": self.class_names[h.uid][0] if self.class_names.get(h.uid) else "",
                 "score": float(h.score)} for h in self.hits]

    def names_digest(self) -> str:
        from kgnorm.stores.run_ids import file_digest

        if isinstance(self.names, list):
            return "names:" + hashlib.sha1("\n".join(self.names).encode("utf-8")).hexdigest()
        return file_digest(self.names)

    def names_label(self) -> str:
        if self.names is None:
            return "held-out test names"
        return f"{len(self.names)} given name(s)" if isinstance(self.names, list) else str(self.names)


def _warn(message: str) -> None:
    note(f"kgnorm: {message}")


def rank_names(model: str | Path, root: str, level: int, names: str | Path | Sequence[str] | None = None, *,
               ontology: str | None = None, top_k: int = 5, seed: int | None = None,
               store: str | None = None) -> HypernymRanking:
    """Rank the level-``level`` concepts under ``root`` for each name: a file (one name per line),
    a list of names, or None for the split's held-out test names."""
    from kgnorm.linking.hypernyms import rank_hypernyms
    from kgnorm.mentions.readers import read_names
    from kgnorm.methods.model_dir import check_ontology_version, read_model_meta
    from kgnorm.methods.registry import load_encoder

    check_level(level)
    if top_k < 1:
        raise KgnormError(f"--top-k must be >= 1, got {top_k}")
    if not (ontology or read_model_meta(model).get("ontology")):  # before the names are read
        raise KgnormError("the model names no ontology: pass --ontology")
    if isinstance(names, (str, Path)):
        names = Path(names)
        free_names: list[str] | None = read_names(names)
    else:
        free_names = None if names is None else [str(n) for n in names]
        if free_names is not None and not free_names:
            raise KgnormError("no names given")
        names = free_names
    meta, onto, split, snap = model_split(model, root, ontology, seed, store)
    check_ontology_version(meta, onto, snap.version, _warn)
    encoder = load_encoder(model)
    class_names = split.class_names[level]
    if free_names is not None:
        queries = [(n, None) for n in free_names]
    else:
        queries = [(it.name, it.concept_uid) for it in split.test]
    hits = rank_hypernyms(encoder.encode, [q for q, _ in queries], list(split.classes[level]), class_names,
                          top_k=top_k)
    return HypernymRanking(Path(model), meta["method"], onto, root, level, top_k, names, queries, hits,
                           dict(class_names))


def write_tsv(ranking: HypernymRanking, output: Path | None) -> None:
    """The hits as TSV (COLUMNS; score to 4 decimals) to ``output`` or stdout."""
    import csv

    fh = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout
    try:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(COLUMNS)
        for r in ranking.rows():
            w.writerow([r["name"], r["rank"], r["hypernym_uid"], r["hypernym_name"], f"{r['score']:.4f}"])
    finally:
        if output:
            fh.close()


def write_ranking(ranking: HypernymRanking, write_top_k: int = 1, store: str | None = None,
                  lock_timeout: float = 30.0) -> tuple[str, int]:
    """Store ranks up to ``write_top_k`` as PREDICTED_IS_A edges of one Run (a free name becomes a
    Mention node; an ontology name's edge starts at its concept); (run uid, edges written).
    The same ranking written again replaces its Run."""
    from kgnorm.jobs.run import model_run, write_whole_run
    from kgnorm.stores import MentionRow, PredictionEdge, RunWrite
    from kgnorm.stores.run_ids import text_uid

    source_of = dict(ranking.queries)
    best: dict[tuple[str, str, bool], PredictionEdge] = {}
    mentions: dict[str, MentionRow] = {}
    for h in ranking.hits:
        if h.rank > write_top_k:
            continue
        concept = source_of.get(h.query)
        if concept is None:
            src, is_mention = text_uid(h.query), True
            mentions[src] = MentionRow(src, h.query)
        else:
            src, is_mention = concept, False
        key = (src, h.uid, is_mention)
        if key not in best or h.score > best[key].score:
            best[key] = PredictionEdge(src, h.uid, float(h.score), int(h.rank), ranking.level, is_mention)
    key = dict(root=ranking.root, level=ranking.level, top_k=write_top_k, names=ranking.names_digest(),
               ontology=ranking.ontology)
    run = model_run("hypernyms", ranking.model.resolve(), ranking.method, key,
                    {"root": ranking.root, "level": ranking.level, "top_k": ranking.top_k, "write_top_k": write_top_k,
                     "names": ranking.names_label(), "ontology": ranking.ontology})
    write_whole_run(store, RunWrite(run, list(mentions.values()), [], list(best.values()), ontology=ranking.ontology),
                    lock_timeout)
    return run.uid, len(best)
