"""What `kgnorm retrain` teaches the detector from documents not marked done, and how it judges the
retrained detector on the held-back reviews.

Partial labels: in a document nobody finished, a reviewed mention that is one (accepted, given a
concept or nil, or added by hand) is a gold span (its tokens B/I), one reviewed "not a mention" is a
rejected span -- the detector is taught not to find that exact span, not that its words are O
(kgnorm.methods.ner.model.rejected_span_loss: on NCBI-disease train reviewed least confident first,
64 of the first 139 not-a-mention spans overlapped a gold mention, "breast and ovarian cancer",
"Pelizaeus-") -- and every other token is unknown: it adds no loss (kgnorm.methods.ner.model.UNKNOWN). Least-confident-
first review finishes few documents (3-10 in 200-800 reviews, benchmarks/LOG.md "Review transfer"),
so done documents alone teach the detector almost nothing. The detector reads each reviewed span with
`context` characters of its text either side (cut at whitespace), not the whole document: the
encoder sees the words around the span, and the steps are spent on windows that hold a label.

The guard: the given and the retrained detector both tag the held-back documents; on each, a found
span is right when it is a reviewed mention's span and wrong when it is a span reviewed "not a
mention" (in a done document: any span that is not a reviewed mention's); a reviewed mention not
found is missed. Span-level P/R/F1 from those counts (:func:`span_prf`)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTEXT_CHARS = 256  # characters of text read either side of a reviewed span (about 50-60 word pieces)


@dataclass(frozen=True)
class PartialLabels:
    """The partly reviewed documents as annotated texts (one per run of nearby reviewed spans)."""

    texts: list[Any]
    documents: int
    mentions: int
    rejected: int
    dropped: int


def _usable(m: Any) -> bool:
    text = m.doc_text or ""
    return bool(text) and 0 <= m.start < m.end <= len(text) and text[m.start:m.end] == m.text


def _type_of(m: Any, types: tuple[str, ...]) -> str | None:
    return m.type if m.type in types else (types[0] if len(types) == 1 else None)


def partial_texts(mentions: list[tuple[str, str, Any]], rejected: list[tuple[str, str, Any]],
                  types: tuple[str, ...], context: int | None = CONTEXT_CHARS) -> PartialLabels:
    """The reviewed spans of documents not done (`mentions`: those that are mentions, `rejected`:
    those that are not; (document uid, mention uid, ReviewedMention)) as AnnotatedTexts whose
    ``known`` ranges are the reviewed mentions' spans and ``rejected`` the others; `context` None:
    each whole document."""
    from kgnorm.ner.corpus import _non_overlapping
    from kgnorm.ner.spans import Span

    text_of: dict[str, tuple[str, str]] = {}
    spans: dict[str, list[Span]] = defaultdict(list)
    known: dict[str, list[tuple[int, int]]] = defaultdict(list)
    bad: dict[str, list[tuple[int, int]]] = defaultdict(list)
    dropped = n_mentions = n_rejected = 0
    for doc_uid, _, m in mentions:
        typ = _type_of(m, types)
        if not _usable(m):
            continue
        if typ is None:
            dropped += 1
            continue
        text_of[doc_uid] = (m.doc_id, m.doc_text)
        spans[doc_uid].append(Span(m.start, m.end, m.text, typ))
        known[doc_uid].append((m.start, m.end))
        n_mentions += 1
    for doc_uid, _, m in rejected:
        if _usable(m):
            text_of[doc_uid] = (m.doc_id, m.doc_text)
            bad[doc_uid].append((m.start, m.end))
            n_rejected += 1
    out = []
    for doc_uid in sorted(text_of):
        doc_id, text = text_of[doc_uid]
        out.extend(_cut(doc_id, text, _non_overlapping(spans[doc_uid]), sorted(set(known[doc_uid])),
                        sorted(set(bad[doc_uid])), context))
    return PartialLabels(out, len(text_of), n_mentions, n_rejected, dropped)


def _cut(doc_id: str, text: str, spans: list[Any], known: list[tuple[int, int]], rejected: list[tuple[int, int]],
         context: int | None) -> list[Any]:
    """One AnnotatedText per run of reviewed spans less than 2 x `context` apart, widened by
    `context` to whitespace; offsets shifted into the piece."""
    from kgnorm.ner.corpus import AnnotatedText
    from kgnorm.ner.spans import Span

    if context is None:
        return [AnnotatedText(doc_id, text, list(spans), list(known), list(rejected))]
    pieces: list[list[int]] = []
    for a, b in sorted(known + rejected):
        lo, hi = max(0, a - context), min(len(text), b + context)
        while lo > 0 and not text[lo - 1].isspace():
            lo -= 1
        while hi < len(text) and not text[hi].isspace():
            hi += 1
        if pieces and lo <= pieces[-1][1]:
            pieces[-1][1] = max(pieces[-1][1], hi)
        else:
            pieces.append([lo, hi])
    out = []
    for lo, hi in pieces:
        inside = [s for s in spans if lo <= s.start and s.end <= hi]
        out.append(AnnotatedText(f"{doc_id}@{lo}", text[lo:hi],
                                 [Span(s.start - lo, s.end - lo, s.text, s.type) for s in inside],
                                 [(a - lo, b - lo) for a, b in known if lo <= a and b <= hi],
                                 [(a - lo, b - lo) for a, b in rejected if lo <= a and b <= hi]))
    return out


@dataclass(frozen=True)
class HeldBackSpans:
    """The held-back reviews as the guard reads them, per document uid: its text, the reviewed
    mentions' spans, the spans reviewed not a mention, and whether the document is done."""

    texts: dict[str, str]
    mentions: dict[str, set[tuple[int, int]]]
    rejected: dict[str, set[tuple[int, int]]]
    done: set[str]

    @property
    def spans(self) -> int:
        return sum(map(len, self.mentions.values())) + sum(map(len, self.rejected.values()))


def held_back_spans(mentions: list[tuple[str, str, Any]], rejected: list[tuple[str, str, Any]],
                    done: set[str]) -> HeldBackSpans:
    texts: dict[str, str] = {}
    pos: dict[str, set[tuple[int, int]]] = defaultdict(set)
    neg: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for rows, into in ((mentions, pos), (rejected, neg)):
        for doc_uid, _, m in rows:
            if _usable(m):
                texts[doc_uid] = m.doc_text
                into[doc_uid].add((m.start, m.end))
    return HeldBackSpans(texts, dict(pos), dict(neg), {d for d in done if d in texts})


def span_prf(reviewed: HeldBackSpans, found: dict[str, set[tuple[int, int]]]) -> dict[str, Any]:
    """Span-level P/R/F1 of `found` (document uid -> spans a detector found) against the reviews
    (see the module docstring): spans nobody reviewed in an unfinished document are not counted."""
    tp = fp = fn = 0
    for doc in reviewed.texts:
        gold, bad, got = reviewed.mentions.get(doc, set()), reviewed.rejected.get(doc, set()), found.get(doc, set())
        tp += len(got & gold)
        fn += len(gold - got)
        fp += len(got - gold) if doc in reviewed.done else len(got & bad)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4), "tp": tp, "fp": fp, "fn": fn}


def loses(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether the retrained detector's held-back span scores (`after`) lose to the given one's:
    lower F1 or lower recall (see kgnorm.jobs.retrain._judge_spans for why recall too)."""
    return after["f1"] < before["f1"] or after["recall"] < before["recall"]


def detector_spans(ner: Path, reviewed: HeldBackSpans, threads: int | None) -> dict[str, set[tuple[int, int]]]:
    """The spans the detector in `ner` finds in each held-back document."""
    from kgnorm.methods.ner.model import load_ner

    det = load_ner(ner, threads=threads)
    uids = sorted(reviewed.texts)
    found = det.detect([reviewed.texts[u] for u in uids])
    return {u: {(s.start, s.end) for s in spans} for u, spans in zip(uids, found)}


def judge(given: Path, retrained: Path, reviewed: HeldBackSpans, threads: int | None) -> tuple[dict, dict]:
    """(the given detector's span scores, the retrained one's) on the held-back reviews."""
    return (span_prf(reviewed, detector_spans(given, reviewed, threads)),
            span_prf(reviewed, detector_spans(retrained, reviewed, threads)))

