"""BioSyn linking core (Sung et al. 2020): dense encoder + sparse tf-idf + learnable weight.

``score(q, name) = lambda * sparse(q, name) + dense(q, name)`` where ``sparse`` is the cosine
of character 1-2-gram tf-idf vectors (:mod:`kgnorm.linking.sparse`), ``dense`` the inner
product of the pooled encoder vectors (:mod:`kgnorm.encoders.dense`) and ``lambda`` a
trainable scalar (``BioSynModel.sparse_weight``).

Linking differs from the paper's evaluation code in one respect, on purpose: BioSyn builds
the full queries x dictionary score matrices and ranks every name; here the candidates are
the union of the sparse top ``k_sparse`` (exact, :class:`SparseScorer`) and the dense top
``k_dense`` (FAISS, :class:`NameIndex`), rescored with the combined score. Memory is bounded
by the batch size; a name outside both lists could in principle outrank the returned ones,
which needs it to be neither lexically nor semantically close -- widen ``k_sparse``/``k_dense``
to trade time for exhaustiveness.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from kgnorm.errors import KgnormError
from kgnorm.encoders.dense import DenseEncoder
from kgnorm.encoders.fixed_shape import QueryVectors, default_workers
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.candidates import Candidate
from kgnorm.linking.cpu_features import query_path
from kgnorm.linking.index import NameIndex
from kgnorm.linking.sparse import SparseScorer
from kgnorm.methods.indexed_names import load_dense_encoder, load_names_and_index, save_names_and_index
from kgnorm.methods.model_dir import read_model_meta
from kgnorm.progress import progress_bar


@dataclass
class Retrieval:
    """Array form of a batch of link results (rank order, best first).
    ``idx`` is -1 (and scores -inf) where fewer than ``top_k`` distinct candidates exist."""

    idx: np.ndarray      # int64 [n, top_k]
    score: np.ndarray    # float32 [n, top_k] combined score
    sparse: np.ndarray   # float32 [n, top_k]
    dense: np.ndarray    # float32 [n, top_k]


class BioSynModel(torch.nn.Module):
    """DenseEncoder + SparseScorer + lambda over a :class:`NameDictionary`."""

    def __init__(self, encoder: DenseEncoder, dictionary: NameDictionary | None = None,
                 sparse: SparseScorer | None = None, sparse_weight: float = 1.0,
                 index_kind: str = "flat", index_fp16: bool = False,
                 k_sparse: int = 20, k_dense: int = 20) -> None:
        super().__init__()
        self.encoder = encoder
        self.bert = encoder.model  # registered so .parameters()/.state_dict() include it
        self.sparse_weight = torch.nn.Parameter(
            torch.tensor(float(sparse_weight), dtype=torch.float32, device=encoder.device))
        self.index_kind = index_kind
        self.index_fp16 = bool(index_fp16)
        self.k_sparse = int(k_sparse)
        self.k_dense = int(k_dense)
        self.dictionary: NameDictionary | None = None
        self.sparse: SparseScorer | None = sparse
        self.index: NameIndex | None = None
        self._query_vectors: QueryVectors | None = None
        if dictionary is not None:
            self.set_dictionary(dictionary, refit_sparse=None)

    # ------------------------------------------------------------------ construction
    @classmethod
    def create(cls, dictionary: NameDictionary, encoder: str | Path | DenseEncoder | None = None,
               pooling: str = "cls", max_length: int = 25, device: str | None = None,
               normalize: bool = False, sparse_weight: float = 1.0,
               sparse_options: dict | None = None, **kw) -> BioSynModel:
        """A fresh model: loads the encoder directory (default MiniLM) and fits the sparse
        scorer on the dictionary names."""
        if not isinstance(encoder, DenseEncoder):
            encoder = DenseEncoder(encoder, pooling=pooling, max_length=max_length,
                                   device=device, normalize=normalize)
        sparse = SparseScorer(**(sparse_options or {})).fit(dictionary.names)
        return cls(encoder, dictionary, sparse=sparse, sparse_weight=sparse_weight, **kw)

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

    @property
    def device(self) -> torch.device:
        return self.encoder.device

    @property
    def lam(self) -> float:
        return float(self.sparse_weight.detach().cpu())

    def _need_dictionary(self) -> NameDictionary:
        if self.dictionary is None or self.sparse is None:
            raise KgnormError("the model has no name dictionary")
        return self.dictionary

    # ------------------------------------------------------------------ dense side
    def encode(self, names: Sequence[str], batch_size: int = 256,
               progress: bool = False) -> np.ndarray:
        """Dense vectors of arbitrary names (what ``embed``/``hypernyms`` use)."""
        return self.encoder.encode(names, batch_size=batch_size, progress=progress)

    def build_index(self, vectors: np.ndarray | None = None, batch_size: int = 256,
                    progress: bool = False) -> NameIndex:
        """(Re)build the FAISS index over the dictionary names; pass ``vectors`` when they
        were just computed with the current weights (the trainer does)."""
        d = self._need_dictionary()
        if vectors is None:
            vectors = self.encode(d.names, batch_size=batch_size, progress=progress)
        if len(vectors) != len(d):
            raise KgnormError(f"{len(vectors)} vectors for {len(d)} names")
        self.index = NameIndex.build(vectors, kind=self.index_kind, fp16=self.index_fp16)
        self._query_vectors = None  # the weights may have changed: vectors encoded ahead are stale
        return self.index

    @property
    def query_vectors(self) -> QueryVectors:
        """The query encoder's batch-independent path (precision and rows: ``query_path``; calls
        on ``default_workers()`` threads at once, 1 unless asked)."""
        if self._query_vectors is None:
            precision, rows = query_path()
            self._query_vectors = QueryVectors(self.encoder, rows=rows, precision=precision,
                                               workers=default_workers())
        return self._query_vectors

    def prefetch(self, queries: Sequence[str]) -> None:
        """Queries a later ``link`` will ask for: encoded as soon as their length group fills a
        call (:class:`~kgnorm.encoders.fixed_shape.QueryVectors`), not one part-filled call per batch."""
        self.query_vectors.submit(queries)

    # ------------------------------------------------------------------ training forward
    def embed_bucketed(self, texts: Sequence[str], bucket: int = 64) -> torch.Tensor:
        """Pooled vectors with autograd, length-bucketed (:meth:`DenseEncoder.embed_bucketed`)."""
        return self.encoder.embed_bucketed(texts, bucket)

    def forward(self, queries: Sequence[str], candidates: Sequence[Sequence[str]],
                sparse_scores: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Combined scores ``[B, K]`` of each query with its K candidate names (autograd
        through the encoder and lambda). Repeated texts in the batch are encoded once."""
        B = len(queries)
        K = len(candidates[0]) if B else 0
        if any(len(c) != K for c in candidates) or len(candidates) != B:
            raise KgnormError("forward: every query needs the same number of candidates")
        uniq: dict[str, int] = {}
        for t in queries:
            uniq.setdefault(t, len(uniq))
        for cs in candidates:
            for t in cs:
                uniq.setdefault(t, len(uniq))
        vec = self.embed_bucketed(list(uniq))
        q = vec[torch.tensor([uniq[t] for t in queries], device=vec.device)]
        c = vec[torch.tensor([uniq[t] for cs in candidates for t in cs],
                             device=vec.device)].view(B, K, -1)
        dense = torch.einsum("bd,bkd->bk", q, c)
        s = torch.as_tensor(np.asarray(sparse_scores, dtype=np.float32)
                            if not torch.is_tensor(sparse_scores) else sparse_scores,
                            device=dense.device, dtype=dense.dtype)
        return self.sparse_weight * s + dense

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
        vecs = self.index.reconstruct(safe)                       # [n, m, d]
        dense = np.einsum("nd,nmd->nm", qv, vecs).astype(np.float32)
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
        qv = self.query_vectors.take(queries)  # a query's vector: the same in any batch
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
        queries = list(queries)
        uniq = list(dict.fromkeys(queries))  # a corpus repeats mentions: link each text once
        self.prefetch(uniq[:self.query_vectors.max_ready])  # full encoder calls across retrieval batches
        batches = (uniq[s:s + batch_size] for s in range(0, len(uniq), batch_size))
        out: list[list[Candidate]] = []
        for part in self.link_iter(batches, top_k, k_sparse, k_dense, progress=progress,
                                   total=len(uniq)):
            out.extend(part)
        if len(uniq) == len(queries):
            return out
        row = dict(zip(uniq, out))
        return [list(row[q]) for q in queries]

    # ------------------------------------------------------------------ files
    def save(self, directory: str | Path, **meta) -> Path:
        """Write a model directory (see :mod:`kgnorm.methods.biosyn.model`)."""

        return save_biosyn(self, directory, **meta)


# ---------------------------------------------------------------------- model directory
def save_biosyn(model, directory: str | Path, ontology: dict | None = None,
                metrics: dict | None = None, hyper_parameters: dict | None = None,
                extra: dict | None = None) -> Path:
    """Write a BioSyn model directory (builds the dense index first if needed)."""
    if not isinstance(model, BioSynModel):
        raise KgnormError("save_biosyn expects a BioSynModel")
    d = Path(directory)
    enc = model.encoder
    enc.save(d / "encoder")
    model.sparse.save(d / "sparse")
    save_names_and_index(model, d, {
        "method": "biosyn",
        "encoder": {"path": "encoder", "base": str(getattr(enc, "base", enc.path)),
                    "dim": enc.dim, **enc.config()},
        "sparse_weight": model.lam,
        "sparse": {"path": "sparse", **model.sparse.config()},
        "link": {"k_sparse": model.k_sparse, "k_dense": model.k_dense},
    }, hyper_parameters, ontology, metrics, extra)
    return d


def load_biosyn(directory: str | Path, device: str | None = None,
                use_gpu: bool | str = "auto"):
    """Load a BioSyn model directory written by :func:`save_biosyn`."""
    d = Path(directory)
    meta = read_model_meta(d, "biosyn")
    encoder = load_dense_encoder(d, meta, device, pooling="cls")
    dictionary, index = load_names_and_index(d, meta, use_gpu)
    sparse = SparseScorer.load(d / meta.get("sparse", {}).get("path", "sparse"))
    if sparse.n_names != len(dictionary):
        raise KgnormError(f"{d}: names ({len(dictionary)}), sparse matrix ({sparse.n_names}) "
                          f"and index ({index.ntotal}) disagree")
    if index.dim != encoder.dim:
        raise KgnormError(f"{d}: index dimension {index.dim} != encoder dimension {encoder.dim}")
    link = meta.get("link", {})
    model = BioSynModel(encoder, dictionary, sparse=sparse,
                        sparse_weight=float(meta.get("sparse_weight", 1.0)),
                        index_kind=index.kind, index_fp16=index.fp16,
                        k_sparse=link.get("k_sparse", 20), k_dense=link.get("k_dense", 20))
    model.index = index
    model.meta = meta
    return model
