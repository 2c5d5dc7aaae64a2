"""What `kgnorm serve` (and `Workbench.review`) work through: a store to read while other kgnorm
processes write it, and reviews recorded so that none is lost.

Reads: LadybugDB opened read-only (which other processes' writes do not block), reopened when the
store's files changed so a page shows what was committed last; Neo4j: one read-only driver.
Writes (reviews): on LadybugDB, journaled first (kgnorm.review.journal), then written if the
store's write lock is free (a request never waits for it; `lock_timeout` is waited at start and
stop only); while another process holds it, they stay pending, are shown as such, and a
background thread writes them once it is free. On Neo4j the
server takes concurrent writes: a review is written at once (an error is the caller's)."""
from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from kgnorm.errors import StoreError
from kgnorm.review.done import DocumentDone, applied_done, apply_done, make_done
from kgnorm.review.journal import ReviewJournal
from kgnorm.review.queue_cache import QueueCache
from kgnorm.review.records import (WITHDRAW, AddedMention, Review, applied, apply_review, make_review,
                                   same_text_reviews)
from kgnorm.stores import GraphStore, check_store_uri, embedded_path, open_store
from kgnorm.stores.ladybug_guard import NoRoom

RETRY_S = 2.0
REOPEN_S = 0.5
CLOSE_WAIT_S = 10.0  # how long close() waits for a queue build in the background
log = logging.getLogger("kgnorm.serve")


class ReviewDesk:
    def __init__(self, store: str | None, *, read_only: bool = False, model: str | Path | dict[str, Any] | None = None,
                 lock_timeout: float = 2.0, retry_s: float = RETRY_S) -> None:
        self.uri = check_store_uri(store)
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        self.path = embedded_path(self.uri)
        self.journal = ReviewJournal.beside(self.path) if self.path is not None else None
        self.done_journal = (ReviewJournal.beside(self.path, "done", DocumentDone) if self.path is not None
                             else None)
        self._reader: GraphStore | None = None
        self._reader_stamp: tuple[Any, ...] = ()
        self._read_lock = threading.RLock()
        self._write_lock = threading.Lock()
        self._writing = False  # this desk's writer is open (see _writer)
        self._retry_reopen_at = 0.0  # after a failed reopen of the reader, not before this (monotonic)
        self._applied: set[str] = set()
        self._applied_done: set[str] = set()
        self._linker = _ModelCandidates(model) if model else None
        self.queue = QueueCache()  # the review queue, kept between requests (`queue.view(store, ...)`)
        self._queue_build: threading.Thread | None = None
        self._stop = threading.Event()
        self._retry: threading.Thread | None = None
        if self.path is not None and not read_only:
            self._upgrade_schema()
        with self.reading() as st:  # a missing store is an error now, not at the first page
            if self.journal is not None:
                journaled = [r.uid for r in self.journal.reviews()]
                self._applied = applied(st, journaled)
                marks = [m.uid for m in self.done_journal.reviews()] if self.done_journal is not None else []
                self._applied_done = applied_done(st, marks) if marks else set()
        if self.journal is not None and not read_only:
            self._retry = threading.Thread(target=self._retry_pending, args=(retry_s,), daemon=True)
            self._retry.start()

    def _upgrade_schema(self) -> None:
        """A store made before reviews (or documents' text) existed gets their tables now, as any
        writer's open gives them: read-only opens cannot add them. Skipped while another process
        writes the store (that writer's open added them)."""
        try:
            open_store(self.uri, lock_timeout=self.lock_timeout).close()
        except StoreError as exc:
            if "locked" not in str(exc) and not isinstance(exc, NoRoom):
                raise

    # -- reads ---------------------------------------------------------------------
    def _stamp(self) -> tuple[Any, ...]:
        if self.path is None:
            return ()
        out = []
        for p in (self.path, Path(f"{self.path}.wal")):
            try:
                s = p.stat()
                out.append((s.st_mtime_ns, s.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    @contextmanager
    def reading(self) -> Iterator[GraphStore]:
        """A read-only store showing the latest committed data (one reader at a time: the
        embedded store's connection is not shared across threads)."""
        with self._read_lock:
            stamp = self._stamp()
            if self._reader is not None and stamp != self._reader_stamp and not self._writing:
                self._reopen(stamp)
            if self._reader is None:
                self._reader = open_store(self.uri, read_only=True)
                self._reader_stamp = stamp
            yield self._reader

    def _reopen(self, stamp: tuple[Any, ...]) -> None:
        """A fresh reader in place of the one open, when one can be had at once: while another
        process's write is being checkpointed a read-only open waits (seconds), and pages are
        answered from the reader as it was instead (tried again REOPEN_S after a failed try: a
        try costs tens of ms, and every page would pay it)."""
        if time.monotonic() < self._retry_reopen_at:
            return
        try:
            fresh = open_store(self.uri, read_only=True, lock_timeout=0)
        except StoreError:
            self._retry_reopen_at = time.monotonic() + REOPEN_S
            return
        assert self._reader is not None
        self._reader.close()
        self._reader, self._reader_stamp = fresh, stamp

    # -- the kept review queue -------------------------------------------------------
    def build_queue(self) -> None:
        """Build the kept review queue (kgnorm.review.queue_cache) now, in a background thread and on
        a store handle of its own: the first queue request finds it built instead of building it
        then (seconds on a big store), and the desk's reader stays free for every other page.
        Once per desk; nothing to do when a request built it already."""
        if self._queue_build is not None or self.queue.built:
            return
        self.queue.building()
        self._queue_build = threading.Thread(target=self._build_queue, args=(self.queue,), daemon=True,
                                             name="kgnorm-queue-build")
        self._queue_build.start()

    def _build_queue(self, queue: QueueCache) -> None:
        try:
            with self._own_reader() as st:
                queue.view(st, pending=self.pending())  # the default request's answer: what it reads is kept
        except Exception as exc:  # the first queue request builds it then, on the desk's reader
            log.warning("kgnorm serve: the review queue was not built in the background (%s); the first "
                        "queue request builds it", type(exc).__name__)
        finally:
            queue.ready()

    @contextmanager
    def _own_reader(self) -> Iterator[GraphStore]:
        """A read-only store of its own (for work too long to hold the desk's reader). Closed only
        while this desk's writer is not open: closing an embedded store's handle releases every
        POSIX lock this process holds on it, the writer's too (see _writer)."""
        st = open_store(self.uri, read_only=True, lock_timeout=self.lock_timeout)
        try:
            yield st
        finally:
            while True:
                with self._read_lock:
                    if not self._writing:
                        st.close()
                        break
                time.sleep(0.05)

    # -- writes --------------------------------------------------------------------
    def record(self, mention_uid: str, decision: str, concept_uid: str = "", *, reviewer: str = "",
               ontology: str = "", added: AddedMention | None = None, elapsed_ms: int | None = None,
               apply_to_same_text: bool = False) -> Review:
        """Check a decision, keep it, and write it to the store now or as soon as the store is free.
        `apply_to_same_text`: the same decision for every mention of this text (case-insensitive)
        and type that no one reviewed yet, each review naming this one (propagated_from)."""
        if self.read_only:
            raise StoreError("this review desk is read-only")
        pending = self.pending()
        mine = [r for r in pending if r.mention_uid == mention_uid]
        reviewed = max(mine, key=lambda r: r.created_at).decision != WITHDRAW if mine else None
        with self.reading() as st:
            review = make_review(st, mention_uid, decision, concept_uid, reviewer=reviewer, ontology=ontology,
                                 added=added, elapsed_ms=elapsed_ms, reviewed=reviewed)
            copies = same_text_reviews(st, review, pending) if apply_to_same_text else []
        if self.journal is None:
            with open_store(self.uri) as st:
                for r in [review, *copies]:
                    apply_review(st, r)
            return review
        self.journal.append(review, *copies)
        self.flush(wait=False)  # kept: a request never waits for a writer, the retry thread writes it
        return review

    def mark_done(self, doc_id: str, reviewer: str = "") -> DocumentDone:
        """Mark a document done (kgnorm.review.done): refused (NotDone, with the mentions' uids) while
        a mention of it has no current review, pending reviews counted."""
        from kgnorm.review.views import document_view

        if self.read_only:
            raise StoreError("this review desk is read-only")
        with self.reading() as st:
            mark = make_done(document_view(st, doc_id, pending=self.pending()), reviewer)
        if self.done_journal is None:
            with open_store(self.uri) as st:
                apply_done(st, mark)
            return mark
        self.done_journal.append(mark)
        self.flush(wait=False)  # as a review: the retry thread writes it when the store is free
        return mark

    def pending_done(self) -> list[DocumentDone]:
        """Done marks kept in the journal and not yet in the store, oldest first."""
        if self.done_journal is None:
            return []
        return [m for m in self.done_journal.reviews() if m.uid not in self._applied_done]

    def pending(self) -> list[Review]:
        """Reviews kept in the journal and not yet in the store, oldest first."""
        if self.journal is None:
            return []
        return [r for r in self.journal.reviews() if r.uid not in self._applied]

    def flush(self, wait: bool = True, lock_timeout: float = 0.0) -> int:
        """Write the pending reviews (then the pending done marks) if the store's write lock can be
        had within `lock_timeout` (none by default: the retry thread tries again, and does not even
        try while another live process's holder file says it writes); without `wait`, not while
        another thread of this desk writes them. How many were written."""
        if (not self.pending() and not self.pending_done()) or (not lock_timeout and self._held_elsewhere()):
            return 0
        if not self._write_lock.acquire(blocking=wait):
            return 0
        try:
            # again: what another thread wrote meanwhile is not written twice
            todo, marks = self.pending(), self.pending_done()
            if not todo and not marks:
                return 0
            with self._writer(lock_timeout) as st:
                if st is None:
                    return 0  # another process writes the store, or no room: they stay pending
                done = applied(st, [r.uid for r in todo]) if todo else set()
                for r in todo:
                    if r.uid not in done:
                        apply_review(st, r)
                done = applied_done(st, [m.uid for m in marks]) if marks else set()
                for m in marks:
                    if m.uid not in done:
                        apply_done(st, m)
            # pending until the writer is closed: until then pages read through the reader as it was,
            # which does not hold them yet, so a review taken off the pending list earlier was seen nowhere
            self._applied.update(r.uid for r in todo)
            self._applied_done.update(m.uid for m in marks)
            return len(todo) + len(marks)
        finally:
            self._write_lock.release()

    @contextmanager
    def _writer(self, lock_timeout: float) -> Iterator[GraphStore | None]:
        """The store opened for writing (None: another process holds it). While it is open, pages
        still read (through the reader as it was), but the reader is neither closed nor reopened:
        LadybugDB's lock is a POSIX lock, which closing any handle of the store in this process
        releases, so another process could write the store at the same time. The next read after
        it reopens the reader."""
        with self._read_lock:
            try:
                st = open_store(self.uri, lock_timeout=lock_timeout)
            except StoreError as exc:
                if "locked" not in str(exc) and not isinstance(exc, NoRoom):
                    raise
                st = None  # another process writes the store, or the disk is full: they stay pending
            self._writing = st is not None
        if st is None:
            yield None
            return
        try:
            yield st
        finally:
            with self._read_lock:
                try:
                    st.close()
                finally:
                    self._writing = False
                    self._reader_stamp = ("written",)

    def _held_elsewhere(self) -> bool:
        from kgnorm.stores.ladybug_store import writer_elsewhere

        return self.path is not None and writer_elsewhere(self.path) is not None

    def _retry_pending(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self.flush()
            except Exception:  # a store error now is retried later; the journal keeps the reviews
                continue

    # -- candidates ----------------------------------------------------------------
    def candidates(self, mention_uid: str, k: int = 10) -> list[dict[str, Any]] | None:
        """The model's top-k concepts for a mention's text ([{uid, name, score}]); None without --model."""
        if self._linker is None:
            return None
        with self.reading() as st:
            rows = st.run_saved("serve_mention_fields", {"m": mention_uid}).rows
        if not rows:
            return []
        _, text, mtype, context = rows[0]
        return self._linker.top(text, context or "", k, mtype or "")

    def close(self) -> None:
        self._stop.set()
        if self._retry is not None:
            self._retry.join(timeout=5)
        if self._queue_build is not None:
            self._queue_build.join(timeout=CLOSE_WAIT_S)
        try:
            self.flush(lock_timeout=self.lock_timeout)
        except StoreError:
            pass
        with self._read_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None


class _ModelCandidates:
    """A model directory's linker, loaded once, asked for one mention at a time."""

    def __init__(self, model: str | Path | dict[str, Any]) -> None:
        from kgnorm.methods.registry import open_linker
        from kgnorm.linking.linker import pipeline_from_meta

        self.linker, meta = open_linker(model)
        self.pipeline = pipeline_from_meta(meta)
        self._lock = threading.Lock()

    def top(self, text: str, context: str, k: int, mention_type: str = "") -> list[dict[str, Any]]:
        """The model's top-k for one mention: a router links it with its type's linker, so the
        candidates come from the mention's own ontology (each names it)."""
        from kgnorm.linking.linker import link_stream
        from kgnorm.mentions.types import Mention
        from kgnorm.text.abbreviations import find_abbreviations

        item = (Mention(text=text, context=context, id="q", type=mention_type),
                find_abbreviations(context) if context else {})
        with self._lock:
            linked = next(iter(link_stream(self.linker, self.pipeline, [item], top_k=k, batch_size=1, lookahead=0)))
        return [{"uid": "|".join(h.uid for h in hits), "name": " + ".join(h.name for h in hits),
                 "score": float(sum(h.score for h in hits) / len(hits)), "ontology": hits[0].ontology}
                for _, hits in linked.ranks(k)]
