"""The review queue (`/queue`, GET /api/queue): the mentions no one reviewed yet, one per surface
form (its text lower-cased, and its type) with the number of others, in the order a curator's
time is best spent. ``uncertain`` (the default) puts first the form whose least sure mention the
machine is least sure of: its calibrated confidence (annotate's, kgnorm.nil.confidence) where it
has one, else the linker's margin of rank 1 over rank 2 (capped as kgnorm.nil.confidence caps it),
else, where only rank 1 is stored (annotate's default --top-k 1), the rank-1 score; a mention
without a link is as unsure as any (0). ``document``: the forms by their first mention in document
order; ``random``: the forms shuffled (`seed`), each by its first mention. A review sent with
``apply_to_same_text`` then settles the whole form.

The store aggregates the forms (queries over every unreviewed mention); of the forms shown, only
the mentions that can be a form's first (as unsure as the form's least sure, or in a document up
to the last form's first) come back to Python."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from kgnorm.errors import InputError
from kgnorm.nil.confidence import MARGIN_CAP
from kgnorm.review.records import WITHDRAW, Review
from kgnorm.stores import GraphStore

ORDERS = ("uncertain", "document", "random")
MAX_QUEUE = 500


@dataclass
class _Form:
    key: float
    first_doc: str
    n: int
    n_confidence: int
    wrong: float


@dataclass
class _Mention:
    uid: str
    doc_id: str
    start: int | None
    end: int | None
    text: str
    type: str
    confidence: float | None
    s1: float | None  # the best rank-1 score over the runs (None: no link)
    s2: float | None  # the best rank-2 score (None where only rank 1 is stored)
    key: float  # lower is less sure (review_queue.cypher computes it as review_queue_forms.cypher does)

    def margin(self) -> float | None:
        return None if self.s1 is None or self.s2 is None else min(self.s1 - self.s2, MARGIN_CAP)


def _busy(pending: Sequence[Review]) -> set[str]:
    """Mentions whose newest pending review decides them (a pending withdrawal leaves it unreviewed)."""
    newest: dict[str, Review] = {}
    for r in pending:
        if r.mention_uid not in newest or r.created_at >= newest[r.mention_uid].created_at:
            newest[r.mention_uid] = r
    return {u for u, r in newest.items() if r.decision != WITHDRAW}


def _forms(store: GraphStore, typ: str, busy: set[str]) -> dict[tuple[str, str], _Form]:
    """(form, type) -> its aggregate over the unreviewed mentions, pending reviews taken off the counts."""
    out: dict[tuple[str, str], _Form] = {}
    rows = store.run_saved("review_queue_forms", {"type": typ, "cap": MARGIN_CAP}).rows
    rows += store.run_saved("review_queue_unlinked_forms", {"type": typ}).rows
    for form, mtype, key, first_doc, n, n_conf, wrong in rows:
        k = (form or "", mtype or "")
        f = _Form(float(key or 0.0), first_doc or "", int(n), int(n_conf), float(wrong or 0.0))
        if k in out:
            o = out[k]
            f = _Form(min(o.key, f.key), min(o.first_doc, f.first_doc), o.n + f.n, o.n_confidence + f.n_confidence,
                      o.wrong + f.wrong)
        out[k] = f
    if busy:
        for _, form, mtype, conf, _ in store.run_saved("mention_forms", {"u": sorted(busy)}).rows:
            f = out.get((form or "", mtype or ""))
            if f is not None:
                f.n -= 1
                f.n_confidence -= conf is not None
                f.wrong -= 1.0 - conf if conf is not None else 0.0
    return {k: f for k, f in out.items() if f.n > 0}


def _mentions(store: GraphStore, forms: list[tuple[str, str]], typ: str, busy: set[str], most: float,
              last: str) -> list[_Mention]:
    """The unreviewed mentions of `forms` as sure as `most` or less, in documents up to `last` (the
    bounds that still hold each form's first mention: the store sends no others)."""
    wanted, out = set(forms), []
    p = {"forms": sorted({f for f, _ in forms}), "type": typ, "most": most, "last": last}
    rows = store.run_saved("review_queue", {**p, "cap": MARGIN_CAP}).rows
    rows += store.run_saved("review_queue_unlinked", p).rows
    for uid, doc_id, start, end, text, mtype, conf, s1, s2, key in rows:
        if uid not in busy and ((text or "").lower(), mtype or "") in wanted:
            out.append(_Mention(uid, doc_id or "", start, end, text or "", mtype or "",
                                None if conf is None else float(conf), s1, s2, float(key)))
    return out


def _where(m: _Mention) -> tuple[str, int, str]:
    return (m.doc_id, m.start if m.start is not None else -1, m.uid)


def _chosen(forms: dict[tuple[str, str], _Form], order: str, n: int, rng: random.Random) -> list[tuple[str, str]]:
    """The forms shown, in order (document order: every form whose first document ties the n-th,
    sorted exactly by its first mention later)."""
    keys = sorted(forms)
    if order == "random":
        rng.shuffle(keys)
        return keys[:n]
    if order == "uncertain":
        return sorted(keys, key=lambda k: (forms[k].key, k))[:n]
    ranked = sorted(keys, key=lambda k: (forms[k].first_doc, k))
    last = forms[ranked[n - 1]].first_doc if len(ranked) >= n else None
    return [k for k in ranked if last is None or forms[k].first_doc <= last]


def _first(order: str) -> Callable[[list[_Mention]], _Mention]:
    """A form's mention the queue shows: the least sure, else the first in the documents."""
    if order == "uncertain":
        return lambda ms: min(ms, key=lambda m: (m.key, *_where(m)))
    return lambda ms: min(ms, key=_where)


def queue_params(limit: Any, order: str, typ: str, seed: Any) -> tuple[str, int, random.Random, str]:
    """(order, how many forms, the shuffle's generator, type) from a request's values; InputError for bad ones."""
    order = (order or "uncertain").strip().lower()
    if order not in ORDERS:
        raise InputError(f"unknown order {order!r}: one of {', '.join(ORDERS)}")
    try:
        n, rng = max(1, min(int(limit), MAX_QUEUE)), random.Random(int(seed))
    except (TypeError, ValueError):
        raise InputError("limit and seed must be integers") from None
    return order, n, rng, (typ or "").strip()[:200]


def queue_view(store: GraphStore, limit: Any = 50, order: str = "uncertain", typ: str = "", seed: Any = 0,
               pending: Sequence[Review] = ()) -> dict[str, Any]:
    """The first `limit` surface forms no one reviewed, each by one of its mentions (``same_text``:
    how many others share it), and the progress: mentions reviewed of all, and the share of the
    unreviewed ones the calibrated confidence expects to be linked wrong. Computed from the store
    on every call (kgnorm.review.queue_cache keeps it between calls)."""
    order, n, rng, typ = queue_params(limit, order, typ, seed)
    busy = _busy(pending)
    forms = _forms(store, typ, busy)
    chosen = _chosen(forms, order, n, rng)
    most = max((forms[k].key for k in chosen), default=0.0) if order == "uncertain" else 1e300
    last = max((forms[k].first_doc for k in chosen), default="") if order != "uncertain" else "\U0010ffff"
    groups: dict[tuple[str, str], list[_Mention]] = {}
    for m in _mentions(store, chosen, typ, busy, most, last):
        groups.setdefault((m.text.lower(), m.type), []).append(m)
    pick = _first(order)
    shown = [(k, pick(groups[k])) for k in chosen if k in groups]
    total = int(store.run_saved("review_counts", {"type": typ}).rows[0][0] or 0)
    progress = progress_of(total, sum(f.n for f in forms.values()), sum(f.n_confidence for f in forms.values()),
                           sum(f.wrong for f in forms.values()))
    return queue_result(store, order, typ, n, [(m, forms[k].n) for k, m in shown], len(forms), progress)


def queue_result(store: GraphStore, order: str, typ: str, n: int, shown: list[tuple[_Mention, int]], forms: int,
                 progress: dict[str, Any]) -> dict[str, Any]:
    """The queue's answer: the forms shown by their mentions and how many unreviewed mentions each
    form has (in document order for ``document``, the first n), with their links."""
    if order == "document":
        shown = sorted(shown, key=lambda mn: _where(mn[0]))[:n]
    links = _links(store, [m.uid for m, _ in shown])
    out = []
    for m, count in shown:
        doc_uid, concept, onto, name = links.get(m.uid, ("", "", "", ""))
        out.append({"uid": m.uid, "doc_id": m.doc_id, "document_uid": doc_uid, "start": m.start, "end": m.end,
                    "text": m.text, "type": m.type, "concept": concept or None, "concept_name": name, "ontology": onto,
                    "score": m.s1, "confidence": m.confidence, "margin": m.margin(), "key": m.key,
                    "same_text": count - 1})
    return {"mentions": out, "order": order, "type": typ, "forms": forms, "progress": progress}


def _links(store: GraphStore, uids: list[str]) -> dict[str, tuple[str, str, str, str]]:
    """uid -> (its first document's uid, the best rank-1 concept, its ontology, its name)."""
    docs: dict[str, str] = {}
    best: dict[str, tuple[float, str, str, str]] = {}
    for uid, doc_uid, concept, onto, name, score in store.run_saved("mention_best_link", {"u": uids}).rows:
        if doc_uid is not None and (uid not in docs or doc_uid < docs[uid]):
            docs[uid] = doc_uid
        link = (-1e30 if score is None else float(score), concept or "", onto or "", name or "")
        if concept is not None and (uid not in best or link[0] > best[uid][0]):
            best[uid] = link
    return {u: (docs.get(u, ""), *best.get(u, (0.0, "", "", ""))[1:]) for u in uids}


def progress_of(total: int, todo: int, sure: int, wrong: float) -> dict[str, Any]:
    """Mentions reviewed of all, and the share of the unreviewed ones with a calibrated confidence
    (`sure` of `todo`) that it expects to be linked wrong (`wrong`: the sum of 1 - confidence)."""
    return {"mentions": total, "reviewed": max(0, total - todo), "unreviewed": todo, "with_confidence": sure,
            "predicted_wrong": wrong, "predicted_wrong_share": wrong / sure if sure else None}
