"""One rule for gold mentions with several ids: a composite, or one mention with alternative ids.

Why: a gold field ``A|B`` means two different things. In a *composite* ("breast and ovarian
cancer", BC5CDR's "hyperammonemic encephalopathy" with parts "hyperammonemic" | "encephalopathy")
each part names its own concept, and the user needs one link per part: the mention is right only
when every part is. In a mention the annotators allow two concepts for (NCBI-disease's "ACTH
deficiency", SpecificDisease, ``OMIM:201400|C535668``) one link to either id is right.

The rule, in order (:func:`is_composite`):

1. one id (or none): not a composite;
2. the corpus lists the parts: composite. BC5CDR PubTator's seventh column, a ``.concept``
   mention text holding ``|`` ("cocaine abuse|amphetamine abuse"), a TSV ``parts`` column;
3. the corpus types the mention: NCBI-disease's ``CompositeMention`` is a composite; its
   ``SpecificDisease``, ``Modifier`` and ``DiseaseClass`` are not (alternative ids);
4. no mark (a ``.concept`` file, whose type column says only "Disease"; a TSV without parts):
   composite. That is BC5CDR's convention, the corpus the ``.concept`` files come from: in its
   dev PubTator 87 of the 98 disease mentions with several ids list their parts, among them
   non-coordinations such as "hemorrhagic cystitis" (hemorrhagic | cystitis, ``D006470|D003556``);
   the other 11 ("choreoathetosis", ``D002819|D001264``) are scored strictly too.

A non-composite's ids become one conjunction part ``A+B``, which the strict scorer
(:mod:`kgnorm.evaluation.link_accuracy`) credits when the predicted concept is any of them.
"""
from __future__ import annotations

from collections.abc import Sequence

from kgnorm.mentions.types import Mention

__all__ = ["COMPOSITE_TYPES", "SINGLE_TYPES", "is_composite", "scoring_gold", "unsplit_composites"]

COMPOSITE_TYPES = frozenset({"CompositeMention"})
SINGLE_TYPES = frozenset({"SpecificDisease", "Modifier", "DiseaseClass"})
_NIL = "-1"


def is_composite(mention: Mention) -> bool:
    """Is this gold mention a composite (every part must be right)? See the module's rule."""
    if len(mention.gold) < 2:
        return False
    if mention.parts:
        return True
    if mention.type in COMPOSITE_TYPES:
        return True
    return mention.type not in SINGLE_TYPES


def scoring_gold(mention: Mention) -> list[str]:
    """The gold the strict scorer reads: a composite's parts as they are; a non-composite
    mention's several ids as one part ``A+B`` (right when the prediction is any of them)."""
    gold = list(mention.gold)
    if len(gold) < 2 or is_composite(mention):
        return gold
    ids = [g for g in gold if g.strip() != _NIL]
    return ["+".join(ids)] if ids else []


def unsplit_composites(mentions: Sequence[Mention], predicted_parts: Sequence[int]) -> tuple[int, int]:
    """(composites, composites the prediction gave fewer parts than the gold has): the latter are
    misses under the strict rule, reported so a user sees what splitting costs."""
    comp = unsplit = 0
    for m, n in zip(mentions, predicted_parts):
        if is_composite(m):
            comp += 1
            unsplit += n < len(m.gold)
    return comp, unsplit
