"""Names of a concept's parents as extra positives."""
from __future__ import annotations

from kgnorm.samplers.base import RelatedNameSampler

__all__ = ["ParentPositiveSampler"]


class ParentPositiveSampler(RelatedNameSampler):
    """For each (name, concept) item, up to ``k`` names of the concept's direct parents.

    ``items``: a LevelSplit (its train names), an iterable of (name, uid, ...) or ``None``
    for every name of the hierarchy. Items whose concept has no parent (or only nameless
    parents) give no pair. ``sample()`` returns :class:`Pair` (anchor, anchor_uid,
    other=parent name, other_uid=parent uid) for the current epoch.
    """

    def related_names(self, uid: str) -> list[tuple[str, str]]:
        """(name, parent uid) of every name of every parent of ``uid``."""
        return [(n, p) for p in self.hierarchy.parents(uid) for n in self.hierarchy.names.get(p, ())]
