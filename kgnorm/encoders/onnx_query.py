"""A dense query encoder run by ONNX Runtime: what `link` encodes mentions with when the query
engine is ``onnx`` (kgnorm.linking.cpu_features.query_engine), without importing torch or
transformers.

The encoder directory (a Hugging Face BERT/MiniLM) is exported once per content into the cache
(``<cache>/query-onnx/<digest>-<pooling>/``, kgnorm.model_cache): the network with its pooling
(``cls`` or masked ``mean``, L2 normalization where the model has it) as ``query.onnx``, and the
fast tokenizer transformers builds from that directory (its ``tokenizer.json``, or one converted
from ``vocab.txt``) as ``tokenizer.json``, so the run-time tokenizer (the ``tokenizers`` package)
normalizes and splits exactly as the torch path does. Only the export imports torch; a run that
finds the export cached starts in well under a second.

The int8 path (``precision="int8"``; kgnorm.linking.cpu_features.query_path chooses it) runs the
same export quantized by kgnorm.encoders.int8_query (per-channel 7-bit weights in two passes,
activations per token), cached beside it under a name that says how it was quantized, its tensors
in a side file ONNX Runtime maps.

The calls keep kgnorm.encoders.fixed_shape's contract: same-length texts in calls of a fixed number
of rows, on one intra-op thread, so a text's vector does not depend on the rest of its batch (on
the int8 path too: each token's activations are quantized by their own range)."""
from __future__ import annotations

import contextlib
import json
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from kgnorm.encoders.int8_query import INT8_SCHEME, external_data_file
from kgnorm.errors import KgnormError
from kgnorm.model_cache import cached_export, model_digest

__all__ = ["OnnxQueryEncoder", "query_export", "EXPORT_FILES", "GRAPH_FILES", "PRECISIONS"]

EXPORT_FILES = ("tokenizer.json", "query.json", "query.onnx")  # query.onnx last: there means complete
EXPORT_VERSION = 1  # bumped when the exported graph changes for the same model
# the graph each precision runs; the int8 file's name says how it was quantized (kgnorm.encoders.int8_query)
GRAPH_FILES = {"fp32": "query.onnx", "int8": f"query.{INT8_SCHEME}.onnx"}
PRECISIONS = tuple(GRAPH_FILES)


def query_export(encoder_dir: str | Path, pooling: str, normalize: bool, precision: str = "fp32") -> Path:
    """The cached export folder of the encoder in `encoder_dir` with this pooling (made on a miss:
    that run imports torch and transformers); for ``int8`` the folder holding the quantized graph
    too (made from the fp32 export, which is cached on the way)."""
    key = f"{model_digest(encoder_dir)}-{pooling}{'-norm' if normalize else ''}-v{EXPORT_VERSION}"

    def make(tmp: Path) -> None:
        from kgnorm.encoders.dense import DenseEncoder

        export_dense(DenseEncoder(encoder_dir, pooling=pooling, device="cpu", normalize=normalize), tmp)

    folder = cached_export("query-onnx", key, EXPORT_FILES, make)
    if precision == "fp32":
        return folder
    if precision != "int8":
        raise KgnormError(f"the onnx query engine runs {' or '.join(PRECISIONS)}, not {precision!r}")

    def quantize(tmp: Path) -> None:
        from kgnorm.encoders.int8_query import quantize_query_graph

        quantize_query_graph(folder / GRAPH_FILES["fp32"], tmp / GRAPH_FILES["int8"])

    # the graph file last: there means its tensors' side file is there too
    return cached_export("query-onnx", key, (external_data_file(GRAPH_FILES["int8"]), GRAPH_FILES["int8"]), quantize)


def export_dense(encoder, folder: Path) -> None:
    """Write `encoder`'s (a :class:`~kgnorm.encoders.dense.DenseEncoder`) network + pooling as
    ``query.onnx``, its fast tokenizer as ``tokenizer.json`` and what the run needs as ``query.json``."""
    import torch

    tok = encoder.tokenizer
    if not getattr(tok, "is_fast", False):
        raise KgnormError(f"{encoder.path}: the onnx query engine needs a fast tokenizer "
                          "(tokenizer.json or a vocab transformers converts); use KGNORM_QUERY_ENGINE=torch")
    tok.backend_tokenizer.save(str(folder / "tokenizer.json"))
    typed = "token_type_ids" in tok(["a"], padding=False)
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if typed else [])
    ids = torch.full((2, 5), int(tok.cls_token_id or 1), dtype=torch.long)
    args = (ids, torch.ones_like(ids)) + ((torch.zeros_like(ids),) if typed else ())
    model = encoder.model
    was_training = model.training
    model.eval()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shapes taken as constants (no padding here)
            torch.onnx.export(_pooled(encoder), args, str(folder / "query.onnx"), dynamo=False,
                              input_names=names, output_names=["vectors"], opset_version=17,
                              dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names}, "vectors": {0: "batch"}})
    finally:
        model.train(was_training)
    (folder / "query.json").write_text(json.dumps({
        "dim": encoder.dim, "inputs": names, "truncation_side": getattr(tok, "truncation_side", "right"),
        "source": str(encoder.path)}, indent=1), encoding="utf-8")


def _pooled(encoder):
    """Network + pooling of `encoder` as a module of positional tensors (what the exporter traces)."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = encoder.model

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
            return encoder.pool(hidden.float(), attention_mask)

    return Pooled()


class OnnxQueryEncoder:
    """A fixed-shape query backend (kgnorm.encoders.fixed_shape) over a cached export: ids from the
    ``tokenizers`` package, vectors from one ONNX Runtime session on `threads` intra-op threads,
    running the export's graph of `precision` (fp32 or int8)."""

    overlap_safe = True  # a session's run is thread-safe and needs no process-wide setting

    def __init__(self, folder: str | Path, max_length: int, threads: int = 1, precision: str = "fp32") -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError:
            raise KgnormError("the onnx query engine needs onnxruntime and tokenizers "
                              "(pip install 'kgnorm[onnx]'), or KGNORM_QUERY_ENGINE=torch") from None
        if precision not in GRAPH_FILES:
            raise KgnormError(f"the onnx query engine runs {' or '.join(PRECISIONS)}, not {precision!r}")
        folder = Path(folder)
        self.precision = precision
        info = json.loads((folder / "query.json").read_text(encoding="utf-8"))
        self.folder = folder
        self.dim = int(info["dim"])
        self.inputs = list(info["inputs"])
        self.max_length = int(max_length)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_length, strategy="longest_first",
                                         direction=info.get("truncation_side", "right"))
        so = ort.SessionOptions()
        so.intra_op_num_threads = max(1, int(threads))
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        self.session = ort.InferenceSession(str(folder / GRAPH_FILES[precision]), so, providers=["CPUExecutionProvider"])

    @classmethod
    def for_encoder_dir(cls, encoder_dir: str | Path, pooling: str, max_length: int, normalize: bool,
                        threads: int = 1, precision: str = "fp32") -> OnnxQueryEncoder:
        """The encoder of `encoder_dir` on `precision` (what a linker's ``query_path`` chose)."""
        return cls(query_export(encoder_dir, pooling, normalize, precision), max_length, threads, precision)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def calls_context(self):
        return contextlib.nullcontext()

    def call(self, batch: list[list[int]]) -> np.ndarray:
        ids = np.asarray(batch, dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        return self.session.run(None, feed)[0].astype(np.float32, copy=False)

    def encode(self, texts: Sequence[str], rows: int = 8) -> np.ndarray:
        """float32 vectors of `texts` (fixed-shape calls; what scoring without given vectors uses)."""
        from kgnorm.encoders.fixed_shape import encode_fixed_shape

        return encode_fixed_shape(self, list(texts), rows)
