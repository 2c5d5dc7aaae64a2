"""The BioSyn query encoder at inference: torch (the current path) against ONNX Runtime fp32 and
int8 (dynamic quantization), torch int8 (dynamic quantization), and 2 intra-op threads; speed on
the distinct mention texts of the throughput corpus, vector drift, and NCBI-disease dev Acc@1.

    python benchmarks/query_runtime.py --model DIR [--queries N] [--paths torch,ort,...]

Every path runs kgnorm's fixed-shape query encoding (kgnorm.encoders.fixed_shape: same-length
calls of exactly 8 rows, or `-rN`: N rows, e.g. `-r1`, or `-r32` as `link` calls): only the
network's forward call is swapped. "ranks = torch" counts dev mentions whose top-5 concept list
equals the torch path's. Dev only (no test split). Needs `pip install onnxruntime onnx` for the
ORT paths. Figures go to benchmarks/LOG.md.
"""
from __future__ import annotations

import argparse
import io
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


def export(model, tmp: Path) -> tuple[Path, Path]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    ids = torch.ones((8, 6), dtype=torch.long)
    fp32 = tmp / "query.onnx"
    torch.onnx.export(_Hidden(model).eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(fp32), dynamo=False,
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["hidden"],
                      dynamic_axes={n: {0: "b", 1: "t"} for n in ("input_ids", "attention_mask", "token_type_ids")},
                      opset_version=17)
    int8 = tmp / "query.int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    return fp32, int8


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(ap)
    ap.add_argument("--model", required=True)
    ap.add_argument("--queries", type=int, default=20_000, help="mentions of the throughput corpus (distinct texts timed)")
    ap.add_argument("--paths", default="torch,torch-2t,torch-int8-r1,ort,ort-2t,ort-int8,ort-int8-r1")
    args = ap.parse_args()
    import kgnorm.encoders.fixed_shape as fs
    import kgnorm.methods.biosyn.model as bm
    from kgnorm.jobs.evaluate import evaluate_model
    from kgnorm.jobs.link import link_mentions
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
    fp32 = int8 = None
    real_encode = fs.encode_fixed_shape
    dev = args.data / DEV
    rows, ref_vecs, ref_ranks = [], None, None
    for path in args.paths.split(","):
        name, rows_tag = re.fullmatch(r"(.+?)(?:-r(\d+))?", path).groups()
        rows_per_call = int(rows_tag) if rows_tag else fs.ROWS
        threads = 2 if name.endswith("-2t") else 1
        name = name.removesuffix("-2t")
        if name.startswith("ort") and fp32 is None:
            fp32, int8 = export(torch_model, tmp)
        model = {"torch": lambda: torch_model,
                 "torch-int8": lambda: torch.ao.quantization.quantize_dynamic(torch_model, {torch.nn.Linear},
                                                                             dtype=torch.qint8),
                 "ort": lambda: OrtModel(fp32, threads, torch_model.config),
                 "ort-int8": lambda: OrtModel(int8, threads, torch_model.config)}[name]()
        enc.model = model

        def encode(encoder, texts, rows=rows_per_call, threads=threads, model=model):
            encoder.model = model  # a model opened by eval/link gets this path's network
            torch.set_num_threads(threads)  # fixed_shape pins 1 torch thread; -2t lifts it for torch
            if threads == 1:
                return real_encode(encoder, texts, rows=rows)
            orig = torch.set_num_threads
            torch.set_num_threads = lambda k: orig(threads)
            try:
                return real_encode(encoder, texts, rows=rows)
            finally:
                torch.set_num_threads = orig
                orig(1)

        bm.encode_fixed_shape = encode
        encode(enc, queries[:64])  # warm-up
        t0 = time.perf_counter()
        vecs = encode(enc, queries)
        wall = time.perf_counter() - t0
        ref_vecs = vecs if ref_vecs is None else ref_vecs
        drift = float(np.abs(vecs - ref_vecs).max())
        cos = float(np.min(np.sum(vecs * ref_vecs, 1) / (np.linalg.norm(vecs, axis=1) * np.linalg.norm(ref_vecs, axis=1))))
        rep = evaluate_model(args.model, dev)
        acc1 = rep["full"]["acc1"]
        out = io.StringIO()
        link_mentions(args.model, dev, write=False, output=out, progress=False, top_k=5)
        ranks = [line.split("\t")[3] for line in out.getvalue().splitlines()[1:]]
        ref_ranks = ranks if ref_ranks is None else ref_ranks
        same = sum(a == b for a, b in zip(ranks, ref_ranks)) / max(1, len(ranks))
        rows.append(f"| {path} | {threads} | {rows_per_call} | {len(queries) / wall:,.0f} | {drift:.2e} | {cos:.6f} "
                    f"| {acc1:.4f} | {same:.4f} |")
        print(rows[-1], flush=True)
    enc.model = torch_model
    body = (f"Query encoder of `{args.model}` on the {len(queries):,} distinct normalized query texts of {n:,} "
            "mentions (NCBI-disease + BC5CDR train/dev); encoding only, in one process, after a warm-up call. "
            f"Dev: {DEV} (Acc@1 by `eval link`'s scorer; ranks = torch: share of TSV rank rows whose concept "
            "equals the first row's path). ORT = onnxruntime "
            f"{__import__('onnxruntime').__version__ if fp32 else '-'} (CPUExecutionProvider), int8 = dynamic "
            "quantization of the Linear/MatMul weights. -r1: 1-row calls (an int8 activation scale is per call: "
            "only 1-row calls keep a query's vector independent of its batch). **Shared, loaded 2-core machine: "
            "compare rows of this section only.**\n\n"
            "| path | threads | rows/call | queries/s | max abs diff vs first | min cosine | dev Acc@1 | ranks = first |\n"
            "|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    append("query encoder runtimes: torch vs ONNX Runtime (fp32, int8)", body)


if __name__ == "__main__":
    main()
