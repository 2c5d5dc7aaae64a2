"""What the review pages and the JSON API show: plain functions from a store (and the reviews still
pending in the desk's journal) to JSON-able dicts, so the HTML and /api/ can never disagree.

Every query runs on LadybugDB and on Neo4j/ArcadeDB alike (plain MATCH/OPTIONAL MATCH/WHERE), and
starts from a primary key where it can (Document.uid, Mention.uid, ConceptId.uid, Concept.key):
LadybugDB indexes nothing else. Pending reviews overlay the stored ones, newest first, so a curator
sees a decision at once even while another process holds the store."""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Sequence

from kgnorm.errors import KgnormError
from kgnorm.graph.refs import ConceptRef
from kgnorm.review.records import WITH_CONCEPT, WITHDRAW, Review, link_now
from kgnorm.review.reviewers import agreement, all_reviews, conflict, reviewer_rates
from kgnorm.stores import GraphStore, redact
from kgnorm.stores.stages import PUBLISHED, STAGING

MAX_LIMIT = 200  # documents per page, search hits
MAX_LISTED = 500  # children, linked mentions, orphans shown on one page
MAX_QUERY = 200  # characters of a search string


class NotFound(KgnormError):
    """No document, mention or concept by that id (a 404, not a 400)."""


def bounded(limit: Any, most: int = MAX_LIMIT, default: int = 50) -> int:
    """A page size from user input: an int in 1..most (bad input gives the default)."""
    try:
        n = int(limit)
    except (TypeError, ValueError):
        return default
    return max(1, min(n, most))


def _review(r: Review | None, pending: bool) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"decision": r.decision, "concept_uid": r.concept_uid, "ontology": r.ontology, "reviewer": r.reviewer,
            "created_at": r.created_at, "pending": pending, "propagated_from": r.propagated_from,
            "elapsed_ms": r.elapsed_ms}


def _stored_review(row: Sequence[Any]) -> dict[str, Any]:
    decision, concept, onto, reviewer, at, *more = row
    out = {"decision": decision, "concept_uid": concept or "", "ontology": onto or "", "reviewer": reviewer or "",
           "created_at": at or "", "pending": False}
    if more:  # (propagated_from, elapsed_ms) where the query reads them
        out.update(propagated_from=more[0] or "", elapsed_ms=more[1])
    return out


def latest_pending(pending: Iterable[Review]) -> dict[str, Review]:
    """mention uid -> its newest pending review."""
    out: dict[str, Review] = {}
    for r in pending:
        if r.mention_uid not in out or r.created_at >= out[r.mention_uid].created_at:
            out[r.mention_uid] = r
    return out


def _overlay(stored: dict[str, Any] | None, pend: Review | None) -> dict[str, Any] | None:
    """The review that counts: a pending one newer than the stored one wins (a pending withdrawal:
    none counts)."""
    if pend is not None and (stored is None or pend.created_at >= stored["created_at"]):
        return None if pend.decision == WITHDRAW else _review(pend, True)
    return stored


def _state(review: dict[str, Any] | None, machine: str | None) -> str | None:
    """The current concept uid (records.link_now): the review's (None for nil / not_a_mention), else the machine's."""
    if review is None:
        return machine
    return link_now(review["decision"], (review["concept_uid"], ""), ("", ""))[0] or None


# -- documents -----------------------------------------------------------------------
def list_documents(store: GraphStore, limit: Any = 50, after: str = "", q: str = "", concept: str = "",
                   pending: Sequence[Review] = ()) -> dict[str, Any]:
    """A page of documents in uid order (keyset paging: `next` is the `after` of the next page),
    optionally those whose doc id, title or text has `q`, or with a mention linked to `concept`."""
    n = bounded(limit)
    after, q, concept = (after or "")[:1000], (q or "").strip()[:MAX_QUERY], (concept or "").strip()[:MAX_QUERY]
    if concept:
        rows = _documents_of_concept(store, concept, after, n + 1)
        mentions = store.run_saved("serve_documents_counts", {"u": [r[0] for r in rows[:n]]}).rows if rows else []
    else:
        rows, mentions = _documents_page(store, after, q, n + 1)
    page = rows[:n]
    counts = _document_counts([r[0] for r in page], mentions, pending)
    docs = [{"doc_id": doc_id, "uid": uid, "title": title or "", **counts[uid]} for uid, doc_id, title in page]
    return {"documents": docs, "next": page[-1][0] if len(rows) > n else None}


def _documents_page(store: GraphStore, after: str, q: str, n: int) -> tuple[list[list[Any]], list[list[Any]]]:
    """(uid, doc_id, title) of a page and its mention rows, in one query: the page first (ORDER BY
    uid LIMIT n), then its mentions (LadybugDB plans an UNWIND of uids into a scan of every IN edge).
    `q`: the documents with that doc id (or uid) when there are any, else those whose title or
    text has it (a scan of every text, so only when no id matched)."""
    if q and store.run_saved("serve_document_id_exists", {"q": q}).rows:
        mentions = store.run_saved("serve_documents_page_id", {"after": after, "q": q, "limit": n}).rows
    elif q:
        mentions = store.run_saved("serve_documents_page_text", {"after": after, "lq": q.lower(), "limit": n}).rows
    else:
        mentions = store.run_saved("serve_documents_page", {"after": after, "limit": n}).rows
    docs = {r[0]: [r[0], r[6], r[7]] for r in mentions}
    return [docs[u] for u in sorted(docs)], mentions


def _documents_of_concept(store: GraphStore, concept: str, after: str, n: int) -> list[list[Any]]:
    """Documents with a mention the machine linked to `concept` or a person reviewed to it."""
    p = {"c": concept, "after": after, "limit": n}
    linked = store.run_saved("serve_concept_linked_documents", p).rows
    reviewed = store.run_saved("serve_concept_reviewed_documents", p).rows
    merged = {r[0]: r for r in [*linked, *reviewed]}
    return [merged[u] for u in sorted(merged)][:n]


def _no_counts() -> dict[str, int]:
    return {"n_mentions": 0, "n_nil": 0, "n_reviewed": 0}


def _document_counts(uids: list[str], rows: list[list[Any]], pending: Sequence[Review]) -> dict[str, dict[str, int]]:
    """Per document: its mentions, those with no concept now (nil), those a person reviewed."""
    pend = latest_pending(pending)
    out = {u: _no_counts() for u in uids}
    mentions: list[tuple[str, str, int, dict[str, Any] | None]] = []
    for doc, muid, links, decision, concept, at, *_ in rows:
        if muid is None or doc not in out:
            continue
        stored = {"decision": decision, "concept_uid": concept or "", "created_at": at or ""} if decision else None
        mentions.append((doc, muid, links, _overlay(stored, pend.get(muid))))
    seen = {m[1] for m in mentions}
    for r in pend.values():  # mentions a person added, not in the store yet
        if r.added is not None and r.added.document_uid in out and r.added.uid not in seen:
            mentions.append((r.added.document_uid, r.added.uid, 0, _review(r, True)))
    for doc, _, links, review in mentions:
        c = out[doc]
        c["n_mentions"] += 1
        c["n_reviewed"] += review is not None
        c["n_nil"] += _state(review, "linked" if links else None) is None
    return out


def find_document(store: GraphStore, doc_id: str) -> list[Any]:
    """(uid, doc_id, title, text, others) of a Document uid or a plain doc id; when several
    documents share a doc id, the one with the most mentions (`others`: the rest's uids)."""
    rows = store.run_saved("serve_document", {"d": doc_id}).rows
    if rows:
        return [*rows[0], []]
    found = store.run_saved("serve_documents_by_id", {"d": doc_id}).rows
    if not found:
        raise NotFound(f"no document {doc_id!r}")
    rows = store.run_saved("serve_document", {"d": found[0][0]}).rows
    return [*rows[0], [u for u, _ in found[1:]]]


def document_view(store: GraphStore, doc_id: str, pending: Sequence[Review] = ()) -> dict[str, Any]:
    """A document, its text and every mention in it with its machine link and current review."""
    uid, did, title, text, others = find_document(store, doc_id)
    mentions = _document_mentions(store, uid)
    reviews = {r[0]: _stored_review(r[1:]) for r in store.run_saved("serve_document_current_reviews", {"d": uid}).rows}
    pend = latest_pending(pending)
    for r in pend.values():
        if r.added is not None and r.added.document_uid == uid and r.added.uid not in mentions:
            a = r.added
            mentions[a.uid] = _mention(a.uid, a.start, a.end, a.type, a.text, None)
    names: dict[ConceptRef, str] = {}
    for m in mentions.values():
        m["review"] = _overlay(reviews.get(m["uid"]), pend.get(m["uid"]))
        m["concept"] = _state(m["review"], m["machine_concept"])
        # the current concept's ontology: a uid two ontologies share names the mention's own
        m["ontology"] = ((m["review"] or {}).get("ontology") or m["machine_ontology"]) if m["concept"] else ""
        if m["concept"] and (m["concept"], m["ontology"]) == (m["machine_concept"], m["machine_ontology"]):
            names[ConceptRef(m["ontology"], m["concept"])] = m["machine_concept_name"]
    wanted = {ConceptRef(m["ontology"], m["concept"]) for m in mentions.values() if m["concept"]} - set(names)
    names.update(concept_names(store, sorted(wanted)))
    for m in mentions.values():
        m["concept_name"] = names.get(ConceptRef(m["ontology"], m["concept"]), "") if m["concept"] else ""
    for muid in _conflicts(store, uid, set(mentions), pending):
        mentions[muid]["conflict"] = True
    listed = sorted(mentions.values(), key=lambda m: (m["start"] if m["start"] is not None else -1, m["end"] or 0,
                                                      m["uid"]))
    return {"doc_id": did or "", "uid": uid, "title": title or "", "text": text or "", "text_missing": not text,
            "others": others, "mentions": listed}


def _conflicts(store: GraphStore, doc_uid: str, mentions: set[str], pending: Sequence[Review]) -> set[str]:
    """The mentions of a document on which two reviewers' answers differ now."""
    cols = ("mention_uid", "decision", "concept_uid", "reviewer", "created_at")
    history: dict[str, list[dict[str, Any]]] = {}
    for row in store.run_saved("document_reviews", {"d": doc_uid}).rows:
        history.setdefault(row[0], []).append(dict(zip(cols, row)))
    for r in pending:
        if r.mention_uid in mentions:
            history.setdefault(r.mention_uid, []).append(_review(r, True))
    return {uid for uid, h in history.items() if uid in mentions and conflict(h)}


def _mention(uid: str, start: Any, end: Any, typ: Any, text: Any, link: Sequence[Any] | None) -> dict[str, Any]:
    """`link`: the machine's best (concept uid, name, score[, ontology]), None for none."""
    concept, name, score, onto = (*(link or (None, "", None)), "")[:4]
    return {"uid": uid, "start": start, "end": end, "type": typ or "", "text": text or "", "concept": None,
            "concept_name": "", "machine_concept": concept, "machine_concept_name": name or "", "score": score,
            "machine_ontology": onto or "", "review": None, "conflict": False}


def _document_mentions(store: GraphStore, doc_uid: str) -> dict[str, dict[str, Any]]:
    """uid -> mention of a document, with its best machine link (rank 1, highest score)."""
    rows = store.run_saved("serve_document_mention_links", {"d": doc_uid}).rows
    best: dict[str, tuple[Any, ...]] = {}
    out: dict[str, dict[str, Any]] = {}
    for uid, start, end, typ, text, cuid, cname, score, rank, conto in rows:
        key = (rank if rank is not None else 1 << 30, -(score or 0.0))
        if uid not in out or (cuid is not None and (best.get(uid) is None or key < best[uid])):
            out[uid] = _mention(uid, start, end, typ, text, (cuid, cname, score, conto) if cuid is not None else None)
            best[uid] = key if cuid is not None else None
    return out


def concept_names(store: GraphStore, refs: Sequence[ConceptRef]) -> dict[ConceptRef, str]:
    """ref -> name (index lookups: by key for a ref naming its ontology; through ConceptId for a
    bare uid, the first ontology's when several have it)."""
    out = {ConceptRef.from_key(key): name or "" for key, name in store.run_saved_for(
        "serve_concept_names_by_key", [r.key for r in refs if r.ontology])}
    bare = [r.uid for r in refs if not r.ontology]
    if bare:
        rows = store.run_saved("serve_concept_names", {"u": bare}).rows
        out.update({ConceptRef("", uid): name or "" for uid, name, _ in rows})
    return out


# -- mentions and concepts -------------------------------------------------------------
def mention_view(store: GraphStore, uid: str, pending: Sequence[Review] = (),
                 model_candidates: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A mention, its reviews (newest first) and the concepts to choose from: the model's top k when
    one is loaded, else the stored LINKED_TO ranks, each with its synonyms, definition, parents."""
    rows = store.run_saved("mention", {"m": uid}).rows
    mine = [r for r in pending if r.mention_uid == uid]
    if rows:
        _, start, end, typ, text, doc_id, doc_uid = rows[0]
    elif any(r.added is not None for r in mine):
        a = next(r.added for r in mine if r.added is not None)
        start, end, typ, text, doc_id, doc_uid = a.start, a.end, a.type, a.text, mine[0].doc_id, a.document_uid
    else:
        raise NotFound(f"no mention {uid!r}")
    links = _mention_links(store, uid)
    out = _mention(uid, start, end, typ, text, (*links[0][:3], links[0][5]) if links else None)
    history = [_stored_review(r[:5] + r[6:]) | {"uid": r[5]}
               for r in store.run_saved("mention_reviews", {"m": uid}).rows]
    history = sorted([_review(r, True) | {"uid": r.uid} for r in mine] + history, key=lambda r: r["created_at"],
                     reverse=True)
    out["review"] = history[0] if history and history[0]["decision"] != WITHDRAW else None
    out["conflict"] = conflict(history)
    out["concept"] = _state(out["review"], out["machine_concept"])
    # the mention's ontology: its reviewed concept's, else its machine link's (what candidates and search offer)
    out["ontology"] = (out["review"] or {}).get("ontology") or out["machine_ontology"]
    if model_candidates is not None:
        cands = [{"uid": c["uid"], "name": c.get("name", ""), "score": c.get("score"), "rank": i + 1,
                  "ontology": c.get("ontology", "")} for i, c in enumerate(model_candidates)]
        out["ontology"] = out["ontology"] or next((c["ontology"] for c in cands if c["ontology"]), "")
    else:
        cands = [{"uid": u, "name": n or "", "score": s, "rank": rank, "ontology": o or ""}
                 for u, n, s, rank, _, o in links]
    details = concept_details(store, [c["uid"] for c in cands] + ([out["concept"]] if out["concept"] else []),
                              prefer=out["ontology"])
    out["concept_name"] = details.get(out["concept"] or "", {}).get("name", "")
    out.update(doc_id=doc_id or "", document_uid=doc_uid or "", reviews=history,
               candidates_from="model" if model_candidates is not None else "store",
               candidates=[_with_details(c, details.get(c["uid"])) for c in cands])
    return out


def _with_details(candidate: dict[str, Any], details: dict[str, Any] | None) -> dict[str, Any]:
    """A candidate with its concept's name, synonyms, definition, parents; `matched`: the name the
    model matched when it is not the concept's own."""
    if not details:
        return candidate
    out = candidate | details
    if candidate["name"] and candidate["name"].lower() != details["name"].lower():
        out["matched"] = candidate["name"]
    return out


def _mention_links(store: GraphStore, uid: str) -> list[tuple[Any, ...]]:
    """(concept uid, name, score, rank, run, ontology) of a mention's LINKED_TO edges, best first, one per concept."""
    rows = store.run_saved("mention_links", {"m": uid}).rows
    rows.sort(key=lambda r: (r[3] if r[3] is not None else 1 << 30, -(r[2] or 0.0), r[0]))
    seen: set[str] = set()
    return [tuple(r) for r in rows if not (r[0] in seen or seen.add(r[0]))]


def concept_details(store: GraphStore, uids: Sequence[str], prefer: str = "") -> dict[str, dict[str, Any]]:
    """uid -> {name, ontology, synonyms, definition, parents: [{uid, name}]} (index lookups); a uid
    of several ontologies (MEDIC's and MeSH's MESH:D003924) is the concept of `prefer` (the
    mention's ontology) when it has one there, else of the first ontology."""
    wanted = list(dict.fromkeys(u for u in uids if u))
    if not wanted:
        return {}
    rows = store.run_saved("serve_concept_details", {"u": wanted}).rows
    out: dict[str, dict[str, Any]] = {}
    for uid, onto, name, syns, definition, puid, pname in sorted(rows, key=lambda r: (r[0], r[1] != prefer, r[1],
                                                                                      r[5] or "")):
        d = out.setdefault(uid, {"name": name or "", "ontology": onto or "", "synonyms": list(syns or []),
                                 "definition": definition or "", "parents": []})
        if puid is not None and onto == d["ontology"] and puid not in {p["uid"] for p in d["parents"]}:
            d["parents"].append({"uid": puid, "name": pname or ""})
    return out


def concept_view(store: GraphStore, uid: str, ontology: str = "") -> dict[str, Any]:
    """A concept (of `ontology` when the uid is in several), its hierarchy, predicted hypernyms and
    the mentions linked or reviewed to it (bounded)."""
    rows = store.run_saved("serve_concept_view", {"u": uid}).rows
    if not rows:
        raise NotFound(f"no concept {uid!r}")
    key, cuid, onto, name, syns, definition, xrefs, alt_ids, obsolete = next(
        (r for r in rows if r[2] == ontology), rows[0])
    p = {"k": key, "limit": MAX_LISTED}
    out: dict[str, Any] = {"uid": cuid, "ontology": onto, "ontologies": [r[2] for r in rows], "name": name or "",
                           "synonyms": list(syns or []), "definition": definition or "", "xrefs": list(xrefs or []),
                           "alt_ids": list(alt_ids or []), "obsolete": bool(obsolete)}
    out["parents"] = _uid_names(store.run_saved("serve_concept_parents", p).rows)
    out["children"] = _uid_names(store.run_saved("serve_concept_children", p).rows)
    out.update(_predicted(store, key))
    out["mentions"] = _concept_mentions(store, key, cuid, onto)
    return out


def _uid_names(rows: list[list[Any]]) -> list[dict[str, Any]]:
    return [{"uid": u, "name": n or ""} for u, n in rows]


def _predicted(store: GraphStore, key: str) -> dict[str, list[dict[str, Any]]]:
    """PREDICTED_IS_A out of the concept (its predicted hypernyms) and into it (from concepts and mentions)."""
    p = {"k": key, "limit": MAX_LISTED}
    up = store.run_saved("serve_concept_predicted_parents", p).rows
    down = [(*r, "concept") for r in store.run_saved("serve_concept_predicted_children", p).rows]
    down += [(*r, "mention") for r in store.run_saved("serve_concept_predicted_mentions", p).rows]

    def rec(r: Sequence[Any]) -> dict[str, Any]:
        return {"uid": r[0], "name": r[1] or "", "score": r[2], "rank": r[3], "run": r[4] or ""}
    return {"predicted_parents": [rec(r) for r in up],
            "predicted_children": [rec(r) | {"kind": r[5]} for r in down]}


def _concept_mentions(store: GraphStore, key: str, uid: str, onto: str) -> dict[str, Any]:
    """Mentions the machine linked to the concept and those a person reviewed to it, bounded."""
    linked = store.run_saved("serve_concept_linked_mentions", {"k": key, "limit": MAX_LISTED + 1}).rows
    reviewed = store.run_saved("serve_concept_reviewed_mentions", {"u": uid, "o": onto, "limit": MAX_LISTED + 1}).rows
    seen: set[str] = set()
    items = [{"uid": u, "text": t or "", "doc_id": d or "", "score": s, "rank": rk}
             for u, t, d, s, rk in linked if not (u in seen or seen.add(u))]
    return {"linked": items[:MAX_LISTED], "reviewed": [{"uid": u, "text": t or "", "doc_id": d or "",
                                                        "decision": dec, "reviewer": who or ""}
                                                       for u, t, d, dec, who in reviewed[:MAX_LISTED]],
            "more": len(linked) > MAX_LISTED or len(reviewed) > MAX_LISTED}


def search_concepts(store: GraphStore, prefix: str, limit: Any = 20, ontology: str = "") -> list[dict[str, Any]]:
    """Type-ahead: an exact uid first, then names starting with `prefix`, then names and synonyms
    containing it (case-insensitive; each step bounded by `limit`); with `ontology` (the mention's),
    that ontology's concepts only."""
    n, q = bounded(limit, 100, 20), (prefix or "").strip()[:MAX_QUERY]
    if not q:
        return []
    onto = (ontology or "").strip()[:MAX_QUERY]
    rows = store.run_saved("serve_search_id", {"q": q, "o": onto}).rows
    p = {"lq": q.lower(), "o": onto, "limit": n}
    rows += store.run_saved("serve_search_prefix", p).rows
    if len(rows) < n:
        rows += store.run_saved("serve_search_contains", p).rows
    seen: set[tuple[str, str]] = set()
    hits = [{"uid": u, "name": name or "", "ontology": onto or ""} for u, name, onto in rows
            if not ((u, onto) in seen or seen.add((u, onto)))]
    return hits[:n]


# -- runs, orphans, reviews ------------------------------------------------------------
def runs_view(store: GraphStore, pending: Sequence[Review] = ()) -> dict[str, Any]:
    """Every run, newest first, with the share of its rank-1 links people accepted once reviewed."""
    rows = store.run_saved("runs_listed", {"staging": STAGING, "published": PUBLISHED}).rows
    tally = _review_tally(store, pending)
    runs = []
    for uid, kind, method, model, params, metrics, at in rows:
        reviewed, accepted = tally.get(uid, (0, 0))
        runs.append({"uid": uid, "kind": kind or "", "method": method or "", "model_path": redact(model or ""),
                     "params": _json(params), "metrics": _json(metrics), "created_at": at or "",
                     "reviewed": reviewed, "accepted": accepted,
                     "accepted_share": accepted / reviewed if reviewed else None})
    runs += _ingest_runs(store)
    runs.sort(key=lambda r: r["created_at"], reverse=True)
    reviews = all_reviews(store, pending)
    return {"runs": runs, "reviewers": reviewer_rates(reviews), "agreement": agreement(reviews)}


def _ingest_runs(store: GraphStore) -> list[dict[str, Any]]:
    """An ingest writes no Run node: its Ontology node says what was loaded, from where and when."""
    rows = store.run_saved("ontologies").rows
    return [{"uid": f"ingest:{name}", "kind": "ingest", "method": fmt or "", "model_path": "",
             "params": {"ontology": name, "source": redact(src or ""), "version": version or ""},
             "metrics": {"concepts": n}, "created_at": at or "", "reviewed": 0, "accepted": 0, "accepted_share": None}
            for name, fmt, src, version, n, at in rows]


def _json(text: str | None) -> Any:
    try:
        return json.loads(redact(text or "{}"))
    except ValueError:
        return {}


def _review_tally(store: GraphStore, pending: Sequence[Review]) -> dict[str, tuple[int, int]]:
    """run uid -> (mentions it linked at rank 1 that have a current review, those accepted: the
    review's concept is the run's)."""
    decided: dict[str, tuple[str, str]] = {}
    links: dict[str, set[tuple[str, str]]] = {}
    for muid, run, cuid, decision, concept in store.run_saved("reviewed_rank1_links").rows:
        decided[muid] = (decision, concept or "")
        links.setdefault(muid, set()).add((run, cuid))
    pend = {u: r for u, r in latest_pending(pending).items() if r.added is None}
    for u, r in pend.items():
        decided[u] = (r.decision, r.concept_uid)
        if r.decision == WITHDRAW:
            decided.pop(u)
            links.pop(u, None)
    pend = {u: r for u, r in pend.items() if r.decision != WITHDRAW}
    todo = [u for u in pend if u not in links]
    if todo:
        for muid, run, cuid in store.run_saved("rank1_links", {"u": todo}).rows:
            links.setdefault(muid, set()).add((run, cuid))
    out: dict[str, list[int]] = {}
    for muid, pairs in links.items():
        decision, concept = decided[muid]
        for run, cuid in pairs:
            t = out.setdefault(run, [0, 0])
            t[0] += 1
            t[1] += decision in WITH_CONCEPT and (concept == cuid or (decision == "accept" and not concept))
    return {run: (a, b) for run, (a, b) in out.items()}


def orphans_view(store: GraphStore, limit: int = MAX_LISTED) -> dict[str, Any]:
    """Mentions a re-ingest left without a concept (ORPHAN_OF), with the concept they had."""
    rows = store.run_saved("all_orphans", {"limit": limit + 1}).rows
    items = [{"uid": u, "text": t or "", "doc_id": d or "", "was": was or "", "ontology": onto or "",
              "version": ver or "", "run": run or "", "rank": rank, "candidates": None}
             for u, t, d, was, onto, ver, run, rank in rows[:limit]]
    return {"orphans": items, "more": len(rows) > limit}


def with_candidates(view: dict[str, Any], candidates: Callable[[str], list[dict[str, Any]] | None],
                    most: int = 50) -> dict[str, Any]:
    """Fill the first `most` orphans' candidates from the loaded model (each is a model call;
    `candidates` answers None when no model is loaded: then none are asked)."""
    done: dict[str, list[dict[str, Any]] | None] = {}
    for o in view["orphans"]:
        if o["uid"] not in done:
            if len(done) >= most:
                break
            done[o["uid"]] = candidates(o["uid"])
            if done[o["uid"]] is None:
                break
        o["candidates"] = done[o["uid"]]
    return view


def reviews_view(store: GraphStore, pending: Sequence[Review] = ()) -> dict[str, Any]:
    """Every review, oldest first, the pending ones (not in the store yet) last and marked so."""
    cols = ("uid", "mention_uid", "doc_id", "mention", "decision", "concept_uid", "ontology", "previous_concept_uid",
            "reviewer", "created_at", "current", "propagated_from", "elapsed_ms")
    stored = sorted((dict(zip(cols, r)) | {"pending": False} for r in store.run_saved("reviews").rows),
                    key=lambda r: (r["created_at"] or "", r["uid"]))
    newest = latest_pending(pending)
    for r in stored:
        if r["current"] and r["mention_uid"] in newest:
            r["current"] = False
    extra = [{k: v for k, v in r.record().items() if k != "added"} | {
        "current": newest[r.mention_uid] is r and r.decision != WITHDRAW, "pending": True,
        "added": r.added is not None} for r in pending]
    return {"reviews": stored + extra}
