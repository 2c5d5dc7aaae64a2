"""Training and dev queries of the name-linking trainers (BioSyn, DILBERT, BNE): (normalized
query, gold uids) pairs, and the dev metric that selects their epochs -- Acc@k of the
concepts the linker writes, so that selection scores what the user gets."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kgnorm.errors import KgnormError
from kgnorm.evaluation.link_accuracy import GoldMention, accuracy_at_k
from kgnorm.training.checkpoints import digest

__all__ = ["prepare_queries", "evaluate_linking", "DevQueries", "query_fingerprint"]


def query_fingerprint(config, queries: Sequence[str], golds: Sequence[Iterable[str]], dictionary,
                      encoder, **extra) -> dict:
    """What a resumed run of a query-linking trainer (BioSyn, DILBERT) must share with the
    interrupted one: its settings, its queries and golds, the dictionary and the encoder."""
    return {"config": config.fingerprint_dict(), "queries": digest(queries),
            "golds": digest("|".join(sorted(g)) for g in golds), "names": digest(dictionary.names),
            "uids": digest("|".join(u) for u in dictionary.uids), "encoder": encoder.config(),
            "dim": encoder.dim, **extra}


def prepare_queries(pairs: Iterable[tuple[str, Iterable[str] | str]] | None, dedupe: bool
                    ) -> tuple[list[str], list[frozenset[str]]]:
    """(queries, gold sets) of the pairs with a non-blank text and a gold uid (``-1``, the
    NIL mark, is no gold); ``dedupe`` drops repeated (text, gold) pairs, as BioSyn does."""
    qs, gs, seen = [], [], set()
    for item in pairs or ():
        try:
            text, gold = item
        except (TypeError, ValueError):
            raise KgnormError(f"training item {item!r} is not a (query, gold uids) pair") from None
        golds = {gold} if isinstance(gold, str) else set(gold)
        golds = frozenset(g for g in golds if g and g not in ("-1",))
        if not isinstance(text, str) or not text.strip() or not golds:
            continue
        if dedupe:
            key = (text, golds)
            if key in seen:
                continue
            seen.add(key)
        qs.append(text)
        gs.append(golds)
    return qs, gs


def evaluate_linking(model, queries: Sequence[str], golds: Sequence[Iterable[str]],
                     top_k: int = 5, batch_size: int = 512) -> dict:
    """Acc@1 / Acc@k of the concepts the linker writes (one per rank,
    :func:`kgnorm.linking.concepts.link_concepts`) on (query, gold set) pairs, strict scorer."""
    from kgnorm.linking.concepts import link_concepts

    d = model._need_dictionary()
    preds = [[[c.uid for c in r]] for r in link_concepts(model, list(queries), top_k, batch_size)]
    gold = [GoldMention(("+".join(sorted(g)),)) for g in golds]
    ks = sorted({1, min(5, top_k), top_k})
    rep = accuracy_at_k(preds, gold, ks=ks, alt_ids=d.alt_ids, conjunction="any")
    return {f"acc@{k}": v for k, v in rep.accuracy.items()} | {"n": rep.n_evaluated}


@dataclass
class DevQueries:
    """The dev pairs of a run and how its epochs are scored on them."""
    queries: list[str]
    golds: list[frozenset[str]]
    top_k: int = 5
    batch_size: int = 512

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, Iterable[str] | str]] | None, top_k: int = 5,
                   batch_size: int = 512) -> "DevQueries":
        return cls(*prepare_queries(pairs, dedupe=False), top_k=top_k, batch_size=batch_size)

    def __bool__(self) -> bool:
        return bool(self.queries)

    def evaluate(self, model) -> dict | None:
        """Dev metrics of ``model`` (None without dev pairs)."""
        if not self.queries:
            return None
        return evaluate_linking(model, self.queries, self.golds, self.top_k, self.batch_size)
