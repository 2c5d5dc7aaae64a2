"""Exact top-k of a flat inner-product index with a bf16 pre-filter (:class:`~kgnorm.linking.name_index.NameIndex`).

Where the CPU declares native bf16 (kgnorm.linking.cpu_features), ``queries @ names.T`` in bf16
(fp32 accumulation, bf16 result) costs a fraction of the float32 product. Its error is bounded:
rounding q and x to bf16 errs by at most 2**-9 relative each, the bf16 result by 2**-9 of |s|,
so ``|approx - exact| <= (2**-8 + 2**-9 + 2**-12) * |q| * max|x|`` (Cauchy-Schwarz; the fp32
accumulation adds less than 2**-12). Every name within twice that bound of the k-th approximate
score is kept and rescored exactly in float32 (one dot product per kept pair, so a score does not
depend on the other queries of the call); names left out provably score below the k-th. Ties are
broken by the lower name index. ``KGNORM_DENSE_PRECISION=fp32`` forces the float32 product."""
from __future__ import annotations

import base64
from collections.abc import Callable

import numpy as np

from kgnorm.linking.cpu_features import declared_bf16

DENSE_PRECISION_ENV = "KGNORM_DENSE_PRECISION"  # auto (default), fp32 or bf16
REL_ERR = 2.0 ** -8 + 2.0 ** -9 + 2.0 ** -12
# queries per product: memory ~ CHUNK x names floats (+ kept names x dim). 64 (was 256): OrtFlatSearch's
# session arena keeps its largest Gemm output, CHUNK x NAME_BLOCK floats (16 MB at 256; the whole `link`
# peaked about 20 MB lower at 64, its output identical: a query's scores do not depend on the chunk)
CHUNK = 64
NAME_BLOCK = 16384  # names per product of OrtFlatSearch: CHUNK x NAME_BLOCK scores, NAME_BLOCK x dim decoded


# OrtFlatSearch's graph, ``Gemm(q, names, transB) -> TopK`` (any dimension), as flat_topk_model()
# serializes it: stored so that `link` need not import the onnx package to make it (10 MB, 0.1 s);
# tests/test_dense_topk.py checks the two agree
FLAT_TOPK_ONNX = (
    "CAg68AEKIgoBcQoFbmFtZXMSAXMiBEdlbW0qDQoGdHJhbnNCGAGgAQIKRgoBcwoBaxIGc2NvcmVzEgRyb3dzIgRUb3BLKgsKBGF4aXMY"
    "AaABAioOCgdsYXJnZXN0GAGgAQIqDQoGc29ydGVkGAGgAQISCWZsYXRfdG9wa1oVCgFxEhAKDggBEgoKAxIBbgoDEgFkWhkKBW5hbWVz"
    "EhAKDggBEgoKAxIBbQoDEgFkWg8KAWsSCgoICAcSBAoCCAFiGgoGc2NvcmVzEhAKDggBEgoKAxIBbgoDEgFrYhgKBHJvd3MSEAoOCAcS"
    "CgoDEgFuCgMSAWtCBAoAEBE=")


def flat_topk_model():
    """The ONNX model FLAT_TOPK_ONNX holds, built with the onnx package (dimension ``d`` symbolic)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Gemm", ["q", "names"], ["s"], transB=1),
         helper.make_node("TopK", ["s", "k"], ["scores", "rows"], axis=1, largest=1, sorted=1)],
        "flat_topk",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, ["n", "d"]),
         helper.make_tensor_value_info("names", TensorProto.FLOAT, ["m", "d"]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["n", "k"]),
         helper.make_tensor_value_info("rows", TensorProto.INT64, ["n", "k"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def dense_uses_bf16() -> bool:
    """``$KGNORM_DENSE_PRECISION`` when set, else the CPU's declared bf16 support."""
    return declared_bf16(DENSE_PRECISION_ENV)


class Bf16Names:
    """The names of a flat index in bf16, with the largest name norm (computed once)."""

    def __init__(self, xb: np.ndarray) -> None:
        import torch

        self.xb = xb
        self.bf16_t = torch.from_numpy(xb).to(torch.bfloat16).T.contiguous()  # [dim, n]: the faster layout
        # float32 squares: a relative error far below REL_ERR, covered by the 1.001
        self.max_norm = float(np.sqrt(np.einsum("ij,ij->i", xb, xb).max())) * 1.001 if len(xb) else 0.0

    def topk(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(float32 scores, int64 rows) ``[len(q), k]``, best first, exact."""
        import torch

        n = self.xb.shape[0]
        wide = min(n, 2 * k + 16)  # approximate top `wide` holds every candidate in practice
        scores = np.empty((len(q), k), np.float32)
        rows = np.empty((len(q), k), np.int64)
        with torch.inference_mode():
            for s in range(0, len(q), CHUNK):
                qc = q[s:s + CHUNK]
                approx = torch.from_numpy(qc).to(torch.bfloat16) @ self.bf16_t
                vals, idx = torch.topk(approx, wide, dim=1)
                vals, idx = vals.float().numpy(), idx.numpy()
                margin = 2 * REL_ERR * self.max_norm * np.linalg.norm(qc.astype(np.float64), axis=1)
                thr = vals[:, k - 1] - margin
                ok = np.full(len(qc), wide == n) | (vals[:, -1] < thr)  # nothing past `wide` qualifies
                if ok.any():
                    c = idx[ok]
                    exact = np.einsum("md,mwd->mw", qc[ok], self.xb[c])
                    order = np.lexsort((c, -exact), axis=-1)[:, :k]  # score descending, then lower row
                    rows[s:s + len(qc)][ok] = np.take_along_axis(c, order, 1)
                    scores[s:s + len(qc)][ok] = np.take_along_axis(exact, order, 1)
                for i in np.flatnonzero(~ok):  # rare: every name within the margin, from the whole row
                    c = np.flatnonzero(approx[i].float().numpy() >= thr[i])
                    exact = np.einsum("d,cd->c", qc[i], self.xb[c])
                    order = np.lexsort((c, -exact))[:k]
                    rows[s + i], scores[s + i] = c[order], exact[order]
        return scores, rows


class OrtFlatSearch:
    """Exact float32 top-k of a flat inner-product index without torch: one ONNX Runtime graph
    (``Gemm(q, names, transB) -> TopK``) on one intra-op thread, run over :data:`NAME_BLOCK` names at
    a time and merged, so memory is queries x block, not queries x names (256 x 543k floats for
    MeSH's chemicals). The names are the index's own float32 storage (no copy), or its codes with
    ``decode`` turning a block of them into float32 (kgnorm.linking.vector_storage: each block
    decoded once per call); ``release(block)``, called on each block once searched, hands a
    memory-mapped index's pages back (kgnorm.process_memory.release_mapped_pages), so a scan holds
    one block of the file resident, not all of it. What the ``onnx`` query engine searches with (torch's product and
    top-k need torch imported; FAISS's own flat search pays a heap per query), and any engine
    over fp16 or 8-bit vectors."""

    def __init__(self, xb: np.ndarray, threads: int = 1, decode: Callable[[np.ndarray], np.ndarray] | None = None,
                 dim: int | None = None, release: Callable[[np.ndarray], object] | None = None) -> None:
        import onnxruntime as ort

        self.xb, self.decode, self.release = xb, decode, release
        self.dim = xb.shape[1] if dim is None else int(dim)
        so = ort.SessionOptions()
        so.intra_op_num_threads = max(1, int(threads))
        so.inter_op_num_threads = 1
        self.session = ort.InferenceSession(base64.b64decode(FLAT_TOPK_ONNX), so, providers=["CPUExecutionProvider"])

    def topk(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(float32 scores, int64 rows) ``[len(q), k]``, best first (ties: the lower row)."""
        n = self.xb.shape[0]
        best: tuple[np.ndarray, np.ndarray] | None = None
        for start in range(0, n, NAME_BLOCK):
            names = self.xb[start:start + NAME_BLOCK]
            if self.decode is not None:
                names = self.decode(names)
            kk = np.array([min(k, len(names))], np.int64)
            parts = [self._run(q[s:s + CHUNK], names, kk) for s in range(0, len(q), CHUNK)]
            scores = np.concatenate([p[0] for p in parts]).astype(np.float32, copy=False)
            rows = np.concatenate([p[1] for p in parts]).astype(np.int64, copy=False) + start
            best = (scores, rows) if best is None else _merge(best, (scores, rows), k)
            if self.release is not None:  # a mapped index: the block's pages leave the resident set
                self.release(self.xb[start:start + NAME_BLOCK])
        return best


    def _run(self, q: np.ndarray, names: np.ndarray, kk: np.ndarray) -> list[np.ndarray]:
        """(scores, rows) of one chunk. A lone query goes with a copy of itself: ONNX Runtime's Gemm
        takes a vector path for one row, whose last bits differ from the matrix path's, and a query's
        answer must not depend on the queries beside it (with two rows or more it does not: test)."""
        if len(q) == 1:
            return [p[:1] for p in self.session.run(None, {"q": np.concatenate([q, q]), "names": names, "k": kk})]
        return self.session.run(None, {"q": q, "names": names, "k": kk})


def _merge(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], k: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """The k best of two top-k lists per query: score descending, then the lower row."""
    scores, rows = np.concatenate([a[0], b[0]], 1), np.concatenate([a[1], b[1]], 1)
    order = np.lexsort((rows, -scores), axis=-1)[:, :k]
    return np.take_along_axis(scores, order, 1), np.take_along_axis(rows, order, 1)
