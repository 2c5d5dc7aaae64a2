"""The in-memory concept graph every loader builds and every store loads.

Loaders fill an `OntologyGraph` with `add_concept` / `add_is_a` / `add_xref`, then call
`finalize()`, which drops edges to unknown ids, breaks cycles and computes depths, each
with a reported count, so that stores receive a clean DAG.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone

from kgnorm.errors import InputError


@dataclass
class Concept:
    """One concept; `synonyms` holds every name but `name`, `synonym_scopes` runs parallel."""

    uid: str
    code: str
    name: str
    ontology: str = ""
    synonyms: list[str] = field(default_factory=list)
    synonym_scopes: list[str] = field(default_factory=list)
    alt_ids: list[str] = field(default_factory=list)
    xrefs: list[str] = field(default_factory=list)
    definition: str = ""
    depth: int = -1
    level_label: str = ""
    obsolete: bool = False

    def add_synonym(self, text: str, scope: str = "EXACT") -> None:
        """Keep each distinct name once (case-sensitive), never the preferred name itself."""
        text = text.strip()
        if not text or text == self.name or text in self.synonyms:
            return
        self.synonyms.append(text)
        self.synonym_scopes.append(scope)

    def add_alt_id(self, alt: str) -> None:
        if alt and alt != self.uid and alt not in self.alt_ids:
            self.alt_ids.append(alt)

    def names(self) -> list[str]:
        return [self.name, *self.synonyms] if self.name else list(self.synonyms)


@dataclass
class RetiredId:
    """An id the source still names but that is no longer a concept (OBO ``is_obsolete``, an
    inactive SNOMED concept): where its links and gold labels go. ``replaced_by`` holds the
    successors the source states (OBO ``replaced_by``, SNOMED REPLACED BY / SAME AS);
    ``consider`` only suggestions (OBO ``consider``, SNOMED POSSIBLY EQUIVALENT TO)."""

    uid: str
    name: str = ""
    replaced_by: list[str] = field(default_factory=list)
    consider: list[str] = field(default_factory=list)


@dataclass
class FinalizeReport:
    """What `finalize` had to mend; loaders surface it to the user."""

    dangling_edges: int = 0
    cycle_edges_removed: int = 0
    duplicate_edges: int = 0
    roots: int = 0
    dangling_examples: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class OntologyGraph:
    name: str
    format: str
    source_path: str
    version: str = ""
    loaded_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    concepts: dict[str, Concept] = field(default_factory=dict)
    is_a: list[tuple[str, str]] = field(default_factory=list)
    is_a_origin: dict[tuple[str, str], str] = field(default_factory=dict)
    report: FinalizeReport = field(default_factory=FinalizeReport)
    warnings: list[str] = field(default_factory=list)
    retired: dict[str, RetiredId] = field(default_factory=dict)

    # -- building -------------------------------------------------------------------
    def add_concept(self, concept: Concept) -> Concept:
        """Add a concept; a repeated uid merges names and ids into the first one."""
        concept.ontology = self.name
        old = self.concepts.get(concept.uid)
        if old is None:
            self.concepts[concept.uid] = concept
            return concept
        if not old.name:
            old.name = concept.name
        elif concept.name and concept.name != old.name:
            old.add_synonym(concept.name)
        for syn, scope in zip(concept.synonyms, concept.synonym_scopes):
            old.add_synonym(syn, scope)
        for alt in concept.alt_ids:
            old.add_alt_id(alt)
        for x in concept.xrefs:
            if x not in old.xrefs:
                old.xrefs.append(x)
        old.definition = old.definition or concept.definition
        return old

    def add_is_a(self, child: str, parent: str, origin: str | None = None) -> None:
        """`origin` ("file:line" or "record X") is used to name the source of a bad edge."""
        self.is_a.append((child, parent))
        if origin is not None and (child, parent) not in self.is_a_origin:
            self.is_a_origin[(child, parent)] = origin

    # -- finishing ------------------------------------------------------------------
    def finalize(self, strict: bool = True) -> FinalizeReport:
        """Drop dangling/duplicate/self edges, break cycles, compute depth from the roots.

        With `strict`, a parent that names an unknown id is an error naming its origin;
        otherwise such edges are dropped and counted in the report."""
        rep = FinalizeReport()
        seen: set[tuple[str, str]] = set()
        edges: list[tuple[str, str]] = []
        for child, parent in self.is_a:
            if child not in self.concepts or parent not in self.concepts:
                if strict:
                    missing = parent if parent not in self.concepts else child
                    origin = self.is_a_origin.get((child, parent), "")
                    raise InputError(f"IS_A {child} -> {parent} names unknown id {missing} "
                                     f"(use --allow-dangling to drop such edges)",
                                     path=origin or self.source_path)
                rep.dangling_edges += 1
                if len(rep.dangling_examples) < 5:
                    rep.dangling_examples.append((child, parent))
                continue
            if child == parent:
                rep.cycle_edges_removed += 1
                continue
            if (child, parent) in seen:
                rep.duplicate_edges += 1
                continue
            seen.add((child, parent))
            edges.append((child, parent))
        edges, removed = _break_cycles(list(self.concepts), edges)
        rep.cycle_edges_removed += removed
        self.is_a = edges
        rep.roots = _compute_depths(self.concepts, edges)
        self.report = rep
        if rep.dangling_edges:
            ex = ", ".join(f"{c}->{p}" for c, p in rep.dangling_examples)
            self.warnings.append(f"{rep.dangling_edges} IS_A edge(s) to unknown ids dropped (e.g. {ex})")
        if rep.cycle_edges_removed:
            self.warnings.append(f"{rep.cycle_edges_removed} IS_A edge(s) removed to break cycles")
        return rep

    def parents(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for child, parent in self.is_a:
            out.setdefault(child, []).append(parent)
        return out


def _break_cycles(nodes: list[str], edges: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], int]:
    """Iterative DFS over child->parent edges; every back edge is dropped (deterministic)."""
    adj: dict[str, list[str]] = {}
    for c, p in edges:
        adj.setdefault(c, []).append(p)
    WHITE, GREY, BLACK = 0, 1, 2
    color: dict[str, int] = {}
    back: set[tuple[str, str]] = set()
    for start in nodes:
        if color.get(start, WHITE) != WHITE:
            continue
        color[start] = GREY
        stack = [(start, iter(adj.get(start, ())))]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = BLACK
                stack.pop()
                continue
            state = color.get(nxt, WHITE)
            if state == GREY:
                back.add((node, nxt))
            elif state == WHITE:
                color[nxt] = GREY
                stack.append((nxt, iter(adj.get(nxt, ()))))
    if not back:
        return edges, 0
    return [e for e in edges if e not in back], len(back)


def _compute_depths(concepts: dict[str, Concept], edges: list[tuple[str, str]]) -> int:
    """depth = shortest distance from any root (a concept without parents); returns #roots."""
    children: dict[str, list[str]] = {}
    has_parent: set[str] = set()
    for c, p in edges:
        children.setdefault(p, []).append(c)
        has_parent.add(c)
    queue: deque[str] = deque()
    roots = 0
    for uid, con in concepts.items():
        con.depth = -1
        if uid not in has_parent:
            con.depth = 0
            queue.append(uid)
            roots += 1
    while queue:
        uid = queue.popleft()
        d = concepts[uid].depth + 1
        for ch in children.get(uid, ()):
            if concepts[ch].depth < 0:
                concepts[ch].depth = d
                queue.append(ch)
    return roots
