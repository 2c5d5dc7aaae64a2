"""The MeSH tree-number hierarchy, shared by the XML loader (`mesh.py`) and the name-table loader
(`mesh_tables.py`), so that both forms of one release give the same IS_A edges and the same
`--branches` selection.

- A tree number's parent is the tree number without its last `.segment`; the IS_A parent is the
  descriptor that lists that parent tree number. Top-level tree numbers (`C04`) hang under a
  synthetic category root `MESH:<letter>` (`MESH:D` "Chemicals and Drugs"; code = the letter,
  level_label "category"), made only for letters that occur. A parent tree number no loaded
  descriptor lists (a filtered or partial release) is walked up to the nearest listed ancestor,
  else the category root; such cases are counted in `graph.warnings`.
- Branches (`--branches D`, or a tree number such as `C04`): the descriptors with a tree number in
  one of them are kept, with only those tree numbers; a supplementary record is kept when one of
  its mapped headings is, with the edges to kept headings only.
"""
from __future__ import annotations

from collections.abc import Iterable

from kgnorm.graph.ontology_graph import Concept, OntologyGraph

CATEGORIES = {
    "A": "Anatomy", "B": "Organisms", "C": "Diseases", "D": "Chemicals and Drugs",
    "E": "Analytical, Diagnostic and Therapeutic Techniques, and Equipment",
    "F": "Psychiatry and Psychology", "G": "Phenomena and Processes",
    "H": "Disciplines and Occupations",
    "I": "Anthropology, Education, Sociology, and Social Phenomena",
    "J": "Technology, Industry, and Agriculture", "K": "Humanities",
    "L": "Information Science", "M": "Named Groups", "N": "Health Care",
    "V": "Publication Characteristics", "Z": "Geographicals",
}
SUPPLEMENTARY = "supplementary"


def tree_edges(graph: OntologyGraph, trees: dict[str, list[str]]) -> None:
    """IS_A from tree numbers (`trees`: descriptor uid -> its tree numbers), as the module says."""
    owner: dict[str, str] = {}
    for uid, tns in trees.items():
        for tn in tns:
            owner.setdefault(tn, uid)
    walked = 0
    edges: set[tuple[str, str]] = set()
    for uid, tns in trees.items():
        for tn in tns:
            parent_uid = None
            cur, steps = tn, 0
            while "." in cur:
                cur, steps = cur.rsplit(".", 1)[0], steps + 1
                if cur in owner:
                    parent_uid = owner[cur]
                    break
            if parent_uid is None:
                parent_uid = category_root(graph, tn)
                walked += "." in tn
            elif steps > 1:
                walked += 1
            if parent_uid is not None and (uid, parent_uid) not in edges:
                edges.add((uid, parent_uid))
                graph.add_is_a(uid, parent_uid, origin=f"{graph.source_path} (tree number {tn})")
    if walked:
        graph.warnings.append(f"{walked} tree number(s) whose parent tree number no loaded "
                              f"descriptor lists were attached to the nearest listed ancestor")


def category_root(graph: OntologyGraph, tree_number: str) -> str | None:
    letter = tree_number[:1].upper()
    if not letter.isalpha():
        return None
    uid = f"MESH:{letter}"
    if uid not in graph.concepts:
        graph.add_concept(Concept(uid=uid, code=letter, name=CATEGORIES.get(letter, f"Category {letter}"),
                                  level_label="category"))
    return uid


def in_branches(tree_number: str, branches: Iterable[str]) -> bool:
    """`D02.355` is in `D`, `D02` and `D02.355`, not in `D0` or `C`."""
    return any(tree_number == b or tree_number.startswith(b if len(b) == 1 else b + ".") for b in branches)


def select_branches(graph: OntologyGraph, trees: dict[str, list[str]], branches: Iterable[str]) -> None:
    """Keep the descriptors under `branches` and the supplementary records mapped into them (the
    module docstring); `trees` is narrowed in place to the kept tree numbers. Call before
    `tree_edges`, when the graph's IS_A edges are the records' mapped headings only."""
    wanted = [b.strip().upper() for b in branches if b.strip()]
    kept = {uid: [tn for tn in tns if in_branches(tn, wanted)] for uid, tns in trees.items()}
    kept = {uid: tns for uid, tns in kept.items() if tns}
    dropped = {uid for uid, c in graph.concepts.items() if c.level_label != SUPPLEMENTARY and uid not in kept}
    mapped: dict[str, bool] = {}  # record uid -> has a heading that stays (or is not loaded at all)
    edges = []
    for child, parent in graph.is_a:
        if parent in dropped:
            mapped.setdefault(child, False)
        else:
            mapped[child] = True
            edges.append((child, parent))
    dropped |= {uid for uid, c in graph.concepts.items()
                if c.level_label == SUPPLEMENTARY and not mapped.get(uid, False)}
    graph.concepts = {uid: c for uid, c in graph.concepts.items() if uid not in dropped}
    graph.is_a = edges
    graph.is_a_origin = {e: o for e, o in graph.is_a_origin.items() if e[0] not in dropped and e[1] not in dropped}
    trees.clear()
    trees.update(kept)
