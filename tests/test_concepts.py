"""Concept-level ranking (kgnorm.linking.concepts) and the strict scorer on shared names."""
import math

import pytest
import torch

from kgnorm.evaluation.link_accuracy import accuracy_at_k
from kgnorm.linking.linker import DictionaryLinker
from kgnorm.linking.candidates import Candidate
from kgnorm.linking.concepts import link_concepts, rank_concepts
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.losses.marginal_nll import marginal_nll
from kgnorm.methods.biosyn.train import _gold_concepts

# "dm" is a MEDIC synonym of OMIM:160900 and, in training, a mention of MESH:D009223
ONTO = [("dystrophia myotonica 1", "OMIM:160900"), ("dm", "OMIM:160900"),
        ("myotonic dystrophy", "MESH:D009223"), ("steinert disease", "MESH:D009223"),
        ("fever", "MESH:D8"), ("pyrexia", "MESH:D8"), ("ague", "MESH:D8"), ("ague", "MESH:D9")]


def _dict(with_training=True):
    d = NameDictionary.from_entries(ONTO)
    if with_training:
        d = d.with_mentions([("dm", {"MESH:D009223"})] * 3 + [("myotonic dystrophy", "MESH:D009223")])
    return d


class _Toy:
    """Scores a name 1.0 when it equals the query, 0.6 when it shares a first word, else 0."""

    def __init__(self, d):
        self.dictionary = d

    def link(self, queries, top_k=5, batch_size=512):
        out = []
        for q in queries:
            sc = sorted(((1.0 if n == q else 0.6 if n.split()[0] == q.split()[0] else 0.0, i)
                         for i, n in enumerate(self.dictionary.names)), key=lambda x: (-x[0], x[1]))
            out.append([Candidate(i, self.dictionary.uids[i], self.dictionary.names[i], s)
                        for s, i in sc[:top_k]])
        return out


def test_training_counts_and_round_trip(tmp_path):
    d = _dict()
    r = d.index_of("dm")
    assert d.uids[r] == ("OMIM:160900", "MESH:D009223")
    assert d.mention_count(r, "MESH:D009223") == 3 and d.mention_count(r, "OMIM:160900") == 0
    d.save(tmp_path)
    back = NameDictionary.load(tmp_path)
    assert back.counts == d.counts and back.uids == d.uids
    # a names.tsv without the counts column (older model directories) reads as zero counts
    lines = (tmp_path / "names.tsv").read_text().splitlines()
    (tmp_path / "names.tsv").write_text("\n".join("\t".join(x.split("\t")[:3]) for x in lines) + "\n")
    assert all(c == 0 for cs in NameDictionary.load(tmp_path).counts for c in cs)


def test_shared_name_gives_each_concept_its_own_rank_by_evidence():
    d = _dict()
    r = d.index_of("dm")
    ranked = rank_concepts(d, [r], [0.9], top_k=5)
    assert [c.uid for c in ranked] == ["MESH:D009223", "OMIM:160900"]
    assert all(c.score == pytest.approx(0.9) and c.row == r for c in ranked)
    # without training evidence: first seen (ontology order) wins the tie
    d0 = _dict(with_training=False).with_mentions([("dm", "MESH:D009223")])
    d0.counts[d0.index_of("dm")] = (0, 0)
    assert [c.uid for c in rank_concepts(d0, [d0.index_of("dm")], [0.9], 5)] == ["OMIM:160900", "MESH:D009223"]


def test_shared_name_tie_broken_by_other_names():
    d = _dict()
    ague, pyrexia = d.index_of("ague"), d.index_of("pyrexia")
    # MESH:D9 comes second in the row, but no other name; MESH:D8 also scores on "pyrexia"
    ranked = rank_concepts(d, [ague, pyrexia], [0.8, 0.5], 5)
    assert [c.uid for c in ranked] == ["MESH:D8", "MESH:D9"]
    assert ranked[0].row == ague  # its best name, not the other one
    # one concept per rank: synonyms collapse to the concept's best name
    fever = d.index_of("fever")
    assert [c.uid for c in rank_concepts(d, [fever, pyrexia, -1], [0.9, 0.7, 0.0], 5)] == ["MESH:D8"]


def test_other_concept_sharing_a_name_earns_no_credit():
    d = _dict()
    ranked = link_concepts(_Toy(d), ["dm"], top_k=5)[0]
    assert ranked[0].uid == "MESH:D009223"
    preds = [[[c.uid for c in ranked]]]
    rep = accuracy_at_k(preds, ["OMIM:160900"], ks=(1, 5))
    assert rep.acc1 == 0.0 and rep.acc5 == 1.0  # right only at its own rank (2)
    assert accuracy_at_k(preds, ["MESH:D009223"], ks=(1,)).acc1 == 1.0
    # the linker adapter shows the same concepts, one per rank
    hits = DictionaryLinker(_Toy(d), "biosyn").link_parts(["dm"], [None], [True], 5)[0]
    assert [h.uid for h in hits] == [c.uid for c in ranked]
    assert hits[1].name == "dm"


def test_concept_level_marginal_loss():
    scores = torch.zeros(1, 2)
    # candidate 0: a name of two concepts, one gold; candidate 1: a wrong concept
    loss = marginal_nll(scores, torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0, 1.0]]))
    assert float(loss) == pytest.approx(math.log(3))
    # the row view (BioSyn) would count the shared name as wholly right
    assert float(marginal_nll(scores, torch.tensor([[1.0, 0.0]]))) == pytest.approx(math.log(2))
    d = _dict()
    counts = _gold_concepts(d, [frozenset({"MESH:D009223"})])[0]
    assert counts == {d.index_of("dm"): 1, d.index_of("myotonic dystrophy"): 1,
                      d.index_of("steinert disease"): 1}


def test_tsv_rows_and_edges_show_each_concept_at_its_own_rank():
    from kgnorm.linking.candidates import LinkedMention
    from kgnorm.linking.linker import edges_for, tsv_rows
    from kgnorm.mentions.types import Mention

    d = _dict()
    lm = LinkedMention(Mention("DM", doc_id="d1", start=0, end=2), ["dm"])
    lm.parts = DictionaryLinker(_Toy(d), "biosyn").link_parts(["dm"], [lm.mention], [True], 5)
    rows = tsv_rows(lm, 5)
    assert [(r[2], r[3]) for r in rows[:2]] == [("1", "MESH:D009223"), ("2", "OMIM:160900")]
    assert sorted((rank, ref.uid) for ref, rank, _ in edges_for(lm, 2)) == [(1, "MESH:D009223"), (2, "OMIM:160900")]
