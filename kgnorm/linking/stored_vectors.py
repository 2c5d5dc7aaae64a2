"""A query that is itself a dictionary name takes the name's stored vector on the link path.

About 45% of the distinct mentions of NCBI-disease + BC5CDR are dictionary names (benchmarks/LOG.md,
"throughput"), so that many fewer encoder calls. Only over a flat index, whose vectors are the model's
own, written with it: float32 exactly, float16 or 8-bit ones as stored (kgnorm.linking.vector_storage;
the Acc@1 of each against float32 is measured in benchmarks/name_vectors.py); HNSW and IVF indexes
always encode. The choice is per
text, so the output is the same in any batch, order or Ray block. The linkers of BioSyn and DILBERT
(their ONNX Runtime engines) both take it.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.name_index import NameIndex

__all__ = ["NAME_VECTORS_ENV", "stored_name_vectors", "exact_name_rows", "stored_or_encoded"]

NAME_VECTORS_ENV = "KGNORM_NAME_VECTORS"  # "stored" (default) or "encode": every query encoded


def stored_name_vectors() -> bool:
    """``$KGNORM_NAME_VECTORS``: whether the link path answers a query that is a dictionary name
    with the name's stored vector (``stored``, the default) or encodes every query (``encode``:
    the bytes of the path before it, for comparison)."""
    value = os.environ.get(NAME_VECTORS_ENV, "").strip().lower() or "stored"
    if value not in ("stored", "encode"):
        raise KgnormError(f"{NAME_VECTORS_ENV}={value!r}: expected stored or encode")
    return value == "stored"


def exact_name_rows(dictionary: NameDictionary | None, index: NameIndex | None) -> Mapping[str, int] | None:
    """Name -> dictionary row where a flat index stores each name's vector (the dictionary's own map), else None."""
    if dictionary is None or index is None or index.kind != "flat":
        return None
    return dictionary.rows_by_name


def stored_or_encoded(queries: Sequence[str], rows: Mapping[str, int] | None, index: NameIndex, dim: int,
                      encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """float32 ``[len(queries), dim]``: a name's stored vector (the first `dim` columns of its indexed
    vector) where `rows` has the query, else ``encode`` of the rest, in one call."""
    queries = list(queries)
    if not rows:
        return encode(queries)
    row = np.fromiter((rows.get(q, -1) for q in queries), np.int64, len(queries))
    hit = row >= 0
    if not hit.any():
        return encode(queries)
    out = np.empty((len(queries), dim), dtype=np.float32)
    out[hit] = index.reconstruct(row[hit])[:, :dim]
    if not hit.all():
        out[~hit] = encode([q for q, h in zip(queries, hit) if not h])
    return out
