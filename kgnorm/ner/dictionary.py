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
  name that is no acronym also in lower and sentence case ("Tumor": "tumor", "Tumor");
- an acronym joined to a word by a hyphen is none ("S4" in "L5-S4"), nor is any match that begins
  after a hyphen joining it to the word before ("Tooth disease" in "Charcot-Marie-Tooth disease"), and
  a match crosses a comma only when its name has one ("clefts, lip pits" is not "Cleft lip");
- a one-word name in -ing before a noun is an adjective there ("collecting system" is no hoarding).

Spellings: a name's prefixed word also matches set off by a hyphen, and a hyphenated prefix joined
("Preauricular pit": "pre-auricular pits"; :data:`_PREFIXES`).

Coordinations (``coordinations``, the default): a match that ends a coordination also gives the other
conjuncts that make a name with its words, each as a span from the conjunct to the shared words
("palmar and plantar pits": "palmar pits" too), read as that name (``Span.reading``;
kgnorm.ner.coordination).

Plurals: with ``plurals`` (the default) every word of a name and of the text is folded to a
singular-like key first (:func:`kgnorm.text.inflection.singular`), so "pedunculated papules" in a text
matches the name "Pedunculated papule" and "renal cysts" "Renal cyst".

Other word orders (:meth:`DictionaryDetector._any_order`) also fold participles ("bridging of sella
turcica": "Bridged sella turcica"); :meth:`~DictionaryDetector.learn_modifiers` lets a name match without
a leading modifier the ontology itself uses ("skin lesions": "Localized skin lesion"); the nouns
clinical writing uses for "abnormal" ("cutaneous manifestations", "neurological signs") read as the
ontology's word for it (:data:`_GENERIC_NOUNS`).

Each span carries the concepts of the name it matched (``Span.concepts``, when the names came with
their concepts: :meth:`DictionaryDetector.from_snapshot`) and whether the match was word for word
(``Span.exact``), for annotate to weigh against the linker (kgnorm.linking.evidence).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import ahocorasick

from kgnorm.errors import KgnormError
from kgnorm.graph.refs import ConceptRef
from kgnorm.ner.coordination import coordinated
from kgnorm.ner.phrases import _BREAK_OR_COMMA, _COORDINATORS, _FUNCTION_WORDS
from kgnorm.ner.spans import MentionDetector, Span
from kgnorm.text.inflection import participle, singular
from kgnorm.text.normalize import normalize

if TYPE_CHECKING:
    from kgnorm.graph.views import OntologySnapshot

__all__ = ["DictionaryDetector", "DictionaryStats"]

# Words as normalize() keeps them: every run of characters that is neither punctuation,
# whitespace nor "_" (normalize folds each other run into one space).
_WORD = re.compile(r"[^\W_]+")
# What may not lie between two words of one match: brackets and clause punctuation.
_BREAK = re.compile(r"[()\[\]{};]")
# _BREAK_OR_COMMA (kgnorm.ner.phrases): ... and a comma, unless the name has one ("Diabetes mellitus, type 2")
# ... and between two words of a match in another word order (kgnorm.ner.dictionary._any_order)
_ANY_ORDER_BREAK = re.compile(r"[()\[\]{};,.:]")
# Words a name in another word order may add, drop or move ("abnormality of the thumb": "thumb abnormality")
_MAX_ANY_ORDER = 6  # content words of the longest name matched in another order
# Latin and Greek prefixes a writer may join to a word or set off with a hyphen ("preauricular",
# "pre-auricular"); a name written one way also matches the other (DictionaryDetector._add_spellings)
_PREFIXES = ("ante", "anti", "bi", "co", "contra", "dys", "endo", "epi", "extra", "hemi", "hyper", "hypo",
             "infra", "inter", "intra", "macro", "micro", "mid", "mono", "multi", "neo", "non", "oligo", "pan",
             "para", "peri", "poly", "post", "pre", "pseudo", "semi", "sub", "super", "supra", "trans", "tri",
             "ultra", "uni")
_PREFIX = re.compile("^(" + "|".join(sorted(_PREFIXES, key=len, reverse=True)) + ")(.{3,})$")


# nouns that say "abnormal" of the organ named before them (DictionaryDetector._generic_nouns)
_GENERIC_NOUNS = ("manifestations", "signs", "findings", "features", "involvement", "problems")


class _PlainBag(frozenset):
    """The content words of a match in another order as the text writes them (no variant folded)."""


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


def _hyphenated(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is an acronym joined to a word by a hyphen: the short name "S4" (fourth
    heart sound) is no mention in "L5-S4" (a lower-case word is: "tumor" in "tumor-suppressor")."""
    return text[start:end].isupper() and (
        (start >= 2 and text[start - 1] == "-" and text[start - 2].isalnum())
        or (end + 1 < len(text) and text[end] == "-" and text[end + 1].isalnum()))


def _stop_words() -> frozenset[str]:
    """scikit-learn's ENGLISH_STOP_WORDS, read from the one file that holds them: importing
    sklearn.feature_extraction (it imports scipy and sklearn.base) cost 1.1 CPU-s of every
    `annotate --ner dictionary:...`, which imports scikit-learn for nothing else."""
    import importlib.util

    spec = importlib.util.find_spec("sklearn")  # finds the package without importing it
    path = Path(spec.origin).parent / "feature_extraction" / "_stop_words.py" if spec and spec.origin else None
    if path is not None and path.is_file():
        module = importlib.util.module_from_spec(importlib.util.spec_from_file_location("_kgnorm_stop_words", path))
        module.__spec__.loader.exec_module(module)  # type: ignore[union-attr]
        words = getattr(module, "ENGLISH_STOP_WORDS", None)
        if words:
            return frozenset(words)
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # another layout: the public import

    return frozenset(ENGLISH_STOP_WORDS)


@dataclass
class DictionaryStats:
    """What the guards kept out of the dictionary, for the command's report."""

    names: int = 0
    too_short: int = 0
    stop_words: int = 0
    case_sensitive: int = 0


class DictionaryDetector(MentionDetector):
    """Leftmost-longest matches of ``names`` in texts, each reported as one ``type`` span. A name may
    come with its concept, as a ``(name, uid)`` pair: the spans then say which concepts the matched
    name names (of ``ontology``)."""

    # annotate's document consistency (tag a found string's other occurrences) raised this
    # tagger's dev NER F1 on both corpora, and lowered a trained detector's (benchmarks/LOG.md, "annotate")
    consistency_by_default = True
    # the matched name's concept linked as the text names it: dev mention F1 GSC+ (HPO) 0.6000 -> 0.6333,
    # NCBI-disease 0.5793 -> 0.5829, BC5CDR 0.6687 -> 0.6721 (benchmarks/LOG.md, "dictionary evidence")
    evidence_by_default = True
    # pure Python under the GIL: overlapped with the linker (kgnorm.jobs.overlap) it ran 6-11 % slower
    # on BC5CDR dev (benchmarks/LOG.md, "annotate with the dictionary tagger, overlapped or not"), so
    # annotate overlaps only when asked to (--overlap)
    overlap_by_default = False

    def __init__(self, names: Iterable[str | tuple[str, str]], type: str = "Disease", *, min_length: int = 3,
                 short_length: int = 5, plurals: bool = True, any_order: bool = True, participles: bool = True,
                 coordinations: bool = True, ontology: str = "") -> None:
        self.types: tuple[str, ...] = (type,)
        self.type, self.coordinations = type, coordinations
        self.plurals = plurals
        self.participles = participles
        self.ontology = ontology
        self._key_uids: dict[str, set[str]] = {}  # a matched key -> its names' concepts
        self._bag_uids: dict[frozenset[str], set[str]] = {}  # ... and a bag of content words
        self._plain_bag_uids: dict[frozenset[str], set[str]] = {}  # ... its words before learn_word_variants
        self._key_name: dict[str | frozenset[str], str] = {}  # ... and the first such name as written
        self._reduced: set[str] = set()  # keys that are names without their modifier (learn_modifiers)
        # content words of a multi-word name (any order) -> how many there are; see _any_order
        self._bags: dict[frozenset[str], int] = {}
        self._bag_words = 0
        self._bag_vocabulary: set[str] = set()
        self._variant: dict[str, str] = {}   # word -> its variant class (learn_word_variants)
        self._name_keys: dict[str, str] = {}  # a name as given -> its key (_name_key: the learn_* steps read them again)
        self.stats = DictionaryStats()
        self._stop = stop = _stop_words()
        cased: dict[str, set[str] | None] = {}  # normalized short name -> the case-kept forms it may match (None: any)
        automaton = ahocorasick.Automaton()
        refused: set[str] = set()
        self._comma_keys: set[str] = set()  # keys of names written with a comma
        for item in names:
            raw, uid = (item, None) if isinstance(item, str) else item
            key = normalize(raw)
            if not key:
                continue
            form = normalize(raw, lowercase=False)
            stop_only = all(word in stop for word in key.split(" "))  # read on the words as written
            key = self._fold(key)
            self._name_keys[raw] = key
            if "," in raw:
                self._comma_keys.add(key)
            if len(key) > short_length:
                if key in refused:
                    continue
                if key in cased:
                    self._note_concept(key, uid, any_order, raw)
                    continue
                if stop_only:
                    refused.add(key)
                    self.stats.stop_words += 1
                    continue
                cased[key] = None
                self._note_concept(key, uid, any_order, raw)
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
                self._note_concept(key, uid, False, raw)
                if key in cased:
                    cased[key].update(forms)  # type: ignore[union-attr]
                    continue
                cased[key] = forms
            # spaces around the key: a match must start and end on word boundaries
            automaton.add_word(f" {key} ", key)
        self._cased = {k: v for k, v in cased.items() if v is not None}
        self._add_spellings(automaton)
        self.stats.case_sensitive = len(self._cased)
        self.stats.names = len(automaton)
        self._automaton = automaton
        if len(automaton):
            automaton.make_automaton()

    def _add_spellings(self, automaton: ahocorasick.Automaton) -> int:
        """Each name also as a writer may spell its prefixed words: set off by a hyphen, which
        normalize() reads as a space ("Preauricular pit": "pre-auricular pits"), where what follows the
        prefix is a word of the dictionary itself, and joined ("Pre-auricular pit": "preauricular
        pits"). Case-kept short names are left as they are. Returns how many keys were added."""
        keys = [k for k in dict.fromkeys(self._name_keys.values()) if k not in self._cased and f" {k} " in automaton]
        vocabulary = {w for k in keys for w in k.split(" ")}
        self._vocabulary = vocabulary - _FUNCTION_WORDS - _COORDINATORS
        added = 0
        for key in keys:
            words = key.split(" ")
            split = []
            for w in words:
                m = _PREFIX.match(w)
                split.extend(m.groups() if m and m.group(2) in vocabulary else (w,))
            joined, i = [], 0
            while i < len(words):
                if words[i] in _PREFIXES and i + 1 < len(words):
                    joined.append(words[i] + words[i + 1])
                    i += 2
                else:
                    joined.append(words[i])
                    i += 1
            for variant in {" ".join(split), " ".join(joined)} - {key}:
                if f" {variant} " in automaton:
                    continue
                automaton.add_word(f" {variant} ", variant)
                self._key_uids[variant] = set(self._key_uids.get(key, ()))
                self._key_name[variant] = self._key_name.get(key, "")
                if key in self._comma_keys:
                    self._comma_keys.add(variant)
                added += 1
        return added

    def _note_concept(self, key: str, uid: str | None, bag: bool, name: str) -> None:
        if uid is None:
            return
        self._key_uids.setdefault(key, set()).add(uid)
        self._key_name.setdefault(key, name)
        if bag:
            words = frozenset(self._bag_word(w) for w in key.split(" ") if w not in _FUNCTION_WORDS)
            self._bag_uids.setdefault(words, set()).add(uid)
            self._key_name.setdefault(words, name)

    def _add_bag(self, key: str) -> None:
        content = [self._bag_word(w) for w in key.split(" ") if w not in _FUNCTION_WORDS]
        bag = frozenset(content)
        if 2 <= len(content) <= _MAX_ANY_ORDER and len(bag) == len(content):
            self._bags.setdefault(bag, len(content))
            self._bag_words = max(self._bag_words, len(content))
            self._bag_vocabulary.update(bag)

    def _any_order(self, text: str, words: list[tuple[int, int]],
                   lowered: list[str]) -> list[tuple[int, int, frozenset[str]]]:
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
                    found.append((first, last, frozenset(bag)))
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
            bags = {frozenset(self._bag_word(w) for w in self._name_key(n).split(" ") if w not in _FUNCTION_WORDS)
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
        self._generic_nouns()
        bags, bag_uids = dict(self._bags), self._bag_uids
        self._bags, self._bag_vocabulary, self._bag_uids, self._plain_bag_uids = {}, set(), {}, bag_uids
        for bag, n in bags.items():
            folded = frozenset(self._variant.get(w, w) for w in bag)
            if len(folded) == n:
                self._bags.setdefault(folded, n)
                self._bag_vocabulary.update(folded)
                self._bag_uids.setdefault(folded, set()).update(bag_uids.get(bag, ()))
                if bag in self._key_name:
                    self._key_name.setdefault(folded, self._key_name[bag])

    def _generic_nouns(self) -> None:
        """The nouns clinical writing puts after an organ's adjective to say it is abnormal ("cutaneous
        manifestations", "neurological signs") read as the ontology's own word for it: the variant class
        of "abnormality", when the ontology has one (learn_word_variants)."""
        word = self._bag_word(singular("abnormality"))
        target = self._variant.get(word, word if word in self._variant.values() else None)
        if target is None:
            return
        for word in _GENERIC_NOUNS:
            folded = self._bag_word(singular(word))
            self._variant.setdefault(folded, target)

    def learn_modifiers(self, names: dict[str, Sequence[str]], is_a: Iterable[tuple[str, str]],
                        min_count: int = 10) -> list[str]:
        """Words the ontology puts before a parent's name to name a child ("Localized skin lesion" under
        "Skin lesion"-like parents: "localized", "generalized", "recurrent", "multiple"), learnt from
        its IS_A edges (``names``: uid -> names): a word doing so for at least ``min_count`` edges is a
        modifier. A name that starts with a modifier then also matches without it, where what is left
        has two words or more and is no name itself: "skin lesions" in a text is "Localized skin
        lesion" when the ontology has no "Skin lesion" (FastHPOCR drops a fixed list of such "void"
        words likewise). Such a match is not ``exact``. Returns the modifiers."""
        from collections import Counter

        keys = {uid: {self._name_key(n) for n in ns} for uid, ns in names.items()}
        counts: Counter[str] = Counter()
        for child, parent in is_a:
            for key in keys.get(child, ()) if parent in keys else ():
                first, _, rest = key.partition(" ")
                if rest in keys[parent]:
                    counts[first] += 1
        modifiers = {w for w, n in counts.items() if n >= min_count and w not in _FUNCTION_WORDS}
        added = 0
        for uid, ks in keys.items():
            for key in ks:
                first, _, rest = key.partition(" ")
                if first not in modifiers or " " not in rest:
                    continue
                if rest not in self._reduced:
                    if f" {rest} " in self._automaton:
                        continue  # a name itself
                    self._automaton.add_word(f" {rest} ", rest)
                    self._reduced.add(rest)
                    added += 1
                self._key_uids.setdefault(rest, set()).add(uid)
                self._key_name.setdefault(rest, self._key_name.get(key, rest))
        if added:
            self._automaton.make_automaton()
            self.stats.names = len(self._automaton)
        return sorted(modifiers)

    def prefer_ancestors(self, is_a: Iterable[tuple[str, str]]) -> int:
        """Of the concepts one name names, keep those none of whose ancestors it also names: HPO gives
        "Ear anomaly" to "Abnormality of the ear" and "Ear anomalies" to its child "Abnormality of the
        outer ear", and a text saying "ear anomalies" says no more than the first. Returns how many
        names were left with fewer concepts."""
        parents: dict[str, list[str]] = {}
        for child, parent in is_a:
            parents.setdefault(child, []).append(parent)

        def has_ancestor_in(uid: str, among: set[str]) -> bool:
            seen, todo = set(), list(parents.get(uid, ()))
            while todo:
                u = todo.pop()
                if u in among:
                    return True
                if u not in seen:
                    seen.add(u)
                    todo.extend(parents.get(u, ()))
            return False
        changed = 0
        for table in (self._key_uids, self._bag_uids, self._plain_bag_uids):
            for key, uids in table.items():
                if len(uids) > 1:
                    kept = {u for u in uids if not has_ancestor_in(u, uids)}
                    if kept and len(kept) < len(uids):
                        table[key] = kept  # type: ignore[index]
                        changed += 1
        return changed

    def _name_key(self, name: str) -> str:
        """A name's key as the constructor made it (normalized, folded), made once per name."""
        key = self._name_keys.get(name)
        return self._fold(normalize(name)) if key is None else key

    def _fold(self, key: str) -> str:
        return " ".join([singular(w) for w in key.split(" ")]) if self.plurals else key

    def _bag_word(self, word: str) -> str:
        """A content word as the other-word-order matching compares it: participles folded too
        ("bridging" meets "bridged"), there only, where two content words or more must agree (a
        one-word name such as "Ordering" would meet every "ordered")."""
        return participle(word) if self.participles else word

    @classmethod
    def from_snapshot(cls, snapshot: OntologySnapshot, type: str = "Disease", root: str | None = None,
                      modifiers: bool = True, **guards: int) -> DictionaryDetector:
        """Every name (preferred and synonyms) of an ontology read from the store; with ``root``, of
        the concepts under it only (and itself), through the snapshot's IS_A edges."""
        concepts = snapshot.concepts
        if root is not None:
            keep = _under(root, snapshot.is_a)
            if len(keep) == 1 and root not in {c.uid for c in concepts}:
                raise KgnormError(f"root {root!r} is not a concept of ontology {snapshot.name!r}")
            concepts = [c for c in concepts if c.uid in keep]
        detector = cls(((n, c.uid) for c in concepts for n in c.all_names()), type, ontology=snapshot.name,
                       **guards)
        if detector._bags:
            detector.learn_word_variants([c.all_names() for c in concepts])
        if modifiers:
            detector.learn_modifiers({c.uid: c.all_names() for c in concepts}, snapshot.is_a)
        detector.prefer_ancestors(snapshot.is_a)
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
        fold = singular if self.plurals else str  # one word: _fold without its split and join
        lowered = [fold(text[s:e].lower()) for s, e in words]
        offsets, pos = [], 1
        for word in lowered:
            offsets.append(pos)
            pos += len(word) + 1
        haystack = " " + " ".join(lowered) + " "
        word_at = {off: i for i, off in enumerate(offsets)}
        found: list[tuple[int, int, str | frozenset[str]]] = []  # (first word, last word, key or bag)
        for end, key in self._automaton.iter(haystack):
            first = word_at[end - len(key)]
            last = first + key.count(" ")
            if key in self._cased and (not self._case_matches(text, words, first, last, key)
                                       or _hyphenated(text, words[first][0], words[last][1])):
                continue
            breaks = _BREAK if key in self._comma_keys else _BREAK_OR_COMMA
            if any(breaks.search(text, words[i][1], words[i + 1][0]) for i in range(first, last)):
                continue  # "(G6PD) deficiency" is not the name "G6PD deficiency", nor "clefts, lip" "Cleft lip"
            found.append((first, last, key))
        if self._bags:
            variant = self._variant
            plain = list(map(self._bag_word, lowered))
            found += [self._as_written(plain, f, l, bag) for f, l, bag in
                      self._any_order(text, words, [variant.get(b, b) for b in plain])
                      if not self._phrase_goes_on(text, words, lowered, l)]
        spans = self._leftmost_longest(text, words, found)
        if not self.coordinations:
            return spans
        return coordinated(text, words, lowered, spans, self._lookup, self.type, self.ontology)

    def _phrase_goes_on(self, text: str, words: list[tuple[int, int]], lowered: list[str], last: int) -> bool:
        """Whether the word after word `last` continues its noun phrase: a word of the names, no
        function word, nothing but spaces between ("hyperplasia of the mandibular | coronoid processes")."""
        nxt = last + 1
        return nxt < len(words) and not text[words[last][1]:words[nxt][0]].strip() and \
            lowered[nxt] in self._vocabulary and lowered[nxt] not in self._stop

    def _as_written(self, plain: list[str], first: int, last: int,
                    bag: frozenset[str]) -> tuple[int, int, frozenset[str]]:
        """A match in another word order, as the bag of its words as written when a name has them:
        "malformations of the kidney" is "Kidney malformation", not the "Abnormal kidney" its variant
        class ("malformation": "abnormal") also meets."""
        words = _PlainBag(w for w in plain[first:last + 1] if w not in _FUNCTION_WORDS)
        return (first, last, words) if words != bag and words in self._plain_bag_uids else (first, last, bag)

    def _lookup(self, folded: list[str]) -> tuple[set[str], str] | None:
        """The concepts and name of the name these folded words make word for word (a conjunct read
        through word variants or in another order made "fistulae and renal agenesis" "Absent
        sinuses"); None when they make none. Case-kept short names never."""
        key = " ".join(folded)
        if key not in self._cased and f" {key} " in self._automaton:
            return self._key_uids.get(key, set()), self._key_name.get(key, "")
        return None

    def _inside_a_word(self, text: str, words: list[tuple[int, int]], first: int, last: int) -> bool:
        """Whether a match is part of a longer word rather than a phrase of its own: it begins after a
        hyphen that joins it to the word before ("Tooth disease" in "Charcot-Marie-Tooth disease"), or it
        is one word in -ing that qualifies the noun after it, an adjective there ("collecting" in
        "collecting system", the name "Collecting" being hoarding)."""
        start = words[first][0]
        if start >= 2 and text[start - 1] == "-" and text[start - 2].isalnum():
            return True
        if first != last or last + 1 >= len(words) or not text[start:words[last][1]].lower().endswith("ing"):
            return False
        gap = text[words[last][1]:words[last + 1][0]]
        after = text[slice(*words[last + 1])].lower()  # a noun: no stop word, or a word of the names ("system")
        return not gap.strip() and after.isalpha() and (after not in self._stop or singular(after) in self._vocabulary)

    def _case_matches(self, text: str, words: list[tuple[int, int]], first: int, last: int,
                      key: str) -> bool:
        surface = " ".join(text[s:e] for s, e in words[first:last + 1])
        return self._fold(surface) in self._cased[key]

    def _leftmost_longest(self, text: str, words: list[tuple[int, int]],
                          found: list[tuple[int, int, str | frozenset[str]]]) -> list[Span]:
        """The matches leftmost-longest; of two over the same words, the word-for-word one."""
        spans: list[Span] = []
        covered = -1
        for first, last, key in sorted(found, key=lambda m: (m[0], -m[1], not isinstance(m[2], str))):
            if first <= covered or self._inside_a_word(text, words, first, last):
                continue
            start, end = words[first][0], words[last][1]
            exact = isinstance(key, str) and key not in self._reduced
            uids = self._key_uids.get(key, ()) if isinstance(key, str) else \
                (self._plain_bag_uids if isinstance(key, _PlainBag) else self._bag_uids).get(key, ())
            spans.append(Span(start, end, text[start:end], self.type, exact=exact, name=self._key_name.get(key, ""),
                              concepts=tuple(ConceptRef(self.ontology, u) for u in sorted(uids))))
            covered = last
        return spans
