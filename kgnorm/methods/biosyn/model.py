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

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from kgnorm.errors import KgnormError
from kgnorm.encoders.dense import DenseEncoder
from kgnorm.encoders.fixed_shape import QueryVectors
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.name_index import NameIndex
from kgnorm.linking.sparse import SparseScorer
from kgnorm.methods.biosyn.retrieval import BioSynRetrieval, check_dim, load_parts
from kgnorm.methods.model_dir import load_dense_encoder, save_names_and_index


class BioSynModel(BioSynRetrieval, torch.nn.Module):
    """DenseEncoder + SparseScorer + lambda over a :class:`NameDictionary` (trainable; its
    retrieval and scoring: :class:`~kgnorm.methods.biosyn.retrieval.BioSynRetrieval`)."""

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

    @property
    def device(self) -> torch.device:
        return self.encoder.device

    @property
    def lam(self) -> float:
        return float(self.sparse_weight.detach().cpu())

    # ------------------------------------------------------------------ dense side
    def encode(self, names: Sequence[str], batch_size: int = 256,
               progress: bool = False) -> np.ndarray:
        """Dense vectors of arbitrary names (what ``embed``/``hypernyms`` use)."""
        return self.encoder.encode(names, batch_size=batch_size, progress=progress)

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
    parts = load_parts(d, use_gpu)
    encoder = load_dense_encoder(d, parts.meta, device, pooling="cls")
    check_dim(d, parts.index, encoder.dim)
    model = BioSynModel(encoder, parts.dictionary, sparse=parts.sparse, sparse_weight=parts.sparse_weight,
                        index_kind=parts.index.kind, index_fp16=parts.index.fp16,
                        k_sparse=parts.k_sparse, k_dense=parts.k_dense)
    model.index = parts.index
    model.meta = parts.meta
    return model
