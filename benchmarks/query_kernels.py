"""The int8 query graph on two of ONNX Runtime's int8 kernels: this CPU's (VNNI / AMX where it
declares them) and the AVX2-only one (forced under QEMU's Haswell-noTSX CPU model, as
tests/cpu_models.py does), with the product's 7-bit weights and with full-range 8-bit weights.
The AVX2 kernel sums pairs of u8 x s8 products in 16 bits: full-range weights can saturate there,
7-bit ones cannot (kgnorm.encoders.int8_query).

    python benchmarks/query_kernels.py --model DIR     # a BioSyn / DILBERT model directory

Needs `qemu-x86_64` (Debian's qemu-user). Figures go to benchmarks/LOG.md.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from _report import append  # noqa: E402

TEXTS = ["acute renal failure", "breast cancer", "hypertension", "type 2 diabetes mellitus", "parkinson disease",
         "hereditary nonpolyposis colorectal cancer", "ataxia telangiectasia", "g6pd deficiency"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    args = ap.parse_args()
    import kgnorm.encoders.int8_query as iq
    from kgnorm.encoders.onnx_query import OnnxQueryEncoder, query_export
    from kgnorm.methods.model_dir import read_model_meta
    from tests.cpu_models import run_onnx

    e = read_model_meta(args.model).get("encoder", {})
    src = query_export(Path(args.model) / e.get("path", "encoder"), e.get("pooling", "mean"), bool(e.get("normalize")))
    enc = OnnxQueryEncoder(src, int(e.get("max_length", 25)))
    tmp = Path(tempfile.mkdtemp(prefix="kgnorm-qk-"))
    rows = []
    for length in sorted({len(i) for i in enc.token_ids(TEXTS)}):
        ids = np.asarray([i for i in enc.token_ids(TEXTS) if len(i) == length], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in enc.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        ref = run_onnx(src / "query.onnx", feed, "native", tmp)
        for bits, wmax in ((7, 64), (8, 127)):
            iq.WEIGHT_MAX = wmax
            graph = tmp / f"q{bits}.onnx"
            iq.quantize_query_graph(src / "query.onnx", graph)
            native, avx2 = (run_onnx(graph, feed, k, tmp) for k in ("native", "avx2"))
            rows.append((length, len(ids), bits, float(np.abs(native - avx2).max()), float(np.abs(native - ref).max()),
                         float(np.abs(avx2 - ref).max()), float(np.abs(ref).max())))
            print(rows[-1], flush=True)
    table = "\n".join(f"| {n} | {r} | {b} | {d:.3g} | {a:.3g} | {v:.3g} | {m:.3g} |" for n, r, b, d, a, v, m in rows)
    append("int8 query graph on the native and the AVX2-only kernel (issue 51)",
           f"Query encoder of `{args.model}`, the int8 graph of kgnorm.encoders.int8_query with 7-bit weights "
           "(the product's) and with full-range 8-bit weights; each batch of same-length texts run by ONNX Runtime on "
           "this CPU's int8 kernel and on the AVX2-only kernel (QEMU `-cpu Haswell-noTSX`), against the fp32 graph "
           "on this CPU. Differences are max absolute over the pooled vectors.\n\n"
           "| tokens | texts | weight bits | native vs AVX2 | native vs fp32 | AVX2 vs fp32 | max abs fp32 |\n"
           "|---|---|---|---|---|---|---|\n" + table + "\n")


if __name__ == "__main__":
    main()
