"""What :func:`~kgnorm.methods.biocom.train.train_biocom` feeds the training loop: training
rows from the corpus (with the pseudo-sentences of single-sentence concepts and the synonym
substitutions, both described in :mod:`.train`), the rows of the search index, and the dev
mentions."""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .corpus import Corpus
from .linker import as_items
from .matching import name_tokens
from .model import Item

if TYPE_CHECKING:
    from .train import BiocomConfig

__all__ = ["TrainingData", "prepare_training_data", "prepare_dev"]


def prepare_dev(dev: Sequence[Any] | None) -> tuple[list[Item], list[set[str]], int]:
    """(items, gold sets, skipped) from dev triples or Mention objects (see :mod:`.train`)."""
    items: list[Item] = []
    gold: list[set[str]] = []
    skipped = 0
    for d in dev or ():
        if hasattr(d, "gold") and hasattr(d, "text"):
            parts = [g for g in d.gold if g and g != "-1"]
            if len(d.gold) != 1 or not parts:
                skipped += 1
                continue
            text, context, g = d.text, d.context, set(parts)
        else:
            text, context, g = d
            g = {g} if isinstance(g, str) else set(g)
            if not g:
                skipped += 1
                continue
        items.extend(as_items([(text, context)]))
        gold.append(g)
    return items, gold, skipped


def _pseudo_name(names: Sequence[str], mention: str, rng: random.Random) -> str | None:
    if not names:
        return None
    other = [n for n in names if name_tokens(n) != name_tokens(mention)]
    pool = other or list(names)
    return pool[rng.randrange(len(pool))]


@dataclass
class TrainingData:
    train_items: list[Item]
    train_labels: list[int]
    groups: dict[str, list[int]]
    index_items: list[Item]
    index_rows: dict[str, list]
    pseudo_training_rows: int
    single_sentence_concepts: int
    substituted_rows: int = 0


def prepare_training_data(corpus: Corpus, cfg: "BiocomConfig") -> TrainingData:
    """Training rows (corpus sentences, pseudo-sentences, substitutions: module doc of
    :mod:`.train`), their concept labels and groups, and the index rows."""
    items: list[Item] = [(s, a, b) for s, a, b in
                         zip(corpus.sentences, corpus.starts, corpus.ends)]
    uids = list(corpus.uids)
    concept_ids = {u: i for i, u in enumerate(sorted(set(uids)))}
    groups = corpus.rows_by_concept()
    singles = sorted(u for u, rows in groups.items() if len(rows) == 1)
    n_pseudo = 0
    train_items, train_uids = list(items), list(uids)
    if cfg.single_sentence == "pseudo":
        rng = random.Random(cfg.seed)
        for u in singles:
            (r,) = groups[u]
            name = _pseudo_name(corpus.names.get(u, []), corpus.sentences[r][
                corpus.starts[r]:corpus.ends[r]], rng)
            if name is None:
                continue
            groups[u] = [r, len(train_items)]
            train_items.append((name, 0, len(name)))
            train_uids.append(u)
            n_pseudo += 1
    n_subst = 0
    if cfg.substitutions:
        rng = random.Random(cfg.seed + 1)
        for r, u in enumerate(uids):
            sent, a, b = items[r]
            own = name_tokens(sent[a:b])
            pool = sorted({n for n in corpus.names.get(u, []) if name_tokens(n) != own})
            for name in rng.sample(pool, min(cfg.substitutions, len(pool))):
                groups[u].append(len(train_items))
                train_items.append((sent[:a] + name + sent[b:], a, a + len(name)))
                train_uids.append(u)
                n_subst += 1
    labels = [concept_ids.setdefault(u, len(concept_ids)) for u in train_uids]

    index_items = list(items)
    rows = {"uid": list(uids), "sentence": list(corpus.sentences),
            "start": list(corpus.starts), "end": list(corpus.ends),
            "doc_id": list(corpus.doc_ids), "pseudo": [False] * len(uids)}
    if cfg.index_names != "none":
        for u in sorted(corpus.names):
            names = corpus.names[u]
            for name in (names[:1] if cfg.index_names == "preferred" else names):
                index_items.append((name, 0, len(name)))
                rows["uid"].append(u)
                rows["sentence"].append(name)
                rows["start"].append(0)
                rows["end"].append(len(name))
                rows["doc_id"].append("")
                rows["pseudo"].append(True)
    return TrainingData(train_items, labels, groups, index_items, rows, n_pseudo, len(singles),
                 n_subst)
