"""How a name index stores its vectors: float32, float16 or 8 bits a dimension, chosen by size.

A flat float32 index of MeSH's chemical vocabulary (543k names x 384) is 834 MB, all of it read
by every search; its memory map is resident after the first query, so it counts in `link`'s
peak RSS like the heap. Stored as FAISS scalar-quantizer codes (``QT_fp16``: 2 bytes a
dimension; ``QT_8bit``: 1 byte, a trained range per dimension) it is a half or a quarter of
that, still memory-mapped (faiss' ``IO_FLAG_MMAP_IFC``). Searched a block of names at a time:
the block decoded to float32 by faiss (``sa_decode``), then an exact inner product and top-k
(kgnorm.linking.dense_topk.OrtFlatSearch), so a score is that of the stored (rounded) vector.

``auto`` chooses by the size of the float32 vectors, a declared fact (no timing at run time):
up to :data:`FP32_MAX_BYTES` float32 (a few MB: nothing to save, and the scores are the
encoder's own), up to :data:`FP16_MAX_BYTES` float16, beyond that 8 bits. The thresholds are a
choice; the accuracy of each storage is measured (benchmarks/name_vectors.py, benchmarks/LOG.md
"Name vectors": dev Acc@1 and Acc@5 the same for all three on NCBI-disease and BC5CDR-disease with
MEDIC and on BC5CDR-chemical with MeSH's chemicals).
"""
from __future__ import annotations

import faiss
import numpy as np

from kgnorm.errors import KgnormError

__all__ = ["STORAGES", "FP32_MAX_BYTES", "FP16_MAX_BYTES", "storage_for", "quantizer_type",
           "codes_view", "Decoder"]

STORAGES = ("fp32", "fp16", "sq8")
FP32_MAX_BYTES = 16 << 20   # float32 vectors up to 16 MiB (about 11k names at 384 dimensions)
FP16_MAX_BYTES = 64 << 20   # float16 up to 64 MiB of float32 (about 44k names at 384); beyond: 8 bits


def storage_for(n: int, dim: int, storage: str = "auto") -> str:
    """`storage`, or for ``auto`` the one the size of ``n`` float32 vectors of ``dim`` calls for."""
    if storage == "auto":
        size = int(n) * int(dim) * 4
        return "fp32" if size <= FP32_MAX_BYTES else "fp16" if size <= FP16_MAX_BYTES else "sq8"
    if storage not in STORAGES:
        raise KgnormError(f"unknown vector storage {storage!r} (auto, {', '.join(STORAGES)})")
    return storage


def quantizer_type(storage: str) -> int:
    """The FAISS scalar-quantizer type of a storage other than fp32."""
    return {"fp16": faiss.ScalarQuantizer.QT_fp16, "sq8": faiss.ScalarQuantizer.QT_8bit}[storage]


def codes_view(index: faiss.Index) -> np.ndarray:
    """The codes of a flat scalar-quantizer index as ``uint8 [n, code_size]``, no copy (a view of
    the memory map where the index was read mapped)."""
    n, size = int(index.ntotal), int(index.code_size)
    if n == 0:
        return np.zeros((0, size), np.uint8)
    return faiss.rev_swig_ptr(index.codes.data(), n * size).reshape(n, size)


class Decoder:
    """Rows of a flat scalar-quantizer index's codes -> float32 vectors (faiss' own decoder;
    float16 codes are a plain cast)."""

    def __init__(self, index: faiss.Index, storage: str) -> None:
        self.index, self.storage = index, storage

    def __call__(self, codes: np.ndarray) -> np.ndarray:
        if self.storage == "fp16":
            return codes.view(np.float16).astype(np.float32)
        return self.index.sa_decode(np.ascontiguousarray(codes))
