"""BioCoM inference: embed the mention in its sentence, find the k nearest entity-linked
corpus sentences (FAISS inner product over L2-normalised ``[ENT]`` vectors) and vote.

Ranking of one mention (``k`` chosen on dev by the trainer):

1. the concepts of the k nearest corpus entities, by number of votes, ties broken by the
   higher summed similarity; their score is the vote share ``votes / k`` (in (0, 1]);
2. to fill a top-k list beyond the voting concepts, the other concepts met among the
   ``depth`` nearest entities follow in order of their best similarity, with score 0.0.

Model directory (written by :func:`save_linker`, read by :func:`load_biocom`)::

    kgnorm-model.json     method "biocom", hyper-parameters, k, ontology, metrics, versions
    encoder/              save_pretrained weights (safetensors) + tokenizer with the markers
    corpus.faiss          faiss.write_index of the corpus entity vectors
    corpus_rows.parquet   the rows it indexes, in index order: uid, sentence, start, end,
                          doc_id, pseudo (True for a dictionary-name pseudo-sentence)
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.evaluation.link_accuracy import GoldMention, accuracy_at_k
from kgnorm.methods.model_dir import META_FILE as MODEL_JSON
from kgnorm.methods.model_dir import read_model_meta, write_model_meta

from .model import BiocomEncoder, Item, locate

__all__ = [
    "MODEL_JSON", "ENCODER_DIR", "INDEX_FILE", "ROWS_FILE", "build_index", "knn_vote",
    "vote_rankings", "BiocomLinker", "load_biocom", "save_linker", "evaluate_rankings",
    "as_items",
]

ENCODER_DIR = "encoder"
INDEX_FILE = "corpus.faiss"
ROWS_FILE = "corpus_rows.parquet"
INDEX_TYPES = ("fp16", "flat")


def build_index(vectors: np.ndarray, kind: str = "fp16"):
    """An inner-product FAISS index over L2-normalised rows: ``fp16`` (scalar quantizer,
    half the memory, exact search; the default) or ``flat`` (float32)."""
    import faiss
    if kind not in INDEX_TYPES:
        raise KgnormError(f"unknown index type {kind!r}; use one of {', '.join(INDEX_TYPES)}")
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    d = x.shape[1]
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    else:
        index = faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_fp16,
                                           faiss.METRIC_INNER_PRODUCT)
        index.train(x)
    index.add(x)
    return index


def knn_vote(uids: Sequence[str], sims: Sequence[float], k: int,
             top_k: int | None = None) -> list[tuple[str, float]]:
    """Rank concepts from one mention's neighbours (nearest first; see the module doc).

    `uids`/`sims` list the nearest corpus entities (at least k of them when available); the
    first k vote; the rest only fill the list. Returns (uid, score) best first."""
    k = max(1, min(int(k), len(uids)))
    votes: dict[str, int] = {}
    sums: dict[str, float] = {}
    for u, s in zip(uids[:k], sims[:k]):
        votes[u] = votes.get(u, 0) + 1
        sums[u] = sums.get(u, 0.0) + float(s)
    voted = sorted(votes, key=lambda u: (-votes[u], -sums[u]))
    out = [(u, votes[u] / k) for u in voted]
    if top_k is not None and len(out) >= top_k:
        return out[:top_k]
    seen = set(voted)
    for u in uids[k:]:  # nearest first = best similarity first
        if u not in seen:
            seen.add(u)
            out.append((u, 0.0))
            if top_k is not None and len(out) >= top_k:
                break
    return out


def vote_rankings(neigh_uids: Sequence[Sequence[str]], neigh_sims: np.ndarray, k: int,
                  top_k: int | None = None) -> list[list[tuple[str, float]]]:
    return [knn_vote(u, s, k, top_k) for u, s in zip(neigh_uids, neigh_sims)]


def evaluate_rankings(rankings: Sequence[Sequence[tuple[str, float]]],
                      gold: Sequence[Iterable[str]], at: Sequence[int] = (1, 5)) -> dict:
    """Acc@n through the project's one scorer (:func:`kgnorm.evaluation.link_accuracy.accuracy_at_k`):
    one concept per rank; a mention's gold set (its uid and the concept it is an alt id of) is
    one part whose ids are alternatives, written as a ``+`` conjunction."""
    parts = [GoldMention((" + ".join(sorted({g} if isinstance(g, str) else set(g))),)) for g in gold]
    report = accuracy_at_k([[[u for u, _ in r]] for r in rankings], parts, ks=at)
    return {"mentions": report.n_evaluated, **{f"acc@{a}": report.accuracy[a] for a in report.ks}}


def as_items(mentions: Sequence[Any]) -> list[Item]:
    """Mentions as (sentence, start, end): ``(text, context)`` pairs are located in their
    context (:func:`kgnorm.methods.biocom.model.locate`); ``(text, context, start, end)`` give the span
    in the context (checked against the text); a bare string is its own sentence."""
    items: list[Item] = []
    for m in mentions:
        if isinstance(m, str):
            items.append((m, 0, len(m)))
            continue
        if len(m) >= 4 and m[2] is not None and m[3] is not None:
            text, context, s, e = m[0], m[1] or "", int(m[2]), int(m[3])
            if 0 <= s <= e <= len(context) and context[s:e] == text:
                items.append((context, s, e))
                continue
        items.append(locate(m[0], m[1] if len(m) > 1 else None))
    return items


@dataclass
class BiocomLinker:
    """A trained BioCoM model: encoder + corpus index + the uid of every indexed row."""

    encoder: BiocomEncoder
    index: Any
    uids: list[str]
    k: int
    meta: dict
    directory: str = ""
    batch_size: int = 64

    def search(self, mentions: Sequence[Any], depth: int) -> tuple[list[list[str]], np.ndarray]:
        """The `depth` nearest corpus entities of each mention: (uids, similarities)."""
        vecs = self.encoder.embed(as_items(mentions), self.batch_size, progress="link")
        return self.search_vectors(vecs, depth)

    def search_vectors(self, vecs: np.ndarray, depth: int
                       ) -> tuple[list[list[str]], np.ndarray]:
        depth = max(1, min(int(depth), self.index.ntotal))
        sims, idx = self.index.search(np.ascontiguousarray(vecs, dtype=np.float32), depth)
        return [[self.uids[j] for j in row if j >= 0] for row in idx], sims

    def depth_for(self, top_k: int, k: int | None = None) -> int:
        k = self.k if k is None else k
        return max(k, 10 * top_k, 50)

    def link(self, mentions: Sequence[Any], top_k: int = 10, k: int | None = None
             ) -> list[list[tuple[str, float]]]:
        """Ranked (uid, score) lists, best first, one per mention.

        mentions: ``(text, context)`` pairs (``(text, context, start, end)`` and bare strings
        work too). Scores: vote share among the k nearest corpus entities, 0.0 for the
        concepts that only fill the list (module doc)."""
        if not mentions:
            return []
        k = self.k if k is None else int(k)
        uids, sims = self.search(mentions, self.depth_for(top_k, k))
        return vote_rankings(uids, sims, k, top_k)

    def encode(self, names: Sequence[str]) -> np.ndarray:
        """L2-normalised vectors of names, each alone inside the markers (for embed and
        hypernyms)."""
        return self.encoder.encode(list(names), self.batch_size)

    @property
    def ontology(self) -> dict:
        return dict(self.meta.get("ontology", {}))


def save_linker(directory: str | Path, encoder: BiocomEncoder, vectors: np.ndarray,
                rows: dict[str, list], meta: dict, index_type: str = "fp16",
                save_encoder: bool = True) -> None:
    """Write a model directory (module doc); `rows` holds the column lists of the indexed
    rows (uid, sentence, start, end, doc_id, pseudo), `meta` the kgnorm-model.json body."""
    import faiss
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    if save_encoder:
        encoder.save(d / ENCODER_DIR)
    index = build_index(vectors, index_type)
    tmp = d / (INDEX_FILE + ".tmp")
    faiss.write_index(index, str(tmp))
    os.replace(tmp, d / INDEX_FILE)
    table = pa.table({"uid": pa.array(rows["uid"], pa.string()),
                      "sentence": pa.array(rows["sentence"], pa.string()),
                      "start": pa.array(rows["start"], pa.int32()),
                      "end": pa.array(rows["end"], pa.int32()),
                      "doc_id": pa.array(rows["doc_id"], pa.string()),
                      "pseudo": pa.array(rows["pseudo"], pa.bool_())})
    tmp = d / (ROWS_FILE + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, d / ROWS_FILE)
    write_model_meta(d, meta)


def load_biocom(directory: str | Path, device: str | None = None,
                batch_size: int = 64) -> BiocomLinker:
    """Load a BioCoM model directory written by the trainer."""
    import faiss
    import pyarrow.parquet as pq

    d = Path(directory)
    meta = read_model_meta(d, "biocom")
    for f in (ENCODER_DIR, INDEX_FILE, ROWS_FILE):
        if not (d / f).exists():
            raise KgnormError(f"{d}: incomplete BioCoM model directory (missing {f}); "
                              "was training interrupted? run it again to resume")
    enc_meta = meta.get("encoder", {})
    encoder = BiocomEncoder(d / ENCODER_DIR, max_length=int(enc_meta.get("max_length", 128)),
                            window_chars=int(enc_meta.get("window_chars", 200)), device=device)
    index = faiss.read_index(str(d / INDEX_FILE))
    uids = [str(u) for u in pq.read_table(d / ROWS_FILE, columns=["uid"]).column(0).to_pylist()]
    if len(uids) != index.ntotal:
        raise KgnormError(f"{d}: {INDEX_FILE} holds {index.ntotal} vectors but {ROWS_FILE} "
                          f"{len(uids)} rows")
    return BiocomLinker(encoder=encoder, index=index, uids=uids, k=int(meta.get("k", 1)),
                        meta=meta, directory=str(d), batch_size=batch_size)
