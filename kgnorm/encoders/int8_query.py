"""int8 query graphs whose vectors do not depend on the batch: each MatMul of a float32 ONNX
export over a constant weight becomes an ONNX ``MatMulInteger`` over per-channel int8 weights in
7 bits, twice (the weight and its rounding error, below), and activations quantized per token (each
token's own range, computed in the graph).

Why not onnxruntime.quantization.quantize_dynamic: its ``DynamicQuantizeLinear`` takes one
activation scale per call (the whole batch's range), so a query's vector moves with the other
texts of its call, breaking kgnorm.encoders.fixed_shape's contract (a vector independent of its
batch); only 1-row calls kept it, and those were slower than fp32's 32-row calls
(benchmarks/LOG.md, "int8 query encoder"). Per token, each row's integers depend on that row alone.

Weights: symmetric, one scale per output column (per-tensor scales lost far more: mean cosine to
fp32 0.861 against 0.992 with ORT's own quantizer on MiniLM), in 7 bits (-64..64) as the int8
detector's (kgnorm.methods.ner.runtime): ONNX Runtime's AVX2-only u8s8 kernel adds pairs of
u8 x s8 products in 16 bits, and 2 x 255 x 64 = 32640 cannot saturate, so AVX2, AVX512-VNNI,
AVX-VNNI and AMX compute the same integers. Activations: asymmetric uint8, zero point per token;
with zero-point-free weights the zero point's share is subtracted as ``zp x column sum``, so the
integer product needs no per-row zero point (ONNX Runtime takes a scalar one only).

Two weight passes: 7-bit weights were the larger share of the error (with float activations
they kept two thirds of the int8 graph's distance to fp32, mean cosine 0.9985 against 0.9977;
benchmarks/LOG.md, "int8 query recipes"), and one pass moved the untrained DILBERT's BC5CDR-disease dev Acc@1 by -0.0033. So each
weight W is stored as W1 (7 bits, per column) and the rest W - W1 (7 bits, its own column scales),
side by side as one [K, 2N] integer matrix: one MatMulInteger, whose two halves are rescaled and
added, about 14-bit weights at the cost of twice the integer products (still 7-bit: every kernel
computes the same integers)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["INT8_SCHEME", "quantize_query_graph", "external_data_file"]

# How the graph is quantized; part of the cached file's name (a new scheme: a new file)
INT8_SCHEME = "int8-token-channel-7bit-2pass"
WEIGHT_MAX = 64      # 7-bit symmetric weights (see the module docstring)


def quantize_query_graph(src: str | Path, dst: str | Path) -> int:
    """Write the int8 version of the float32 ONNX graph `src` to `dst`; how many MatMuls it quantized."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    nodes, quantized, done = [], 0, {}
    for node in graph.node:
        w = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if w is None or len(w.dims) != 2 or w.data_type != onnx.TensorProto.FLOAT:
            nodes.append(node)
            continue
        x = node.input[0]
        if x not in done:   # one quantization per activation (Q, K and V share theirs)
            done[x] = _token_quantizer(x, nodes, graph)
        q, scale, zp = done[x]
        nodes += _integer_matmul(node, numpy_helper.to_array(w), q, scale, zp, graph)
        quantized += 1
    del graph.node[:]
    graph.node.extend(nodes)
    used = {i for n in graph.node for i in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    onnx.checker.check_model(model)
    # the tensors in a side file (`dst`.data), which ONNX Runtime maps instead of parsing them into a
    # protobuf and copying them out of it: the session's load peak was twice the graph (LOG.md, issue 51)
    onnx.save_model(model, str(dst), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=external_data_file(dst), size_threshold=1024)
    return quantized


def external_data_file(graph_file: str | Path) -> str:
    """The name of the side file holding `graph_file`'s tensors (beside it)."""
    return Path(graph_file).name + ".data"


def _const(graph, name: str, value: np.ndarray) -> str:
    from onnx import numpy_helper

    graph.initializer.append(numpy_helper.from_array(value, name))
    return name


def _token_quantizer(x: str, nodes: list, graph) -> tuple[str, str, str]:
    """Nodes quantizing activation `x` to uint8 with each token's own range (last axis), 0 kept
    exact; (uint8 tensor, float scale, float zero point), both [..., 1]."""
    from onnx import TensorProto, helper

    p = f"{x}_i8"
    zero, levels = _const(graph, f"{p}_zero", np.float32(0)), _const(graph, f"{p}_255", np.float32(255))
    tiny = _const(graph, f"{p}_tiny", np.float32(1e-12))

    def op(kind: str, inputs: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(kind, inputs, [f"{p}_{out}"], name=f"{p}_{out}", **attrs))
        return f"{p}_{out}"

    hi = op("Max", [op("ReduceMax", [x], "max", axes=[-1], keepdims=1), zero], "hi")
    lo = op("Min", [op("ReduceMin", [x], "min", axes=[-1], keepdims=1), zero], "lo")
    scale = op("Max", [op("Div", [op("Sub", [hi, lo], "span"), levels], "step"), tiny], "scale")
    zp = op("Round", [op("Div", [op("Neg", [lo], "neglo"), scale], "zpf")], "zp")
    shifted = op("Add", [op("Round", [op("Div", [x, scale], "scaled")], "rounded"), zp], "shifted")
    q = op("Cast", [op("Clip", [shifted, zero, levels], "clipped")], "q", to=TensorProto.UINT8)
    return q, scale, zp


def _weight_passes(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`w` [K, N] as 7-bit integers [K, 2N] and their column scales [2N]: the weight rounded per
    column, then what that rounding lost, rounded per column again."""
    ints, scales, rest = [], [], w.astype(np.float64)
    for _ in range(2):
        col = np.abs(rest).max(axis=0) / WEIGHT_MAX
        col[col == 0] = 1.0
        q = np.clip(np.round(rest / col), -WEIGHT_MAX, WEIGHT_MAX)
        ints.append(q.astype(np.int8))
        scales.append(col)
        rest = rest - q * col
    return np.concatenate(ints, axis=1), np.concatenate(scales).astype(np.float32)


def _integer_matmul(node, w: np.ndarray, q: str, scale: str, zp: str, graph) -> list:
    """``node`` (MatMul of the quantized activation by weight `w` [K, N]) as one MatMulInteger over
    the two 7-bit weight passes [K, 2N], rescaled to float32, (q·Wq - zp·colsum(Wq)) × token scale ×
    column scale, and the two halves added."""
    from onnx import TensorProto, helper

    p = f"{node.output[0]}_i8"
    wq, col = _weight_passes(w)
    wq_name = _const(graph, f"{p}_w", wq)
    colsum = _const(graph, f"{p}_colsum", wq.astype(np.float32).sum(axis=0))
    col_scale = _const(graph, f"{p}_colscale", col)
    split = _const(graph, f"{p}_split", np.array([w.shape[1], w.shape[1]], dtype=np.int64))
    make = helper.make_node
    return [
        make("MatMulInteger", [q, wq_name], [f"{p}_int"], name=f"{p}_int"),
        make("Cast", [f"{p}_int"], [f"{p}_float"], name=f"{p}_float", to=TensorProto.FLOAT),
        make("Mul", [zp, colsum], [f"{p}_offset"], name=f"{p}_offset"),
        make("Sub", [f"{p}_float", f"{p}_offset"], [f"{p}_centred"], name=f"{p}_centred"),
        make("Mul", [f"{p}_centred", col_scale], [f"{p}_columns"], name=f"{p}_columns"),
        make("Split", [f"{p}_columns", split], [f"{p}_first", f"{p}_rest"], name=f"{p}_split", axis=-1),
        make("Add", [f"{p}_first", f"{p}_rest"], [f"{p}_sum"], name=f"{p}_sum"),
        make("Mul", [f"{p}_sum", scale], [node.output[0]], name=node.name or f"{p}_out"),
    ]
