"""Ambiguity errors of a name-dictionary model on gold mentions, before and after concept ranking.

An ambiguity error: the written top-1 concept is wrong although the name it came from is also a
name of a gold concept (one name, several concepts). *Before* is the linker this project had
until issue 14: it wrote the first uid of the top-ranked name, and `eval link` credited any uid
of that name (``old_lenient``). *Now* is :mod:`kgnorm.linking.concepts`. Used by linking.py.
"""
from __future__ import annotations

from pathlib import Path


def _pieces(gold: list[str], n_parts: int, j: int) -> set[str]:
    parts = [gold[j]] if len(gold) == n_parts else gold
    return {x.strip() for p in parts for x in p.split("+")}


def ambiguity_rows(model_dir: str | Path, dev: Path) -> dict:
    from kgnorm.evaluation.link_accuracy import accuracy_at_k
    from kgnorm.jobs.models import open_linker
    from kgnorm.linking.linker import link_stream, pipeline_from_meta
    from kgnorm.mentions.readers import read_mentions_with_abbreviations

    linker, meta = open_linker(model_dir)
    model = linker.model
    d, alt = model.dictionary, model.dictionary.alt_ids
    linked = list(link_stream(linker, pipeline_from_meta(meta), read_mentions_with_abbreviations(dev), top_k=1))
    rows = model.link([q for lm in linked for q in lm.queries], top_k=20)

    def name_hit(uids: tuple[str, ...], wanted: set[str], fallback: str) -> str:
        """A uid of the name that is gold (own id or alt id), else ``fallback``."""
        return next((u for u in uids if ({u} | set(alt.get(u, ()))) & wanted), fallback)

    old_strict, old_lenient, new_strict, new_lenient, golds = [], [], [], [], []
    pos = 0
    for lm in linked:
        gold = list(lm.mention.gold)
        golds.append(gold)
        os_, ol, ns, nl = [], [], [], []
        for j, hits in enumerate(lm.parts):
            cands = rows[pos + j]
            wanted = _pieces(gold, len(lm.parts), j)
            if cands:
                top = cands[0]
                os_.append([top.uids[0]])
                ol.append([name_hit(top.uids, wanted, top.uids[0])])
            else:
                os_.append([])
                ol.append([])
            if hits:
                h = hits[0]
                ns.append([h.uid])
                nl.append([name_hit(d.uids[d.index_of(h.name)], wanted, h.uid)])
            else:
                ns.append([])
                nl.append([])
        pos += len(lm.parts)
        old_strict.append(os_)
        old_lenient.append(ol)
        new_strict.append(ns)
        new_lenient.append(nl)
    rep = {k: accuracy_at_k(v, golds, ks=(1,), alt_ids=alt)
           for k, v in (("old_strict", old_strict), ("old_lenient", old_lenient),
                        ("new_strict", new_strict), ("new_lenient", new_lenient))}
    return {"old_strict": rep["old_strict"].acc1, "old_lenient": rep["old_lenient"].acc1,
            "new_strict": rep["new_strict"].acc1, "new_lenient": rep["new_lenient"].acc1,
            "old_ambiguous": rep["old_lenient"].hits[1] - rep["old_strict"].hits[1],
            "new_ambiguous": rep["new_lenient"].hits[1] - rep["new_strict"].hits[1],
            "n": rep["new_strict"].n_evaluated}
