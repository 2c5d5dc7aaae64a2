"""Word vectors for name encoders: train gensim FastText on ontology text, derive static
vectors from a transformer encoder, or load a user's fastText ``.bin`` / word2vec ``.vec``
file; average them over the tokens of a name.

Encoder-derived vectors (:meth:`WordVectors.from_encoder`) stand in for pretrained biomedical
word embeddings, which cannot be downloaded here: every word of the ontology's text is
encoded alone by a transformer (mean pooling over its word pieces) -- a "decontextualized"
static embedding. On MEDIC their average ranks synonyms far better than fastText trained on
MEDIC's own 217k name tokens (benchmarks/LOG.md).

Model-directory layout (no pickles, arrays saved with ``allow_pickle=False``)::

    <dir>/meta.json      {"format": "kgnorm-wordvectors", "kind": "fasttext"|"plain", ...}
    <dir>/vocab.txt      one word per line, row order of vectors.npy
    <dir>/vectors.npy    (vocab, dim) float32 word vectors
    <dir>/ngrams.npy     (bucket, dim) float32 subword vectors (fastText only)

Out-of-vocabulary words get a vector from their character n-grams for fastText vectors; for
plain (``.vec``) vectors they are unknown: they are left out of a name's mean (a name with
only unknown words gets a zero vector) and counted in :attr:`WordVectors.last_unknown`.
"""
from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from kgnorm.errors import KgnormError

__all__ = ["tokenize", "WordVectors", "FastTextConfig", "train_word_vectors"]

_TOKEN = re.compile(r"[^\W_]+")
FORMAT = "kgnorm-wordvectors"


def tokenize(text: str) -> list[str]:
    """Lowercase and split on anything that is not a letter or digit (``_`` included)."""
    return _TOKEN.findall(str(text).lower())


class FastTextConfig:
    """Training defaults, chosen so that HPO's text (names, synonyms and definitions: 58k
    texts, 0.52M tokens) trains in ~25 s on 2 cores: skip-gram, 100 dimensions, 5 epochs,
    3-6 character n-grams hashed into 200k buckets (80 MB of float32; gensim's default of
    2M buckets would be 800 MB). With ``workers > 1`` gensim is not bit-reproducible; use
    ``workers=1`` for identical vectors from the same seed."""

    def __init__(self, dim: int = 100, epochs: int = 5, window: int = 5, min_count: int = 1,
                 min_n: int = 3, max_n: int = 6, bucket: int = 200_000, sg: int = 1,
                 negative: int = 5, workers: int = 2, seed: int = 0) -> None:
        self.dim, self.epochs, self.window, self.min_count = dim, epochs, window, min_count
        self.min_n, self.max_n, self.bucket, self.sg = min_n, max_n, bucket, sg
        self.negative, self.workers, self.seed = negative, workers, seed

    def as_dict(self) -> dict:
        return dict(vars(self))


class WordVectors:
    """A thin wrapper over gensim ``KeyedVectors`` / ``FastTextKeyedVectors``."""

    def __init__(self, kv, kind: str, source: str = "", info: dict | None = None) -> None:
        self.kv = kv
        self.kind = kind  # "fasttext" (subwords) or "plain"
        self.source = source
        self.info = dict(info or {})
        self.last_unknown = 0
        self._cache: dict[str, np.ndarray | None] = {}

    # ------------------------------------------------------------------ constructors
    @classmethod
    def train(cls, texts: Iterable[str], config: FastTextConfig | None = None,
              **overrides) -> "WordVectors":
        """Train FastText (with subwords) on ``texts`` (names, synonyms, definitions...)."""
        from gensim.models import FastText

        cfg = config or FastTextConfig()
        for k, v in overrides.items():
            if not hasattr(cfg, k):
                raise KgnormError(f"unknown fastText option {k!r}")
            setattr(cfg, k, v)
        sentences = [t for t in (tokenize(x) for x in texts if x) if t]
        if not sentences:
            raise KgnormError("no text to train word vectors on")
        t0 = time.perf_counter()
        logging.getLogger("gensim").setLevel(logging.WARNING)
        model = FastText(sentences=sentences, vector_size=cfg.dim, window=cfg.window,
                         min_count=cfg.min_count, min_n=cfg.min_n, max_n=cfg.max_n,
                         bucket=cfg.bucket, sg=cfg.sg, negative=cfg.negative,
                         epochs=cfg.epochs, workers=max(1, cfg.workers), seed=cfg.seed)
        info = {"trained": cfg.as_dict(), "sentences": len(sentences),
                "tokens": int(sum(len(s) for s in sentences)),
                "train_seconds": round(time.perf_counter() - t0, 2)}
        return cls(model.wv, "fasttext", "trained", info)

    @classmethod
    def from_encoder(cls, encoder, texts: Iterable[str], batch_size: int = 512,
                     progress: bool = False) -> "WordVectors":
        """Plain vectors for every token of ``texts``, each word encoded alone by ``encoder``
        (a :class:`kgnorm.encoders.dense.DenseEncoder`; mean pooling is what makes a word's
        pieces one vector). Words outside ``texts`` stay unknown, as with any plain file."""
        from gensim.models import KeyedVectors

        vocab = sorted({t for x in texts if x for t in tokenize(x)})
        if not vocab:
            raise KgnormError("no text to derive word vectors from")
        t0 = time.perf_counter()
        vectors = encoder.encode(vocab, batch_size=batch_size, progress=progress,
                                 desc="encode words")
        kv = KeyedVectors(int(vectors.shape[1]))
        kv.add_vectors(vocab, np.asarray(vectors, dtype=np.float32))
        info = {"encoder": str(getattr(encoder, "base", "")), "pooling": getattr(encoder, "pooling", None),
                "words": len(vocab), "encode_seconds": round(time.perf_counter() - t0, 2)}
        return cls(kv, "plain", f"encoder:{info['encoder']}", info)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "WordVectors":
        """Load a user's fastText binary (``.bin``, subwords kept) or word2vec text
        (``.vec``/``.txt``, optionally ``.gz``) file, or a kgnorm word-vector directory."""
        p = Path(path)
        if not p.exists():
            raise KgnormError(f"word vectors not found: {p}")
        if p.is_dir():
            return cls.load(p)
        name = p.name.lower()
        try:
            if name.endswith(".bin"):
                from gensim.models.fasttext import load_facebook_vectors
                kv = load_facebook_vectors(str(p))
                return cls(kv, "fasttext", str(p))
            if name.endswith((".vec", ".txt", ".vec.gz", ".txt.gz")):
                from gensim.models import KeyedVectors
                kv = KeyedVectors.load_word2vec_format(str(p), binary=False,
                                                       unicode_errors="replace")
                return cls(kv, "plain", str(p))
        except KgnormError:
            raise
        except Exception as e:  # gensim raises many kinds on corrupt files
            raise KgnormError(f"cannot read word vectors {p}: {type(e).__name__}: {e}") from e
        raise KgnormError(f"unknown word-vector file type: {p} (expected .bin or .vec)")

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "WordVectors":
        """Load vectors written by :meth:`save`."""
        d = Path(directory)
        meta_p = d / "meta.json"
        if not meta_p.exists():
            raise KgnormError(f"word vectors not found: {meta_p}")
        try:
            meta = json.loads(meta_p.read_text())
            if meta.get("format") != FORMAT:
                raise ValueError(f"format is {meta.get('format')!r}, expected {FORMAT!r}")
            vocab = (d / "vocab.txt").read_text(encoding="utf-8").split("\n")
            if vocab and vocab[-1] == "":
                vocab.pop()
            vectors = np.load(d / "vectors.npy", allow_pickle=False)
            if len(vocab) != len(vectors):
                raise ValueError(f"{len(vocab)} words but {len(vectors)} vectors")
            if meta["kind"] == "fasttext":
                from gensim.models.fasttext import FastTextKeyedVectors
                ngrams = np.load(d / "ngrams.npy", allow_pickle=False)
                kv = FastTextKeyedVectors(int(meta["dim"]), int(meta["min_n"]),
                                          int(meta["max_n"]), int(meta["bucket"]))
                kv.index_to_key = vocab
                kv.key_to_index = {w: i for i, w in enumerate(vocab)}
                kv.vectors = vectors
                kv.vectors_vocab = vectors
                kv.vectors_ngrams = ngrams
                kv.allocate_vecattrs()
            else:
                from gensim.models import KeyedVectors
                kv = KeyedVectors(int(meta["dim"]))
                kv.add_vectors(vocab, vectors)
        except KgnormError:
            raise
        except Exception as e:
            raise KgnormError(f"cannot read word vectors in {d}: {type(e).__name__}: {e}") from e
        return cls(kv, meta["kind"], meta.get("source", ""), meta.get("info"))

    def save(self, directory: str | os.PathLike) -> Path:
        """Write the vectors to ``directory`` (created); see the module docstring."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        kv = self.kv
        vocab = list(kv.index_to_key)
        bad = [w for w in vocab if "\n" in w or "\r" in w]
        if bad:
            raise KgnormError(f"cannot save words containing line breaks: {bad[:3]}")
        meta = {"format": FORMAT, "kind": self.kind, "dim": int(kv.vector_size),
                "words": len(vocab), "source": self.source, "info": self.info}
        np.save(d / "vectors.npy", np.asarray(kv.vectors, dtype=np.float32), allow_pickle=False)
        if self.kind == "fasttext":
            meta.update(min_n=int(kv.min_n), max_n=int(kv.max_n), bucket=int(kv.bucket))
            np.save(d / "ngrams.npy", np.asarray(kv.vectors_ngrams, dtype=np.float32),
                    allow_pickle=False)
        (d / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
        (d / "meta.json").write_text(json.dumps(meta, indent=2))
        return d

    # ------------------------------------------------------------------ use
    @property
    def dim(self) -> int:
        return int(self.kv.vector_size)

    def __contains__(self, word: str) -> bool:
        return word in self.kv.key_to_index

    def word_vector(self, word: str) -> np.ndarray | None:
        """Vector of one (already tokenized) word; ``None`` when unknown (plain vectors, or
        a fastText word without any n-gram)."""
        got = self._cache.get(word, False)
        if got is not False:
            return got
        kv = self.kv
        vec: np.ndarray | None
        if word in kv.key_to_index:
            vec = kv.vectors[kv.key_to_index[word]]
        elif self.kind == "fasttext" and getattr(kv, "bucket", 0):
            from gensim.models.fasttext import ft_ngram_hashes
            h = ft_ngram_hashes(word, kv.min_n, kv.max_n, kv.bucket)
            vec = kv.vectors_ngrams[h].mean(axis=0) if len(h) else None
        else:
            vec = None
        if vec is not None:
            vec = np.asarray(vec, dtype=np.float32)
        if len(self._cache) < 2_000_000:
            self._cache[word] = vec
        return vec

    def average(self, names: Sequence[str]) -> np.ndarray:
        """(len(names), dim) float32: the mean of the word vectors of each name's tokens.

        Unknown words are left out of the mean (their number is put in ``last_unknown``);
        a name without any known word gets zeros.
        """
        out = np.zeros((len(names), self.dim), dtype=np.float32)
        unknown = 0
        for i, name in enumerate(names):
            vecs = []
            for tok in tokenize(name):
                v = self.word_vector(tok)
                if v is None:
                    unknown += 1
                else:
                    vecs.append(v)
            if vecs:
                out[i] = np.mean(vecs, axis=0) if len(vecs) > 1 else vecs[0]
        self.last_unknown = unknown
        return out

    def __call__(self, names: Sequence[str]) -> np.ndarray:
        return self.average(names)


def train_word_vectors(texts: Iterable[str], out_dir: str | os.PathLike | None = None,
                       **options) -> WordVectors:
    """Train FastText on ``texts`` and, with ``out_dir``, save it there."""
    wv = WordVectors.train(texts, **options)
    if out_dir is not None:
        wv.save(out_dir)
    return wv
