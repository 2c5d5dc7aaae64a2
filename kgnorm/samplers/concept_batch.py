"""Batches of C distinct concepts × m sentences each (BioCoM: 16 × 2), so every row of a
batch has at least one positive and the other concepts give the negatives.

One epoch plan (seeded with ``(seed, epoch)``, the sentence-transformers idea: a resumed run
replays the same batches): each concept's rows are shuffled and cut into groups of m (a short
last group is topped up with other rows of the same concept), so every row is used about once
per epoch; groups are shuffled and packed into batches without repeating a concept; a batch
left short at the end is topped up with fresh groups of concepts it lacks. A concept with
fewer than m rows cannot give a positive and is left out (``skipped``): the trainer decides
beforehand what to do with single-sentence concepts (see kgnorm.methods.biocom.train).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from kgnorm.errors import KgnormError

__all__ = ["ConceptBatchSampler"]


class ConceptBatchSampler:
    """Yields lists of row indices, concept-major: ``[c1 r, c1 r', c2 r, c2 r', ...]``."""

    def __init__(self, groups: Mapping[str, Sequence[int]], concepts_per_batch: int = 16,
                 per_concept: int = 2, seed: int = 0) -> None:
        if concepts_per_batch < 2:
            raise KgnormError("a batch needs at least 2 concepts (negatives)")
        if per_concept < 2:
            raise KgnormError("each concept needs at least 2 rows per batch (a positive)")
        self.concepts_per_batch = int(concepts_per_batch)
        self.per_concept = int(per_concept)
        self.seed = int(seed)
        self.epoch = 0
        self.groups = {c: list(rows) for c, rows in sorted(groups.items())
                       if len(rows) >= per_concept}
        self.skipped = sorted(c for c, rows in groups.items() if len(rows) < per_concept)
        if len(self.groups) < 2:
            raise KgnormError(f"only {len(self.groups)} concept(s) with at least "
                              f"{per_concept} sentences: contrastive training needs 2 or more")
        self._concepts = list(self.groups)
        self._cache: tuple[int, list[list[int]]] | None = None

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def _rng(self, epoch: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, epoch])

    def _draw(self, rng: np.random.Generator, concept: str) -> list[int]:
        rows = self.groups[concept]
        pick = rng.choice(len(rows), size=self.per_concept, replace=False)
        return [rows[i] for i in pick]

    def plan(self, epoch: int | None = None) -> list[list[int]]:
        """All batches of an epoch (deterministic for a given seed and epoch)."""
        epoch = self.epoch if epoch is None else int(epoch)
        if self._cache is not None and self._cache[0] == epoch:
            return self._cache[1]
        rng = self._rng(epoch)
        m, C = self.per_concept, self.concepts_per_batch
        units: list[tuple[str, list[int]]] = []
        for c in self._concepts:
            rows = self.groups[c]
            perm = [rows[i] for i in rng.permutation(len(rows))]
            for s in range(0, len(perm), m):
                unit = perm[s:s + m]
                if len(unit) < m:
                    rest = [r for r in perm if r not in unit]
                    extra = rng.choice(len(rest), size=m - len(unit), replace=False)
                    unit = unit + [rest[i] for i in extra]
                units.append((c, unit))
        order = rng.permutation(len(units))
        open_batches: list[tuple[set[str], list[list[int]]]] = []
        done: list[list[int]] = []
        for u in order:
            c, unit = units[u]
            for k, (seen, parts) in enumerate(open_batches):
                if c not in seen:
                    seen.add(c)
                    parts.append(unit)
                    if len(parts) == C:
                        done.append([r for p in parts for r in p])
                        open_batches.pop(k)
                    break
            else:
                if C == 1:  # pragma: no cover - rejected in __init__
                    done.append(unit)
                else:
                    open_batches.append(({c}, [unit]))
        want = min(C, len(self._concepts))
        for seen, parts in open_batches:
            if len(parts) < want:
                lacking = [c for c in self._concepts if c not in seen]
                for i in rng.permutation(len(lacking))[:want - len(parts)]:
                    parts.append(self._draw(rng, lacking[i]))
            done.append([r for p in parts for r in p])
        self._cache = (epoch, done)
        return done

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.plan())

    def __len__(self) -> int:
        return len(self.plan())
