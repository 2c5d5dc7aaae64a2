"""The DAN level protocol (Fivez et al. 2021, §4.2), reusable by every encoder.

Under a ``root`` (after cycle and shortcut removal, see :mod:`kgnorm.graph.hierarchy`):

* level-k concepts are those at (shortest) distance k from the root; levels 1..n_levels
  are class labels (level 1 highest);
* the names to classify are the names (preferred + synonyms) of every concept strictly
  below level ``n_levels`` (distance > n_levels); a concept with several names gives
  several items;
* each item gets, per level k, the set of its concept's level-k ancestors (a name may
  belong to several classes on one level);
* dead-end classes (level 1..n_levels concepts without any descendant below level
  ``n_levels``) are dropped — they never appear as labels;
* with a seed, one test and one validation name are held out per level-``n_levels``
  class that still has >= 3 names available (names already held out for another class are
  not counted, so every such class keeps >= 1 training name); held-out names leave training.

Every concept deeper than ``n_levels`` has at least one ancestor on each level 1..n_levels
(the nodes of its shortest path from the root), so every item has labels on every level.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple

from kgnorm.errors import KgnormError
from kgnorm.graph.hierarchy import Hierarchy

__all__ = ["LevelName", "LevelSplit", "LevelError", "build_levels", "N_LEVELS", "check_level", "split_under"]

N_LEVELS = 4  # the levels `train dan`, `hypernyms` and `eval hierarchy` split under a root


class LevelError(KgnormError, ValueError):
    """Bad input to the level protocol (unknown root, too few levels)."""


class LevelName(NamedTuple):
    """One name to classify: the text, its concept and its classes per level."""
    name: str
    concept_uid: str
    labels: dict[int, frozenset[str]]


@dataclass
class LevelSplit:
    """Result of :func:`build_levels`.

    ``classes[k]`` lists the (non dead-end) level-k class uids, sorted;
    ``class_names[k][uid]`` their names (preferred first).
    """
    root: str
    n_levels: int
    seed: int
    train: list[LevelName]
    val: list[LevelName]
    test: list[LevelName]
    classes: dict[int, list[str]]
    class_names: dict[int, dict[str, list[str]]]
    dropped_dead_end: dict[int, int] = field(default_factory=dict)
    class_labels: dict[str, dict[int, frozenset[str]]] = field(default_factory=dict)
    """For each class uid at level L: its level-j ancestors for j <= L (itself on level L)."""

    def class_items(self, level: int, min_level: int | None = None) -> list[LevelName]:
        """Names of the class concepts at levels ``min_level`` (default ``level``) ..
        ``n_levels`` as items labelled with their level-``level`` class(es): extra
        training data that is never a test name (test names lie below level n_levels)."""
        lo = level if min_level is None else min_level
        out: list[LevelName] = []
        for k in range(max(lo, level), self.n_levels + 1):
            for c in self.classes[k]:
                lab = self.class_labels[c]
                for n in self.class_names[k][c]:
                    out.append(LevelName(n, c, {j: lab[j] for j in lab if j <= k}))
        return out

    @property
    def levels(self) -> list[int]:
        return list(range(1, self.n_levels + 1))

    def items(self, *parts: str) -> list[LevelName]:
        """Concatenation of the named parts (default: train, val, test)."""
        parts = parts or ("train", "val", "test")
        out: list[LevelName] = []
        for p in parts:
            out.extend(getattr(self, p))
        return out

    def __iter__(self) -> Iterator[LevelName]:
        return iter(self.items())

    def summary(self) -> dict[int, dict[str, int]]:
        """Per level (like DAN Table 3): number of classes, names to classify per part, and
        the number of training names of the smallest / largest class."""
        out: dict[int, dict[str, int]] = {}
        for k in self.levels:
            sizes = {c: 0 for c in self.classes[k]}
            for it in self.train:
                for c in it.labels[k]:
                    sizes[c] += 1
            vals = sorted(sizes.values()) or [0]
            out[k] = {
                "classes": len(self.classes[k]),
                "names": len(self.train) + len(self.val) + len(self.test),
                "train": len(self.train), "val": len(self.val), "test": len(self.test),
                "concepts": len({it.concept_uid for it in self.items()}),
                "min_train_names_per_class": vals[0],
                "max_train_names_per_class": vals[-1],
                "dead_end_dropped": self.dropped_dead_end.get(k, 0),
            }
        return out

    def summary_table(self) -> str:
        """The summary as a small text table."""
        s = self.summary()
        lines = [f"root {self.root}: level  classes  names  train  val  test"]
        for k, r in s.items():
            lines.append(f"  {k:>5}  {r['classes']:>7}  {r['names']:>5}  {r['train']:>5}"
                         f"  {r['val']:>3}  {r['test']:>4}")
        return "\n".join(lines)


def build_levels(hierarchy: Hierarchy, root: str, n_levels: int = 4,
                 seed: int = 0) -> LevelSplit:
    """Build the DAN level split under ``root``; see the module docstring."""
    if n_levels < 1:
        raise LevelError(f"n_levels must be >= 1 (got {n_levels})")
    if root not in hierarchy:
        raise LevelError(f"root {root} is not in the hierarchy "
                         f"({len(hierarchy)} concepts loaded)")
    depth = hierarchy.depths(root)
    max_depth = max(depth.values())
    if max_depth <= n_levels:
        raise LevelError(
            f"root {root} has only {max_depth} level(s) below it; {n_levels} class levels need "
            f"at least {n_levels + 1} (names are taken from concepts below level {n_levels})")
    deep = sorted(u for u, d in depth.items() if d > n_levels)
    # level-k ancestors of each deep concept (ancestors outside the root's subtree have no depth)
    labels_of: dict[str, dict[int, frozenset[str]]] = {}
    used: dict[int, set[str]] = {k: set() for k in range(1, n_levels + 1)}
    for u in deep:
        per: dict[int, set[str]] = {k: set() for k in range(1, n_levels + 1)}
        for a in hierarchy.ancestors(u):
            d = depth.get(a)
            if d is not None and 1 <= d <= n_levels:
                per[d].add(a)
        labels_of[u] = {k: frozenset(v) for k, v in per.items()}
        for k, v in per.items():
            used[k] |= v
    items: list[LevelName] = []
    for u in deep:
        for n in hierarchy.names.get(u, ()):
            items.append(LevelName(n, u, labels_of[u]))
    if not items:
        raise LevelError(f"root {root}: no concept below level {n_levels} has a name")
    classes = {k: sorted(used[k]) for k in used}
    all_at = {k: sum(1 for d in depth.values() if d == k) for k in used}
    dropped = {k: all_at[k] - len(classes[k]) for k in used}
    class_names = {k: {c: list(hierarchy.names.get(c, ())) or [c] for c in classes[k]}
                   for k in classes}
    class_labels: dict[str, dict[int, frozenset[str]]] = {}
    for k in classes:
        for c in classes[k]:
            per = {j: set() for j in range(1, k + 1)}
            per[k].add(c)
            for a in hierarchy.ancestors(c):
                d = depth.get(a)
                if d is not None and 1 <= d <= k:
                    per[d].add(a)
            class_labels[c] = {j: frozenset(v) for j, v in per.items()}

    # hold out one test and one validation name per level-n class with >= 3 available names
    rng = random.Random(seed)
    members: dict[str, list[int]] = {c: [] for c in classes[n_levels]}
    for i, it in enumerate(items):
        for c in it.labels[n_levels]:
            members[c].append(i)
    held: dict[int, str] = {}
    for c in classes[n_levels]:
        avail = [i for i in members[c] if i not in held]
        if len(avail) < 3:
            continue
        t, v = rng.sample(avail, 2)
        held[t] = "test"
        held[v] = "val"
    train = [it for i, it in enumerate(items) if i not in held]
    val = [items[i] for i in sorted(held) if held[i] == "val"]
    test = [items[i] for i in sorted(held) if held[i] == "test"]
    return LevelSplit(root=root, n_levels=n_levels, seed=seed, train=train, val=val, test=test,
                      classes=classes, class_names=class_names, dropped_dead_end=dropped,
                      class_labels=class_labels)


def check_level(level: int) -> None:
    if not 1 <= level <= N_LEVELS:
        raise KgnormError(f"--level must be between 1 and {N_LEVELS}, got {level}")


def split_under(hierarchy: Hierarchy, ontology: str, root: str, seed: int) -> LevelSplit:
    """The level split under ``root`` (what `train dan`, `hypernyms` and `eval hierarchy` use), from
    the hierarchy read out of the store (kgnorm.graph.views.hierarchy_from_store)."""
    if root not in hierarchy:
        raise KgnormError(f"root {root} is not a concept of ontology {ontology!r}")
    return build_levels(hierarchy, root, N_LEVELS, seed=seed)
