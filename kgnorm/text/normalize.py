"""String normalization shared by queries (mentions) and dictionary names.

Both sides of a lookup must go through the same function, otherwise exact-match and sparse
scores silently drop; this mirrors BioSyn's ``TextPreprocess`` (lowercase, every run of
punctuation/whitespace -> one space, strip) but decodes HTML entities first, so MEDIC's
``Fictional&apos;s`` becomes ``fictional s`` and not ``fictional apos s``.
"""
from __future__ import annotations

import html
import re

__all__ = ["normalize", "PUNCT_OR_SPACE"]

# For ASCII text, [\W_] is exactly string.punctuation + whitespace (+ control characters),
# i.e. BioSyn's class; for non-ASCII it also folds Unicode dashes, quotes and symbols, while
# accented letters stay word characters.
PUNCT_OR_SPACE = re.compile(r"[\W_]+")


def normalize(text: str, lowercase: bool = True) -> str:
    """Decode HTML entities, lowercase, collapse punctuation/whitespace runs to one space, strip.

    Runs on ~100k dictionary names, so it is kept to a few C-level calls.
    """
    if "&" in text and ";" in text:
        text = html.unescape(text)
    if lowercase:
        text = text.lower()
    return PUNCT_OR_SPACE.sub(" ", text).strip()
