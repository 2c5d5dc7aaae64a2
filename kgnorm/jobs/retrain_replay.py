"""What a detector knew, replayed while it learns a new corpus (`kgnorm retrain --replay FILE`).

Fine-tuned on a few dozen reviewed documents of another corpus, a detector drifts from its own, and the
guard, which sees only the user's corpus, cannot tell. Measured (benchmarks/review_transfer.py, the
NCBI-disease detector retrained on 200 BC5CDR reviews in document order): NCBI dev document F1 fell
0.018 without replay and not at all with it, while BC5CDR dev gained more (0.653 -> 0.682). Rehearsal
is the standard remedy: a sample of the documents the detector was trained on (the annotated corpus
it came from, PubTator or BioC, typed as its training was) is learnt beside the new texts, as many of
them as there are new texts, a fresh draw per seed. The guard also gets evidence from that corpus:
`REPLAY_CHECK` other documents of it, never trained on here, are tagged by the given and the
retrained detector; the retrained one is not kept when its span F1 there falls by more than
`REPLAY_TOLERANCE`. The given detector learnt those documents once, so the check sees forgetting
of what was learnt, not a shift on unseen text of that corpus (measured at 800 reviews: the check
fell 0.0035 while NCBI dev, with the confidence threshold off, fell 0.019). The same check documents
join the held-back ones when annotate's mention confidence is refitted: a pair retrained with
--replay serves both corpora, so its threshold is fitted on both (fitted on the new corpus alone it
cost NCBI dev 0.075 of document F1 at 800 reviews while the models themselves lost 0.019). Last,
the same documents judge the whole pair as OUT would ship it, by document-level F1 from their raw
text (kgnorm.jobs.retrain_judge): the linker and the threshold can cost the old corpus while the
detector's spans do not move."""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from pathlib import Path

from kgnorm.documents.types import Annotation, TextDocument
from kgnorm.errors import InputError
from kgnorm.ner.corpus import AnnotatedText, TypeMap, read_annotated

REPLAY_PER_TEXT = 1  # replayed documents per new training text (done document or reviewed piece)
REPLAY_CHECK = 50  # documents of the replayed corpus the guard tags, never trained on (at most half of it)
REPLAY_TOLERANCE = 0.005  # the span F1 (detector) and document F1 (pair) a retrain may lose on them


@dataclass(frozen=True)
class Replay:
    """The corpus a detector is replayed from: path and content digest (a retrain's input)."""

    path: Path
    sha256: str

    @classmethod
    def of(cls, path: str | Path) -> "Replay":
        p = Path(path)
        if not p.is_file():
            raise InputError("--replay: file not found", p)
        return cls(p.resolve(), hashlib.sha256(p.read_bytes()).hexdigest())

    def record(self) -> dict[str, str]:
        return {"path": str(self.path), "sha256": self.sha256}


@dataclass(frozen=True)
class ReplaySplit:
    """The replayed corpus read once: the documents the guard tags (`check`, the first
    `REPLAY_CHECK` of a seeded order, at most half) and the rest, which training draws from;
    `types_map` and `types`: how its spans were typed (the detector's), for check_documents."""

    check: list[AnnotatedText]
    pool: list[AnnotatedText]
    types_map: dict[str, str] | None = None
    types: tuple[str, ...] = ()

    def texts(self, new_texts: int) -> list[AnnotatedText]:
        """`REPLAY_PER_TEXT` x `new_texts` documents of the pool (all of it if fewer)."""
        return self.pool[:REPLAY_PER_TEXT * new_texts]


def replay_split(replay: Replay, types_map: dict[str, str] | None, types: tuple[str, ...],
                 seed: int) -> ReplaySplit:
    """The replayed corpus's documents, spans labelled through the detector's own `types_map` and
    kept when of a type it tags, in a seeded order, split into the guard's and training's."""
    docs = read_annotated(replay.path, TypeMap(types_map), require_types=False)
    wanted = set(types)
    docs = [replace(d, spans=[s for s in d.spans if s.type in wanted]) for d in docs]
    random.Random(seed).shuffle(docs)
    n = min(REPLAY_CHECK, len(docs) // 2)
    return ReplaySplit(docs[:n], docs[n:], types_map, tuple(types))


def replay_check(replay: Replay, types_map: dict[str, str] | None, types: tuple[str, ...],
                 seed: int) -> list[AnnotatedText]:
    """The documents the guard tags (replay_split's `check`)."""
    return replay_split(replay, types_map, types, seed).check


def replay_texts(replay: Replay, types_map: dict[str, str] | None, types: tuple[str, ...], new_texts: int,
                 seed: int) -> list[AnnotatedText]:
    """The documents training learns beside `new_texts` new ones (replay_split's pool)."""
    return replay_split(replay, types_map, types, seed).texts(new_texts)


def check_documents(replay: Replay, split: ReplaySplit) -> list[tuple[TextDocument, list[Annotation]]]:
    """The guard's check documents as the replayed file gives them, with their gold concepts
    (read_annotated keeps spans only), each annotation typed as `split`'s spans were and kept when
    of a type the detector tags: what annotate's mention confidence is refitted on beside the
    held-back reviews."""
    from kgnorm.documents.readers import read_documents, sniff_document_format

    wanted, labels, ids = set(split.types), TypeMap(split.types_map), {d.doc_id for d in split.check}
    out = []
    for doc in read_documents(replay.path, sniff_document_format(replay.path)):
        if doc.doc_id in ids:
            kept = [replace(a, type=labels.label(a.type) or "") for a in doc.annotations]
            out.append((replace(doc, annotations=[]), [a for a in kept if a.type in wanted]))
    return out
