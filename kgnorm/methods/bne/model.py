"""BNE name encoder (Phan, Sun & Tay 2019, "Robust representation learning of biomedical
names", ACL): the network, its features and its model directory.

Network (:class:`BNE`), per name:

* every token (:func:`kgnorm.encoders.wordvectors.tokenize`) is represented by the concatenation of
  a character BiLSTM's *last* states (final forward state ++ final backward state, 2 x
  ``char_hidden``) and the token's word vector (fastText n-grams give vectors to unseen
  words; with plain vectors an unknown word gets zeros and only its characters speak);
* a word-level BiLSTM runs over the token representations; its outputs are max-pooled over
  the tokens (2 x ``word_hidden``);
* a linear layer maps the pooled vector to the ``out_dim``-dimensional name embedding.

Dropout (0.5) is applied to the token representations and to the pooled vector.
``target_proj`` is the training-only map used by the conceptual and contextual objectives
(see :mod:`kgnorm.methods.bne.objectives`); it is saved with the weights but not used by ``encode``.

Each distinct token of a batch goes through the character BiLSTM once.

:class:`BneModel` wraps the network with its character vocabulary, word vectors, name
dictionary and FAISS index: ``encode(names)`` gives L2-normalized float32 vectors and
``link(queries, top_k)`` returns :class:`kgnorm.linking.candidates.Candidate` lists (score =
cosine similarity) through :class:`kgnorm.linking.name_index.IndexedNamesMixin`. A model directory::

    kgnorm-model.json     method "bne", architecture, hyper-parameters, metrics, versions
    model.safetensors     network weights
    chars.json            character vocabulary (row i = character of embedding i; 0 = pad,
                          1 = unknown)
    wordvectors/          the input word vectors (kgnorm.encoders.wordvectors layout)
    names/                names.tsv, alt_ids.tsv (kgnorm.linking.dictionary)
    index/                names.faiss, index.json (kgnorm.linking.name_index)
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from kgnorm.encoders.wordvectors import WordVectors, tokenize
from kgnorm.errors import KgnormError
from kgnorm.linking.dictionary import NameDictionary, as_name_dictionary, concept_names
from kgnorm.linking.name_index import IndexedNamesMixin
from kgnorm.progress import progress_bar

# as_name_dictionary and concept_names live in kgnorm.linking (shared with DILBERT); they stay
# importable from here for the callers that still do
__all__ = ["BNE", "BneModel", "load_bne", "build_char_vocab",
           "as_name_dictionary", "concept_names", "WEIGHTS", "CHARS", "WORDVECTORS"]

WEIGHTS = "model.safetensors"
CHARS = "chars.json"
WORDVECTORS = "wordvectors"
PAD, UNK = 0, 1
_RESERVED = ["<pad>", "<unk>"]


def build_char_vocab(names: Iterable[str], min_count: int = 1) -> list[str]:
    """Characters of the tokens of ``names`` (sorted), after ``<pad>`` and ``<unk>``."""
    counts: dict[str, int] = {}
    for n in names:
        for tok in tokenize(n):
            for ch in tok:
                counts[ch] = counts.get(ch, 0) + 1
    return _RESERVED + sorted(c for c, k in counts.items() if k >= int(min_count))


# ---------------------------------------------------------------------- network
class BNE(nn.Module):
    """char BiLSTM (last states) ++ word vector -> word BiLSTM (max pool) -> linear."""

    def __init__(self, n_chars: int, word_dim: int, char_dim: int = 50, char_hidden: int = 200,
                 word_hidden: int = 200, out_dim: int = 200, dropout: float = 0.5,
                 target_dim: int | None = None) -> None:
        super().__init__()
        self.n_chars, self.word_dim = int(n_chars), int(word_dim)
        self.char_dim, self.char_hidden = int(char_dim), int(char_hidden)
        self.word_hidden, self.out_dim = int(word_hidden), int(out_dim)
        self.dropout_p = float(dropout)
        self.char_emb = nn.Embedding(self.n_chars, self.char_dim, padding_idx=PAD)
        self.char_lstm = nn.LSTM(self.char_dim, self.char_hidden, batch_first=True,
                                 bidirectional=True)
        self.word_lstm = nn.LSTM(2 * self.char_hidden + self.word_dim, self.word_hidden,
                                 batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(self.dropout_p)
        self.out = nn.Linear(2 * self.word_hidden, self.out_dim)
        # training-only: maps a name embedding into the word-vector space of q(s)/g(c)
        self.target_dim = None if target_dim is None else int(target_dim)
        self.target_proj = (nn.Linear(self.out_dim, self.target_dim, bias=False)
                            if self.target_dim is not None else None)

    def architecture(self) -> dict:
        return {"n_chars": self.n_chars, "word_dim": self.word_dim, "char_dim": self.char_dim,
                "char_hidden": self.char_hidden, "word_hidden": self.word_hidden,
                "out_dim": self.out_dim, "dropout": self.dropout_p,
                "target_dim": self.target_dim}

    def token_reps(self, char_ids: torch.Tensor, char_lens: torch.Tensor,
                   word_vecs: torch.Tensor) -> torch.Tensor:
        """``[U, 2 char_hidden + word_dim]``: char BiLSTM last states ++ word vectors."""
        emb = self.char_emb(char_ids)
        packed = pack_padded_sequence(emb, char_lens.cpu(), batch_first=True,
                                      enforce_sorted=False)
        _, (h, _) = self.char_lstm(packed)          # h: [2, U, H]
        return torch.cat([h[0], h[1], word_vecs], dim=1)

    def forward(self, char_ids: torch.Tensor, char_lens: torch.Tensor, word_vecs: torch.Tensor,
                name_tokens: torch.Tensor, name_lens: torch.Tensor) -> torch.Tensor:
        """Name embeddings ``[B, out_dim]``.

        ``char_ids [U, L]`` / ``char_lens [U]`` / ``word_vecs [U, word_dim]`` describe the
        distinct tokens of the batch; ``name_tokens [B, T]`` holds, per name, the row of
        each of its tokens (``-1`` = padding) and ``name_lens [B]`` the token counts (>= 1).
        """
        tok = self.dropout(self.token_reps(char_ids, char_lens, word_vecs))
        tok = torch.cat([tok, tok.new_zeros(1, tok.shape[1])], dim=0)   # row U = padding
        idx = name_tokens.clone()
        idx[idx < 0] = tok.shape[0] - 1
        seq = tok[idx]                                                  # [B, T, D]
        packed = pack_padded_sequence(seq, name_lens.cpu(), batch_first=True,
                                      enforce_sorted=False)
        out, _ = self.word_lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=seq.shape[1])
        mask = (torch.arange(seq.shape[1], device=out.device)[None, :]
                < name_lens.to(out.device)[:, None])
        pooled = out.masked_fill(~mask[:, :, None], float("-inf")).max(dim=1).values
        return self.out(self.dropout(pooled))


# ---------------------------------------------------------------------- model
class BneModel(IndexedNamesMixin):
    """A :class:`BNE` network with its character vocabulary and word vectors."""

    def __init__(self, net: BNE, word_vectors: WordVectors, chars: Sequence[str],
                 dictionary: NameDictionary | None = None, max_word_len: int = 30,
                 device: str | torch.device | None = None, meta: dict | None = None,
                 index_kind: str = "flat", index_fp16: bool = False) -> None:
        if word_vectors.dim != net.word_dim:
            raise KgnormError(f"word vectors have {word_vectors.dim} dimensions, the network "
                              f"expects {net.word_dim}")
        if len(chars) != net.n_chars:
            raise KgnormError(f"character vocabulary has {len(chars)} entries, the network "
                              f"{net.n_chars}")
        self.net = net
        self.word_vectors = word_vectors
        self.chars = list(chars)
        self.char_index = {c: i for i, c in enumerate(self.chars) if i >= len(_RESERVED)}
        self.max_word_len = int(max_word_len)
        self.device = torch.device(device or "cpu")
        self.net.to(self.device)
        self.meta = dict(meta or {})
        self.index_kind, self.index_fp16 = index_kind, bool(index_fp16)
        self.dictionary = None
        self.index = None
        if dictionary is not None:
            self.set_dictionary(dictionary)

    @property
    def dim(self) -> int:
        return self.net.out_dim

    # ------------------------------------------------------------------ features
    def featurize(self, names: Sequence[str]) -> dict[str, torch.Tensor]:
        """Tensors for :meth:`BNE.forward`; a name without tokens gets one empty token
        (an unknown character and a zero word vector)."""
        tok_row: dict[str, int] = {}
        rows: list[list[int]] = []
        for name in names:
            toks = tokenize(name) or [""]
            r = []
            for t in toks:
                j = tok_row.get(t)
                if j is None:
                    j = tok_row[t] = len(tok_row)
                r.append(j)
            rows.append(r)
        tokens = list(tok_row)
        L = max(1, min(self.max_word_len, max((len(t) for t in tokens), default=1)))
        char_ids = np.zeros((len(tokens), L), np.int64)
        char_lens = np.ones(len(tokens), np.int64)
        wvec = np.zeros((len(tokens), self.net.word_dim), np.float32)
        for j, t in enumerate(tokens):
            cs = t[:self.max_word_len]
            if cs:
                char_ids[j, :len(cs)] = [self.char_index.get(c, UNK) for c in cs]
                char_lens[j] = len(cs)
                v = self.word_vectors.word_vector(t)
                if v is not None:
                    wvec[j] = v
            else:
                char_ids[j, 0] = UNK
        T = max(len(r) for r in rows) if rows else 1
        name_tokens = np.full((len(rows), T), -1, np.int64)
        for i, r in enumerate(rows):
            name_tokens[i, :len(r)] = r
        dev = self.device
        return {"char_ids": torch.from_numpy(char_ids).to(dev),
                "char_lens": torch.from_numpy(char_lens),
                "word_vecs": torch.from_numpy(wvec).to(dev),
                "name_tokens": torch.from_numpy(name_tokens).to(dev),
                "name_lens": torch.tensor([len(r) for r in rows], dtype=torch.long)}

    def embed(self, names: Sequence[str]) -> torch.Tensor:
        """Raw (unnormalized) embeddings with autograd, in the network's current mode."""
        if len(names) == 0:
            return torch.zeros(0, self.dim, device=self.device)
        return self.net(**self.featurize(names))

    def encode(self, names: Sequence[str], batch_size: int = 512, normalize: bool = True,
               progress: bool = False, desc: str = "encode") -> np.ndarray:
        """float32 ``[len(names), out_dim]``, L2-normalized unless ``normalize=False``;
        batches sorted by token count, order restored, eval mode, no autograd."""
        if isinstance(names, str):
            raise KgnormError("encode expects a sequence of strings, not one string")
        names = list(names)
        out = np.zeros((len(names), self.dim), np.float32)
        if not names:
            return out
        lengths = np.fromiter((len(tokenize(n)) for n in names), np.int64, len(names))
        order = np.argsort(-lengths, kind="stable")
        was = self.net.training
        self.net.eval()
        bar = progress_bar(total=len(names), desc=desc, unit="name") if progress else None
        try:
            with torch.inference_mode():
                for s in range(0, len(names), int(batch_size)):
                    sel = order[s:s + int(batch_size)]
                    v = self.net(**self.featurize([names[i] for i in sel]))
                    if normalize:
                        v = torch.nn.functional.normalize(v, dim=-1)
                    out[sel] = v.float().cpu().numpy()
                    if bar is not None:
                        bar.update(len(sel))
        finally:
            if bar is not None:
                bar.close()
            if was:
                self.net.train()
        return out

    __call__ = encode

    # ------------------------------------------------------------------ files
    def save(self, directory: str | Path, hyper_parameters: dict | None = None,
             metrics: dict | None = None, ontology: dict | None = None,
             extra: dict | None = None) -> Path:
        """Write a model directory (see the module docstring); builds the index if needed."""
        from safetensors.torch import save_file

        from kgnorm.methods.model_dir import save_names_and_index

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.net.state_dict().items()}
        tmp = d / (WEIGHTS + ".tmp")
        save_file(state, str(tmp))
        os.replace(tmp, d / WEIGHTS)
        (d / CHARS).write_text(json.dumps(self.chars, ensure_ascii=False), encoding="utf-8")
        self.word_vectors.save(d / WORDVECTORS)
        own: dict[str, Any] = {
            "method": "bne",
            "encoder": {"kind": "bne", "dim": self.dim, "normalize": True,
                        "score": "cosine"},
            "architecture": {**self.net.architecture(), "max_word_len": self.max_word_len},
            "weights": WEIGHTS, "chars": CHARS, "word_vectors": WORDVECTORS,
            "word_vectors_info": {"kind": self.word_vectors.kind, "dim": self.word_vectors.dim,
                                  "words": len(self.word_vectors.kv.index_to_key),
                                  "source": self.word_vectors.source},
        }
        self.meta = save_names_and_index(self, d, own, hyper_parameters, ontology, metrics, extra)
        return d


def load_bne(directory: str | os.PathLike, device: str | None = None,
             use_gpu: bool | str = "auto") -> BneModel:
    """Load a BNE model directory written by :meth:`BneModel.save`."""
    from safetensors.torch import load_file

    from kgnorm.methods.model_dir import load_names_and_index, read_model_meta

    d = Path(directory)
    meta = read_model_meta(d, "bne")
    arch = dict(meta.get("architecture", {}))
    try:
        chars = json.loads((d / meta.get("chars", CHARS)).read_text(encoding="utf-8"))
        net = BNE(int(arch["n_chars"]), int(arch["word_dim"]), int(arch["char_dim"]),
                  int(arch["char_hidden"]), int(arch["word_hidden"]), int(arch["out_dim"]),
                  float(arch.get("dropout", 0.5)), arch.get("target_dim"))
        net.load_state_dict(load_file(str(d / meta.get("weights", WEIGHTS))))
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise KgnormError(f"{d}: cannot load the BNE network: {type(e).__name__}: {e}") from None
    wv = WordVectors.load(d / meta.get("word_vectors", WORDVECTORS))
    dictionary, index = load_names_and_index(d, meta, use_gpu)
    if index.dim != net.out_dim:
        raise KgnormError(f"{d}: index dimension {index.dim} != network output {net.out_dim}")
    model = BneModel(net, wv, chars, dictionary, max_word_len=int(arch.get("max_word_len", 30)),
                     device=device, meta=meta, index_kind=index.kind, index_fp16=index.fp16)
    model.index = index
    model.net.eval()
    return model
