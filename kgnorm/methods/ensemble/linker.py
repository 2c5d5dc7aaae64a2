"""An ensemble directory as a linker: every member links the same prepared queries, and their ranked
concepts are fused per query part (kgnorm.methods.ensemble.fusion), one concept per rank.

The directory holds only ``kgnorm-model.json``, which names the members' directories (referenced, not
copied): :func:`open_ensemble` opens each member as :func:`kgnorm.methods.registry.open_linker` opens
it alone (a BioSyn directory, a reranker, another ensemble ...). Each member that answers from the query text
alone sits behind the query cache (kgnorm.linking.query_cache), so a repeated query costs nothing
and gets the same answer; the fused order is a function of the members' answers only.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Hit, PartLinker
from kgnorm.methods.ensemble.fusion import RRF_K, fuse

__all__ = ["EnsembleLinker", "MemberDictionaries", "open_ensemble", "load_ensemble", "SHARED_KEYS",
           "check_members", "open_ensemble_dir", "ensemble_meta"]

# what every member must agree on: the concepts it links to and how a mention becomes its queries
SHARED_KEYS = ("ontology", "ontology_version", "text_pipeline")


class MemberDictionaries:
    """What a caller that needs "the model's dictionary" sees (`eval link`'s known ids, the nil
    evaluation): the union of the members' dictionaries (the first member's rows, then the names and
    uids only another member has, e.g. the training mentions of another corpus, and every alt id);
    replacing it (``set_dictionary``, the constructed nil set) removes the concepts it lacks from every
    member's dictionary."""

    def __init__(self, members: Sequence[PartLinker]) -> None:
        self.members = list(members)
        self._union: Any = None

    @property
    def dictionary(self) -> Any:
        models = [getattr(m, "model", None) for m in self.members]
        if any(getattr(x, "dictionary", None) is None or not hasattr(x, "set_dictionary") for x in models):
            return None
        if self._union is None:
            first = models[0].dictionary
            extra = []
            for d in (x.dictionary for x in models[1:]):
                for name, uids in zip(d.names, d.uids):
                    row = first.index_of(name)
                    if row is None or not set(uids) <= set(first.uids[row]):
                        extra.append((name, uids))
            union = first.with_mentions(extra) if extra else first
            alt: dict[str, list[str]] = {}
            for x in models:
                for u, ids in x.dictionary.alt_ids.items():
                    alt[u] = list(dict.fromkeys([*alt.get(u, []), *ids]))
            union.alt_ids = alt if union is not first else first.alt_ids
            self._union = union
        return self._union

    def set_dictionary(self, dictionary: Any) -> None:
        from kgnorm.linking.query_cache import CachedLinker
        from kgnorm.nil.thresholds import without_concepts

        kept = {u for us in dictionary.uids for u in us}
        gone = {u for us in self.dictionary.uids for u in us} - kept
        for m in self.members:
            m.model.set_dictionary(without_concepts(m.model.dictionary, gone))
            if isinstance(m, CachedLinker):
                m.cache.clear()  # its answers came from the former dictionary
        self._union = None


class EnsembleLinker:
    """PartLinker over member PartLinkers: each is asked for its top ``max(top_k, depth)``, the first
    ``depth`` of each are fused (the TSV's score is the fused one)."""

    method = "ensemble"

    def __init__(self, members: Sequence[PartLinker], fusion: str = "rrf", depth: int = 10,
                 rrf_k: int = RRF_K, temperature: float = 1.0) -> None:
        if len(members) < 2:
            raise KgnormError("an ensemble needs at least two members")
        if depth < 1 or rrf_k < 0 or not temperature > 0:
            raise KgnormError("ensemble: depth must be >= 1, rrf_k >= 0 and temperature > 0")
        self.members = list(members)
        self.fusion, self.depth, self.rrf_k, self.temperature = fusion, int(depth), int(rrf_k), float(temperature)
        fuse([], fusion, 1)  # an unknown fusion is refused here, not at the first mention
        self.model = MemberDictionaries(self.members)

    def with_fusion(self, fusion: str) -> EnsembleLinker:
        """The same members (and their caches) fused another way."""
        return EnsembleLinker(self.members, fusion, self.depth, self.rrf_k, self.temperature)

    def member_rankings(self, queries: list[str], mentions: list[Any], whole: list[bool],
                        top_k: int) -> list[list[list[Hit]]]:
        """Per member, its ranking of every query part (depth ``max(top_k, depth)``)."""
        want = max(int(top_k), self.depth)
        return [m.link_parts(queries, mentions, whole, want) for m in self.members]

    def link_parts(self, queries: list[str], mentions: list[Any], whole: list[bool], top_k: int) -> list[list[Hit]]:
        per_member = self.member_rankings(queries, mentions, whole, top_k)
        depth = max(int(top_k), self.depth)
        return [fuse([r[i] for r in per_member], self.fusion, top_k, depth=depth, rrf_k=self.rrf_k,
                     temperature=self.temperature) for i in range(len(queries))]


def check_members(metas: Sequence[dict[str, Any]], paths: Sequence[str | Path]) -> dict[str, Any]:
    """The members' shared ontology, its version and text pipeline; members that differ are refused
    in one line naming the first that does."""
    first = {k: metas[0].get(k) for k in SHARED_KEYS}
    if not first["ontology"]:
        raise KgnormError(f"{paths[0]}: the model records no ontology; an ensemble's members must name one")
    for meta, path in zip(metas[1:], paths[1:]):
        for k in SHARED_KEYS:
            if meta.get(k) != first[k]:
                raise KgnormError(f"ensemble members must share the ontology, its version and the text pipeline: "
                                  f"{path} has {k} {meta.get(k)!r}, {paths[0]} has {first[k]!r}")
    return first


def open_ensemble(meta: dict[str, Any]) -> tuple[EnsembleLinker, list[dict[str, Any]]]:
    """The linker of an ensemble directory's ``meta`` and its members' metas. The members' metas are checked
    before any weights load: members that differ from each other, or from what ``meta`` records (one
    retrained on another ontology since), are refused. Each member is opened as it would be alone
    (:func:`kgnorm.methods.registry.open_linker`) and put behind the query cache."""
    from kgnorm.linking.query_cache import with_cache
    from kgnorm.methods.registry import model_meta, open_linker

    metas = [model_meta(p) for p in meta["members"]]
    shared = check_members(metas, meta["members"])
    if any(k in meta and shared[k] != meta[k] for k in SHARED_KEYS):
        raise KgnormError(f"the ensemble's members no longer match it ({', '.join(SHARED_KEYS)}): retrain the "
                          "ensemble with `kgnorm train ensemble`")
    members = [with_cache(open_linker(p)[0]) for p in meta["members"]]
    linker = EnsembleLinker(members, meta.get("fusion", "rrf"), meta.get("depth", 10), meta.get("rrf_k", RRF_K),
                            meta.get("temperature", 1.0))
    return linker, metas


def ensemble_meta(model_dir: str | Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The registry's meta reader (a ``wrapper`` kind): the ensemble's meta with its members' metas
    (``member_meta``), no weights loaded."""
    from kgnorm.methods.registry import model_meta

    return {**meta, "member_meta": [model_meta(m) for m in meta["members"]]}


def open_ensemble_dir(model_dir: str | Path, meta: dict[str, Any]) -> tuple[EnsembleLinker, dict[str, Any]]:
    """The registry's opener (a ``wrapper`` kind): :func:`open_ensemble`, its meta carrying the members'."""
    linker, metas = open_ensemble(meta)
    return linker, {**meta, "member_meta": metas}


def load_ensemble(model_dir: str | Path) -> Any:
    """The registry's loader: an ensemble has no encoder of its own (`link`, `annotate` and `eval link`
    open it through :func:`kgnorm.methods.registry.open_linker`)."""
    raise KgnormError(f"{model_dir} is an ensemble of linkers: it links (`link`, `annotate`, `eval link`) but has "
                      "no encoder of its own; use one of its members' directories here")
