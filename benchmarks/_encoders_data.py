"""Data, budget and logging helpers shared by the sections of benchmarks/encoders.py: the
shared data files, the text-pipeline rules the CLI uses, MEDIC dictionaries and cached
encodings (the time budget is the training loop's own ``max_seconds``)."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from _report import data_dir

DATA = data_dir()  # --data DIR (encoders.py declares the option), default ../shared/data
MEDIC = DATA / "medic/medic_06Jul2012.txt"
BC5CDR = (DATA / "bc5cdr-disease/train.concept", DATA / "bc5cdr-disease/dev.concept")
NCBI = (DATA / "ncbi-disease/NCBItrainset_corpus.txt", DATA / "ncbi-disease/NCBIdevelopset_corpus.txt")
UMNSRS = {"similarity": DATA / "umnsrs/UMNSRS_similarity.csv",
          "relatedness": DATA / "umnsrs/UMNSRS_relatedness.csv"}
T0 = time.perf_counter()


def log(msg: str) -> None:
    """Stage lines on stderr so that a long run shows where it is (stdout gets the table)."""
    print(f"[{time.perf_counter() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- data
def read_items(path: Path, limit: int | None = None) -> list[tuple[Any, dict[str, str]]]:
    """(mention, document abbreviations) pairs, the first ``limit`` only (smoke runs)."""
    from kgnorm.mentions.readers import read_mentions_with_abbreviations

    items = []
    for it in read_mentions_with_abbreviations(path):
        if limit is not None and len(items) >= limit:
            break
        items.append(it)
    return items


def query_pairs(pipeline, items) -> list[tuple[str, set[str]]]:
    """The CLI's training-pair rule, so training here sees what `kgnorm train dilbert` would."""
    from kgnorm.linking.linker import training_pairs

    return training_pairs(pipeline, items)


def build_dictionary(graph, pipeline, keep: set[str] | None = None):
    """MEDIC names normalized like queries (as benchmarks/linking.py), optionally restricted
    to the concepts in ``keep`` (``--dict-limit`` smoke runs)."""
    from kgnorm.linking.dictionary import NameDictionary

    concepts = [c for c in graph.concepts.values() if keep is None or c.uid in keep]
    entries = ((pipeline.normalize_name(n), c.uid) for c in concepts for n in c.names())
    alt = {c.uid: list(c.alt_ids) for c in concepts if c.alt_ids}
    return NameDictionary.from_entries(entries, alt)


def limited_concepts(graph, golds: set[str], n: int, seed: int) -> set[str]:
    """Every concept some used mention points at (through alt ids too), plus a seeded sample
    of the others, ``n`` concepts in all when the golds leave room."""
    prim: dict[str, str] = {}
    for c in graph.concepts.values():
        for a in c.alt_ids:
            prim.setdefault(a, c.uid)
        prim[c.uid] = c.uid
    keep = {prim[g] for g in golds if g in prim}
    rest = sorted(set(graph.concepts) - keep)
    extra = max(0, n - len(keep))
    if extra and rest:
        pick = np.random.default_rng(seed).choice(len(rest), min(extra, len(rest)), replace=False)
        keep.update(rest[int(i)] for i in pick)
    return keep


def gold_ids(items) -> set[str]:
    return {x for m, _ in items for g in m.gold for part in g.split("|") for x in part.split("+")}


class CachedEncode:
    """``encode(names)`` backed by vectors of every dictionary name computed once (the
    synonym evaluations ask for the same names several times); other names are encoded."""

    def __init__(self, names: Sequence[str], vectors: np.ndarray, encode: Callable[[list[str]], np.ndarray]):
        self.row = {n: i for i, n in enumerate(names)}
        self.vectors = np.asarray(vectors, np.float32)
        self.encode = encode

    def __call__(self, names: list[str]) -> np.ndarray:
        out = np.zeros((len(names), self.vectors.shape[1]), np.float32)
        miss = [i for i, n in enumerate(names) if n not in self.row]
        hit = [i for i, n in enumerate(names) if n in self.row]
        if hit:
            out[hit] = self.vectors[[self.row[names[i]] for i in hit]]
        if miss:
            out[miss] = self.encode([names[i] for i in miss])
        return out
