"""Name indexes: the FAISS inner-product index over name vectors (:class:`NameIndex`), and
:class:`IndexedNamesMixin`, which puts a name dictionary on one and links with any encoder.

``kind``:
* ``"flat"`` (default): exact inner product (``IndexFlatIP``);
* ``"hnsw"``: ``IndexHNSWFlat`` with inner product (approximate; for > 1M names);
* ``"ivf"``: ``IndexIVFFlat`` over an ``IndexFlatIP`` coarse quantizer (approximate,
  needs training on the vectors; ``nlist`` defaults to ~4 sqrt(n), ``nprobe`` to 32).

``storage`` (kgnorm.linking.vector_storage): ``fp32`` (the default of :meth:`NameIndex.build`), ``fp16``
or ``sq8`` stores the vectors as float16 or 8 bits a dimension (``IndexScalarQuantizer``/
``IndexHNSWSQ``/``IndexIVFScalarQuantizer`` with ``QT_fp16``/``QT_8bit``): a half or a quarter of
the memory, scores those of the rounded vectors; ``auto`` chooses by size (what the linkers'
saved indexes take). ``fp16=True`` is ``storage="fp16"`` (older callers and index.json files). On a machine where faiss has ``StandardGpuResources`` and a GPU
is present, flat and IVF indexes are searched on the GPU (``use_gpu="auto"``); the CPU index
is kept for saving and for :meth:`NameIndex.reconstruct`.

Saved as ``<dir>/names.faiss`` (``faiss.write_index``) plus ``<dir>/index.json``.

BNE (:mod:`kgnorm.methods.bne.model`) and DILBERT (:mod:`kgnorm.methods.dilbert.model`) link
through :class:`IndexedNamesMixin`: a subclass gives ``encode`` and, when its metric is not the
inner product of the encoded vectors, the metric hooks (:mod:`kgnorm.linking.distance_space`).
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import faiss
import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Candidate
from kgnorm.linking.dense_topk import Bf16Names, OrtFlatSearch, dense_uses_bf16
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.vector_storage import Decoder, codes_view, quantizer_type, storage_for
from kgnorm.process_memory import maps_file, release_mapped_pages
from kgnorm.progress import progress_bar

__all__ = ["KINDS", "INDEX_FILE", "INDEX_META", "gpu_available", "NameIndex", "IndexedNamesMixin"]

KINDS = ("flat", "hnsw", "ivf")
INDEX_FILE = "names.faiss"
INDEX_META = "index.json"
# rows of a mapped index read before their pages are released (reconstruct): 12 MB of 384-d fp32 vectors
RELEASE_ROWS = 8192


def gpu_available() -> bool:
    if not hasattr(faiss, "StandardGpuResources"):
        return False
    try:
        return faiss.get_num_gpus() > 0
    except Exception:  # pragma: no cover - broken GPU runtime
        return False


def _as_f32(x: np.ndarray, dim: int | None = None) -> np.ndarray:
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if x.ndim != 2:
        raise KgnormError(f"expected a 2-D array of vectors, got shape {x.shape}")
    if dim is not None and x.shape[1] != dim:
        raise KgnormError(f"vectors have dimension {x.shape[1]}, the index {dim}")
    return x


def _flat_storage(index: faiss.Index) -> str | None:
    """The storage a read flat index holds (None: neither a flat nor a known scalar-quantizer index)."""
    if isinstance(index, faiss.IndexFlat):
        return "fp32"
    if isinstance(index, faiss.IndexScalarQuantizer):
        return next((s for s in ("fp16", "sq8") if index.sq.qtype == quantizer_type(s)), None)
    return None


class NameIndex:
    """Inner-product index; ``search`` returns ``(scores float32 [n,k], idx int64 [n,k])``."""

    def __init__(self, dim: int, kind: str = "flat", fp16: bool = False,
                 use_gpu: bool | str = "auto", hnsw_m: int = 32, ef_search: int = 128,
                 ef_construction: int = 200, nlist: int | None = None, nprobe: int = 32,
                 storage: str = "fp32") -> None:
        if kind not in KINDS:
            raise KgnormError(f"unknown index kind {kind!r} (choose from {', '.join(KINDS)})")
        self.dim = int(dim)
        self.kind = kind
        self.storage = "fp16" if fp16 else storage if storage == "auto" else storage_for(0, dim, storage)
        self.use_gpu = use_gpu
        self.hnsw_m = int(hnsw_m)
        self.ef_search = int(ef_search)
        self.ef_construction = int(ef_construction)
        self.nlist = nlist
        self.nprobe = int(nprobe)
        self.index: faiss.Index | None = None  # CPU index
        self._gpu_index = None
        self._gpu_res = None
        self._bf16_names = None
        self._ort_flat = None
        self.engine = "torch"  # "onnx": flat search through ONNX Runtime, torch never imported
        self.mapped = False  # the vectors are a read-only memory map of names.faiss
        self._file_pages = False  # mapped, and checked to lie in the file's map: pages may be released

    @property
    def fp16(self) -> bool:
        """Whether the vectors are stored as float16 (``storage == "fp16"``)."""
        return self.storage == "fp16"

    # ------------------------------------------------------------------ building
    def _make(self, n: int) -> faiss.Index:
        d, ip = self.dim, faiss.METRIC_INNER_PRODUCT
        self.storage = storage_for(n, d, self.storage)
        quantized = self.storage != "fp32"
        if self.kind == "flat":
            if quantized:
                return faiss.IndexScalarQuantizer(d, quantizer_type(self.storage), ip)
            return faiss.IndexFlatIP(d)
        if self.kind == "hnsw":
            if quantized:
                idx = faiss.IndexHNSWSQ(d, quantizer_type(self.storage), self.hnsw_m, ip)
            else:
                idx = faiss.IndexHNSWFlat(d, self.hnsw_m, ip)
            idx.hnsw.efConstruction = self.ef_construction
            idx.hnsw.efSearch = self.ef_search
            return idx
        nlist = self.nlist or max(1, min(int(4 * math.sqrt(max(n, 1))), max(n // 39, 1)))
        self.nlist = nlist
        quant = faiss.IndexFlatIP(d)
        if quantized:
            idx = faiss.IndexIVFScalarQuantizer(quant, d, nlist, quantizer_type(self.storage), ip)
        else:
            idx = faiss.IndexIVFFlat(quant, d, nlist, ip)
        self._quantizer = quant  # faiss' wrapper also keeps it alive; belt and braces
        idx.nprobe = min(self.nprobe, nlist)
        return idx

    @classmethod
    def build(cls, vectors: np.ndarray, kind: str = "flat", fp16: bool = False,
              use_gpu: bool | str = "auto", **kw) -> NameIndex:
        """An index over ``vectors``; ``storage`` (kw, default fp32) as in the module docstring."""
        x = _as_f32(vectors)
        obj = cls(x.shape[1], kind=kind, fp16=fp16, use_gpu=use_gpu, **kw)
        obj.add(x)
        return obj

    def add(self, vectors: np.ndarray) -> None:
        x = _as_f32(vectors, self.dim)
        if self.mapped:  # faiss aborts the process on adding to a mapped index: copy it first
            self.index, self.mapped = faiss.deserialize_index(faiss.serialize_index(self.index)), False
            self._file_pages = False
        if self.index is None:
            self.index = self._make(len(x))
            if not self.index.is_trained:
                if len(x) == 0:
                    raise KgnormError(f"cannot train a {self.kind} {self.storage} index on no vectors")
                self.index.train(x)
        self.index.add(x)
        if self.kind == "ivf":
            self.index.make_direct_map()
        self._gpu_index = None  # re-clone lazily
        self._bf16_names = None
        self._ort_flat = None

    @property
    def ntotal(self) -> int:
        return 0 if self.index is None else int(self.index.ntotal)

    def __len__(self) -> int:
        return self.ntotal

    # ------------------------------------------------------------------ search
    def _searcher(self) -> faiss.Index:
        if self.index is None:
            raise KgnormError("the name index is empty")
        want = gpu_available() if self.use_gpu == "auto" else bool(self.use_gpu)
        if not want or self.kind == "hnsw":
            return self.index
        if self._gpu_index is None:
            if not gpu_available():
                raise KgnormError("use_gpu=True but faiss has no GPU support or no GPU is present")
            try:
                self._gpu_res = faiss.StandardGpuResources()
                co = faiss.GpuClonerOptions()
                co.useFloat16 = self.fp16
                self._gpu_index = faiss.index_cpu_to_gpu(self._gpu_res, 0, self.index, co)
            except Exception:  # noqa: BLE001 - e.g. a flat scalar-quantizer index
                if self.use_gpu is True:
                    raise KgnormError(f"faiss cannot move a {self.kind} "
                                      f"{'fp16 ' if self.fp16 else ''}index to the GPU") from None
                self.use_gpu = False  # auto: search on the CPU
                return self.index
        return self._gpu_index

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = _as_f32(queries, self.dim)
        k = min(int(k), self.ntotal)
        if k <= 0 or len(q) == 0:
            return np.zeros((len(q), max(k, 0)), np.float32), np.zeros((len(q), max(k, 0)), np.int64)
        searcher = self._searcher()
        if searcher is self.index and self.kind == "flat" and self.storage != "fp32":
            if self._ort_flat is None:  # a block of names decoded at a time (kgnorm.linking.vector_storage)
                self._ort_flat = OrtFlatSearch(codes_view(self.index), decode=Decoder(self.index, self.storage),
                                               dim=self.dim, release=self._release)
            return self._ort_flat.topk(q, k)
        if searcher is self.index and self.kind == "flat":
            if self.engine == "onnx":  # exact fp32, no torch (kgnorm.linking.dense_topk.OrtFlatSearch)
                if self._ort_flat is None:
                    self._ort_flat = OrtFlatSearch(self._flat_vectors(), release=self._release)
                return self._ort_flat.topk(q, k)
            if dense_uses_bf16():  # exact, through a bf16 pre-filter (kgnorm.linking.dense_topk)
                if self._bf16_names is None:
                    self._bf16_names = Bf16Names(self._flat_vectors())
                return self._bf16_names.topk(q, k)
            return self._search_flat_cpu(q, k)
        scores, idx = searcher.search(q, k)
        return scores.astype(np.float32, copy=False), idx.astype(np.int64, copy=False)

    def _search_flat_cpu(self, q: np.ndarray, k: int, block: int = 65536) -> tuple[np.ndarray, np.ndarray]:
        """Exact search as a matrix product + top-k in torch over the index's own storage
        (no copy). On CPU this is about 10x faster than faiss' IndexFlat search for the k of
        the linkers (20-80), measured in-process on 72k names: faiss' per-query heaps are
        the cost. Names are taken ``block`` at a time, so memory stays queries x block."""
        import torch

        n = self.ntotal
        xb = self._flat_vectors()
        qt = torch.from_numpy(q)
        best_s: torch.Tensor | None = None
        best_i: torch.Tensor | None = None
        with torch.inference_mode():
            for start in range(0, n, block):
                xs = torch.from_numpy(xb[start:start + block])
                s = qt @ xs.T
                kk = min(k, s.shape[1])
                top_s, top_i = torch.topk(s, kk, dim=1)
                top_i = top_i + start
                if best_s is None:
                    best_s, best_i = top_s, top_i
                else:
                    cat_s, cat_i = torch.cat([best_s, top_s], 1), torch.cat([best_i, top_i], 1)
                    best_s, pos = torch.topk(cat_s, min(k, cat_s.shape[1]), dim=1)
                    best_i = torch.gather(cat_i, 1, pos)
        return best_s.numpy().astype(np.float32, copy=False), best_i.numpy().astype(np.int64, copy=False)

    def _release(self, view: np.ndarray) -> None:
        """Drop a view of the mapped index's vectors from the resident set (nothing when the index is
        in the heap: built, or copied to add to it). kgnorm.process_memory.release_mapped_pages."""
        if self._file_pages:
            release_mapped_pages(view)

    def _stored(self) -> np.ndarray:
        """A flat index's stored vectors as they are kept (float32 rows, or the codes), no copy."""
        return self._flat_vectors() if self.storage == "fp32" else codes_view(self.index)

    def _flat_vectors(self) -> np.ndarray:
        """The flat index's own float32 storage as an [n, dim] array (no copy)."""
        n = self.ntotal
        return faiss.rev_swig_ptr(self.index.get_xb(), n * self.dim).reshape(n, self.dim)

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        """Stored vectors of ``ids`` (any shape of non-negative ints) -> ``ids.shape + (dim,)``."""
        if self.index is None:
            raise KgnormError("the name index is empty")
        ids = np.asarray(ids, dtype=np.int64)
        flat = np.ascontiguousarray(ids.ravel())
        if len(flat) == 0:
            return np.zeros(ids.shape + (self.dim,), np.float32)
        if flat.min() < 0 or flat.max() >= self.ntotal:
            raise KgnormError("reconstruct: id out of range")
        if not self._file_pages:
            return np.asarray(self.index.reconstruct_batch(flat), dtype=np.float32).reshape(ids.shape + (self.dim,))
        return self._reconstruct_mapped(flat).reshape(ids.shape + (self.dim,))

    def _reconstruct_mapped(self, flat: np.ndarray) -> np.ndarray:
        """reconstruct_batch's rows of a mapped index, read in row order :data:`RELEASE_ROWS` rows of
        the file at a time, each stretch's pages released once copied: the file's resident part stays
        one stretch, not every page the (scattered) rows touch."""
        out = np.empty((len(flat), self.dim), np.float32)
        order = np.argsort(flat, kind="stable")
        rows = flat[order]
        cuts = np.searchsorted(rows, np.arange(0, self.ntotal + RELEASE_ROWS, RELEASE_ROWS))
        stored = self._stored()
        for a, b, start in zip(cuts[:-1], cuts[1:], range(0, self.ntotal, RELEASE_ROWS)):
            if b > a:
                out[order[a:b]] = self.index.reconstruct_batch(np.ascontiguousarray(rows[a:b]))
                self._release(stored[start:start + RELEASE_ROWS])
        return out

    # ------------------------------------------------------------------ files
    def meta(self) -> dict:
        return {"kind": self.kind, "storage": self.storage, "fp16": self.fp16, "dim": self.dim, "ntotal": self.ntotal,
                "hnsw_m": self.hnsw_m, "ef_search": self.ef_search,
                "ef_construction": self.ef_construction, "nlist": self.nlist,
                "nprobe": self.nprobe}

    def save(self, directory: str | Path) -> None:
        if self.index is None:
            raise KgnormError("cannot save an empty name index")
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / (INDEX_FILE + ".tmp")
        faiss.write_index(self.index, str(tmp))
        tmp.replace(d / INDEX_FILE)
        (d / INDEX_META).write_text(json.dumps(self.meta(), indent=2), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path, use_gpu: bool | str = "auto") -> NameIndex:
        """A flat index (any storage) is memory-mapped read-only where faiss can (its
        ``IO_FLAG_MMAP_IFC``): loading reads no vectors, the page cache is shared between
        processes, and ``add`` copies it first. An index.json without ``storage`` (written before
        it) is fp32, or fp16 where it says ``fp16``."""
        d = Path(directory)
        try:
            meta = json.loads((d / INDEX_META).read_text(encoding="utf-8"))
            mapped = meta.get("kind") == "flat" and hasattr(faiss, "IO_FLAG_MMAP_IFC")
            flags = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY if mapped else 0
            index = faiss.read_index(str(d / INDEX_FILE), flags)
        except (OSError, ValueError, RuntimeError, AttributeError) as e:  # AttributeError: no JSON object
            raise KgnormError(f"{d}: not a saved name index ({e})") from None
        try:  # a damaged or hand-edited index.json: one line, not a traceback
            obj = cls(meta["dim"], kind=meta["kind"], fp16=meta["fp16"], use_gpu=use_gpu,
                      hnsw_m=meta.get("hnsw_m", 32), ef_search=meta.get("ef_search", 128),
                      ef_construction=meta.get("ef_construction", 200), nlist=meta.get("nlist"),
                      nprobe=meta.get("nprobe", 32), storage=meta.get("storage", "fp32"))
        except KgnormError as e:  # an option the index refuses (an unknown kind)
            raise KgnormError(f"{d}: {INDEX_META}: {e}") from None
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise KgnormError(f"{d}: not a saved name index ({type(e).__name__}: {e} in {INDEX_META})") from None
        if index.d != obj.dim:
            raise KgnormError(f"{d}: index dimension {index.d} != recorded {obj.dim}")
        if obj.kind == "flat" and _flat_storage(index) != obj.storage:
            raise KgnormError(f"{d}: {INDEX_META} says {obj.storage} vectors, which {INDEX_FILE} does not hold")
        try:
            if obj.kind == "hnsw":
                faiss.downcast_index(index).hnsw.efSearch = obj.ef_search
            if obj.kind == "ivf":
                ivf = faiss.extract_index_ivf(index)
                ivf.nprobe = obj.nprobe
                ivf.make_direct_map()
        except (AttributeError, RuntimeError) as e:
            raise KgnormError(f"{d}: {INDEX_META} says kind {obj.kind}, which {INDEX_FILE} is not ({e})") from None
        obj.index = index
        obj.mapped = mapped
        # releasing pages of heap memory would zero them: only where the vectors are seen in the file's map
        obj._file_pages = mapped and obj.ntotal > 0 and maps_file(obj._stored(), d / INDEX_FILE)
        return obj


class IndexedNamesMixin:
    """Dictionary + FAISS index + ``link`` for any encoder with ``encode(names)``.

    Subclasses provide ``encode(names, batch_size=..., progress=...)`` and may override
    :meth:`_index_vectors` / :meth:`_query_vectors` / :meth:`_scores` / :meth:`_pair_scores` to
    search a metric other than the inner product of the encoded vectors.
    """

    dictionary: NameDictionary | None
    index: NameIndex | None
    index_kind: str = "flat"
    index_fp16: bool = False
    index_storage: str = "fp32"  # kgnorm.linking.vector_storage; BioSyn's saved index: "auto"

    def set_dictionary(self, dictionary: NameDictionary) -> None:
        if len(dictionary) == 0:
            raise KgnormError("the name dictionary is empty")
        self.dictionary = dictionary
        self.index = None

    def _need_dictionary(self) -> NameDictionary:
        if self.dictionary is None:
            raise KgnormError("the model has no name dictionary")
        return self.dictionary

    def _index_vectors(self, vectors: np.ndarray) -> np.ndarray:
        return vectors

    def _query_vectors(self, vectors: np.ndarray) -> np.ndarray:
        return vectors

    def _scores(self, inner: np.ndarray, query_vectors: np.ndarray) -> np.ndarray:
        return inner

    def _pair_scores(self, query_vectors: np.ndarray, indexed: np.ndarray) -> np.ndarray:
        """Score of query i with the indexed vectors ``indexed[i, j]`` (as stored: ``_index_vectors``)."""
        return np.einsum("nd,nmd->nm", query_vectors, indexed)

    def _exact(self, query_vectors: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores of the retrieved rows recomputed one (query, name) pair at a time from the stored
        vectors, best first (ties by row). A matrix product's last bits depend on how many queries
        it holds, and a Euclidean distance near 0 magnifies them (``sqrt(|q|^2 - 2 ip)``); computed
        pair by pair, a query's scores and order are the same in any batch, as `link` promises."""
        safe = np.where(idx >= 0, idx, 0)
        scores = self._pair_scores(query_vectors, self.index.reconstruct(safe)).astype(np.float32)
        scores[idx < 0] = -np.inf
        order = np.lexsort((np.where(idx >= 0, idx, np.iinfo(np.int64).max), -scores), axis=-1)
        return np.take_along_axis(scores, order, 1), np.take_along_axis(idx, order, 1)

    def build_index(self, vectors: np.ndarray | None = None, progress: bool = False,
                    batch_size: int = 512) -> NameIndex:
        """Index the dictionary names (``vectors``: their ``encode`` output, if known)."""
        d = self._need_dictionary()
        if vectors is None:
            vectors = self.encode(d.names, batch_size=batch_size, progress=progress)
        if len(vectors) != len(d):
            raise KgnormError(f"{len(vectors)} vectors for {len(d)} dictionary names")
        self.index = NameIndex.build(self._index_vectors(np.asarray(vectors, np.float32)),
                                     kind=self.index_kind, fp16=self.index_fp16, storage=self.index_storage)
        return self.index

    def retrieve(self, queries: Sequence[str], top_k: int = 5, batch_size: int = 512,
                 query_vectors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(scores float32 [n, k], rows int64 [n, k])``, best first; -1 rows past the
        dictionary's end."""
        self._need_dictionary()
        if self.index is None:
            self.build_index()
        qv = (self.encode(list(queries), batch_size=batch_size) if query_vectors is None
              else np.asarray(query_vectors, np.float32))
        k = max(1, int(top_k))
        inner, idx = self.index.search(self._query_vectors(qv), k)
        if self.index.kind == "flat":
            scores, idx = self._exact(qv, idx)
        else:
            scores = self._scores(inner, qv).astype(np.float32)
        if idx.shape[1] < k:
            pad = k - idx.shape[1]
            idx = np.pad(idx, ((0, 0), (0, pad)), constant_values=-1)
            scores = np.pad(scores, ((0, 0), (0, pad)), constant_values=-np.inf)
        return scores, idx

    def link(self, queries: Sequence[str], top_k: int = 5, batch_size: int = 512,
             progress: bool = False) -> list[list[Candidate]]:
        """Ranked :class:`Candidate` rows (best first) for each (normalized) query."""
        if isinstance(queries, str):
            raise KgnormError("link expects a sequence of query strings, not one string")
        d = self._need_dictionary()
        if self.index is None:
            self.build_index(progress=progress)
        queries = list(queries)
        out: list[list[Candidate]] = []
        bar = progress_bar(total=len(queries), desc="link", unit="mention") if progress else None
        try:
            for s in range(0, len(queries), batch_size):
                part = queries[s:s + batch_size]
                scores, idx = self.retrieve(part, top_k, batch_size=batch_size)
                for i in range(len(part)):
                    row = []
                    for j in range(idx.shape[1]):
                        c = int(idx[i, j])
                        if c < 0:
                            break
                        sc = float(scores[i, j])
                        row.append(Candidate(c, d.uids[c], d.names[c], sc, 0.0, sc))
                    out.append(row)
                if bar is not None:
                    bar.update(len(part))
        finally:
            if bar is not None:
                bar.close()
        return out
