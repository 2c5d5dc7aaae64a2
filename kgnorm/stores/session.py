"""One job, one connection to the store: everything a job reads before it writes (the model's
ontology, a dictionary tagger's names, the concepts a nil fit needs) and what it writes go through
the same :class:`StoreSession`, opened on first use."""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Iterator

from kgnorm.stores.base import GraphStore


class StoreSession:
    """The store at `uri`, opened once when first asked for: for writing when the job writes
    (LadybugDB's page cache bounded to `buffer_pool_mb`), else read-only; closed with the session.
    A store that is not there fails as :func:`kgnorm.stores.open_store` does (never created)."""

    def __init__(self, uri: str | None, *, write: bool, lock_timeout: float = 30.0,
                 buffer_pool_mb: int | None = None) -> None:
        self.uri, self.write = uri, write
        self._options = {"lock_timeout": lock_timeout, "buffer_pool_mb": buffer_pool_mb}
        self._stack = ExitStack()
        self._store: GraphStore | None = None

    def get(self) -> GraphStore:
        if self._store is None:
            from kgnorm.stores import open_store

            opened = open_store(self.uri, read_only=not self.write, **self._options)
            self._store = self._stack.enter_context(opened)
        return self._store

    def __enter__(self) -> "StoreSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self._store = None
        self._stack.close()


@contextmanager
def reading(store: str | GraphStore | StoreSession | None) -> Iterator[GraphStore]:
    """A store to read: an open one (or a session's) as it is, its owner closes it; a URI (None:
    ``$KGNORM_STORE`` or the default) opened read-only for the block."""
    if isinstance(store, StoreSession):
        yield store.get()
    elif isinstance(store, GraphStore):
        yield store
    else:
        from kgnorm.stores import open_store

        with open_store(store, read_only=True) as st:
            yield st
