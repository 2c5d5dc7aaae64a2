"""The query-side preprocessing of BioSyn, as one switchable object.

Why: users reproduce 0.80 instead of 0.91 Acc@1 when abbreviation and composite handling are
missing (BioSyn issue #4); training, linking and evaluation must all call the same steps, and
ablations need to switch each one off.

Order for a mention: composite split (on the original surface text, where the structure cues
are) -> abbreviation expansion per part -> normalization -> spelling correction.
"""
from __future__ import annotations

import re
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kgnorm.text.abbreviations import expand
from kgnorm.text.composite import split_composite
from kgnorm.text.normalize import normalize as _normalize

if TYPE_CHECKING:  # mentions are only read here: text sits below kgnorm.mentions
    from kgnorm.mentions.types import Mention

__all__ = ["TextPipeline"]


@dataclass
class TextPipeline:
    """Turns mentions into query strings and dictionary names into index keys.

    lowercase / normalize: lowercase; decode HTML entities and collapse punctuation.
    abbreviations: expand short forms defined in the mention's document.
    composites: split composite mentions (``mention.parts`` first, then the gold part count
        when the gold has several parts, then the rules of kgnorm.text.composite).
    single_gold_no_split: a mention whose gold has exactly one part is not split by the rules
        (BioSyn only splits gold-composite mentions; NCBI's "breast and ovarian cancer" is
        often the single concept D061325). Off: such mentions go through the rules.
    spelling: wrong -> right, applied to whole tokens of the normalized query (a file's:
        kgnorm.mentions.spelling.load_spelling).
    known_names: normalized names that the rules must never split (e.g. the dictionary's).
    """

    lowercase: bool = True
    normalize: bool = True
    abbreviations: bool = True
    composites: bool = True
    spelling: dict[str, str] | None = None
    single_gold_no_split: bool = True
    known_names: Container[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._spelling_re: re.Pattern[str] | None = None
        self._spelling_norm: dict[str, str] = {}
        if self.spelling:
            norm = {self.normalize_name(k): self.normalize_name(v)
                    for k, v in self.spelling.items()}
            self._spelling_norm = {k: v for k, v in norm.items() if k and k != v}
            if self._spelling_norm:
                keys = sorted(self._spelling_norm, key=len, reverse=True)
                self._spelling_re = re.compile(
                    r"(?<!\S)(?:" + "|".join(re.escape(k) for k in keys) + r")(?!\S)")

    def normalize_name(self, name: str) -> str:
        """Index key of a dictionary name: the same normalization as queries, nothing else."""
        if self.normalize:
            return _normalize(name, lowercase=self.lowercase)
        return name.lower() if self.lowercase else name

    def correct_spelling(self, text: str) -> str:
        """Replace whole-token misspellings in an already normalized string."""
        if self._spelling_re is None:
            return text
        return self._spelling_re.sub(lambda m: self._spelling_norm[m.group(0)], text)

    def split(self, mention: Mention) -> list[str]:
        """Surface texts of the mention's parts (one item when it is not composite)."""
        if not self.composites:
            return [mention.text]
        if mention.parts:
            return list(mention.parts)
        n_gold = len(mention.gold)
        if n_gold > 1:
            return split_composite(mention.text, n_gold)
        if n_gold == 1 and self.single_gold_no_split:
            return [mention.text]
        return split_composite(mention.text, None, known=self.known_names)

    def prepare(self, mention: Mention, doc_abbreviations: Mapping[str, str] | None = None
                ) -> list[str]:
        """Normalized query strings, one per composite part."""
        queries = []
        for part in self.split(mention):
            if self.abbreviations and doc_abbreviations:
                part = expand(part, doc_abbreviations)
            queries.append(self.correct_spelling(self.normalize_name(part)))
        return queries
