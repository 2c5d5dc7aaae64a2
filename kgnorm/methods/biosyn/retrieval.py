"""What linking with a BioSyn model needs, without torch: sparse top-k + dense top-k candidates
rescored with ``lambda * sparse + dense`` (module docstring of kgnorm.methods.biosyn.model), over
the saved dictionary, index and sparse scorer. :class:`~kgnorm.methods.biosyn.model.BioSynModel`
(torch, trainable) and :class:`BioSynLinker` (the ONNX Runtime query encoder, inference only: what
`link` opens when the query engine is ``onnx``) both rank through :class:`BioSynRetrieval`, so the
two engines differ only in the query vectors."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kgnorm.encoders.fixed_shape import QueryVectors, default_workers
from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Candidate
from kgnorm.linking.cpu_features import query_path
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.name_index import NameIndex
from kgnorm.linking.query_cache import link_each_text_once
from kgnorm.linking.sparse import SparseScorer
from kgnorm.linking.stored_vectors import exact_name_rows, stored_name_vectors, stored_or_encoded
from kgnorm.methods.model_dir import load_names_and_index, read_model_meta
from kgnorm.progress import progress_bar


# queries whose candidates' vectors are read at a time to score them (one query's scores do not depend
# on the others'): 256 x 40 candidates x 384 floats = 16 MB, where a whole batch's were 63 MB
PAIR_ROWS = 256


@dataclass
class Retrieval:
    """Array form of a batch of link results (rank order, best first).
    ``idx`` is -1 (and scores -inf) where fewer than ``top_k`` distinct candidates exist."""

    idx: np.ndarray      # int64 [n, top_k]
    score: np.ndarray    # float32 [n, top_k] combined score
    sparse: np.ndarray   # float32 [n, top_k]
    dense: np.ndarray    # float32 [n, top_k]


class BioSynRetrieval:
    """Candidate retrieval and scoring of a BioSyn model; the subclass provides ``encoder`` (with
    ``encode``, and what :class:`~kgnorm.encoders.fixed_shape.QueryVectors` takes), ``dictionary``,
    ``sparse``, ``index``, ``k_sparse``, ``k_dense``, ``lam`` and ``_query_vectors``."""

    engine = "torch"  # which query encoder runs (kgnorm.linking.cpu_features.query_engine)
    # a query that is a dictionary name takes that name's stored vector instead of an encoder call
    # (the link path: BioSynLinker); the trainer's model always encodes
    reuse_name_vectors = False
    _name_rows: Mapping[str, int] | None = None
    # how the saved index stores its vectors: by the dictionary's size (kgnorm.linking.vector_storage)
    index_storage = "auto"

    def set_dictionary(self, dictionary: NameDictionary, refit_sparse: bool | None = True) -> None:
        """Search ``dictionary`` from now on. ``refit_sparse=True`` refits vocabulary and idf
        on its names (BioSyn fits on the training dictionary); ``False`` keeps the fitted
        vocabulary and idf and indexes the new names; ``None`` trusts a scorer that already
        indexes exactly these names. The dense index is dropped (rebuilt on the next link)."""
        if len(dictionary) == 0:
            raise KgnormError("the name dictionary is empty")
        if self.sparse is None or not self.sparse.fitted:
            self.sparse = self.sparse or SparseScorer()
            refit_sparse = True
        if refit_sparse:
            self.sparse.fit(dictionary.names)
        elif refit_sparse is False or self.sparse.n_names != len(dictionary):
            self.sparse.set_names(dictionary.names)
        self.dictionary = dictionary
        self.index = None
        self._query_vectors = None
        self._name_rows = None

    def _need_dictionary(self) -> NameDictionary:
        if self.dictionary is None or self.sparse is None:
            raise KgnormError("the model has no name dictionary")
        return self.dictionary

    def build_index(self, vectors: np.ndarray | None = None, batch_size: int = 256,
                    progress: bool = False) -> NameIndex:
        """(Re)build the FAISS index over the dictionary names; pass ``vectors`` when they
        were just computed with the current weights (the trainer does)."""
        d = self._need_dictionary()
        if vectors is None:
            vectors = self.encode(d.names, batch_size=batch_size, progress=progress)
        if len(vectors) != len(d):
            raise KgnormError(f"{len(vectors)} vectors for {len(d)} names")
        self.index = NameIndex.build(vectors, kind=self.index_kind, fp16=self.index_fp16,
                                     storage=self.index_storage)
        self.index.engine = self.engine
        self._query_vectors = None  # the weights may have changed: vectors encoded ahead are stale
        return self.index

    @property
    def query_vectors(self) -> QueryVectors:
        """The query encoder's batch-independent path (precision and rows: ``query_path``; calls
        on ``default_workers()`` threads at once, 1 unless asked; the calls found ahead overlapped
        with the search where two cores are free: kgnorm.encoders.fixed_shape.default_overlap)."""
        if self._query_vectors is None:
            precision, rows = query_path(engine=self.engine)
            self._query_vectors = QueryVectors(self.encoder, rows=rows, precision=precision,
                                               workers=default_workers(), overlap=None)
        return self._query_vectors

    def prefetch(self, queries: Sequence[str]) -> None:
        """Queries a later ``link`` will ask for: encoded as soon as their length group fills a
        call (:class:`~kgnorm.encoders.fixed_shape.QueryVectors`), not one part-filled call per batch."""
        rows = self._stored_rows()
        self.query_vectors.submit([q for q in queries if q not in rows] if rows else queries)

    def _stored_rows(self) -> Mapping[str, int] | None:
        """Name -> dictionary row where a query that is a name may take the name's stored vector
        (kgnorm.linking.stored_vectors): the link path (``reuse_name_vectors``) over a flat index."""
        if not self.reuse_name_vectors:
            return None
        if self._name_rows is None:
            self._name_rows = exact_name_rows(self.dictionary, self.index)
        return self._name_rows

    def _query_matrix(self, queries: Sequence[str]) -> np.ndarray:
        """float32 query vectors: a dictionary name's stored vector where :meth:`_stored_rows`
        allows it, else the query encoder's batch-independent vector."""
        return stored_or_encoded(queries, self._stored_rows(), self.index, self.index.dim,
                                 self.query_vectors.take)

    # ------------------------------------------------------------------ scoring / linking
    def score_pairs(self, queries: Sequence[str], idx: np.ndarray,
                    query_vectors: np.ndarray | None = None) -> np.ndarray:
        """Combined score of query i with dictionary rows ``idx[i, j]``."""
        self._need_dictionary()
        idx = np.asarray(idx, dtype=np.int64)
        s, d = self._pair_scores(queries, idx, query_vectors)
        return (np.float32(self.lam) * s + d).astype(np.float32)

    def _pair_scores(self, queries: Sequence[str], idx: np.ndarray,
                     qv: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        if self.index is None:
            self.build_index()
        sparse = self.sparse.score_pairs(queries, idx)
        if qv is None:
            qv = self.encoder.encode(queries)
        safe = np.where(idx >= 0, idx, 0)
        dense = np.empty(idx.shape, np.float32)
        for s in range(0, len(idx), PAIR_ROWS):  # [rows, m, d] candidate vectors at a time, not [n, m, d]
            vecs = self.index.reconstruct(safe[s:s + PAIR_ROWS])
            dense[s:s + PAIR_ROWS] = np.einsum("nd,nmd->nm", qv[s:s + PAIR_ROWS], vecs)
        dense[idx < 0] = 0
        return sparse, dense

    def retrieve(self, queries: Sequence[str], top_k: int = 5, k_sparse: int | None = None,
                 k_dense: int | None = None, encode_batch_size: int = 256) -> Retrieval:
        """Top-k dictionary rows of one batch of queries, as arrays."""
        d = self._need_dictionary()
        queries = list(queries)
        uniq = dict.fromkeys(queries)
        if len(uniq) < len(queries):  # repeated mentions (common in corpora) are linked once
            pos = {q: i for i, q in enumerate(uniq)}
            inv = np.fromiter((pos[q] for q in queries), np.int64, len(queries))
            r = self.retrieve(list(uniq), top_k, k_sparse, k_dense, encode_batch_size)
            return Retrieval(r.idx[inv], r.score[inv], r.sparse[inv], r.dense[inv])
        if self.index is None:
            self.build_index()
        n = len(queries)
        top_k = max(1, int(top_k))
        ks = min(max(int(k_sparse or self.k_sparse), top_k), len(d))
        kd = min(max(int(k_dense or self.k_dense), top_k), len(d))
        if n == 0:
            e = np.zeros((0, top_k))
            return Retrieval(e.astype(np.int64), e.astype(np.float32), e.astype(np.float32),
                             e.astype(np.float32))
        qs = self.sparse.transform(queries)
        _, s_idx = self.sparse.topk(qs, ks)
        qv = self._query_matrix(queries)  # a query's vector: the same in any batch
        _, d_idx = self.index.search(qv, kd)
        cand = np.concatenate([s_idx, d_idx], axis=1)
        # duplicates (in both lists) and faiss' -1 fillers are dropped
        order = np.argsort(cand, axis=1, kind="stable")
        srt = np.take_along_axis(cand, order, 1)
        dup_sorted = np.zeros_like(srt, dtype=bool)
        dup_sorted[:, 1:] = srt[:, 1:] == srt[:, :-1]
        dup = np.empty_like(dup_sorted)
        np.put_along_axis(dup, order, dup_sorted, 1)
        bad = dup | (cand < 0)
        sp_s, de_s = self._pair_scores(qs, cand, qv)
        comb = np.float32(self.lam) * sp_s + de_s
        comb[bad] = -np.inf
        rank = np.lexsort((np.where(bad, np.iinfo(np.int64).max, cand), -comb), axis=-1)
        rank = rank[:, :top_k]
        idx = np.take_along_axis(cand, rank, 1)
        score = np.take_along_axis(comb, rank, 1).astype(np.float32)
        missing = ~np.isfinite(score)
        idx[missing] = -1
        sp_o = np.take_along_axis(sp_s, rank, 1)
        de_o = np.take_along_axis(de_s, rank, 1)
        sp_o[missing] = 0
        de_o[missing] = 0
        if idx.shape[1] < top_k:  # dictionary smaller than top_k
            pad = top_k - idx.shape[1]
            idx = np.pad(idx, ((0, 0), (0, pad)), constant_values=-1)
            score = np.pad(score, ((0, 0), (0, pad)), constant_values=-np.inf)
            sp_o = np.pad(sp_o, ((0, 0), (0, pad)))
            de_o = np.pad(de_o, ((0, 0), (0, pad)))
        return Retrieval(idx=idx, score=score, sparse=sp_o.astype(np.float32),
                         dense=de_o.astype(np.float32))

    def _candidates(self, r: Retrieval) -> list[list[Candidate]]:
        d = self.dictionary
        out = []
        for i in range(r.idx.shape[0]):
            row = []
            for j in range(r.idx.shape[1]):
                c = int(r.idx[i, j])
                if c < 0:
                    break
                row.append(Candidate(c, d.uids[c], d.names[c], float(r.score[i, j]),
                                     float(r.sparse[i, j]), float(r.dense[i, j])))
            out.append(row)
        return out

    def link_iter(self, batches: Iterable[Sequence[str]], top_k: int = 5,
                  k_sparse: int | None = None, k_dense: int | None = None,
                  progress: bool = False, total: int | None = None
                  ) -> Iterator[list[list[Candidate]]]:
        """Stream: one list of ranked candidates per query for each incoming batch."""
        self._need_dictionary()
        if self.index is None:
            self.build_index(progress=progress)
        bar = progress_bar(total=total, desc="link", unit="mention") if progress else None
        try:
            for batch in batches:
                batch = list(batch)
                yield self._candidates(self.retrieve(batch, top_k, k_sparse, k_dense))
                if bar is not None:
                    bar.update(len(batch))
        finally:
            if bar is not None:
                bar.close()

    def link(self, queries: Sequence[str], top_k: int = 5, k_sparse: int | None = None,
             k_dense: int | None = None, batch_size: int = 512,
             progress: bool = False) -> list[list[Candidate]]:
        """Ranked candidates (best first) for each (already normalized) query; repeated
        texts are linked once (memory is bounded by the number of distinct texts)."""
        if isinstance(queries, str):
            raise KgnormError("link expects a sequence of query strings, not one string")

        def link_distinct(uniq: list[str]) -> list[list[Candidate]]:  # a corpus repeats its mentions
            self.prefetch(uniq[:self.query_vectors.max_ready])  # full encoder calls across retrieval batches
            batches = (uniq[s:s + batch_size] for s in range(0, len(uniq), batch_size))
            return [row for part in self.link_iter(batches, top_k, k_sparse, k_dense, progress=progress,
                                                   total=len(uniq)) for row in part]

        return link_each_text_once(queries, link_distinct)


@dataclass
class SavedParts:
    """The inference parts of a BioSyn model directory, checked to agree with each other."""

    meta: dict[str, Any]
    dictionary: NameDictionary
    index: NameIndex
    sparse: SparseScorer
    sparse_weight: float
    k_sparse: int
    k_dense: int


def load_parts(directory: str | Path, use_gpu: bool | str = "auto", engine: str = "torch") -> SavedParts:
    """Dictionary, index and sparse scorer of a directory :func:`~kgnorm.methods.biosyn.model.save_biosyn`
    wrote (sizes checked; the encoder is the caller's). ``engine="onnx"``: both searches on their
    torch-free exact fp32 paths (the bf16 pre-filters run in torch; they are exact too, so the
    candidates are the same)."""
    d = Path(directory)
    meta = read_model_meta(d, "biosyn")
    dictionary, index = load_names_and_index(d, meta, use_gpu)
    index.engine = engine
    sparse = SparseScorer.load(d / meta.get("sparse", {}).get("path", "sparse"),
                               precision="fp32" if engine == "onnx" else None)
    if sparse.n_names != len(dictionary):
        raise KgnormError(f"{d}: names ({len(dictionary)}), sparse matrix ({sparse.n_names}) "
                          f"and index ({index.ntotal}) disagree")
    link = meta.get("link", {})
    return SavedParts(meta, dictionary, index, sparse, float(meta.get("sparse_weight", 1.0)),
                      int(link.get("k_sparse", 20)), int(link.get("k_dense", 20)))


def check_dim(directory: str | Path, index: NameIndex, dim: int) -> None:
    if index.dim != dim:
        raise KgnormError(f"{directory}: index dimension {index.dim} != encoder dimension {dim}")


class BioSynLinker(BioSynRetrieval):
    """A saved BioSyn model for linking only: its query encoder run by ONNX Runtime
    (kgnorm.encoders.onnx_query), no torch imported once the export is cached."""

    engine = "onnx"

    def __init__(self, encoder: Any, parts: SavedParts) -> None:
        self.encoder = encoder
        self.meta = parts.meta
        self.dictionary: NameDictionary | None = parts.dictionary
        self.index: NameIndex | None = parts.index
        self.index_kind, self.index_fp16 = parts.index.kind, parts.index.fp16
        self.sparse: SparseScorer | None = parts.sparse
        self.lam = parts.sparse_weight
        self.k_sparse, self.k_dense = parts.k_sparse, parts.k_dense
        self._query_vectors: QueryVectors | None = None
        self.reuse_name_vectors = stored_name_vectors()

    def encode(self, names: Sequence[str], batch_size: int = 256, progress: bool = False) -> np.ndarray:
        """Dense vectors of names (fixed-shape calls of the ONNX encoder)."""
        return self.encoder.encode(names)

    @classmethod
    def load(cls, directory: str | Path, threads: int = 1) -> BioSynLinker:
        from kgnorm.encoders.onnx_query import OnnxQueryEncoder

        d = Path(directory)
        parts = load_parts(d, use_gpu=False, engine="onnx")
        e = parts.meta.get("encoder", {})
        encoder = OnnxQueryEncoder.for_encoder_dir(d / e.get("path", "encoder"), e.get("pooling", "cls"),
                                                   e.get("max_length", 25), e.get("normalize", False), threads,
                                                   query_path(engine="onnx")[0])
        check_dim(d, parts.index, encoder.dim)
        return cls(encoder, parts)


def load_biosyn_linker(directory: str | Path) -> Any:
    """The model `link`, `annotate` and `eval link` rank with: :class:`BioSynLinker` where the query
    engine is ``onnx``, else the torch :class:`~kgnorm.methods.biosyn.model.BioSynModel`."""
    from kgnorm.linking.cpu_features import query_engine

    if query_engine() == "onnx":
        return BioSynLinker.load(directory)
    from kgnorm.methods.biosyn.model import load_biosyn

    return load_biosyn(directory)
