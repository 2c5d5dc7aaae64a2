"""`create_app`: the review web app over a ReviewDesk. Pages and /api/ read through the desk's
read-only handle; the write routes exist only when the app may write, and each one checks the
token first. Errors answer one line: 400 for bad input, 404 for unknown ids, never a traceback or a
credential."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kgnorm.errors import InputError, KgnormError
from kgnorm.review.desk import ReviewDesk
from kgnorm.review.views import NotFound
from kgnorm.serve.api import queue_routes, read_routes, write_routes
from kgnorm.serve.guard import SecurityHeaders
from kgnorm.serve.pages import error_page, page_routes
from kgnorm.serve.state import Served, json_response
from kgnorm.stores import redact

STATIC = Path(__file__).parent / "static"
log = logging.getLogger("kgnorm.serve")


def create_app(desk: ReviewDesk, token: str, *, read_only: bool = False, reviewer: str = "",
               allowed_hosts: Sequence[str] | None = None, build_queue: bool = True) -> Starlette:
    """The app. `allowed_hosts` (the CLI passes the host it binds and the loopback names): a page
    asked for under another Host header is refused, so a DNS-rebinding site cannot read the token.
    `build_queue`: the review queue is built in the background now (ReviewDesk.build_queue), not by
    its first request."""
    if not read_only and len(token) < 16:
        raise ValueError("a writing app needs a token of at least 16 characters")
    s = Served(desk, token, read_only or bool(getattr(desk, "read_only", False)), reviewer.strip()[:200])
    routes = [*([] if s.read_only else write_routes(s)), *queue_routes(s), *read_routes(s), *page_routes(s),
              Mount("/static", StaticFiles(directory=str(STATIC)), name="static")]
    middleware = [Middleware(SecurityHeaders), Middleware(_Contained)]
    if allowed_hosts:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    handlers = {HTTPException: _http_error, InputError: _bad_input, NotFound: _not_found, KgnormError: _store_error}
    app = Starlette(routes=routes, middleware=middleware, exception_handlers=handlers)  # type: ignore[arg-type]
    app.state.served = s
    if build_queue:
        desk.build_queue()
    return app


def _answer(request: Request, status: int, message: str) -> Response:
    """JSON under /api/, an HTML page elsewhere; always one line."""
    message = " ".join(redact(message).split())[:500]
    if request.url.path.startswith("/api/"):
        return json_response({"error": message}, status_code=status)
    return error_page(request, status, message)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    response = _answer(request, exc.status_code, str(exc.detail))
    response.headers.update(exc.headers or {})  # e.g. Retry-After while the queue is being built
    return response


async def _bad_input(request: Request, exc: Exception) -> Response:
    return _answer(request, 400, str(exc))


async def _not_found(request: Request, exc: Exception) -> Response:
    return _answer(request, 404, str(exc))


async def _store_error(request: Request, exc: Exception) -> Response:
    return _answer(request, 503, str(exc))


class _Contained:
    """Any other failure: one redacted line in the log and a 500 that says nothing more (never a
    traceback, which could carry a store URI, in the log or the page)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            log.error("kgnorm serve: %s: %s", type(exc).__name__, redact(" ".join(str(exc).split()))[:500])
            if not started:
                await _answer(Request(scope), 500, "internal error (the server's log has one line about it)")(
                    scope, receive, send)
