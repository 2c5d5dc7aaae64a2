"""What a detector knew, replayed while it learns a new corpus (`kgnorm retrain --replay FILE`).

Fine-tuned on a few dozen reviewed documents of another corpus, a detector forgets its own: measured
(benchmarks/review_transfer.py, the NCBI-disease detector retrained on BC5CDR reviews) its NCBI dev
document F1 fell 0.786 -> 0.693 after 800 reviews, while the guard, which sees only the user's
corpus, kept it. Rehearsal is the standard remedy: a sample of the documents the detector was
trained on (the annotated corpus it came from, PubTator or BioC, typed as its training was) is
learnt beside the new texts, as many of them as there are new texts, a fresh draw per seed."""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from pathlib import Path

from kgnorm.ner.corpus import AnnotatedText, TypeMap, read_annotated

REPLAY_PER_TEXT = 1  # replayed documents per new training text (done document or reviewed piece)


@dataclass(frozen=True)
class Replay:
    """The corpus a detector is replayed from: path and content digest (a retrain's input)."""

    path: Path
    sha256: str

    @classmethod
    def of(cls, path: str | Path) -> "Replay":
        p = Path(path)
        from kgnorm.errors import InputError

        if not p.is_file():
            raise InputError("--replay: file not found", p)
        return cls(p.resolve(), hashlib.sha256(p.read_bytes()).hexdigest())

    def record(self) -> dict[str, str]:
        return {"path": str(self.path), "sha256": self.sha256}


def replay_texts(replay: Replay, types_map: dict[str, str] | None, types: tuple[str, ...], new_texts: int,
                 seed: int) -> list[AnnotatedText]:
    """`REPLAY_PER_TEXT` x `new_texts` documents of the replayed corpus (all of them if fewer), their
    spans labelled through the detector's own `types_map` and kept when of a type it tags."""
    docs = read_annotated(replay.path, TypeMap(types_map), require_types=False)
    wanted = set(types)
    docs = [replace(d, spans=[s for s in d.spans if s.type in wanted]) for d in docs]
    k = min(len(docs), REPLAY_PER_TEXT * new_texts)
    return random.Random(seed).sample(docs, k)
