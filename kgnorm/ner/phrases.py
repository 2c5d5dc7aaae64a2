"""The word classes and the gaps between words that the dictionary tagger (kgnorm.ner.dictionary)
and its reading of coordinations (kgnorm.ner.coordination) both decide a match by."""
from __future__ import annotations

import re

# What may not lie between two words of one match: brackets and clause punctuation, and a comma
# (unless the name has one: kgnorm.ner.dictionary)
_BREAK_OR_COMMA = re.compile(r"[()\[\]{};,]")
_COORDINATORS = frozenset({"and", "or"})
_FUNCTION_WORDS = frozenset({"of", "the", "a", "an", "in", "on", "at", "to", "for", "with", "by", "from"})


def _plain_gap(text: str, words: list[tuple[int, int]], i: int, comma: bool = False, bare: bool = True) -> bool:
    """Whether only spaces (and, with `comma`, one comma) lie between word i and word i + 1; with
    `bare` False, the comma must be there."""
    gap = text[words[i][1]:words[i + 1][0]]
    if not gap.strip():
        return bare
    return comma and gap.strip() == ","
