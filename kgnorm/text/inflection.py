"""One form per noun for dictionary matching: a text says "papules", "anomalies" or "vertebrae" where
the ontology names "Papule", "Anomaly" and "Vertebra". :func:`singular` folds a lowercased word to a
singular-like key (Harman's 1991 S-stemmer, plus the Latin plurals of anatomy); the dictionary tagger
folds its names and the text alike, so only the equality of folded words matters: a key need not
be an English word ("diabetes" and "diabetes" both give "diabete"). British "ae"/"oe" inside a word
fold to "e" ("naevus": "nevus"), a Greek neuter in -on to its plural in -a ("ganglion": "ganglia"). Words of 3 letters or fewer, and words with a digit, are kept as
they are ("has", "gas", "ms", "t4s").

Both folds are pure functions of one word, called for every word of every name and text: each keeps
the answers of the last WORDS_CACHED distinct words (a text repeats its words, an ontology its
vocabulary; the dictionary tagger's build over HPO folds 0.49 M words, 12 k of them distinct)."""
from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["singular", "participle"]

WORDS_CACHED = 1 << 18  # distinct words whose folds are kept (a few tens of MB at most)

_UK = re.compile(r"(ae|oe)(?=[a-z])")


def _us_spelling(word: str) -> str:
    """British "ae"/"oe" inside a word as American "e": naevus, haemorrhage, oedema (HPO gives UK
    spellings as synonyms for some names only); words under 6 letters are kept ("toes", "does")."""
    return _UK.sub("e", word) if len(word) >= 6 and ("ae" in word or "oe" in word) else word

# Latin and Greek plurals anatomy and pathology use, longest ending first (ending, singular ending)
_LATIN = (("omata", "oma"), ("ae", "a"))
_KEEP = ("ss", "us", "is")


@lru_cache(maxsize=WORDS_CACHED)
def singular(word: str) -> str:
    """The folded form of a lowercased ``word`` (module docstring)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for ending, single in _LATIN:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return _us_spelling(word[: -len(ending)]) + single
    word = _us_spelling(word)
    if word.endswith("i") and len(word) >= 4:   # nevi, foci, emboli, calculi
        return word[:-1] + "us"
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(_KEEP):
        word = word[:-1]
    return _greek_neuter(word)


def _greek_neuter(word: str) -> str:
    """A Greek neuter in -on folded to its plural in -a, the form the other spelling meets:
    "acrochordon(s)" and "acrochorda", "ganglion" and "ganglia", "mitochondrion" and "mitochondria".
    Words under 8 letters ("common", "colon") and words in -tion/-sion ("serration") are kept."""
    if len(word) >= 8 and word.endswith("on") and not word.endswith(("tion", "sion")):
        return word[:-2] + "a"
    return word


@lru_cache(maxsize=WORDS_CACHED)
def participle(word: str) -> str:
    """A folded ``word`` (after :func:`singular`) with a participle's ending cut: "bridged" and
    "bridging" both give "bridg", so the text's "bridging of sella turcica" meets the name "Bridged
    sella turcica". Words under 6 letters are kept ("fused", "red", "ring")."""
    if len(word) < 6 or not word.isalpha():
        return word
    if word.endswith("ing"):
        return word[:-3]
    if word.endswith("ed"):
        return word[:-2]
    return word
