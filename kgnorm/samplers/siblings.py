"""Names of sibling concepts (sharing a parent) as hard negatives."""
from __future__ import annotations

from kgnorm.samplers.base import RelatedNameSampler

__all__ = ["SiblingNegativeSampler"]


class SiblingNegativeSampler(RelatedNameSampler):
    """For each (name, concept) item, up to ``k`` names of sibling concepts.

    Siblings share a parent and are neither the concept itself nor one of its ancestors
    or descendants (possible only when shortcut edges were kept); a sibling name that is
    textually one of the anchor concept's own names is never used. ``sample()`` returns
    :class:`Pair` (other = negative name, other_uid = sibling uid).
    """

    def related_names(self, uid: str) -> list[tuple[str, str]]:
        """(name, sibling uid) candidates for concept ``uid``."""
        h = self.hierarchy
        related = h.ancestors(uid) | h.descendants(uid)
        own = set(h.names.get(uid, ()))
        return [(n, s) for s in h.siblings(uid) if s not in related
                for n in h.names.get(s, ()) if n not in own]
