"""One concept per document for mentions that say the same thing (issue 28, "the document").

Why: linking errors cluster in documents. An abstract's undefined short form or its repeated
name is linked separately at each occurrence, and when the occurrences disagree (a context-aware
scorer reads each in its own sentence; a short form resolved in one place and not another) the
document says two things about one entity. Mentions of one document that share a key -- the same
normalized text, or the same resolved short form (the caller gives the keys) -- are made to agree:

* each mention votes for its candidates with its own confidence in them (softmax of its scores
  at ``temperature``), the group's concept is the one with the most weight;
* a mention whose top concept differs is moved to the group's concept, unless the linker is
  confident about its own (top-1 probability >= ``confident``): then it keeps it.

:func:`harmonize` is generic (any ranked candidates that have ``uid`` and ``score``): ``link``
calls it through :func:`consistent_stream`, ``annotate`` through :func:`harmonize_document`.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

__all__ = ["Candidate", "harmonize", "harmonize_document", "consistent_stream", "DEFAULT_CONFIDENT", "DEFAULT_TEMPERATURE"]

DEFAULT_CONFIDENT = 0.9
DEFAULT_TEMPERATURE = 1.0


class Candidate(Protocol):
    uid: str
    score: float


C = TypeVar("C", bound=Candidate)


def _probabilities(ranked: Sequence[Candidate], temperature: float) -> list[float]:
    if not ranked:
        return []
    top = max(c.score for c in ranked)
    ex = [math.exp((c.score - top) / temperature) for c in ranked]
    total = sum(ex)
    return [e / total for e in ex]


def _groups(keys: Sequence[Iterable[str]]) -> list[list[int]]:
    """Items that share any key, transitively (union-find over the keys)."""
    parent = list(range(len(keys)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, ks in enumerate(keys):
        for k in ks:
            if not k:
                continue
            if k in owner:
                parent[find(i)] = find(owner[k])
            else:
                owner[k] = i
    out: dict[int, list[int]] = {}
    for i in range(len(keys)):
        out.setdefault(find(i), []).append(i)
    return [g for g in out.values() if len(g) > 1]


def harmonize(keys: Sequence[Iterable[str]], rankings: Sequence[Sequence[C]],
              confident: float = DEFAULT_CONFIDENT, temperature: float = DEFAULT_TEMPERATURE) -> list[list[C]]:
    """The rankings of one document's items (mentions or composite parts), adjusted so that items
    sharing a key get one concept at rank 1 (the module's vote). Each ranking keeps one concept per
    rank and its length; an item lacking the group's concept gets it from another item's hit."""
    if len(keys) != len(rankings):
        raise ValueError(f"{len(keys)} key sets for {len(rankings)} rankings")
    out = [list(r) for r in rankings]
    for group in _groups(keys):
        votes: dict[str, float] = {}
        hit_of: dict[str, C] = {}
        for i in group:
            for c, p in zip(out[i], _probabilities(out[i], temperature)):
                votes[c.uid] = votes.get(c.uid, 0.0) + p
                if c.uid not in hit_of or c.score > hit_of[c.uid].score:
                    hit_of[c.uid] = c
        if not votes:
            continue
        winner = max(votes, key=lambda u: (votes[u], hit_of[u].score))
        for i in group:
            ranked = out[i]
            if not ranked or ranked[0].uid == winner:
                continue
            if _probabilities(ranked, temperature)[0] >= confident:
                continue
            own = next((c for c in ranked if c.uid == winner), hit_of[winner])
            out[i] = [own] + [c for c in ranked if c.uid != winner][:len(ranked) - 1]
    return out


def _doc_keys(linked: Any) -> list[list[str]]:
    """Keys of each part of a linked mention: its query (normalized, short forms resolved), and for a
    mention linked whole also its normalized surface text."""
    from kgnorm.text.normalize import normalize

    keys = [[q] for q in linked.queries]
    if len(keys) == 1:
        keys[0].append(normalize(linked.mention.text))
    return keys


def harmonize_document(doc: list[Any], confident: float = DEFAULT_CONFIDENT,
                       temperature: float = DEFAULT_TEMPERATURE) -> int:
    """:func:`harmonize` over one document's linked mentions (as ``link_stream`` yields them),
    in place; returns how many parts changed their rank-1 concept."""
    items = [(lm, j) for lm in doc if not lm.nil for j in range(len(lm.parts))]
    if len(items) < 2:
        return 0
    keys = [_doc_keys(lm)[j] if len(lm.parts) == len(lm.queries) else [] for lm, j in items]
    new = harmonize(keys, [lm.parts[j] for lm, j in items], confident, temperature)
    changed = 0
    for (lm, j), ranked in zip(items, new):
        changed += bool(ranked and lm.parts[j] and ranked[0].uid != lm.parts[j][0].uid)
        lm.parts[j] = ranked
    return changed


def consistent_stream(linked: Iterable[Any], confident: float = DEFAULT_CONFIDENT,
                      temperature: float = DEFAULT_TEMPERATURE) -> Iterator[Any]:
    """Apply :func:`harmonize` per document to a stream of linked mentions (objects with ``mention``,
    ``queries``, ``parts`` and ``nil``, as :func:`kgnorm.linking.linker.link_stream` yields them). A
    document is a run of consecutive mentions with one ``doc_id``, as the readers yield them; a
    mention without a doc id passes unchanged. Memory: one document at a time."""
    doc: list[Any] = []
    doc_id = None
    for lm in linked:
        did = lm.mention.doc_id
        if doc and did != doc_id:
            harmonize_document(doc, confident, temperature)
            yield from doc
            doc = []
        if not did:
            yield lm
            doc_id = None
            continue
        doc.append(lm)
        doc_id = did
    if doc:
        harmonize_document(doc, confident, temperature)
        yield from doc


# Off until it wins on both dev sets (NCBI-disease, BC5CDR-disease; benchmarks/LOG.md, issue 28).
ON_BY_DEFAULT = False


def consistency_on(flag: bool | None, meta: dict[str, Any] | None = None) -> bool:
    """The user's --consistency/--no-consistency, else the model's own setting, else the default."""
    if flag is not None:
        return flag
    return bool((meta or {}).get("consistency", ON_BY_DEFAULT))
