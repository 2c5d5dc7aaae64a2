"""Gold ids that are no longer concepts (issue 27): a `--gold` file written against an older
version names ids the store keeps as RetiredId nodes (OBO obsolete terms, SNOMED inactive
concepts, MEDIC ids gone from a later release); each one with a single successor is scored
through that successor, and the report says how many were."""
from __future__ import annotations

from dataclasses import dataclass

from kgnorm.evaluation.link_accuracy import UNLINKABLE


@dataclass
class Resolved:
    golds: list[list[str]]
    ids: int = 0  # distinct retired gold ids replaced by their successor
    mentions: int = 0  # mentions with at least one such id


def retired_successors(ontology: str | None, store: str | None) -> dict[str, str]:
    """retired id -> its single successor, from the store's RetiredId nodes of `ontology`
    (empty when there is no store or no such ontology: nothing to resolve)."""
    from kgnorm.graph.versions import single_successor
    from kgnorm.stores import open_store, store_exists

    if not ontology or not store_exists(store or ""):
        return {}
    with open_store(store, read_only=True) as st:
        retired = st.retired_ids(ontology)
        if not retired:
            return {}
        targets = sorted({u for r in retired.values() for u in r.replaced_by})
        concepts = {uid for uid, _, onto in st.uid_lookup(targets) if onto == ontology}
    out = {}
    for uid, r in retired.items():
        succ = single_successor(r, concepts)
        if succ is not None:
            out[uid] = succ
    return out


def resolve_retired(golds: list[list[str]], known: set[str], successors: dict[str, str],
                    alt_ids: dict[str, list[str]] | None = None) -> Resolved:
    """Replace each gold id that is a retired one with a single successor the model knows
    (conjunction pieces `A+B` one by one). An id that is still a concept of the model's own
    dictionary (a model built on the older version) is left as it is."""
    alts = {a for v in (alt_ids or {}).values() for a in v}
    concepts = known - alts
    seen: set[str] = set()
    out = Resolved([])
    for parts in golds:
        hit = False
        new_parts = []
        for part in parts:
            pieces = []
            for piece in part.split("+"):
                p = piece.strip()
                if p not in UNLINKABLE and p in successors and successors[p] in known and p not in concepts:
                    seen.add(p)
                    hit = True
                    p = successors[p]
                pieces.append(p)
            new_parts.append("+".join(pieces))
        out.golds.append(new_parts)
        out.mentions += hit
    out.ids = len(seen)
    return out
