"""The review queue kept between requests (issue 50: /api/queue in <= 200 ms on a 1M-mention store,
where kgnorm.review.queue's aggregates over every unreviewed mention take seconds a request).

Built once from kgnorm.review.queue's own queries: each surface form's counts, least sure key and
first document over the mentions with no current review then, and which mentions had a review.
Each request then reads only what can have moved: the Review nodes (few: people write them), the
mentions those reviews are about (by uid, kept once read), and a stamp of the machine's side (how
many mentions and links, the ranges of their confidences and scores, the runs): any change there
but the spans a review added rebuilds it all. A form's mention to show comes from mentions read
once up to a bound (every one ranked at or before it, least sure first or in document order):
the AHEAD least sure of the whole store at the first request that needs one, then per form where
reviews used those up. The answer is kgnorm.review.queue.queue_view's, for any store kgnorm wrote
(the cache adds nothing to it); string order is taken to be the store's (code points).

The build takes seconds on a big store (5.5 s at 100,000 documents), so `kgnorm serve` makes it in
the background as it starts (ReviewDesk.build_queue); a queue request meanwhile waits for it
(`wait_ready`) before it takes the desk's reader, which the other pages go on using."""
from __future__ import annotations

import heapq
import math
import random
import threading
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any, Callable, Sequence

from kgnorm.nil.confidence import MARGIN_CAP
from kgnorm.review.queue import (_busy, _Form, _forms, _Mention, _mentions, progress_of, queue_params,
                                 queue_result)
from kgnorm.review.records import REVIEW_RUN, Review
from kgnorm.stores import GraphStore

Key = tuple[str, str]
Rank = tuple[Any, ...]
LAST_DOC = "\U0010ffff"
BIG = 1 << 62
AHEAD = 20_000  # the least sure mentions read at once, for every form
AHEAD_FORM = 1_000  # a form's least sure mentions read where reviews used up those


def _rank(m: _Mention, dim: str) -> Rank:
    """A mention's place: least sure first (then document, start, uid), or in document order."""
    where = (m.doc_id, m.start if m.start is not None else -1, m.uid)
    return (m.key, *where) if dim == "key" else where


def _upto(dim: str, most: float = math.inf, last: str = LAST_DOC) -> Rank:
    return (most, LAST_DOC, BIG, LAST_DOC) if dim == "key" else (last, BIG, LAST_DOC)


@dataclass
class _Fetched:
    """A form's mentions read from the store: every one with no current review then ranked at or
    before `kb` (least sure first) and at or before `db` (document order); the reviewed ones are
    known apart (_Now.known)."""

    kb: Rank = ()
    db: Rank = ()
    ms: dict[str, _Mention] = field(default_factory=dict)
    _ranked: dict[str, list[tuple[Rank, _Mention]]] = field(default_factory=dict)

    def add(self, m: _Mention) -> None:
        self.ms[m.uid] = m
        self._ranked.clear()

    def ranked(self, dim: str) -> list[tuple[Rank, _Mention]]:
        """`ms` in rank order along `dim` (sorted once per change)."""
        if dim not in self._ranked:
            self._ranked[dim] = sorted(((_rank(m, dim), m) for m in self.ms.values()), key=lambda rm: rm[0])
        return self._ranked[dim]


@dataclass
class _Built:
    stamp: tuple[Any, ...]
    mentions: int  # Mention nodes when built
    forms: dict[Key, _Form]  # over the mentions with no current review when built
    reviewed: dict[str, bool]  # every mention with a review when built: whether one was current
    totals: dict[str, int]  # mentions of a type ('' every type) as when built
    keys: list[Key] = field(default_factory=list)  # `forms` sorted
    by_key: list[Key] = field(default_factory=list)  # `forms` least sure first (then by form)
    by_doc: list[Key] = field(default_factory=list)  # `forms` by first document (then by form)
    sums: dict[str, tuple[int, int, int, float]] = field(default_factory=dict)  # type -> forms, n, with conf., wrong
    rows: dict[str, _Mention] = field(default_factory=dict)  # reviewed mentions, by uid
    sources: dict[str, str] = field(default_factory=dict)
    fetched: dict[Key, _Fetched] = field(default_factory=dict)
    ahead: Rank = ()  # every form's mentions are read up to here (least sure first)


@dataclass
class _Now:
    """The queue's state at one request: the changes since the build per form."""

    status: Callable[[str], bool]  # uid -> has a review now (stored current, or pending)
    added: dict[Key, list[_Mention]]  # unreviewed now, not counted when built
    removed: dict[Key, list[_Mention]]  # counted when built, reviewed now
    known: dict[Key, list[_Mention]]  # every reviewed (or once reviewed) mention, by form
    new_spans: list[_Mention]  # spans added by reviews since the build, in the store now
    touched: dict[Key, _Form | None] = field(default_factory=dict)  # the forms changed (None: none left)

    def form(self, b: _Built, k: Key) -> _Form:
        f = self.touched[k] if k in self.touched else b.forms[k]
        assert f is not None
        return f


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
        self._ready = threading.Event()  # cleared while a background build runs (`building`)
        self._ready.set()

    @property
    def built(self) -> bool:
        return self._built is not None

    def building(self) -> None:
        """A build in the background has begun: `wait_ready` waits until `ready`."""
        self._ready.clear()

    def ready(self) -> None:
        """The background build ended (built, or failed: a request then builds it itself)."""
        self._ready.set()

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` s for a background build; False: it still runs."""
        return self._ready.wait(timeout)

    def view(self, store: GraphStore, limit: Any = 50, order: str = "uncertain", typ: str = "", seed: Any = 0,
             pending: Sequence[Review] = ()) -> dict[str, Any]:
        order, n, rng, typ = queue_params(limit, order, typ, seed)
        with self._lock:
            b, now = self._current(store, _busy(pending))
            _touch(b, now)
            dim = "key" if order == "uncertain" else "doc"
            if order != "random":
                self._resolve(store, b, now, [k for k, f in now.touched.items() if f is not None], dim)
            chosen = _choose(b, now, order, n, rng, typ)
            if order == "random":
                self._resolve(store, b, now, [k for k in chosen if k in now.touched], dim)
            shown = self._shown(store, b, now, chosen, order)
            return queue_result(store, order, typ, n, shown, *_progress(b, now, typ, self._total(store, b, now, typ)))

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

    def _resolve(self, store: GraphStore, b: _Built, now: _Now, keys: list[Key], dim: str) -> None:
        """The least key (dim key) or first document (doc) of the forms `keys` reviews changed:
        from the build and the changes, else from the mentions read, else read."""
        todo = [k for k in keys if not _settle(b, now, k, dim)]
        if todo and dim == "key":
            self._ahead(store, b, todo)
            todo = [k for k in todo if not _settle(b, now, k, dim)]
        if todo:  # read those forms whole
            self._fetch(store, b, todo)
            todo = [k for k in todo if not _settle(b, now, k, dim)]
        assert not todo, todo  # read whole, a form with an unreviewed mention has it among them

    def _shown(self, store: GraphStore, b: _Built, now: _Now, chosen: list[Key],
               order: str) -> list[tuple[_Mention, int]]:
        """Each chosen form's mention to show (kgnorm.review.queue._first), with the form's count."""
        dim = "key" if order == "uncertain" else "doc"
        short = [k for k in chosen if _least(b, now, k, dim) is None]
        if short and dim == "key":
            self._ahead(store, b, short)
            short = [k for k in short if _least(b, now, k, dim) is None]
            if short:
                self._fetch(store, b, short, most=max(now.form(b, k).key for k in short))
        elif short:
            self._fetch(store, b, short, last=max(now.form(b, k).first_doc for k in short))
        out = []
        for k in chosen:
            m = _least(b, now, k, dim)
            assert m is not None, k  # read up to the form's least key (first document): its mention is there
            out.append((m, now.form(b, k).n))
        return out

    def _ahead(self, store: GraphStore, b: _Built, keys: list[Key]) -> None:
        """Read ahead: the AHEAD least sure mentions of every form the first time, else AHEAD_FORM of `keys`'."""
        every = not b.ahead
        p = {"forms": [] if every else sorted({f for f, _ in keys}), "k": AHEAD if every else AHEAD_FORM}
        rows, bound = [], _upto("key")
        for name, extra in (("review_queue_least", {"cap": MARGIN_CAP}), ("review_queue_least_unlinked", {})):
            got = _as_mentions(store.run_saved(name, {**p, **extra}).rows)
            rows += got
            if len(got) == p["k"]:  # more may follow: what was read is whole only up to the last one
                bound = min(bound, _rank(got[-1], "key"))
        wanted = None if every else set(keys)
        for m in rows:
            if _rank(m, "key") <= bound and (wanted is None or _key(m) in wanted):
                b.fetched.setdefault(_key(m), _Fetched()).add(m)
        if every:
            b.ahead = bound
        for k in keys:
            fe = b.fetched.setdefault(k, _Fetched())
            fe.kb = max(fe.kb, bound)

    def _fetch(self, store: GraphStore, b: _Built, keys: list[Key], most: float = math.inf,
               last: str = LAST_DOC) -> None:
        """Read the mentions with no current review of some forms as sure as `most` or less and in a
        document up to `last`: each form is then known whole up to `most` (last: every document), or
        up to `last` (most: any)."""
        for m in _mentions(store, keys, "", set(), most if math.isfinite(most) else 1e300, last):
            b.fetched.setdefault(_key(m), _Fetched()).add(m)
        for k in keys:
            fe = b.fetched.setdefault(k, _Fetched())
            if last == LAST_DOC:
                fe.kb = max(fe.kb, _upto("key", most))
            if most == math.inf:
                fe.db = max(fe.db, _upto("doc", last=last))

    def _total(self, store: GraphStore, b: _Built, now: _Now, typ: str) -> int:
        spans = sum(1 for m in now.new_spans if not typ or m.type == typ)
        if typ not in b.totals:  # read now: less the spans reviews added since the build, as when built
            b.totals[typ] = int(store.run_saved("review_counts", {"type": typ}).rows[0][0] or 0) - spans
        return b.totals[typ] + spans


def _build(store: GraphStore, stamp: tuple[Any, ...], mentions: int, stored: dict[str, bool]) -> _Built:
    """The forms over the mentions with no current review now, sorted each way, and their sums per type."""
    total = int(store.run_saved("review_counts", {"type": ""}).rows[0][0] or 0)
    forms = _forms(store, "", set())
    sums: dict[str, tuple[int, int, int, float]] = {}
    for k, f in forms.items():
        for t in {"", k[1]}:
            c = sums.get(t, (0, 0, 0, 0.0))
            sums[t] = (c[0] + 1, c[1] + f.n, c[2] + f.n_confidence, c[3] + f.wrong)
    return _Built(stamp, mentions, forms, dict(stored), {"": total}, sorted(forms),
                  sorted(forms, key=lambda k: (forms[k].key, k)), sorted(forms, key=lambda k: (forms[k].first_doc, k)),
                  sums)


def _choose(b: _Built, now: _Now, order: str, n: int, rng: random.Random, typ: str) -> list[Key]:
    """kgnorm.review.queue._chosen over the forms now, walking the build's sorted forms (those
    reviews changed merged in) instead of sorting them all."""
    def mine(k: Key) -> bool:
        return not typ or k[1] == typ

    live = [k for k, f in now.touched.items() if f is not None and mine(k)]
    if order == "random":
        keys = [k for k in b.keys if mine(k) and now.touched.get(k, b.forms[k]) is not None]
        new = [k for k in live if k not in b.forms]
        keys = sorted(keys + new) if new else keys
        rng.shuffle(keys)
        return keys[:n]
    if order == "uncertain":
        def rank(k: Key) -> tuple[Any, ...]:
            return (now.form(b, k).key, k)
    else:
        def rank(k: Key) -> tuple[Any, ...]:
            return (now.form(b, k).first_doc, k)
    base = b.by_key if order == "uncertain" else b.by_doc
    walk = heapq.merge((k for k in base if k not in now.touched and mine(k)), sorted(live, key=rank), key=rank)
    if order == "uncertain":
        return list(islice(walk, n))
    out: list[Key] = []
    last = None
    for k in walk:  # every form whose first document ties the n-th's
        first = now.form(b, k).first_doc
        if last is not None and first > last:
            break
        out.append(k)
        last = first if len(out) == n else last
    return out


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


def _touch(b: _Built, now: _Now) -> None:
    """The counts of the forms reviews changed since the build (their key and first document: _settle)."""
    for k in set(now.added) | set(now.removed):
        f = _counted(b.forms.get(k), now.added.get(k, []), now.removed.get(k, []))
        now.touched[k] = f if f.n > 0 else None
        if f.n > 0:
            f.key, f.first_doc = None, None  # type: ignore[assignment]  # not known until settled


def _settle(b: _Built, now: _Now, k: Key, dim: str) -> bool:
    """Set a changed form's least key (or first document) where it can be told without reading the store."""
    f = now.form(b, k)
    value = _lowest(b, now, k, dim)
    if dim == "key":
        f.key = value if value is not None else f.key
    else:
        f.first_doc = value if value is not None else f.first_doc
    return value is not None


def _progress(b: _Built, now: _Now, typ: str, total: int) -> tuple[int, dict[str, Any]]:
    """(forms, progress) of `typ`: the build's sums, less the changed forms as built, plus as now."""
    forms, todo, sure, wrong = b.sums.get(typ, (0, 0, 0, 0.0))
    for k, new in now.touched.items():
        if not typ or k[1] == typ:
            old = b.forms.get(k)
            forms += (new is not None) - (old is not None)
            for x, sign in ((new, 1), (old, -1)):
                if x is not None:
                    todo, sure, wrong = todo + sign * x.n, sure + sign * x.n_confidence, wrong + sign * x.wrong
    return forms, progress_of(total, todo, sure, wrong)


def _as_mentions(rows: list[list[Any]]) -> list[_Mention]:
    return [_Mention(uid, doc_id or "", start, end, text or "", mtype or "", None if conf is None else float(conf),
                     s1, s2, float(key)) for uid, doc_id, start, end, text, mtype, conf, s1, s2, key, *_ in rows]


def _value(m: _Mention, dim: str) -> Any:
    return m.key if dim == "key" else m.doc_id


def _least(b: _Built, now: _Now, k: Key, dim: str) -> _Mention | None:
    """Form `k`'s first unreviewed mention along `dim` (kgnorm.review.queue._first's) among those
    ranked at or before what was read of it: where there is one, it is the form's first."""
    fe = b.fetched.get(k)
    bound = max(fe.kb if fe else (), b.ahead) if dim == "key" else (fe.db if fe else ())
    best: tuple[Rank, _Mention] | None = None
    for r, m in fe.ranked(dim) if fe else ():
        if r > bound:
            break
        if not now.status(m.uid):
            best = (r, m)
            break
    for m in now.known.get(k, []):  # the mentions reviewed once: not read with the others
        r = _rank(m, dim)
        if r <= bound and not now.status(m.uid) and (best is None or r < best[0]):
            best = (r, m)
    return None if best is None else best[1]


def _lowest(b: _Built, now: _Now, k: Key, dim: str) -> Any:
    """Form `k`'s least key (or first document) over its unreviewed mentions now; None: not known
    without reading its mentions (a mention reviewed since the build may have held it)."""
    base = b.forms.get(k)
    low = None if base is None else (base.key if dim == "key" else base.first_doc)
    if low is None or not any(_value(m, dim) <= low for m in now.removed.get(k, [])):
        values = [low] * (low is not None) + [_value(m, dim) for m in now.added.get(k, [])]
        if values:
            return min(values)
    m = _least(b, now, k, dim)
    return None if m is None else _value(m, dim)
