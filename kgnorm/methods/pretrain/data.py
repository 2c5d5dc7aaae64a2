"""What pretraining learns from: the ontologies' names grouped by concept, nothing else.

Names are normalized with the same function the linkers apply to dictionary names and
queries (so the encoder sees at training time the strings it will see at link time) and
de-duplicated per concept. A concept is a ``(ontology, uid)`` pair: two ontologies that share
an id space are still kept apart. Only concepts with two or more distinct names can give a
positive pair; the others are counted and left out. Evaluation mentions are never read here.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kgnorm.errors import KgnormError
from kgnorm.graph.views import OntologySnapshot
from kgnorm.graph.hierarchy import Hierarchy
from kgnorm.training.checkpoints import digest

__all__ = ["PretrainData", "build_pretrain_data"]


@dataclass
class PretrainData:
    """Flat name rows and, per concept, the rows that are its names."""

    names: list[str]                       # row -> normalized name
    labels: list[int]                      # row -> concept index
    concepts: list[tuple[str, str]]        # concept index -> (ontology, uid)
    groups: dict[str, list[int]]           # "ontology\tuid" -> rows (multi-name concepts only)
    ontologies: list[dict]                 # name, version, concepts, multi-name concepts, names
    hierarchies: dict[str, Hierarchy] = field(default_factory=dict)  # ontology -> normalized names

    def fingerprint(self) -> str:
        """Digest of the ontologies and their names (a checkpoint is refused on other data)."""
        return digest([f"{o['name']}@{o['version']}" for o in self.ontologies] + self.names
                      + [str(x) for x in self.labels])


def build_pretrain_data(snapshots: Sequence[OntologySnapshot], normalize: Callable[[str], str],
                        min_concepts: int = 2, with_hierarchy: bool = False) -> PretrainData:
    """Group every ontology's normalized names by concept; KgnormError when fewer than
    ``min_concepts`` concepts (all ontologies together) have two or more distinct names."""
    if not snapshots:
        raise KgnormError("pretraining needs at least one ontology")
    seen_names = [s.name for s in snapshots]
    if len(set(seen_names)) != len(seen_names):
        raise KgnormError(f"an ontology is given twice: {', '.join(seen_names)}")
    names: list[str] = []
    labels: list[int] = []
    concepts: list[tuple[str, str]] = []
    concept_index: dict[tuple[str, str], int] = {}
    by_concept: dict[int, list[int]] = {}
    summary: list[dict] = []
    for snap in snapshots:
        multi = n_names = 0
        for c in snap.concepts:
            distinct = list(dict.fromkeys(n for n in (normalize(x) for x in c.all_names()) if n and n.strip()))
            if not distinct:
                continue
            key = (snap.name, c.uid)
            ci = concept_index.setdefault(key, len(concepts))
            if ci == len(concepts):
                concepts.append(key)
            rows = by_concept.setdefault(ci, [])
            for n in distinct:
                rows.append(len(names))
                names.append(n)
                labels.append(ci)
            n_names += len(distinct)
            multi += len(distinct) >= 2
        summary.append({"name": snap.name, "version": snap.version, "concepts": len(snap.concepts),
                        "multi_name_concepts": multi, "names": n_names})
    groups = {f"{concepts[ci][0]}\t{concepts[ci][1]}": rows for ci, rows in by_concept.items()
              if len(rows) >= 2}
    if len(groups) < max(2, int(min_concepts)):
        counts = "; ".join(f"{o['name']}: {o['multi_name_concepts']} of {o['concepts']}" for o in summary)
        raise KgnormError(f"too few concepts with two or more distinct names to form batches ({counts}); "
                          f"pretraining needs at least {max(2, int(min_concepts))} (one batch)")
    hierarchies: dict[str, Hierarchy] = {}
    if with_hierarchy:  # ontologies without IS_A edges (MEDIC's DNorm file) give synonyms only
        for snap, o in zip(snapshots, summary):
            o["is_a_edges"] = len(snap.is_a)
            if snap.is_a:
                named = {c.uid: [names[r] for r in by_concept[concept_index[(snap.name, c.uid)]]]
                         for c in snap.concepts if (snap.name, c.uid) in concept_index}
                hierarchies[snap.name] = Hierarchy.from_edges(named, snap.is_a)
        if not hierarchies:
            raise KgnormError(f"none of the ontologies ({', '.join(seen_names)}) has IS_A edges: "
                              "the hierarchy term needs them")
    return PretrainData(names, labels, concepts, groups, summary, hierarchies)
