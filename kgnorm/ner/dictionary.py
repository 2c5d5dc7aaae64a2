"""A mention detector that needs no training: an ontology's names matched in raw text.

It is the baseline every trained detector must beat, and the way to annotate text for an
ontology nobody has labelled text for. Names and text go through the same normalization as
linking (:func:`kgnorm.text.normalize.normalize`: lowercase, punctuation runs as one space),
so "Alzheimer's disease" in a dictionary matches "alzheimer's  disease" in a text, and matches
are leftmost-longest on word boundaries. Aho-Corasick (pyahocorasick) finds every name in one
pass over a document, whatever the dictionary's size.

Guards against the false positives a naive matcher makes:
- names shorter than ``min_length`` characters, and names made only of English stop words
  (scikit-learn's list: "all", "can", "here"), are never matched, unless the dictionary writes
  them as an acronym ("ALL", "MS");
- a short name (at most ``short_length`` characters) matches only with the letter case one of
  its dictionary forms has: "ALL" (acute lymphoblastic leukaemia) matches "ALL", not "all".
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

import ahocorasick

from kgnorm.ner.spans import MentionDetector, Span
from kgnorm.text.normalize import normalize

if TYPE_CHECKING:
    from kgnorm.graph.views import OntologySnapshot

__all__ = ["DictionaryDetector", "DictionaryStats"]

# Words as normalize() keeps them: every run of characters that is neither punctuation,
# whitespace nor "_" (normalize folds each other run into one space).
_WORD = re.compile(r"[^\W_]+")
# What may not lie between two words of one match: brackets and clause punctuation.
_BREAK = re.compile(r"[()\[\]{};]")


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


@dataclass
class DictionaryStats:
    """What the guards kept out of the dictionary, for the command's report."""

    names: int = 0
    too_short: int = 0
    stop_words: int = 0
    case_sensitive: int = 0


class DictionaryDetector(MentionDetector):
    """Leftmost-longest matches of ``names`` in texts, each reported as one ``type`` span."""

    # annotate's document consistency (tag a found string's other occurrences) raised this
    # tagger's dev NER F1 on both corpora, and lowered a trained detector's (benchmarks/LOG.md, "annotate")
    consistency_by_default = True
    # pure Python under the GIL: overlapped with the linker (kgnorm.jobs.overlap) it ran 6-11 % slower
    # on BC5CDR dev (benchmarks/LOG.md, "annotate with the dictionary tagger, overlapped or not"), so
    # annotate overlaps only when asked to (--overlap)
    overlap_by_default = False

    def __init__(self, names: Iterable[str], type: str = "Disease", *, min_length: int = 3,
                 short_length: int = 5) -> None:
        self.types: tuple[str, ...] = (type,)
        self.type = type
        self.stats = DictionaryStats()
        stop = _stop_words()
        # normalized short name -> the case-kept forms it may match (None: any case)
        cased: dict[str, set[str] | None] = {}
        automaton = ahocorasick.Automaton()
        refused: set[str] = set()
        for raw in names:
            key = normalize(raw)
            if not key:
                continue
            form = normalize(raw, lowercase=False)
            if len(key) > short_length:
                if key in cased or key in refused:
                    continue
                if all(word in stop for word in key.split(" ")):
                    refused.add(key)
                    self.stats.stop_words += 1
                    continue
                cased[key] = None
            else:
                # an acronym ("ALL", "MS") is kept whatever its lower case means; other short
                # names must pass the guards; either way only its own letter case matches
                acronym = form.isupper() and len(key.replace(" ", "")) >= 2
                if not acronym and (key in refused or len(key) < min_length
                                    or all(word in stop for word in key.split(" "))):
                    if key not in refused:
                        refused.add(key)
                        if len(key) < min_length:
                            self.stats.too_short += 1
                        else:
                            self.stats.stop_words += 1
                    continue
                if key in cased:
                    cased[key].add(form)  # type: ignore[union-attr]
                    continue
                cased[key] = {form}
            # spaces around the key: a match must start and end on word boundaries
            automaton.add_word(f" {key} ", key)
        self._cased = {k: v for k, v in cased.items() if v is not None}
        self.stats.case_sensitive = len(self._cased)
        self.stats.names = len(automaton)
        self._automaton = automaton
        if len(automaton):
            automaton.make_automaton()

    @classmethod
    def from_snapshot(cls, snapshot: OntologySnapshot, type: str = "Disease", **guards: int
                      ) -> DictionaryDetector:
        """Every name (preferred and synonyms) of an ontology read from the store."""
        return cls((n for c in snapshot.concepts for n in c.all_names()), type, **guards)

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        return [self._detect_one(text) for text in texts]

    def _detect_one(self, text: str) -> list[Span]:
        if not self.stats.names:
            return []
        words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
        if not words:
            return []
        # the text as normalize() would make it, word by word, with where each word starts in it
        lowered = [text[s:e].lower() for s, e in words]
        offsets, pos = [], 1
        for word in lowered:
            offsets.append(pos)
            pos += len(word) + 1
        haystack = " " + " ".join(lowered) + " "
        word_at = {off: i for i, off in enumerate(offsets)}
        found: list[tuple[int, int]] = []  # (first word, last word)
        for end, key in self._automaton.iter(haystack):
            first = word_at[end - len(key)]
            last = first + key.count(" ")
            if key in self._cased and not self._case_matches(text, words, first, last, key):
                continue
            if any(_BREAK.search(text, words[i][1], words[i + 1][0]) for i in range(first, last)):
                continue  # "(G6PD) deficiency" is not the name "G6PD deficiency"
            found.append((first, last))
        return self._leftmost_longest(text, words, found)

    def _case_matches(self, text: str, words: list[tuple[int, int]], first: int, last: int,
                      key: str) -> bool:
        surface = " ".join(text[s:e] for s, e in words[first:last + 1])
        return surface in self._cased[key]

    def _leftmost_longest(self, text: str, words: list[tuple[int, int]],
                          found: list[tuple[int, int]]) -> list[Span]:
        spans: list[Span] = []
        covered = -1
        for first, last in sorted(found, key=lambda m: (m[0], -m[1])):
            if first <= covered:
                continue
            start, end = words[first][0], words[last][1]
            spans.append(Span(start, end, text[start:end], self.type))
            covered = last
        return spans
