"""What the reviews say about the people who made them (`/runs`): how fast each reviewer decides
(the page's time from opening a mention to deciding it, summed into hours) and, where two
reviewers decided the same mention, how often they agree (share identical and Cohen's kappa).

A reviewer's answer on a mention is their newest review of it (a withdrawal takes it back); the
answer compared is the concept for accept and concept (both say "this concept"), else the decision
(nil, not_a_mention). A review copied to the same text (propagated_from) is its reviewer's answer
too, but no time of theirs: reviews per hour count the reviews they timed."""
from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Iterable, Sequence

from kgnorm.review.records import WITH_CONCEPT, WITHDRAW, Review
from kgnorm.stores import GraphStore

HOUR_MS = 3600 * 1000


def answer(decision: str, concept: str) -> str:
    return f"concept:{concept}" if decision in WITH_CONCEPT else decision


def answers(history: Iterable[dict[str, Any]]) -> dict[str, str]:
    """reviewer -> their answer now, from one mention's reviews (any order)."""
    newest: dict[str, dict[str, Any]] = {}
    for r in history:
        who = r.get("reviewer") or ""
        if who not in newest or (r.get("created_at") or "") >= (newest[who].get("created_at") or ""):
            newest[who] = r
    return {who: answer(r["decision"], r.get("concept_uid") or "") for who, r in newest.items()
            if r["decision"] != WITHDRAW}


def conflict(history: Iterable[dict[str, Any]]) -> bool:
    """Whether two reviewers' answers on one mention differ now."""
    return len(set(answers(history).values())) > 1


def all_reviews(store: GraphStore, pending: Sequence[Review] = ()) -> list[dict[str, Any]]:
    """Every review, stored and pending, as dicts (mention_uid, reviewer, decision, concept_uid,
    created_at, propagated_from, elapsed_ms, uid)."""
    cols = ("uid", "mention_uid", "doc_id", "mention", "decision", "concept_uid", "ontology", "previous_concept_uid",
            "reviewer", "created_at", "current", "propagated_from", "elapsed_ms")
    out = [dict(zip(cols, row)) for row in store.run_saved("reviews").rows]
    stored = {r["uid"] for r in out}
    out += [{"uid": r.uid, "mention_uid": r.mention_uid, "decision": r.decision, "concept_uid": r.concept_uid,
             "reviewer": r.reviewer, "created_at": r.created_at, "propagated_from": r.propagated_from,
             "elapsed_ms": r.elapsed_ms} for r in pending if r.uid not in stored]
    return out


def reviewer_rates(reviews: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per reviewer: reviews made, those copied to the same text, those timed, the hours the timed
    ones took, reviews per hour and mentions settled per hour (timed reviews and their copies)."""
    copies: dict[str, int] = {}
    for r in reviews:
        if r.get("propagated_from"):
            copies[r["propagated_from"]] = copies.get(r["propagated_from"], 0) + 1
    per: dict[str, dict[str, Any]] = {}
    for r in reviews:
        t = per.setdefault(r.get("reviewer") or "", {"reviews": 0, "propagated": 0, "timed": 0, "ms": 0,
                                                     "timed_mentions": 0})
        if r.get("propagated_from"):
            t["propagated"] += 1
            continue
        t["reviews"] += 1
        if isinstance(r.get("elapsed_ms"), int):
            t["timed"] += 1
            t["ms"] += r["elapsed_ms"]
            t["timed_mentions"] += 1 + copies.get(r["uid"], 0)
    out = []
    for who, t in sorted(per.items()):
        hours = t["ms"] / HOUR_MS
        out.append({"reviewer": who, "reviews": t["reviews"], "propagated": t["propagated"], "timed": t["timed"],
                    "hours": hours, "reviews_per_hour": t["timed"] / hours if hours > 0 else None,
                    "mentions_per_hour": t["timed_mentions"] / hours if hours > 0 else None})
    return out


def agreement(reviews: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per pair of reviewers who both answered some mention: how many, the share identical and
    Cohen's kappa (None where it is undefined: one answer only, on both sides)."""
    from sklearn.metrics import cohen_kappa_score

    by_mention: dict[str, list[dict[str, Any]]] = {}
    for r in reviews:
        by_mention.setdefault(r["mention_uid"], []).append(r)
    pairs: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for history in by_mention.values():
        said = answers(history)
        for a, b in combinations(sorted(said), 2):
            left, right = pairs.setdefault((a, b), ([], []))
            left.append(said[a])
            right.append(said[b])
    out = []
    for (a, b), (left, right) in sorted(pairs.items()):
        same = sum(x == y for x, y in zip(left, right))
        kappa = None
        if len(set(left) | set(right)) > 1:
            k = float(cohen_kappa_score(left, right))
            kappa = k if math.isfinite(k) else None
        out.append({"reviewers": [a, b], "mentions": len(left), "identical": same, "identical_share": same / len(left),
                    "kappa": kappa})
    return out
