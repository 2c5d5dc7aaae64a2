"""The JSON API under /api/: the same views the pages show, and the two writes (a review of a
mention, a mention a person adds), each checked against the app's token first."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from kgnorm.errors import InputError
from kgnorm.review import views
from kgnorm.review.done import NotDone, document_done
from kgnorm.review.records import AddedMention, Review
from kgnorm.serve.guard import check_token, read_json
from kgnorm.serve.highlight import mark_classes
from kgnorm.serve.state import Served, json_response

MAX_FIELD = 1000  # characters of a string field in a request


def _str(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_FIELD:
        raise InputError(f"{key!r} must be a string of at most {MAX_FIELD} characters")
    return value.strip()


def _int(body: dict[str, Any], key: str) -> int:
    value = body.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"{key!r} must be an integer")
    return value


def _bool(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise InputError(f"{key!r} must be true or false")
    return value


def _elapsed(body: dict[str, Any]) -> int | None:
    """The page's milliseconds from opening the mention to deciding it (absent: not measured)."""
    return None if body.get("elapsed_ms") is None else _int(body, "elapsed_ms")


def queue_routes(s: Served) -> list[Route]:
    """GET /api/queue: the review queue (kgnorm.review.queue)."""
    async def queue(request: Request) -> JSONResponse:
        p = request.query_params
        return json_response(await s.queue(p.get("limit", 50), p.get("order", "uncertain"), p.get("type", ""),
                                           p.get("seed", 0)))

    return [Route("/api/queue", queue)]


def read_routes(s: Served) -> list[Route]:
    async def documents(request: Request) -> JSONResponse:
        p = request.query_params
        return json_response(await s.view(views.list_documents, p.get("limit", 50), p.get("after", ""),
                                          p.get("q", ""), p.get("concept", ""), pending=True))

    async def document(request: Request) -> JSONResponse:
        doc = await s.view(views.document_view, request.path_params["doc_id"], pending=True)
        for m in doc["mentions"]:  # the page's marks take these classes as they are (kgnorm.serve.highlight)
            m["classes"] = mark_classes(m)
        return json_response(doc | {"done": await done_of(s, doc["uid"])})

    async def mention(request: Request) -> JSONResponse:
        uid = request.path_params["uid"]
        k = views.bounded(request.query_params.get("k", 10), 50, 10)
        model = await s.call(s.desk.candidates, uid, k)
        return json_response(await s.view(views.mention_view, uid, model_candidates=model or None, pending=True))

    async def concept(request: Request) -> JSONResponse:
        return json_response(await s.view(views.concept_view, request.path_params["uid"],
                                          request.query_params.get("ontology", "")))

    async def concepts(request: Request) -> JSONResponse:
        p = request.query_params
        return json_response({"concepts": await s.view(views.search_concepts, p.get("q", ""), p.get("limit", 20),
                                                       p.get("ontology", ""))})

    async def runs(request: Request) -> JSONResponse:
        return json_response(await s.view(views.runs_view, pending=True))

    async def orphans(request: Request) -> JSONResponse:
        return json_response(await orphans_with_candidates(s))

    async def reviews(request: Request) -> JSONResponse:
        return json_response(await s.view(views.reviews_view, pending=True))

    return [Route("/api/documents", documents), Route("/api/documents/{doc_id:path}", document),
            Route("/api/mentions/{uid:path}", mention), Route("/api/concepts", concepts),
            Route("/api/concepts/{uid:path}", concept), Route("/api/runs", runs), Route("/api/orphans", orphans),
            Route("/api/reviews", reviews)]


async def done_of(s: Served, document_uid: str) -> dict[str, Any] | None:
    """The document's newest done mark as the API returns it (None: not done)."""
    waiting = await s.call(s.desk.pending_done)
    mark = await s.view(document_done, document_uid, waiting)
    return None if mark is None else mark.record() | {"pending": mark in waiting}


async def orphans_with_candidates(s: Served) -> dict[str, Any]:
    """The orphans, with the loaded model's candidates for the first of them."""
    view = await s.view(views.orphans_view)
    return await s.call(views.with_candidates, view, lambda uid: s.desk.candidates(uid, 5))


def write_routes(s: Served) -> list[Route]:
    """Registered only when the app may write: a read-only app has no route that accepts a POST."""
    async def review(request: Request) -> JSONResponse:
        check_token(request, s.token)
        body = await read_json(request)
        uid = request.path_params["uid"]
        r = await s.call(s.desk.record, uid, _str(body, "decision"), _str(body, "concept"),
                         reviewer=_str(body, "reviewer") or s.reviewer, ontology=_str(body, "ontology"),
                         elapsed_ms=_elapsed(body), apply_to_same_text=_bool(body, "apply_to_same_text"))
        return json_response(await _answer(s, r))

    async def add_mention(request: Request) -> JSONResponse:
        check_token(request, s.token)
        body = await read_json(request)
        start, end, concept = _int(body, "start"), _int(body, "end"), _str(body, "concept")
        decision = _str(body, "decision") or ("concept" if concept else "nil")
        added = await s.view(_added, request.path_params["doc_id"], start, end, _str(body, "type"))
        r = await s.call(s.desk.record, added.uid, decision, concept, reviewer=_str(body, "reviewer") or s.reviewer,
                         ontology=_str(body, "ontology"), added=added, elapsed_ms=_elapsed(body))
        return json_response(await _answer(s, r), status_code=201)

    async def done(request: Request) -> JSONResponse:
        """Mark a document done: 409 with the unreviewed mentions' uids while any is left."""
        check_token(request, s.token)
        body = await read_json(request)
        try:
            mark = await s.call(s.desk.mark_done, request.path_params["doc_id"], _str(body, "reviewer") or s.reviewer)
        except NotDone as exc:
            return json_response({"error": str(exc), "unreviewed": exc.unreviewed}, status_code=409)
        waiting = {m.uid for m in await s.call(s.desk.pending_done)}
        return json_response(mark.record() | {"pending": mark.uid in waiting})

    return [Route("/api/mentions/{uid:path}/review", review, methods=["POST"]),
            Route("/api/documents/{doc_id:path}/mentions", add_mention, methods=["POST"]),
            Route("/api/documents/{doc_id:path}/done", done, methods=["POST"])]


async def _answer(s: Served, review: Review) -> dict[str, Any]:
    """The review record as the API returns it: pending when it waits for the store."""
    waiting = await s.call(s.desk.pending)
    copies = sum(1 for p in waiting if p.propagated_from == review.uid)
    if review.uid not in {p.uid for p in waiting}:
        copies = await s.view(_copies, review.uid)
    return {k: v for k, v in review.record().items() if k != "added"} | {
        "pending": review.uid in {p.uid for p in waiting}, "added": review.added.uid if review.added else None,
        "propagated": copies}


def _copies(store: Any, review_uid: str) -> int:
    """How many stored reviews copy this one (apply_to_same_text)."""
    return int(store.run_saved("review_copies", {"r": review_uid}).rows[0][0] or 0)


def _added(store: Any, doc_id: str, start: int, end: int, typ: str) -> AddedMention:
    """A span of a stored document as a mention a person adds; refused when it is not in the
    text or when a found mention has exactly that span already (review that one instead)."""
    uid, _, _, text, _ = views.find_document(store, doc_id)
    text = text or ""
    if not text:
        raise InputError("this document's text is not in the store: no mention can be added to it")
    if not 0 <= start < end <= len(text):
        raise InputError(f"span {start}-{end} is outside the document's text (0-{len(text)})")
    same = store.run_saved("serve_span_mention", {"d": uid, "s": start, "e": end}).rows
    added = AddedMention(uid, start, end, text[start:end], typ[:100])
    if same and same[0][0] != added.uid:
        raise InputError(f"mention {same[0][0]} has this span already: review it instead")
    return added
