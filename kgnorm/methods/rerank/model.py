"""The cross-encoder: (mention in its sentence, candidate name) -> one relevance score.

Why a cross-encoder: a bi-encoder (BioSyn) embeds mention and name apart; reading them together
is the standard second stage of entity linking (BLINK, KRISSBERT), so it reranks the linker's
top-k. Any Hugging Face encoder directory works; a one-output sequence-classification head sits
on it (transformers' ``AutoModelForSequenceClassification``, ``num_labels=1``).

Scores of repeated (mention input, name) pairs come from a cache: a corpus repeats its mentions
("SJS" eight times in one abstract), and the candidates of one mention repeat across its parts.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from kgnorm.errors import KgnormError

__all__ = ["CrossScorer", "mention_input", "WEIGHTS_DIR", "CACHE_SIZE"]

WEIGHTS_DIR = "cross_encoder"
CACHE_SIZE = 200_000


def mention_input(query: str, context: str = "") -> str:
    """The first segment: the normalized query, then its sentence when the input has one (the
    query comes first so that truncation cuts the sentence, never the mention)."""
    return f"{query} [SEP] {context}" if context and context.strip() else query


class CrossScorer:
    """A sequence-pair model with a scalar head, its tokenizer, and the score cache."""

    def __init__(self, model, tokenizer, max_length: int = 64) -> None:
        self.model, self.tokenizer, self.max_length = model, tokenizer, int(max_length)
        self._cache: dict[tuple[str, str], float] = {}
        self.cache_hits = 0

    @classmethod
    def create(cls, encoder: str | Path | None = None, max_length: int = 64) -> CrossScorer:
        """A fresh head on ``encoder`` (default: the offline MiniLM)."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from kgnorm.encoders.dense import default_encoder_path

        path = Path(encoder) if encoder is not None else default_encoder_path()
        if not (path / "config.json").is_file():
            raise KgnormError(f"{path}: not a Hugging Face model directory (no config.json)")
        from transformers.utils import logging as hf_logging
        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # "some weights newly initialized": the head, on purpose
        try:
            model = AutoModelForSequenceClassification.from_pretrained(str(path), num_labels=1)
        finally:
            hf_logging.set_verbosity(level)
        return cls(model, AutoTokenizer.from_pretrained(str(path)), max_length)

    @classmethod
    def load(cls, model_dir: str | Path, max_length: int = 64) -> CrossScorer:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        path = Path(model_dir) / WEIGHTS_DIR
        if not path.is_dir():
            raise KgnormError(f"{model_dir}: no {WEIGHTS_DIR}/ (not a trained reranker)")
        model = AutoModelForSequenceClassification.from_pretrained(str(path))
        model.eval()
        return cls(model, AutoTokenizer.from_pretrained(str(path)), max_length)

    def save(self, model_dir: str | Path) -> None:
        path = Path(model_dir) / WEIGHTS_DIR
        self.model.save_pretrained(str(path), safe_serialization=True)
        self.tokenizer.save_pretrained(str(path))

    def forward(self, firsts: Sequence[str], names: Sequence[str]) -> torch.Tensor:
        """Scores with gradients (training): one per (first segment, name) pair."""
        enc = self.tokenizer(list(firsts), list(names), padding=True, truncation="only_first",
                             max_length=self.max_length, return_tensors="pt")
        return self.model(**enc).logits.squeeze(-1)

    def clear_cache(self) -> None:
        self._cache.clear()

    @torch.no_grad()
    def score(self, firsts: Sequence[str], names: Sequence[str], batch_size: int = 128) -> list[float]:
        """Scores without gradients, cached by (first segment, name)."""
        keys = list(zip(firsts, names))
        todo = list(dict.fromkeys(k for k in keys if k not in self._cache))
        self.cache_hits += len(keys) - len(todo)
        was_training = self.model.training
        self.model.eval()
        if len(self._cache) + len(todo) > CACHE_SIZE:
            self._cache.clear()
        todo.sort(key=lambda k: len(k[0]) + len(k[1]))  # similar lengths share a batch: less padding
        for i in range(0, len(todo), batch_size):
            chunk = todo[i:i + batch_size]
            out = self.forward([a for a, _ in chunk], [b for _, b in chunk]).tolist()
            self._cache.update(zip(chunk, out))
        if was_training:
            self.model.train()
        return [self._cache[k] for k in keys]
