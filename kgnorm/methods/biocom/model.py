"""BioCoM's mention encoder: a transformer reading the sentence with the mention between
``[ENT]`` and ``[/ENT]``; the mention vector is the last hidden state at ``[ENT]``.

Any local Hugging Face encoder directory works (BERT-like: ``AutoModel`` + ``AutoTokenizer``).
The two markers are added to the tokenizer as special tokens (never split or lowercased) and
the input embeddings are resized (new rows start at the mean of the old ones, the
transformers default). A directory saved by :meth:`BiocomEncoder.save` already holds them.

Long sentences: the text is cut to ``window_chars`` characters on each side of the mention
before tokenization (the tokenizer then truncates at ``max_length``); a row whose ``[ENT]``
still falls past ``max_length`` is retried with the mention alone, so every row has its
marker. A name is encoded as a sentence made of the name alone: ``[ENT] name [/ENT]``.
The device defaults to CUDA when available, else CPU.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from kgnorm.errors import KgnormError

__all__ = ["ENT", "END_ENT", "MARKERS", "BiocomEncoder", "mark", "locate"]

ENT = "[ENT]"
END_ENT = "[/ENT]"
MARKERS = (ENT, END_ENT)

Item = tuple[str, int, int]   # (sentence, start, end): the mention is sentence[start:end]


def mark(sentence: str, start: int, end: int, window_chars: int | None = None) -> str:
    """The sentence with ``[ENT] `` / `` [/ENT]`` around [start, end), cut to `window_chars`
    characters of context on each side (at a space when there is one)."""
    if not 0 <= start <= end <= len(sentence):
        raise KgnormError(f"mention span {start}-{end} outside its sentence "
                          f"(length {len(sentence)})")
    left, mention, right = sentence[:start], sentence[start:end], sentence[end:]
    if window_chars is not None:
        if len(left) > window_chars:
            left = left[-window_chars:]
            cut = left.find(" ")
            if 0 <= cut < len(left) - 1:
                left = left[cut + 1:]
        if len(right) > window_chars:
            right = right[:window_chars]
            cut = right.rfind(" ")
            if cut > 0:
                right = right[:cut]
    return f"{left}{ENT} {mention} {END_ENT}{right}"


def locate(mention: str, context: str | None) -> Item:
    """(sentence, start, end) for a mention given with its context: the first exact, then
    case-insensitive occurrence; a mention not found in its context (or no context) becomes
    its own sentence."""
    if context:
        i = context.find(mention)
        if i < 0:
            i = context.lower().find(mention.lower())
            if len(context.lower()) != len(context):
                i = -1  # lowercasing changed offsets; do not trust them
        if i >= 0 and mention:
            return context, i, i + len(mention)
    return mention, 0, len(mention)


def _local_dir(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_dir():
        raise KgnormError(f"encoder directory not found: {p} (models load from local "
                          "directories only)")
    return p


class BiocomEncoder:
    """Tokenizer + transformer with the BioCoM markers; vectors at ``[ENT]``."""

    def __init__(self, path: str | Path, *, max_length: int = 128, window_chars: int = 200,
                 device: str | torch.device | None = None) -> None:
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        p = _local_dir(path)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            try:
                self.tokenizer = AutoTokenizer.from_pretrained(str(p), local_files_only=True)
                self.model = AutoModel.from_pretrained(str(p), local_files_only=True)
            except (OSError, ValueError) as exc:
                raise KgnormError(f"cannot load a Hugging Face encoder from {p}: "
                                  f"{exc}") from None
            self.source = str(p)
            missing = [t for t in MARKERS if t not in self.tokenizer.get_vocab()]
            if missing:
                self.tokenizer.add_tokens(list(MARKERS), special_tokens=True)
            if self.model.get_input_embeddings().num_embeddings < len(self.tokenizer):
                # new rows drawn around the mean of the old ones (transformers' default)
                self.model.resize_token_embeddings(len(self.tokenizer))
        finally:
            hf_logging.set_verbosity(verbosity)
        self.ent_id = int(self.tokenizer.convert_tokens_to_ids(ENT))
        self.end_id = int(self.tokenizer.convert_tokens_to_ids(END_ENT))
        model_max = getattr(self.model.config, "max_position_embeddings", None) or max_length
        self.max_length = int(min(max_length, model_max))
        self.window_chars = int(window_chars)
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.model.to(self.device)

    # ------------------------------------------------------------------ properties
    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def train(self, mode: bool = True) -> BiocomEncoder:
        self.model.train(mode)
        return self

    def eval(self) -> BiocomEncoder:
        return self.train(False)

    def parameters(self):
        return self.model.parameters()

    # ------------------------------------------------------------------ tokenization
    def tokenize(self, items: Sequence[Item]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Batch tensors (on the encoder's device) and the ``[ENT]`` position of each row."""
        texts = [mark(s, a, b, self.window_chars) for s, a, b in items]
        enc = self.tokenizer(texts, padding=True, truncation=True,
                             max_length=self.max_length, return_tensors="pt")
        ids = enc["input_ids"]
        has = (ids == self.ent_id).any(dim=1)
        if not bool(has.all()):
            for r in torch.nonzero(~has).flatten().tolist():
                s, a, b = items[r]
                texts[r] = mark(s[a:b], 0, b - a)
            enc = self.tokenizer(texts, padding=True, truncation=True,
                                 max_length=self.max_length, return_tensors="pt")
            ids = enc["input_ids"]
            has = (ids == self.ent_id).any(dim=1)
            if not bool(has.all()):
                raise KgnormError(f"max_length {self.max_length} is too short to hold the "
                                  "[ENT] marker of a mention")
        pos = (ids == self.ent_id).int().argmax(dim=1)
        batch = {k: v.to(self.device) for k, v in enc.items()
                 if k in ("input_ids", "attention_mask", "token_type_ids")}
        return batch, pos.to(self.device)

    # ------------------------------------------------------------------ encoding
    def forward(self, items: Sequence[Item]) -> torch.Tensor:
        """[ENT] hidden states (not normalised), with gradients: the training path."""
        batch, pos = self.tokenize(items)
        hidden = self.model(**batch).last_hidden_state
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), pos]

    __call__ = forward

    @torch.no_grad()
    def embed(self, items: Sequence[Item], batch_size: int = 64,
              progress: str | None = None) -> np.ndarray:
        """L2-normalised float32 vectors, one per (sentence, start, end), in input order.

        Rows are encoded shortest first (less padding) and put back in order."""
        from kgnorm.progress import progress_bar

        n = len(items)
        out = np.zeros((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        was_training = self.model.training
        self.model.eval()
        order = sorted(range(n), key=lambda i: len(items[i][0]))
        bar = progress_bar(total=n, desc=progress or "encode", unit="mention")
        try:
            for s in range(0, n, batch_size):
                idx = order[s:s + batch_size]
                vec = self.forward([items[i] for i in idx])
                vec = torch.nn.functional.normalize(vec.float(), dim=-1)
                out[idx] = vec.cpu().numpy()
                bar.update(len(idx))
        finally:
            bar.close()
            self.model.train(was_training)
        return out

    def encode(self, names: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Vectors of names, each alone inside the markers: ``[ENT] name [/ENT]``."""
        return self.embed([(n, 0, len(n)) for n in names], batch_size)

    # ------------------------------------------------------------------ saving
    def save(self, directory: str | Path) -> None:
        """save_pretrained of weights (safetensors) and tokenizer (markers included)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(d), safe_serialization=True)
        self.tokenizer.save_pretrained(str(d))
