"""The review queue (`/queue`, GET /api/queue): the mentions no one reviewed yet, one per surface
form (its text lower-cased, and its type) with the number of others, in the order a curator's
time is best spent. ``uncertain`` (the default) puts first the mention the machine is least sure of:
its calibrated confidence (annotate's, kgnorm.nil.confidence) where it has one, else the linker's
margin of rank 1 over rank 2, as `kgnorm.nil.confidence` caps it; a mention without a link is as
uncertain as any (0). A review sent with ``apply_to_same_text`` then settles the whole form."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Sequence

from kgnorm.errors import InputError
from kgnorm.nil.confidence import MARGIN_CAP
from kgnorm.review.records import WITHDRAW, Review
from kgnorm.stores import GraphStore

ORDERS = ("uncertain", "document", "random")
MAX_QUEUE = 500


@dataclass
class _Mention:
    uid: str
    doc_id: str
    document_uid: str
    start: int | None
    end: int | None
    text: str
    type: str
    confidence: float | None
    links: dict[str, dict[int, tuple[float, str, str, str]]] = field(default_factory=dict)  # run -> rank -> link

    def best(self) -> tuple[float, str, str, str, float | None]:
        """(rank-1 score, concept, ontology, name, margin) of the run whose rank 1 scored highest."""
        runs = [(ranks[1], ranks.get(2)) for ranks in self.links.values() if 1 in ranks]
        if not runs:
            return (0.0, "", "", "", None)
        top, second = max(runs, key=lambda r: (r[0][0], r[0][1]))
        margin = min(top[0] - second[0], MARGIN_CAP) if second else MARGIN_CAP
        return (*top, margin)

    def uncertainty(self) -> float:
        """Lower is less sure: the calibrated confidence, else the margin, else 0."""
        if self.confidence is not None:
            return self.confidence
        margin = self.best()[4]
        return margin if margin is not None else 0.0


def _unreviewed(store: GraphStore, typ: str, pending: Sequence[Review]) -> list[_Mention]:
    """Every mention with no review now: none stored, and none pending (or a pending withdrawal)."""
    newest: dict[str, Review] = {}
    for r in pending:
        if r.mention_uid not in newest or r.created_at >= newest[r.mention_uid].created_at:
            newest[r.mention_uid] = r
    busy = {u for u, r in newest.items() if r.decision != WITHDRAW}
    out: dict[str, _Mention] = {}
    for (uid, doc_id, doc_uid, start, end, text, mtype, conf, run, rank, score, concept, onto, name) in store.run_saved(
            "review_queue", {"type": typ}).rows:
        if uid in busy:
            continue
        m = out.get(uid)
        if m is None:
            m = out[uid] = _Mention(uid, doc_id or "", doc_uid or "", start, end, text or "", mtype or "",
                                    None if conf is None else float(conf))
        if rank is not None and concept is not None:
            ranks = m.links.setdefault(run or "", {})
            link = (float(score or 0.0), concept, onto or "", name or "")
            if rank not in ranks or link[0] > ranks[rank][0]:
                ranks[rank] = link
    return list(out.values())


def _sort_key(order: str, rng: random.Random):
    if order == "uncertain":
        return lambda m: (m.uncertainty(), m.doc_id, m.start if m.start is not None else -1, m.uid)
    if order == "document":
        return lambda m: (m.doc_id, m.document_uid, m.start if m.start is not None else -1, m.uid)
    keys: dict[str, float] = {}
    return lambda m: keys.setdefault(m.uid, rng.random())


def queue_view(store: GraphStore, limit: Any = 50, order: str = "uncertain", typ: str = "", seed: Any = 0,
               pending: Sequence[Review] = ()) -> dict[str, Any]:
    """The first `limit` surface forms no one reviewed, each by the first of its mentions in `order`
    (``same_text``: how many others share it), and the progress: mentions reviewed of all, and the
    share of the unreviewed ones the calibrated confidence expects to be linked wrong."""
    order = (order or "uncertain").strip().lower()
    if order not in ORDERS:
        raise InputError(f"unknown order {order!r}: one of {', '.join(ORDERS)}")
    try:
        n, rng = max(1, min(int(limit), MAX_QUEUE)), random.Random(int(seed))
    except (TypeError, ValueError):
        raise InputError("limit and seed must be integers") from None
    typ = (typ or "").strip()[:200]
    todo = sorted(_unreviewed(store, typ, pending), key=_sort_key(order, rng))
    forms: dict[tuple[str, str], list[_Mention]] = {}
    for m in todo:
        forms.setdefault((m.text.lower(), m.type), []).append(m)
    out = []
    for group in list(forms.values())[:n]:
        m = group[0]
        score, concept, onto, name, margin = m.best()
        out.append({"uid": m.uid, "doc_id": m.doc_id, "document_uid": m.document_uid, "start": m.start,
                    "end": m.end, "text": m.text, "type": m.type, "concept": concept or None, "concept_name": name,
                    "ontology": onto, "score": score if concept else None, "confidence": m.confidence,
                    "margin": margin, "same_text": len(group) - 1})
    return {"mentions": out, "order": order, "type": typ, "forms": len(forms), "progress": _progress(store, typ, todo)}


def _progress(store: GraphStore, typ: str, todo: list[_Mention]) -> dict[str, Any]:
    total = store.run_saved("review_counts", {"type": typ}).rows[0][0] or 0
    sure = [m.confidence for m in todo if m.confidence is not None]
    wrong = sum(1.0 - c for c in sure)
    return {"mentions": int(total), "reviewed": max(0, int(total) - len(todo)), "unreviewed": len(todo),
            "with_confidence": len(sure), "predicted_wrong": wrong,
            "predicted_wrong_share": wrong / len(sure) if sure else None}
