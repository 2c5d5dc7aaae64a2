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
  its dictionary forms has: "ALL" (acute lymphoblastic leukaemia) matches "ALL", not "all"; a short
  name that is no acronym also in lower and sentence case ("Tumor": "tumor", "Tumor").

Plurals: with ``plurals`` (the default) every word of a name and of the text is folded to a
singular-like key first (:func:`kgnorm.text.inflection.singular`), so "pedunculated papules" in a text
matches the name "Pedunculated papule" and "renal cysts" "Renal cyst".
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

import ahocorasick

from kgnorm.errors import KgnormError
from kgnorm.ner.spans import MentionDetector, Span
from kgnorm.text.inflection import singular
from kgnorm.text.normalize import normalize

if TYPE_CHECKING:
    from kgnorm.graph.views import OntologySnapshot

__all__ = ["DictionaryDetector", "DictionaryStats"]

# Words as normalize() keeps them: every run of characters that is neither punctuation,
# whitespace nor "_" (normalize folds each other run into one space).
_WORD = re.compile(r"[^\W_]+")
# What may not lie between two words of one match: brackets and clause punctuation.
_BREAK = re.compile(r"[()\[\]{};]")
# ... and between two words of a match in another word order (kgnorm.ner.dictionary._any_order)
_ANY_ORDER_BREAK = re.compile(r"[()\[\]{};,.:]")
# Words a name in another word order may add, drop or move ("abnormality of the thumb": "thumb abnormality")
_MAX_ANY_ORDER = 6  # content words of the longest name matched in another order
_FUNCTION_WORDS = frozenset({"of", "the", "a", "an", "in", "on", "at", "to", "for", "with", "by", "from"})


def _under(root: str, is_a: Iterable[tuple[str, str]]) -> set[str]:
    """``root`` and every concept below it (IS_A edges as (child, parent))."""
    children: dict[str, list[str]] = {}
    for child, parent in is_a:
        children.setdefault(parent, []).append(child)
    seen, todo = {root}, [root]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


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
                 short_length: int = 5, plurals: bool = True, any_order: bool = True) -> None:
        self.types: tuple[str, ...] = (type,)
        self.type = type
        self.plurals = plurals
        # content words of a multi-word name (any order) -> how many there are; see _any_order
        self._bags: dict[frozenset[str], int] = {}
        self._bag_words = 0
        self._bag_vocabulary: set[str] = set()
        self._variant: dict[str, str] = {}   # word -> its variant class (learn_word_variants)
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
            stop_only = all(word in stop for word in key.split(" "))  # read on the words as written
            key = self._fold(key)
            if len(key) > short_length:
                if key in cased or key in refused:
                    continue
                if stop_only:
                    refused.add(key)
                    self.stats.stop_words += 1
                    continue
                cased[key] = None
                if any_order:
                    self._add_bag(key)
            else:
                # an acronym ("ALL", "MS") is kept whatever its lower case means; other short
                # names must pass the guards; either way only its own letter case matches
                acronym = form.isupper() and len(key.replace(" ", "")) >= 2
                if not acronym and (key in refused or len(key) < min_length or stop_only):
                    if key not in refused:
                        refused.add(key)
                        if len(key) < min_length:
                            self.stats.too_short += 1
                        else:
                            self.stats.stop_words += 1
                    continue
                # a word written capitalized as a name ("Tumor", "Polyp") is no acronym: its lower
                # case and sentence case match too
                forms = {self._fold(f) for f in ({form} if acronym else
                                                  {form, form.lower(), form[:1].upper() + form[1:].lower()})}
                if key in cased:
                    cased[key].update(forms)  # type: ignore[union-attr]
                    continue
                cased[key] = forms
            # spaces around the key: a match must start and end on word boundaries
            automaton.add_word(f" {key} ", key)
        self._cased = {k: v for k, v in cased.items() if v is not None}
        self.stats.case_sensitive = len(self._cased)
        self.stats.names = len(automaton)
        self._automaton = automaton
        if len(automaton):
            automaton.make_automaton()

    def _add_bag(self, key: str) -> None:
        content = [w for w in key.split(" ") if w not in _FUNCTION_WORDS]
        bag = frozenset(content)
        if 2 <= len(content) <= _MAX_ANY_ORDER and len(bag) == len(content):
            self._bags.setdefault(bag, len(content))
            self._bag_words = max(self._bag_words, len(content))
            self._bag_vocabulary.update(bag)

    def _any_order(self, text: str, words: list[tuple[int, int]], lowered: list[str]) -> list[tuple[int, int]]:
        """Runs of words, first and last a content word, no clause punctuation inside, whose content
        words are those of a multi-word name in another order or with other function words between:
        "thumb abnormalities" is "Abnormality of the thumb", "calcification of the falx cerebri"
        "Calcification of falx cerebri" (FastHPOCR matches token sets likewise)."""
        found = []
        vocabulary = self._bag_vocabulary
        for first in range(len(words)):
            if lowered[first] not in vocabulary:
                continue
            bag: set[str] = set()
            for last in range(first, min(len(words), first + 2 * self._bag_words)):
                if last > first and _ANY_ORDER_BREAK.search(text, words[last - 1][1], words[last][0]):
                    break
                word = lowered[last]
                if word in _FUNCTION_WORDS:
                    continue
                if word in bag or word not in vocabulary:
                    break
                bag.add(word)
                if len(bag) > self._bag_words:
                    break
                if len(bag) >= 2 and self._bags.get(frozenset(bag)) == len(bag):
                    found.append((first, last))
        return found

    def learn_word_variants(self, concepts: Sequence[Sequence[str]], min_count: int = 3,
                            max_cluster: int = 6) -> None:
        """Words the ontology itself uses for one another, for the any-order matching: two names of
        one concept whose content words differ in one word each ("Abnormality of the nose" / "Nasal
        abnormality") pair those words; pairs seen in at least ``min_count`` concepts join one
        variant class (classes of at most ``max_cluster`` words), folded to one word on both sides,
        so "ocular abnormalities" can meet "Abnormality of the eye" (FastHPOCR's token clusters do
        this from a vocabulary built with GPT-4). Only the span is found this way; the linker then
        links its text."""
        from collections import Counter

        pairs: Counter[tuple[str, str]] = Counter()
        for names in concepts:
            bags = {frozenset(w for w in self._fold(normalize(n)).split(" ") if w not in _FUNCTION_WORDS)
                    for n in names}
            bags = [b for b in bags if 2 <= len(b) <= 4]
            for i, a in enumerate(bags):
                for b in bags[i + 1:]:
                    x, y = a - b, b - a
                    if len(x) == 1 and len(y) == 1 and a & b:
                        pairs[tuple(sorted((next(iter(x)), next(iter(y)))))] += 1  # type: ignore[arg-type]
        parent: dict[str, str] = {}
        members: dict[str, set[str]] = {}

        def find(w: str) -> str:
            while parent.get(w, w) != w:
                w = parent[w]
            return w
        for (x, y), n in pairs.most_common():
            if n < min_count:
                break
            rx, ry = find(x), find(y)
            if rx == ry or len(members.get(rx, {rx})) + len(members.get(ry, {ry})) > max_cluster:
                continue
            root, other = sorted((rx, ry))
            parent[other] = root
            members[root] = members.get(root, {root}) | members.pop(other, {other})
        self._variant = {w: find(w) for w in parent}
        bags = dict(self._bags)
        self._bags, self._bag_vocabulary = {}, set()
        for bag, n in bags.items():
            folded = frozenset(self._variant.get(w, w) for w in bag)
            if len(folded) == n:
                self._bags.setdefault(folded, n)
                self._bag_vocabulary.update(folded)

    def _fold(self, key: str) -> str:
        return " ".join(singular(w) for w in key.split(" ")) if self.plurals else key

    @classmethod
    def from_snapshot(cls, snapshot: OntologySnapshot, type: str = "Disease", root: str | None = None,
                      **guards: int) -> DictionaryDetector:
        """Every name (preferred and synonyms) of an ontology read from the store; with ``root``, of
        the concepts under it only (and itself), through the snapshot's IS_A edges."""
        concepts = snapshot.concepts
        if root is not None:
            keep = _under(root, snapshot.is_a)
            if len(keep) == 1 and root not in {c.uid for c in concepts}:
                raise KgnormError(f"root {root!r} is not a concept of ontology {snapshot.name!r}")
            concepts = [c for c in concepts if c.uid in keep]
        detector = cls((n for c in concepts for n in c.all_names()), type, **guards)
        if detector._bags:
            detector.learn_word_variants([c.all_names() for c in concepts])
        return detector

    def detect(self, texts: Sequence[str]) -> list[list[Span]]:
        return [self._detect_one(text) for text in texts]

    def _detect_one(self, text: str) -> list[Span]:
        if not self.stats.names:
            return []
        words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
        if not words:
            return []
        # the text as normalize() would make it, word by word, with where each word starts in it
        lowered = [self._fold(text[s:e].lower()) for s, e in words]
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
        if self._bags:
            variant = self._variant
            found += self._any_order(text, words, [variant.get(w, w) for w in lowered] if variant else lowered)
        return self._leftmost_longest(text, words, found)

    def _case_matches(self, text: str, words: list[tuple[int, int]], first: int, last: int,
                      key: str) -> bool:
        surface = " ".join(text[s:e] for s, e in words[first:last + 1])
        return self._fold(surface) in self._cased[key]

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
