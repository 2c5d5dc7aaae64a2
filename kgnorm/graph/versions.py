"""What a new version of an ontology does to the one in the store (issue 27): which stored
concepts survive, which were merged into a single successor (their links move there), which
vanished without one (their links are orphaned), and which ids are retired.

Pure functions of the stored uids and the new `OntologyGraph`: the stores apply the plan, the
dry run prints it, and nothing here touches a store.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kgnorm.graph.ontology_graph import OntologyGraph, RetiredId


@dataclass
class VersionPlan:
    """`moved`: removed uid -> its single successor in the new version; `ambiguous`: removed
    uids with several candidates (orphaned, the candidates kept as RetiredId.consider);
    `retired`: every id of the ontology that is not a concept of the new version but resolves
    (what the store keeps as RetiredId nodes for the scorer)."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # stored, absent, no single successor
    moved: dict[str, str] = field(default_factory=dict)
    ambiguous: dict[str, list[str]] = field(default_factory=dict)
    retired: dict[str, RetiredId] = field(default_factory=dict)


def successors(uid: str, graph: OntologyGraph, alt_index: dict[str, list[str]] | None = None,
               _seen: frozenset[str] = frozenset()) -> list[str]:
    """Concepts of the new version that take `uid`'s place: those listing it as an alt id, and
    the stated `replaced_by` of a retired id (followed through retired ids, cycles cut)."""
    index = alt_index if alt_index is not None else alt_id_index(graph)
    found = set(index.get(uid, ()))
    ret = graph.retired.get(uid)
    for target in (ret.replaced_by if ret else ()):
        if target in graph.concepts:
            found.add(target)
        elif target not in _seen and target != uid:
            found.update(successors(target, graph, index, _seen | {uid}))
    return sorted(found)


def alt_id_index(graph: OntologyGraph) -> dict[str, list[str]]:
    """alt id -> the concepts of `graph` that list it."""
    index: dict[str, list[str]] = {}
    for c in graph.concepts.values():
        for alt in c.alt_ids:
            index.setdefault(alt, []).append(c.uid)
    return index


def plan_version(stored: set[str], graph: OntologyGraph,
                 previous: dict[str, RetiredId] | None = None) -> VersionPlan:
    """The plan for replacing the stored concepts `stored` (and retired ids `previous`) by `graph`."""
    new = set(graph.concepts)
    plan = VersionPlan(added=sorted(new - stored))
    retired: dict[str, RetiredId] = {}
    index = alt_id_index(graph)
    for uid, ret in graph.retired.items():
        if uid not in new:
            retired[uid] = RetiredId(uid, ret.name, list(ret.replaced_by), list(ret.consider))
    for uid in sorted(stored - new):
        succ = successors(uid, graph, index)
        if len(succ) == 1:
            plan.moved[uid] = succ[0]
        else:
            plan.removed.append(uid)
            if succ:
                plan.ambiguous[uid] = succ
        known = retired.get(uid) or RetiredId(uid)
        retired[uid] = RetiredId(uid, known.name, succ if len(succ) == 1 else list(known.replaced_by),
                                 sorted(set(known.consider) | (set(succ) if len(succ) > 1 else set())))
    for uid, old in (previous or {}).items():  # ids retired by earlier versions stay resolvable
        if uid in new or uid in retired:
            continue
        targets = set(successors(uid, graph, index))
        for t in old.replaced_by:  # the successor they had, or where it went since
            targets.update([t] if t in new else [plan.moved[t]] if t in plan.moved else successors(t, graph, index))
        retired[uid] = RetiredId(uid, old.name, sorted(targets), list(old.consider))
    plan.retired = retired
    return plan


def single_successor(ret: RetiredId, concepts: set[str]) -> str | None:
    """The one concept a retired id resolves to (its `replaced_by` among `concepts`), else None."""
    hits = sorted({u for u in ret.replaced_by if u in concepts})
    return hits[0] if len(hits) == 1 else None
