"""The store opened for writing by a job: opening it removes what `link` runs killed outright
left behind (GraphStore.opened_for_writing), and the job says so in one line."""
from __future__ import annotations

from typing import Any

from kgnorm.progress import note
from kgnorm.stores import GraphStore, open_store
from kgnorm.stores.staged_run import abandoned_note


def open_writer(store: str | None, **options: Any) -> GraphStore:
    """``open_store(store, **options)`` for writing; the line about removed stages is printed even
    when quiet (it explains a store that changed)."""
    st = open_store(store, **options)
    if getattr(st, "recovery_note", None):
        note(f"kgnorm: {st.recovery_note}")
    if st.abandoned:
        note(f"kgnorm: {abandoned_note(st.abandoned)}")
        st.abandoned = []
    return st
