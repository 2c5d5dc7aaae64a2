"""Which path a trained detector's network runs on (fp32, bf16, onnx or int8), resolved from declared facts
without importing torch: `annotate` checks the option before anything is read, whatever the detector
(the dictionary tagger needs no torch: importing it cost 1.1 CPU-s of every `annotate --ner dictionary:...`).
kgnorm.methods.ner.runtime runs the chosen path."""
from __future__ import annotations

import os

from kgnorm.errors import KgnormError

__all__ = ["PRECISIONS", "PRECISION_ENV", "BF16_ENV", "resolve_precision"]

PRECISIONS = ("auto", "fp32", "bf16", "onnx", "int8")
PRECISION_ENV = "KGNORM_NER_PRECISION"
BF16_ENV = "KGNORM_NER_BF16"          # the older opt-in: "1" means bf16 (kept; PRECISION_ENV wins)


def resolve_precision(requested: str | None = None, flags: frozenset[str] | None = None,
                      onnx: bool | None = None) -> str:
    """The concrete path (fp32, bf16, onnx or int8) for `requested` (None: ``KGNORM_NER_PRECISION``,
    else ``KGNORM_NER_BF16=1`` as bf16, else auto). ``auto`` is bf16 where the CPU declares native
    bf16 (AMX-BF16 / AVX512-BF16: 2.3-3.8x torch fp32, NER F1 +0.0012 NCBI dev, +0.0008 BC5CDR dev),
    else onnx where onnxruntime and onnx are installed (`onnx`: that fact, looked up when None), else
    fp32. ``onnx`` is float32 on ONNX Runtime (the network exported once, cached): the same PubTator
    bytes as fp32 torch on NCBI-disease and BC5CDR dev at about 0.7x its CPU time (bf16 autocast,
    where native, about 0.45x; paired in one process on an AVX-512 CPU). int8 is never chosen by auto: BC5CDR dev document F1 -0.0066 against
    fp32, outside the 0.003 allowed (benchmarks/LOG.md, "annotate speed paths" and "detector paths
    on fresh text", issue 51)."""
    from kgnorm.linking.cpu_features import bf16_native, onnx_runtime_installed

    value = requested or os.environ.get(PRECISION_ENV) or ("bf16" if os.environ.get(BF16_ENV) == "1" else "auto")
    value = value.strip().lower()
    if value not in PRECISIONS:
        raise KgnormError(f"unknown detector precision {value!r}; use one of {', '.join(PRECISIONS)}")
    if value == "auto":
        if bf16_native(flags):
            return "bf16"
        return "onnx" if (onnx_runtime_installed() if onnx is None else onnx) else "fp32"
    return value
