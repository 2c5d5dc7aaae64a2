"""The HTML pages: server-rendered from the same views as /api/, every value escaped by Jinja2
(autoescape on for every template); the document text is highlighted by cutting it into pieces
here (kgnorm.serve.highlight), never by building markup from data."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from kgnorm.review import views
from kgnorm.review.queue import ORDERS
from kgnorm.serve.api import orphans_with_candidates
from kgnorm.serve.highlight import LOW_SCORE, mark_classes, placed, segments, type_legend
from kgnorm.serve.state import Served

TEMPLATES = Path(__file__).parent / "templates"


@lru_cache(maxsize=1)
def templates() -> Jinja2Templates:
    """Autoescape on for every template, whatever its name; undefined names fail loudly."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["q"] = lambda s: quote(str(s), safe="")
    env.filters["score"] = lambda x: "" if x is None else f"{x:.3g}"
    env.filters["share"] = lambda x: "" if x is None else f"{100 * x:.0f}%"
    env.filters["rate"] = lambda x: "—" if x is None else f"{x:.0f}"
    env.filters["state"] = lambda m: " ".join(mark_classes(m))
    return Jinja2Templates(env=env)


def page_routes(s: Served) -> list[Route]:
    tpl = templates()

    def render(request: Request, name: str, **ctx: Any) -> Response:
        base = {"read_only": s.read_only, "token": "" if s.read_only else s.token, "reviewer": s.reviewer,
                "store": s.store_label, "low_score": LOW_SCORE}
        return tpl.TemplateResponse(request, name, {**base, **ctx})

    async def home(request: Request) -> Response:
        return RedirectResponse("/documents", status_code=303)

    async def documents(request: Request) -> Response:
        p = request.query_params
        q, concept, limit = p.get("q", ""), p.get("concept", ""), views.bounded(p.get("limit", 50))
        page = await s.view(views.list_documents, limit, p.get("after", ""), q, concept, pending=True)
        more = urlencode({"q": q, "concept": concept, "limit": limit, "after": page["next"]}) if page["next"] else ""
        return render(request, "documents.html", page=page, q=q, concept=concept, more=more)

    async def document(request: Request) -> Response:
        doc = await s.view(views.document_view, request.path_params["doc_id"], pending=True)
        ok, bad = placed(doc["text"], doc["mentions"])
        pieces = segments(doc["text"], ok) if doc["text"] else []
        from kgnorm.serve.api import done_of

        return render(request, "document.html", doc=doc, pieces=pieces, unplaced=bad,
                      types=type_legend(ok) if doc["text"] else [], done=await done_of(s, doc["uid"]))

    async def concept(request: Request) -> Response:
        c = await s.view(views.concept_view, request.path_params["uid"], request.query_params.get("ontology", ""))
        return render(request, "concept.html", c=c)

    async def runs(request: Request) -> Response:
        return render(request, "runs.html", **await s.view(views.runs_view, pending=True))

    async def queue(request: Request) -> Response:
        p = request.query_params
        order, typ = p.get("order", "uncertain"), p.get("type", "")
        q = await s.queue(p.get("limit", 50), order, typ, p.get("seed", 0))
        return render(request, "queue.html", q=q, orders=ORDERS)

    async def orphans(request: Request) -> Response:
        return render(request, "orphans.html", view=await orphans_with_candidates(s))

    return [Route("/", home), Route("/documents", documents), Route("/documents/{doc_id:path}", document),
            Route("/concepts/{uid:path}", concept), Route("/runs", runs), Route("/orphans", orphans),
            Route("/queue", queue)]


def error_page(request: Request, status: int, message: str) -> Response:
    """A plain error page (no store data, the message escaped)."""
    return templates().TemplateResponse(request, "error.html", {"status": status, "message": message,
                                                                "read_only": True, "token": "", "reviewer": "",
                                                                "store": "", "low_score": LOW_SCORE},
                                        status_code=status)
