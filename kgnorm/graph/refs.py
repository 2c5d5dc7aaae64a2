"""A concept's identity across ontologies, spelled in one place.

Two ontologies may share a CURIE (MEDIC and MeSH both hold ``MESH:D003924``): a uid alone does
not say which concept a link points at. A :class:`ConceptRef` does; its :attr:`~ConceptRef.key`
is the store's key of the concept node (``Concept.key``). A linker stamps its ontology on every
hit, so an edge always names the concept it was ranked from, whatever else the store holds."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConceptRef", "KEY_SEPARATOR"]

KEY_SEPARATOR = "|"  # between ontology and uid in a concept key (a uid never holds it: kgnorm.linking.dictionary)


@dataclass(frozen=True, slots=True, order=True)
class ConceptRef:
    """A concept: its ontology (as the store names it: ``medic``, ``mesh``) and its uid. An empty
    ontology is a bare uid, which the store resolves only when one stored concept has it."""

    ontology: str
    uid: str

    @property
    def key(self) -> str:
        """The store's key of the concept (``ontology|uid``)."""
        return f"{self.ontology}{KEY_SEPARATOR}{self.uid}"

    @classmethod
    def from_key(cls, key: str) -> "ConceptRef":
        ontology, _, uid = key.partition(KEY_SEPARATOR)
        return cls(ontology, uid)

    def __str__(self) -> str:
        return f"{self.uid} ({self.ontology})" if self.ontology else self.uid
