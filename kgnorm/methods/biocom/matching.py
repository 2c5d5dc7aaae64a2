"""Dictionary matching for BioCoM's corpus (:mod:`kgnorm.methods.biocom.corpus`): which spans of a
sentence are labelled with which concept.

Rules (decided here, tested in tests/test_biocom_corpus.py)
  * Tokens are maximal runs of letters/digits (``[^\\W_]+``); names and text are tokenized
    the same way and compared lowercased, so punctuation inside a name is free:
    ``Alzheimer's disease`` matches ``ALZHEIMER'S DISEASE`` and ``Alzheimer s disease``, but
    not ``Alzheimer disease`` (the token sequences differ).
  * Whole tokens only, no stemming: ``ovarian cancer`` does NOT match inside
    ``ovarian cancers`` (nor ``cancer`` inside ``precancerous``); plural forms need their own
    dictionary names. This keeps precision; the cap makes recall per concept secondary.
  * A match may not run across ``, ; : ( ) [ ] { }`` between its tokens (lists such as
    ``anemia, hemolytic uremic syndrome`` must not match the inverted name ``Anemia,
    Hemolytic``); hyphens, slashes, apostrophes and spaces are fine.
  * Acronym names -- a single token written in capitals (``ALL``, ``DMD``, ``G6PD``) -- match
    only the same capitalization (``all`` in running text is not acute lymphoblastic
    leukemia); every other name matches case-insensitively.
  * Overlapping matches keep the longest (most tokens, then most characters, then the
    leftmost): ``breast and ovarian cancer syndrome`` beats ``ovarian cancer`` inside it.
  * A name carried by several concepts (ambiguous) still takes its span -- so a shorter
    name inside it cannot match there -- but yields no row (its label would be a guess).
  * Names shorter than ``min_name_chars`` letters/digits in total are ignored.
  * Document-local abbreviations (``abbreviations=True``, the default): a definition
    ``long form (SF)`` found by Schwartz-Hearst (:func:`kgnorm.text.abbreviations.
    find_abbreviations`) whose long form is, as a whole, one unambiguous dictionary match
    labels every whole-token, same-case occurrence of ``SF`` in that document with the long
    form's concept (``name`` = the dictionary name the long form matched). The local
    definition overrides a dictionary acronym with the same span; a longer dictionary match
    around the short form keeps its span. Abstracts use their abbreviations far more often
    than the long forms, so this labels many sentences a name-only matcher misses.
"""
from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kgnorm.text.abbreviations import find_abbreviations

__all__ = ["Match", "NameMatcher", "name_tokens", "dictionary_entries", "local_abbreviations",
           "with_abbreviations"]

_TOKEN = re.compile(r"[^\W_]+")
_HARD_GAP = re.compile(r"[,;:()\[\]{}]")


# --------------------------------------------------------------------------- dictionary

def name_tokens(name: str) -> tuple[str, ...]:
    """Lowercased letter/digit runs of a name (HTML entities decoded first)."""
    if "&" in name and ";" in name:
        name = html.unescape(name)
    return tuple(t.lower() for t in _TOKEN.findall(name))


def _is_acronym(name: str) -> bool:
    toks = _TOKEN.findall(html.unescape(name) if "&" in name else name)
    return len(toks) == 1 and toks[0].isupper() and len(toks[0]) <= 8


def dictionary_entries(dictionary: Any) -> list[tuple[str, list[str]]]:
    """(uid, names) pairs, preferred name first, from any dictionary shape kgnorm has:

    an :class:`~kgnorm.graph.ontology_graph.OntologyGraph` (obsolete concepts skipped), a mapping
    uid -> names, an iterable of ``(uid, names)`` pairs, of ``Concept`` objects, or of store
    records (dicts with ``uid``, ``name`` and ``synonyms``)."""
    concepts = getattr(dictionary, "concepts", None)
    if isinstance(concepts, Mapping):
        return [(c.uid, c.names()) for c in concepts.values() if not c.obsolete]
    if isinstance(dictionary, Mapping):
        items: Iterable[Any] = dictionary.items()
    else:
        items = dictionary
    out: list[tuple[str, list[str]]] = []
    for item in items:
        if isinstance(item, Mapping):
            if item.get("obsolete"):
                continue
            names = [item.get("name") or "", *(item.get("synonyms") or [])]
            out.append((str(item["uid"]), [n for n in names if n]))
        elif hasattr(item, "uid") and hasattr(item, "names"):
            if getattr(item, "obsolete", False):
                continue
            out.append((item.uid, list(item.names())))
        else:
            uid, names = item
            if isinstance(names, str):
                names = [names]
            out.append((str(uid), [n for n in names if n]))
    return out


@dataclass(frozen=True)
class Match:
    """A dictionary name found in a text: characters [start, end), the concepts carrying it
    (several = ambiguous) and the dictionary name (original spelling) that matched."""

    start: int
    end: int
    uids: tuple[str, ...]
    name: str
    n_tokens: int


class NameMatcher:
    """Longest-match dictionary lookup over token tuples (see the module doc for the rules).

    Memory: one dict entry per distinct token tuple, plus the longest name length per first
    token (so a lookup tries at most that many tuple lengths)."""

    def __init__(self, entries: Iterable[tuple[str, Sequence[str]]],
                 min_name_chars: int = 2) -> None:
        self._names: dict[tuple[str, ...], tuple[tuple[str, ...], str]] = {}
        self._acronyms: dict[str, tuple[tuple[str, ...], str]] = {}
        self._maxlen: dict[str, int] = {}
        self.n_names = 0
        self.n_skipped = 0
        for uid, names in entries:
            for name in names:
                toks = name_tokens(name)
                if not toks or sum(len(t) for t in toks) < min_name_chars:
                    self.n_skipped += 1
                    continue
                self.n_names += 1
                if _is_acronym(name):
                    key_a = _TOKEN.findall(html.unescape(name))[0]
                    self._add(self._acronyms, key_a, uid, name)
                else:
                    self._add(self._names, toks, uid, name)
                    if len(toks) > self._maxlen.get(toks[0], 0):
                        self._maxlen[toks[0]] = len(toks)

    @staticmethod
    def _add(table: dict, key: Any, uid: str, name: str) -> None:
        old = table.get(key)
        if old is None:
            table[key] = ((uid,), name)
        elif uid not in old[0]:
            table[key] = (old[0] + (uid,), old[1])

    @property
    def ambiguous_names(self) -> int:
        return (sum(1 for u, _ in self._names.values() if len(u) > 1)
                + sum(1 for u, _ in self._acronyms.values() if len(u) > 1))

    def __len__(self) -> int:
        return len(self._names) + len(self._acronyms)

    def find(self, text: str) -> list[Match]:
        """Non-overlapping longest matches in `text`, in text order (ambiguous ones included;
        callers drop matches with several uids)."""
        toks = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]
        n = len(toks)
        if n == 0:
            return []
        low = [t[2].lower() for t in toks]
        # reach[i]: the last token index a match starting at i may extend to (hard gaps stop it)
        reach = [n - 1] * n
        for i in range(n - 2, -1, -1):
            gap = text[toks[i][1]:toks[i + 1][0]]
            reach[i] = i if _HARD_GAP.search(gap) else reach[i + 1]
        cands: list[tuple[int, int, int, tuple[tuple[str, ...], str]]] = []
        for i in range(n):
            longest = min(self._maxlen.get(low[i], 0), reach[i] - i + 1)
            hit = None
            for length in range(longest, 0, -1):
                got = self._names.get(tuple(low[i:i + length]))
                if got is not None:
                    hit = (length, got)
                    break
            if hit is None:
                got = self._acronyms.get(toks[i][2])
                if got is not None:
                    hit = (1, got)
            if hit is not None:
                length, got = hit
                cands.append((i, length, toks[i + length - 1][1] - toks[i][0], got))
        if not cands:
            return []
        cands.sort(key=lambda c: (-c[1], -c[2], c[0]))
        taken = [False] * n
        out: list[Match] = []
        for i, length, _, (uids, name) in cands:
            if any(taken[i:i + length]):
                continue
            for j in range(i, i + length):
                taken[j] = True
            out.append(Match(toks[i][0], toks[i + length - 1][1], uids, name, length))
        out.sort(key=lambda m: m.start)
        return out


def local_abbreviations(text: str, matcher: NameMatcher) -> dict[str, Match]:
    """Short form -> the dictionary match of its long form, for the definitions in ``text``
    whose long form is exactly one unambiguous dictionary match (module doc)."""
    out: dict[str, Match] = {}
    for short, long in find_abbreviations(text).items():
        hits = matcher.find(long)
        if (len(hits) == 1 and len(hits[0].uids) == 1 and hits[0].start == 0
                and hits[0].end == len(long.rstrip())):
            out[short] = hits[0]
    return out


def with_abbreviations(sentence: str, found: list[Match], local: Mapping[str, Match]
                       ) -> list[Match]:
    """``found`` plus the occurrences of the document's short forms (module doc)."""
    if not local:
        return found
    out = list(found)
    for short, long_match in local.items():
        for m in re.finditer(r"(?<![^\W_])" + re.escape(short) + r"(?![^\W_])", sentence):
            a, b = m.start(), m.end()
            same = [i for i, f in enumerate(out) if f.start == a and f.end == b]
            if any(f.start < b and a < f.end for f in out if (f.start, f.end) != (a, b)):
                continue                   # inside (or across) a longer dictionary match
            hit = Match(a, b, long_match.uids, long_match.name, 1)
            if same:
                out[same[0]] = hit
            else:
                out.append(hit)
    out.sort(key=lambda m: m.start)
    return out
