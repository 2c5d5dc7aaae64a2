"""The BioSyn query encoder at inference, encoding only: torch (fp32, int8 dynamic quantization)
against ONNX Runtime fp32 and int8, on 1 or 2 intra-op threads; speed on the distinct mention
texts of the throughput corpus, vector drift from the first path, and whether a text's vector
stays the same when the other texts of its calls change.

    python benchmarks/query_runtime.py --model DIR [--queries N] [--paths torch,ort,...]

Every path runs kgnorm's fixed-shape query encoding (kgnorm.encoders.fixed_shape: same-length
calls of exactly 8 rows, or `-rN`: N rows, e.g. `-r1`, or `-r32` as `link` calls): only the
network's forward call is swapped. int8 paths: `torch-int8` (torch dynamic quantization),
`ort-int8` (onnxruntime's quantize_dynamic, per-tensor 8-bit weights), `ort-int8pc7` (its
per-channel 7-bit weights, as the int8 detector), `kg-int8` (the product's graph,
kgnorm.encoders.int8_query: per-channel 7-bit weights in two passes since 2026-11-29 12:00, activations quantized per token). The
dev Acc@1 of the product's paths is benchmarks/query_engine.py's (`--rows onnx-fp32,onnx-int8`):
this script no longer swaps the network under `link` (the onnx engine opens its own). Needs
`pip install onnxruntime onnx` for the ORT paths. Figures go to benchmarks/LOG.md.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append  # noqa: E402
from throughput import corpus  # noqa: E402

DEV = "ncbi-disease/NCBIdevelopset_corpus.txt"


class OrtModel:
    """What fixed_shape calls as `encoder.model`, answered by an ONNX Runtime session."""

    training = False

    def __init__(self, path: Path, threads: int, config) -> None:
        import onnxruntime as ort

        self.config = config
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        self.sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.sess.get_inputs()]

    def eval(self) -> None:
        pass

    def __call__(self, input_ids, attention_mask, token_type_ids=None):
        feed = {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()}
        if "token_type_ids" in self.names:
            feed["token_type_ids"] = (token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)).numpy()
        return SimpleNamespace(last_hidden_state=torch.from_numpy(self.sess.run(None, feed)[0]))


class _Hidden(torch.nn.Module):
    """The encoder's last hidden state from three positional tensors (what the exporter traces)."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state


def export(model, tmp: Path) -> dict[str, Path]:
    """The encoder's last hidden state as ONNX: fp32, and quantized three ways (module docstring)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from kgnorm.encoders.int8_query import quantize_query_graph

    ids = torch.ones((8, 6), dtype=torch.long)
    fp32 = tmp / "query.onnx"
    torch.onnx.export(_Hidden(model).eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(fp32), dynamo=False,
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["hidden"],
                      dynamic_axes={n: {0: "b", 1: "t"} for n in ("input_ids", "attention_mask", "token_type_ids")},
                      opset_version=17)
    graphs = {"ort": fp32, "ort-int8": tmp / "query.int8.onnx", "ort-int8pc7": tmp / "query.int8pc7.onnx",
              "kg-int8": tmp / "query.kg-int8.onnx"}
    quantize_dynamic(str(fp32), str(graphs["ort-int8"]), weight_type=QuantType.QInt8)
    quantize_dynamic(str(fp32), str(graphs["ort-int8pc7"]), weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=True)
    quantize_query_graph(fp32, graphs["kg-int8"])
    return graphs


def network(name: str, threads: int, torch_model, graphs: dict[str, Path]):
    if name == "torch":
        return torch_model
    if name == "torch-int8":
        return torch.ao.quantization.quantize_dynamic(torch_model, {torch.nn.Linear}, dtype=torch.qint8)
    return OrtModel(graphs[name], threads, torch_model.config)


def timed(enc, model, queries: list[str], rows: int, threads: int) -> tuple[np.ndarray, float]:
    """Fixed-shape vectors of `queries` through `model` on `threads` threads, and their wall seconds."""
    from kgnorm.encoders.fixed_shape import TorchCalls, encode_fixed_shape

    enc.model = model
    calls = TorchCalls(enc)
    orig = torch.set_num_threads
    torch.set_num_threads = lambda k: orig(threads)  # fixed_shape pins 1 torch thread; -2t lifts it
    try:
        encode_fixed_shape(calls, queries[:64], rows)  # warm-up
        t0 = time.perf_counter()
        vecs = encode_fixed_shape(calls, queries, rows)
        return vecs, time.perf_counter() - t0
    finally:
        torch.set_num_threads = orig
        orig(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(ap)
    ap.add_argument("--model", required=True)
    ap.add_argument("--queries", type=int, default=20_000, help="mentions of the throughput corpus (distinct texts timed)")
    ap.add_argument("--paths", default="torch-r32,ort-r32,ort-int8-r32,ort-int8pc7-r32,kg-int8-r32")
    args = ap.parse_args()
    from kgnorm.encoders.fixed_shape import TorchCalls, encode_fixed_shape
    from kgnorm.linking.linker import pipeline_from_meta
    from kgnorm.mentions.readers import read_mentions_with_abbreviations
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.registry import load_encoder

    torch.set_num_threads(1)
    tmp = Path(tempfile.mkdtemp(prefix="kgnorm-qrt-"))
    n, _ = corpus(tmp / "m.pubtator", args.queries)
    pipe = pipeline_from_meta(read_model_meta(args.model))
    queries = list(dict.fromkeys(q for m, a in read_mentions_with_abbreviations(tmp / "m.pubtator", "pubtator")
                                 for q in (pipe.prepare(m, a) or [pipe.normalize_name(m.text)])))
    enc = load_encoder(args.model).encoder
    torch_model = enc.model
    graphs = export(torch_model, tmp) if any(p.startswith(("ort", "kg")) for p in args.paths.split(",")) else {}
    rows, ref, loads = [], None, [os.getloadavg()[0]]
    for path in args.paths.split(","):
        name, rows_tag = re.fullmatch(r"(.+?)(?:-r(\d+))?", path).groups()
        rows_per_call = int(rows_tag) if rows_tag else 8
        threads = 2 if name.endswith("-2t") else 1
        name = name.removesuffix("-2t")
        model = network(name, threads, torch_model, graphs)
        vecs, wall = timed(enc, model, queries, rows_per_call, threads)
        enc.model = model
        shuffled = np.random.default_rng(0).permutation(len(queries))  # other neighbours in every call
        again = encode_fixed_shape(TorchCalls(enc), [queries[i] for i in shuffled], rows_per_call)
        stable = bool(np.array_equal(again, vecs[shuffled]))
        ref = vecs if ref is None else ref
        cos = np.sum(vecs * ref, 1) / (np.linalg.norm(vecs, axis=1) * np.linalg.norm(ref, axis=1))
        rows.append(f"| {path} | {threads} | {rows_per_call} | {len(queries) / wall:,.0f} | "
                    f"{float(np.abs(vecs - ref).max()):.2e} | {float(cos.min()):.4f} | {float(cos.mean()):.5f} | "
                    f"{'yes' if stable else 'no'} |")
        print(rows[-1], flush=True)
    enc.model = torch_model
    loads.append(os.getloadavg()[0])
    body = (f"Query encoder of `{args.model}` on the {len(queries):,} distinct normalized query texts of {n:,} "
            "mentions (NCBI-disease + BC5CDR train/dev); encoding only, in one process, after a warm-up call; "
            "the paths in the order listed. ORT = onnxruntime "
            f"{__import__('onnxruntime').__version__ if graphs else '-'} (CPUExecutionProvider). "
            "Paths: script docstring. batch-free: the same vectors when the texts come in another order (other "
            "texts share each call). 1-min load average " + " → ".join(f"{x:.1f}" for x in loads)
            + ". **Shared 2-core machine: compare rows of this section only.**\n\n"
            "| path | threads | rows/call | queries/s | max abs diff vs first | min cosine | mean cosine | batch-free |\n"
            "|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    append("query encoder runtimes: torch vs ONNX Runtime (fp32, int8)", body)


if __name__ == "__main__":
    main()
