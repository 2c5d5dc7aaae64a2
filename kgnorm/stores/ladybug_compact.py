"""Compaction of an embedded store: LadybugDB keeps the space of deleted nodes and edges
(`CHECKPOINT` does not return it, and it has no VACUUM), so a store that had ontologies
replaced is copied, table by table, into a fresh file that then takes its place."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import ladybug as lb

from kgnorm.stores.cypher_files import schema_statements
from kgnorm.errors import StoreError
from kgnorm.stores.ladybug_store import LadybugStore


@dataclass
class CompactSummary:
    mb_before: float
    mb_after: float
    nodes: int
    edges: int
    seconds: float


def store_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*")
               if f.is_file() and not f.name.endswith(".holder")) / 2**20


def compact(path: str | Path, lock_timeout: float = 30.0) -> CompactSummary:
    """Copy every table of the store at `path` into a new file and swap it in. The store is
    held open for writing throughout, so no other writer runs; on any failure the new file is
    removed and the store is left as it was."""
    path = Path(path)
    t0 = time.perf_counter()
    before = store_mb(path)
    tmp = path.with_name(path.name + ".compacting")
    for leftover in tmp.parent.glob(tmp.name + "*"):
        leftover.unlink()
    src = LadybugStore(path, lock_timeout=lock_timeout)
    try:
        src._require_keys()
        db = lb.Database(str(tmp))
        out = lb.Connection(db)
        try:
            for stmt in schema_statements("ladybug"):
                out.execute(stmt)
            nodes, edges = _copy_tables(src, out)
        finally:
            out.close()
            db.close()
    except BaseException:
        for leftover in tmp.parent.glob(tmp.name + "*"):
            leftover.unlink()
        src.close()
        raise
    src.close()
    os.replace(tmp, path)
    for leftover in tmp.parent.glob(tmp.name + "*"):
        leftover.unlink()
    return CompactSummary(before, store_mb(path), nodes, edges, time.perf_counter() - t0)


def _copy_tables(src: LadybugStore, out: lb.Connection) -> tuple[int, int]:
    tables = src.query("CALL SHOW_TABLES() RETURN name, type").rows
    nodes = edges = 0
    for name, kind in tables:  # node tables first: edges COPY by their ends' primary keys
        if kind != "NODE":
            continue
        cols = [r[0] for r in src.query(f"CALL TABLE_INFO('{name}') RETURN name").rows]
        table = src._conn.execute(f"MATCH (n:`{name}`) RETURN "
                                  + ", ".join(f"n.`{c}` AS `{c}`" for c in cols)).get_as_arrow()
        nodes += _copy(out, name, table, "")
    for name, kind in tables:
        if kind != "REL":
            continue
        props = [r[0] for r in src.query(f"CALL TABLE_INFO('{name}') RETURN name").rows]
        for a, b, a_pk, b_pk in src.query(f"CALL SHOW_CONNECTION('{name}') RETURN *").rows:
            table = src._conn.execute(
                f"MATCH (a:`{a}`)-[r:`{name}`]->(b:`{b}`) RETURN a.`{a_pk}` AS `from`, b.`{b_pk}` AS `to`"
                + "".join(f", r.`{p}` AS `{p}`" for p in props)).get_as_arrow()
            edges += _copy(out, name, table, f' (from="{a}", to="{b}")')
    return nodes, edges


def _copy(out: lb.Connection, name: str, frame, options: str) -> int:
    if frame.num_rows == 0:
        return 0
    try:  # LadybugDB finds the Arrow table by its variable name in this scope
        out.execute(f"COPY `{name}` FROM frame{options}")  # quoted: a table may be named IN
    except RuntimeError as exc:
        raise StoreError(f"compacting failed, store unchanged: {name}: {' '.join(str(exc).split())}") from None
    return frame.num_rows
