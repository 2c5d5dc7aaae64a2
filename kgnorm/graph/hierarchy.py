"""Hierarchy view: an in-memory networkx DAG of IS_A edges built from plain data.

The lead engineer feeds it from the graph store (``names`` and ``is_a`` lists); this module
never talks to a store or parses files (docs/architecture.md, "Data flow").

Edges are stored child -> parent, like ``(:Concept)-[:IS_A]->(:Concept)``. On construction
(by default) the view is cleaned the way DAN §4.1 (Fivez et al. 2021) needs it:

* cycles are broken by a depth-first search from the roots that drops every back edge
  (self-loops included); the number of dropped edges is ``removed_cycle_edges``;
* shortcut edges that skip levels are dropped: ``c -> p`` goes when ``p`` is also an
  ancestor of another parent of ``c`` (this is the transitive reduction of the DAG); the
  number is ``removed_shortcut_edges``. Reachability (ancestors/descendants) is unchanged.
"""
from __future__ import annotations

from collections import deque
from typing import Iterable, Mapping, Sequence

import networkx as nx

from kgnorm.errors import KgnormError

__all__ = ["Hierarchy"]


class Hierarchy:
    """A cleaned IS_A DAG with names per concept.

    Build it with :meth:`from_edges`. ``graph`` is a ``networkx.DiGraph`` whose edges go
    child -> parent; every concept of ``names`` is a node, even without edges.
    """

    def __init__(self, graph: nx.DiGraph, names: Mapping[str, Sequence[str]],
                 removed_cycle_edges: int = 0, removed_shortcut_edges: int = 0) -> None:
        self.graph = graph
        self.names: dict[str, list[str]] = {u: list(names.get(u, ())) for u in graph.nodes}
        self.removed_cycle_edges = removed_cycle_edges
        self.removed_shortcut_edges = removed_shortcut_edges
        self._anc_cache: dict[str, frozenset[str]] = {}
        self._depth_cache: dict[str, dict[str, int]] = {}

    # ------------------------------------------------------------------ building
    @classmethod
    def from_edges(cls, names: Mapping[str, Sequence[str]],
                   is_a: Iterable[tuple[str, str]], *, remove_cycles: bool = True,
                   remove_shortcuts: bool = True, add_missing: bool = True) -> "Hierarchy":
        """Build the view from ``names`` (uid -> [preferred name, *synonyms]) and ``is_a``
        (child, parent) pairs.

        Names are stripped and de-duplicated per concept (order kept, preferred first).
        Edges naming a concept absent from ``names`` add it without names when
        ``add_missing`` is true, and raise :class:`KgnormError` otherwise.
        """
        g = nx.DiGraph()
        clean: dict[str, list[str]] = {}
        for uid, ns in names.items():
            seen: set[str] = set()
            lst: list[str] = []
            for n in ns or ():
                if n is None:
                    continue
                n = str(n).strip()
                if n and n not in seen:
                    seen.add(n)
                    lst.append(n)
            clean[str(uid)] = lst
            g.add_node(str(uid))
        self_loops = 0
        for child, parent in is_a:
            child, parent = str(child), str(parent)
            for u in (child, parent):
                if u not in clean:
                    if not add_missing:
                        raise KgnormError(
                            f"IS_A edge ({child}, {parent}) names unknown concept {u}")
                    clean[u] = []
                    g.add_node(u)
            if child == parent:
                self_loops += 1
                continue
            g.add_edge(child, parent)
        removed_cycles = self_loops
        if remove_cycles:
            removed_cycles += _break_cycles(g)
        elif not nx.is_directed_acyclic_graph(g):
            raise KgnormError("the IS_A hierarchy has cycles; build with remove_cycles=True")
        removed_shortcuts = _remove_shortcuts(g) if remove_shortcuts else 0
        return cls(g, clean, removed_cycles, removed_shortcuts)

    # ------------------------------------------------------------------ basics
    def __contains__(self, uid: object) -> bool:
        return uid in self.graph

    def __len__(self) -> int:
        return self.graph.number_of_nodes()

    def __repr__(self) -> str:
        return (f"Hierarchy({self.graph.number_of_nodes()} concepts, "
                f"{self.graph.number_of_edges()} IS_A edges, "
                f"{self.removed_cycle_edges} cycle edges and "
                f"{self.removed_shortcut_edges} shortcut edges removed)")

    @property
    def concepts(self) -> list[str]:
        return list(self.graph.nodes)

    def _check(self, uid: str) -> None:
        if uid not in self.graph:
            raise KgnormError(f"concept {uid} is not in the hierarchy")

    def name(self, uid: str) -> str:
        """Preferred name (the uid itself when the concept has no name)."""
        self._check(uid)
        ns = self.names.get(uid)
        return ns[0] if ns else uid

    def all_names(self, uid: str) -> list[str]:
        self._check(uid)
        return list(self.names.get(uid, ()))

    def roots(self) -> list[str]:
        """Concepts without parents, sorted."""
        return sorted(n for n in self.graph.nodes if self.graph.out_degree(n) == 0)

    def parents(self, uid: str) -> list[str]:
        self._check(uid)
        return sorted(self.graph.successors(uid))

    def children(self, uid: str) -> list[str]:
        self._check(uid)
        return sorted(self.graph.predecessors(uid))

    def siblings(self, uid: str) -> list[str]:
        """Concepts sharing at least one parent with ``uid``, excluding ``uid``."""
        self._check(uid)
        out: set[str] = set()
        for p in self.graph.successors(uid):
            out.update(self.graph.predecessors(p))
        out.discard(uid)
        return sorted(out)

    def ancestors(self, uid: str) -> frozenset[str]:
        """All concepts reachable upwards from ``uid`` (excluding it); cached."""
        self._check(uid)
        got = self._anc_cache.get(uid)
        if got is None:
            got = self._compute_ancestors(uid)
        return got

    def _compute_ancestors(self, uid: str) -> frozenset[str]:
        # iterative post-order so deep hierarchies don't hit the recursion limit
        cache = self._anc_cache
        stack = [uid]
        while stack:
            node = stack[-1]
            if node in cache:
                stack.pop()
                continue
            todo = [p for p in self.graph.successors(node) if p not in cache]
            if todo:
                stack.extend(todo)
                continue
            acc: set[str] = set()
            for p in self.graph.successors(node):
                acc.add(p)
                acc |= cache[p]
            cache[node] = frozenset(acc)
            stack.pop()
        return cache[uid]

    def descendants(self, uid: str) -> set[str]:
        """All concepts below ``uid`` (excluding it)."""
        self._check(uid)
        return set(nx.ancestors(self.graph, uid))  # edges go child -> parent

    def depths(self, root: str | None = None) -> dict[str, int]:
        """Shortest distance of every concept from ``root`` (only concepts under it), or,
        with ``root=None``, from the nearest root of the whole hierarchy."""
        key = root if root is not None else "\0all"
        got = self._depth_cache.get(key)
        if got is not None:
            return got
        if root is not None:
            self._check(root)
            starts = [root]
        else:
            starts = self.roots()
        dist: dict[str, int] = {s: 0 for s in starts}
        queue = deque(starts)
        pred = self.graph.predecessors
        while queue:
            n = queue.popleft()
            d = dist[n] + 1
            for c in pred(n):
                if c not in dist:
                    dist[c] = d
                    queue.append(c)
        self._depth_cache[key] = dist
        return dist

    def depth(self, uid: str, root: str | None = None) -> int:
        """Shortest distance from ``root`` (default: the nearest root of the hierarchy)."""
        self._check(uid)
        d = self.depths(root).get(uid)
        if d is None:
            raise KgnormError(f"concept {uid} is not under {root}")
        return d

    def subgraph(self, root: str) -> "Hierarchy":
        """The hierarchy restricted to ``root`` and its descendants."""
        self._check(root)
        keep = self.descendants(root) | {root}
        g = self.graph.subgraph(keep).copy()
        return Hierarchy(g, {u: self.names.get(u, []) for u in keep},
                         self.removed_cycle_edges, self.removed_shortcut_edges)


# ---------------------------------------------------------------------- cleaning
def _break_cycles(g: nx.DiGraph) -> int:
    """Drop DFS back edges, walking parent -> child from the roots (sorted, deterministic).

    The remaining graph is acyclic. Returns the number of dropped edges.
    """
    children = {n: sorted(g.predecessors(n)) for n in g.nodes}
    roots = sorted(n for n in g.nodes if g.out_degree(n) == 0)
    state: dict[str, int] = {}  # 1 = on stack, 2 = done
    back: list[tuple[str, str]] = []

    def walk(start: str) -> None:
        state[start] = 1
        stack = [(start, iter(children[start]))]
        while stack:
            node, it = stack[-1]
            advanced = False
            for c in it:
                s = state.get(c)
                if s is None:
                    state[c] = 1
                    stack.append((c, iter(children[c])))
                    advanced = True
                    break
                if s == 1:  # c is an ancestor on the current path: edge c -> node closes a cycle
                    back.append((c, node))
            if not advanced:
                state[node] = 2
                stack.pop()

    for r in roots:
        if r not in state:
            walk(r)
    for n in sorted(g.nodes):  # components that are pure cycles have no root
        if n not in state:
            walk(n)
    g.remove_edges_from(back)
    return len(back)


def _remove_shortcuts(g: nx.DiGraph) -> int:
    """Drop edges c -> p where p is an ancestor of another parent of c (needs a DAG)."""
    anc: dict[str, frozenset[str]] = {}
    # parents before children: reverse topological order of child -> parent edges
    for n in reversed(list(nx.topological_sort(g))):
        acc: set[str] = set()
        for p in g.successors(n):
            acc.add(p)
            acc |= anc[p]
        anc[n] = frozenset(acc)
    drop = []
    for c in g.nodes:
        ps = list(g.successors(c))
        if len(ps) < 2:
            continue
        for p in ps:
            if any(p in anc[q] for q in ps if q != p):
                drop.append((c, p))
    g.remove_edges_from(drop)
    return len(drop)
