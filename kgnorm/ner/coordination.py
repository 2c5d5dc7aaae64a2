"""Coordinations read by the dictionary tagger: a match that ends a coordination also gives the
other conjuncts that make a name with its shared words ("palmar and plantar pits": "palmar pits"
too), each a span from its conjunct to the shared words, read as that name (``Span.reading``).
Names are looked up through `lookup` (the tagger's word-for-word lookup: kgnorm.ner.dictionary)."""
from __future__ import annotations

import re
from typing import Callable

from kgnorm.graph.refs import ConceptRef
from kgnorm.ner.phrases import _BREAK_OR_COMMA, _COORDINATORS, _FUNCTION_WORDS, _plain_gap
from kgnorm.ner.spans import Span

__all__ = ["coordinated"]

_MAX_CONJUNCTS = 4  # conjuncts read before one match ("branchial, otic and renal anomalies")
# folded words -> (concepts, name) of the name they make word for word, or None
Lookup = Callable[[list[str]], "tuple[set[str], str] | None"]


def coordinated(text: str, words: list[tuple[int, int]], lowered: list[str], spans: list[Span], lookup: Lookup,
                type: str, ontology: str | None) -> list[Span]:
    """`spans` and, for each match in a coordination, the other conjuncts as the names they make with
    its shared words: "palmar and plantar pits" (the match "plantar pits") also says "palmar pits",
    "hypopigmentation of skin or hair" (the match "hypopigmentation of skin") "hypopigmentation of
    hair". Such a span runs from its conjunct to the end of the shared words (to the conjunct, when
    the shared words come first), so it encloses the coordination, and it reads as its name
    (``Span.reading``). Sorted by start."""
    first_of = {s: i for i, (s, _) in enumerate(words)}
    last_of = {e: i for i, (_, e) in enumerate(words)}
    more: list[Span] = []
    for span in spans:
        first, last = first_of.get(span.start), last_of.get(span.end)
        if first is None or last is None or last == first:
            continue
        for start, end, reading, (uids, name) in (*_left_conjuncts(text, words, lowered, first, last, lookup),
                                                   *_right_conjuncts(text, words, lowered, first, last, lookup)):
            more.append(Span(start, end, text[start:end], type, name=name, reading=reading,
                             concepts=tuple(ConceptRef(ontology, u) for u in sorted(uids))))
    if not more:
        return spans
    seen = {(s.start, s.end) for s in spans}
    return sorted([*spans, *(s for s in more if (s.start, s.end) not in seen)], key=lambda s: (s.start, -s.end))

def _left_conjuncts(text: str, words: list[tuple[int, int]], lowered: list[str], first: int, last: int,
                    lookup: Lookup) -> list[tuple[int, int, str, tuple[set[str], str]]]:
    """Conjuncts before a match ("A, B and" before "C pits") that make a name with its words after
    the first (or with all of them): (start, end, reading, (concepts, name)) each."""
    out: list[tuple[int, int, str, tuple[set[str], str]]] = []
    j = first - 1
    if j < 1 or lowered[j] not in _COORDINATORS or not _plain_gap(text, words, j) \
            or not _plain_gap(text, words, j - 1, comma=True):
        return out
    end = j - 1
    # the shared words: all but the match's first (or all of them), never from a function word on
    # ("hypoplasia or malformations of the kidney" is no "hypoplasia of the kidney")
    heads = [m for m in (1, 0, *range(2, last - first + 1)) if lowered[first + m] not in _FUNCTION_WORDS]
    while end >= 0 and len(out) < _MAX_CONJUNCTS:
        start = end
        for n in (3, 2, 1):
            s = end - n + 1
            if s < 0 or any(lowered[i] in _FUNCTION_WORDS or lowered[i] in _COORDINATORS for i in range(s, end + 1)) \
                    or not all(_plain_gap(text, words, i) for i in range(s, end)):
                continue
            hit = next(((m, h) for m in heads if (h := lookup(lowered[s:end + 1] + lowered[first + m:last + 1]))),
                       None)
            if hit:
                m, found = hit
                reading = text[words[s][0]:words[end][1]] + " " + text[words[first + m][0]:words[last][1]]
                out.append((words[s][0], words[last][1], reading, found))
                start = s
                break
        if start < 1 or not _plain_gap(text, words, start - 1, comma=True, bare=False):
            break
        end = start - 1
    return out

def _right_conjuncts(text: str, words: list[tuple[int, int]], lowered: list[str], first: int, last: int,
                     lookup: Lookup) -> list[tuple[int, int, str, tuple[set[str], str]]]:
    """A conjunct after a match ("or hair" after "hypopigmentation of skin") that makes a name with its
    words before the last: (start, end, reading, (concepts, name))."""
    j = last + 1
    if j + 1 >= len(words) or lowered[j] not in _COORDINATORS or not _plain_gap(text, words, last, comma=True) \
            or not _plain_gap(text, words, j):
        return []
    for n in (2, 1):
        end = j + n
        if end >= len(words) or any(lowered[i] in _FUNCTION_WORDS or lowered[i] in _COORDINATORS
                                    for i in range(j + 1, end + 1)) \
                or not all(_plain_gap(text, words, i) for i in range(j + 1, end)):
            continue
        found = lookup(lowered[first:last] + lowered[j + 1:end + 1])
        # the conjunct ends its phrase ("dysplasia and abnormal" is not one in "patellar dysplasia and
        # abnormal clavicular shape")
        if found and (end + 1 == len(words) or _BREAK_OR_COMMA.search(text, words[end][1], words[end + 1][0])
                      or re.search(r"[.:]", text[words[end][1]:words[end + 1][0]])):
            reading = text[words[first][0]:words[last - 1][1]] + " " + text[words[j + 1][0]:words[end][1]]
            return [(words[first][0], words[end][1], reading, found)]
    return []
