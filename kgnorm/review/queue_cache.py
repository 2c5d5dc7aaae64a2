"""The review queue kept between requests (issue 50: /api/queue in <= 200 ms on a 1M-mention store,
where kgnorm.review.queue's aggregates over every unreviewed mention take seconds a request).

Built once from kgnorm.review.queue's own queries: each surface form's counts, least sure key and
first document over the mentions with no current review then, and which mentions had a review.
Each request then reads only what can have moved: the Review nodes (few: people write them), the
mentions those reviews are about (by uid, kept once read), and a stamp of the machine's side (how
many mentions and links, the ranges of their confidences and scores, the runs): any change there
but the spans a review added rebuilds it all. A form's mention to show comes from that form's
mentions fetched once up to a bound (every one as sure as the bound or less, or in a document up
to it); a form whose fetched mentions were all reviewed since is fetched whole. The answer is
kgnorm.review.queue.queue_view's, for any store kgnorm wrote (the cache adds nothing to it)."""
from __future__ import annotations

import math
import random
import threading
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Callable, Sequence

from kgnorm.nil.confidence import MARGIN_CAP
from kgnorm.review.queue import (_busy, _chosen, _first, _Form, _forms, _Mention, _mentions, _where, queue_params,
                                 queue_result)
from kgnorm.review.records import REVIEW_RUN, Review
from kgnorm.stores import GraphStore

Key = tuple[str, str]
LAST_DOC = "\U0010ffff"


@dataclass
class _Fetched:
    """A form's mentions read from the store: every one with no current review then that is as sure
    as `kb` or less, and every one in a document up to `db` (the reviewed ones are known apart)."""

    kb: float = -math.inf
    db: str = ""
    ms: dict[str, _Mention] = field(default_factory=dict)


@dataclass
class _Built:
    stamp: tuple[Any, ...]
    mentions: int  # Mention nodes when built
    forms: dict[Key, _Form]  # over the mentions with no current review when built
    reviewed: dict[str, bool]  # every mention with a review when built: whether one was current
    totals: dict[str, int]  # mentions of a type ('' every type) as when built
    rows: dict[str, _Mention] = field(default_factory=dict)  # reviewed mentions, by uid
    sources: dict[str, str] = field(default_factory=dict)
    fetched: dict[Key, _Fetched] = field(default_factory=dict)


@dataclass
class _Now:
    """The queue's state at one request: the forms now, and the changes since the build per form."""

    status: Callable[[str], bool]  # uid -> has a review now (stored current, or pending)
    added: dict[Key, list[_Mention]]  # unreviewed now, not counted when built
    removed: dict[Key, list[_Mention]]  # counted when built, reviewed now
    known: dict[Key, list[_Mention]]  # every reviewed (or once reviewed) mention, by form
    new_spans: list[_Mention]  # spans added by reviews since the build, in the store now


def _key(m: _Mention) -> Key:
    return (m.text.lower(), m.type)


def _stamp(store: GraphStore) -> tuple[int, tuple[Any, ...]]:
    mentions, *conf = store.run_saved("review_queue_stamp").rows[0]
    return int(mentions or 0), (*conf, *store.run_saved("review_queue_stamp_links").rows[0])


def _rows(store: GraphStore, uids: list[str]) -> list[tuple[_Mention, str]]:
    out = []
    for uid, doc_id, start, end, text, mtype, conf, s1, s2, key, source in store.run_saved(
            "review_queue_rows", {"u": uids, "cap": MARGIN_CAP}).rows:
        out.append((_Mention(uid, doc_id or "", start, end, text or "", mtype or "",
                             None if conf is None else float(conf), s1, s2, float(key)), source or ""))
    return out


class QueueCache:
    """kgnorm.review.queue.queue_view, kept: `view` takes its arguments and gives its answer."""

    def __init__(self) -> None:
        self._built: _Built | None = None
        self._lock = threading.Lock()

    def view(self, store: GraphStore, limit: Any = 50, order: str = "uncertain", typ: str = "", seed: Any = 0,
             pending: Sequence[Review] = ()) -> dict[str, Any]:
        order, n, rng, typ = queue_params(limit, order, typ, seed)
        with self._lock:
            b, now = self._current(store, _busy(pending))
            forms = self._forms(store, b, now, typ)
            shown = self._shown(store, b, now, forms, order, n, rng)
            total = self._total(store, b, now, typ)
            return queue_result(store, order, typ, n, forms, shown, total)

    # -- the state now -------------------------------------------------------------------------
    def _current(self, store: GraphStore, busy: set[str]) -> tuple[_Built, _Now]:
        stored = {u: bool(c) for u, c in store.run_saved("review_queue_reviewed").rows}
        mentions, stamp = _stamp(store)
        for _ in range(2):
            b = self._built
            if b is None or b.stamp != stamp or any(u not in stored for u in b.reviewed):
                b = self._built = _build(store, stamp, mentions, stored)
            missing = [u for u in chain(stored, busy) if u not in b.rows]
            for m, source in _rows(store, missing) if missing else []:
                b.rows[m.uid], b.sources[m.uid] = m, source
            now = _changes(b, stored, busy)
            if b.mentions + len(now.new_spans) == mentions:
                return b, now
            self._built = None  # mentions came or went besides the spans reviews added: build again
        raise AssertionError("unreachable: a fresh build counts the mentions it was built with")

    def _forms(self, store: GraphStore, b: _Built, now: _Now, typ: str) -> dict[Key, _Form]:
        """Every form with an unreviewed mention now (of `typ`): the build's, and for the forms reviews
        touched since, the changes (their least key or first document read from their mentions where
        a mention reviewed since may have held it)."""
        forms = dict(b.forms)
        todo: list[Key] = []
        for k in set(now.added) | set(now.removed):
            f = _counted(b.forms.get(k), now.added.get(k, []), now.removed.get(k, []))
            if f.n <= 0:
                forms.pop(k, None)
                continue
            f.key, f.first_doc = _lowest(b, now, k, "key"), _lowest(b, now, k, "doc")
            todo += [k] if f.key is None or f.first_doc is None else []
            forms[k] = f
        if todo:  # read those forms' mentions whole
            self._fetch(store, b, todo)
            for k in todo:
                forms[k].key, forms[k].first_doc = _lowest(b, now, k, "key"), _lowest(b, now, k, "doc")
        return {k: f for k, f in forms.items() if k[1] == typ} if typ else forms

    def _shown(self, store: GraphStore, b: _Built, now: _Now, forms: dict[Key, _Form], order: str, n: int,
               rng: random.Random) -> list[tuple[Key, _Mention]]:
        chosen = _chosen(forms, order, n, rng)
        dim = "key" if order == "uncertain" else "doc"
        short = [k for k in chosen if not _covers(b.fetched.get(k), forms[k], dim)]
        if short and dim == "key":
            self._fetch(store, b, short, most=max(forms[k].key for k in short))
        elif short:
            self._fetch(store, b, short, last=max(forms[k].first_doc for k in short))
        pick = _first(order)
        return [(k, pick(_candidates(b, now, k, dim))) for k in chosen]

    def _fetch(self, store: GraphStore, b: _Built, keys: list[Key], most: float = math.inf,
               last: str = LAST_DOC) -> None:
        """Read the mentions with no current review of some forms as sure as `most` or less and in a
        document up to `last`: each form is then known whole up to `most` (last: every document), or
        up to `last` (most: any)."""
        for m in _mentions(store, keys, "", set(), most if math.isfinite(most) else 1e300, last):
            b.fetched.setdefault(_key(m), _Fetched()).ms[m.uid] = m
        for k in keys:
            fe = b.fetched.setdefault(k, _Fetched())
            if last == LAST_DOC:
                fe.kb = max(fe.kb, most)
            if most == math.inf:
                fe.db = max(fe.db, last)

    def _total(self, store: GraphStore, b: _Built, now: _Now, typ: str) -> int:
        spans = sum(1 for m in now.new_spans if not typ or m.type == typ)
        if typ not in b.totals:  # read now: less the spans reviews added since the build, as when built
            b.totals[typ] = int(store.run_saved("review_counts", {"type": typ}).rows[0][0] or 0) - spans
        return b.totals[typ] + spans


def _build(store: GraphStore, stamp: tuple[Any, ...], mentions: int, stored: dict[str, bool]) -> _Built:
    total = int(store.run_saved("review_counts", {"type": ""}).rows[0][0] or 0)
    return _Built(stamp, mentions, _forms(store, "", set()), dict(stored), {"": total})


def _changes(b: _Built, stored: dict[str, bool], busy: set[str]) -> _Now:
    """What the reviews since the build changed: mentions reviewed since, taken back, or added."""
    def status(u: str) -> bool:
        return stored.get(u, False) or u in busy

    now = _Now(status, {}, {}, {}, [])
    for u in set(stored) | busy:
        m = b.rows.get(u)
        if m is None:
            continue  # a pending review of a span not in the store yet
        k = _key(m)
        now.known.setdefault(k, []).append(m)
        counted = u in b.reviewed or b.sources.get(u) != REVIEW_RUN  # a span a review added later: not counted
        if not counted and u in stored:
            now.new_spans.append(m)
        was = b.reviewed.get(u, False) if counted else True
        if was and not status(u):
            now.added.setdefault(k, []).append(m)
        elif status(u) and not was:
            now.removed.setdefault(k, []).append(m)
    return now


def _counted(base: _Form | None, added: list[_Mention], removed: list[_Mention]) -> _Form:
    f = _Form(0.0, "", 0, 0, 0.0) if base is None else _Form(base.key, base.first_doc, base.n, base.n_confidence,
                                                             base.wrong)
    for sign, ms in ((1, added), (-1, removed)):
        for m in ms:
            f.n += sign
            if m.confidence is not None:
                f.n_confidence += sign
                f.wrong += sign * (1.0 - m.confidence)
    return f


def _value(m: _Mention, dim: str) -> Any:
    return m.key if dim == "key" else m.doc_id


def _candidates(b: _Built, now: _Now, k: Key, dim: str) -> list[_Mention]:
    """The unreviewed mentions of form `k` within what was read of it along `dim` (every one there is)."""
    fe = b.fetched.get(k)
    if fe is None:
        return []
    bound = fe.kb if dim == "key" else fe.db
    seen: dict[str, _Mention] = {}
    for m in chain(fe.ms.values(), now.known.get(k, [])):
        if not now.status(m.uid) and _value(m, dim) <= bound:
            seen[m.uid] = m
    return list(seen.values())


def _lowest(b: _Built, now: _Now, k: Key, dim: str) -> Any:
    """Form `k`'s least key (or first document) over its unreviewed mentions now; None: not known
    without reading its mentions (a mention reviewed since the build may have held it)."""
    base = b.forms.get(k)
    low = None if base is None else (base.key if dim == "key" else base.first_doc)
    if low is None or not any(_value(m, dim) <= low for m in now.removed.get(k, [])):
        values = [low] * (low is not None) + [_value(m, dim) for m in now.added.get(k, [])]
        if values:
            return min(values)
    cands = _candidates(b, now, k, dim)
    return min(_value(m, dim) for m in cands) if cands else None


def _covers(fe: _Fetched | None, f: _Form, dim: str) -> bool:
    return fe is not None and (fe.kb >= f.key if dim == "key" else fe.db >= f.first_doc)
