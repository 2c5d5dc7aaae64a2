"""How a trained detector's network runs at inference: float32 torch, bfloat16 autocast, or ONNX
Runtime (float32, or int8 dynamic quantization), on how many threads.

The path is chosen from declared facts only (the caller's option, ``KGNORM_NER_PRECISION``, the
CPU flags the kernel reports, whether onnxruntime is installed), never from a timing run, so a
machine's path is known before anything is loaded and a test can force each one. The ONNX exports
(float32, int8) are made once per model content and cached (``<cache>/ner-onnx/<digest>/``: the model
directory may be read-only), never re-exported per run."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kgnorm.errors import KgnormError
from kgnorm.methods.ner.precision import BF16_ENV, PRECISION_ENV, PRECISIONS, resolve_precision
from kgnorm.model_cache import cache_dir as onnx_cache_dir
from kgnorm.model_cache import cached_export, model_digest

__all__ = ["PRECISIONS", "PRECISION_ENV", "BF16_ENV", "resolve_precision", "Emissions", "make_emissions",
           "onnx_cache_dir", "model_digest"]

# The name says how it was quantized: per-channel int8 weights in 7 bits (-64..64). ONNX Runtime's
# u8s8 kernel on CPUs without VNNI (AVX2-only) adds pairs of u8 x s8 products in 16 bits and
# saturates on full-range weights (2 x 255 x 127 > 32767; emissions off by 6.1 where VNNI gave 0.3);
# in 7 bits the pair stays under 2 x 255 x 64 = 32640, so every kernel (AVX2, AVX512-VNNI, AVX-VNNI,
# AMX) computes the same integers. tests/test_ner_runtime.py forces the AVX2 kernel under QEMU.
ONNX_FILE = "emissions.int8-per-channel-7bit.onnx"
ONNX_FP32_FILE = "emissions.fp32.onnx"   # the float32 export the onnx path runs as it is
ONNX_PATHS = ("onnx", "int8")             # the paths that run an ONNX Runtime session


@dataclass
class Emissions:
    """The network's emissions for a padded batch, on the chosen path. `__call__` returns float32
    emissions (batch, tokens, tags)."""

    net: Any
    precision: str = "fp32"
    session: Any = None          # the ONNX Runtime session (onnx, int8)

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 match_tags: torch.Tensor | None) -> torch.Tensor:
        if self.session is not None:
            feed = {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()}
            if self.net.match is not None:
                feed["match_tags"] = (match_tags if match_tags is not None else torch.zeros_like(input_ids)).numpy()
            return torch.from_numpy(self.session.run(None, feed)[0]).float()
        with torch.autocast(input_ids.device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16"):
            em = self.net.emissions(input_ids, attention_mask, match_tags)
        return em.float()


def make_emissions(net: Any, precision: str, model_dir: str | Path | None = None,
                   threads: int | None = None) -> Emissions:
    """The emissions callable of `net` for a concrete `precision` (resolve_precision's result).
    onnx and int8 need onnxruntime and onnx (the ``onnx`` extra) and the model directory (its digest
    keys the cached export); `threads`: ONNX Runtime's intra-op threads (default: torch's)."""
    if precision in ("fp32", "bf16"):
        return Emissions(net, precision)
    if precision not in ONNX_PATHS:
        raise KgnormError(f"unknown detector precision {precision!r}; use one of {', '.join(PRECISIONS)}")
    try:
        import onnxruntime as ort
    except ImportError:
        raise KgnormError(f"--ner-precision {precision} needs onnxruntime and onnx (pip install 'kgnorm[onnx]')") from None
    if model_dir is None:
        raise KgnormError(f"the {precision} detector path needs the model directory (its export is cached by content)")
    path = int8_export(net, model_dir) if precision == "int8" else fp32_export(net, model_dir)
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads or torch.get_num_threads())
    so.inter_op_num_threads = 1
    return Emissions(net, precision, ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]))


class _Traced(torch.nn.Module):
    """NerNet.emissions with positional tensors (what the ONNX exporter traces)."""

    def __init__(self, net: Any) -> None:
        super().__init__()
        self.net = net

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                match_tags: torch.Tensor | None = None) -> torch.Tensor:
        return self.net.emissions(input_ids, attention_mask, match_tags)


def _export_fp32(net: Any, out: Path) -> None:
    """`net`'s emissions as a float32 ONNX graph at `out` (batch and tokens dynamic)."""
    names = ["input_ids", "attention_mask"] + (["match_tags"] if net.match is not None else [])
    ids = torch.ones((2, 8), dtype=torch.long)
    args = tuple([ids, torch.ones_like(ids)] + ([torch.zeros_like(ids)] if net.match is not None else []))
    was_training = net.training
    net.eval()
    try:
        with warnings.catch_warnings():   # the tracer's notes on Hugging Face's mask code: not the user's concern
            warnings.simplefilter("ignore")
            torch.onnx.export(_Traced(net), args, str(out), dynamo=False, input_names=names,
                              output_names=["emissions"], opset_version=17,
                              dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "emissions"]})
    finally:
        net.train(was_training)


def fp32_export(net: Any, model_dir: str | Path) -> Path:
    """The cached float32 ONNX export of `net` (exported and renamed into place once)."""
    return cached_export("ner-onnx", model_digest(model_dir), (ONNX_FP32_FILE,),
                         lambda tmp: _export_fp32(net, tmp / ONNX_FP32_FILE)) / ONNX_FP32_FILE


def int8_export(net: Any, model_dir: str | Path) -> Path:
    """The cached int8 ONNX export of `net` (exported, quantized and renamed into place once)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def make(tmp: Path) -> None:
        _export_fp32(net, tmp / "emissions.onnx")
        quantize_dynamic(str(tmp / "emissions.onnx"), str(tmp / ONNX_FILE), weight_type=QuantType.QInt8,
                         per_channel=True, reduce_range=True)

    return cached_export("ner-onnx", model_digest(model_dir), (ONNX_FILE,), make) / ONNX_FILE
