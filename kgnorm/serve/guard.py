"""What keeps the review app's writes to the person at the keyboard: a per-run token every write
must carry in a header (a cross-site page can neither read it nor send the header without CORS,
which the app never grants), bounded request bodies, and headers that forbid framing and any script
or style not served by the app itself."""
from __future__ import annotations

import hmac
import json
import re
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY = 64 * 1024
TOKEN_HEADER = "x-kgnorm-token"
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                                 b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
                                 b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def check_token(request: Request, token: str) -> None:
    """403 unless the request carries the app's token, compared in constant time (hmac.compare_digest
    on bytes: how long the answer takes says nothing about how much of a guess was right)."""
    given = request.headers.get(TOKEN_HEADER, "")
    if not hmac.compare_digest(given.encode("utf-8", "replace"), token.encode("utf-8")):
        raise HTTPException(403, "missing or wrong X-Kgnorm-Token header")


# a control character other than tab and line ends, or half of a UTF-16 pair ("\ud800" in JSON):
# no field a person types holds one, and a lone surrogate cannot be written to the UTF-8 journal
_UNWRITABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


async def read_json(request: Request) -> dict[str, Any]:
    """The request's JSON object: 415 unless sent as application/json, 413 past MAX_BODY bytes
    (declared or streamed), 400 unless it is one JSON object in UTF-8 whose strings hold no
    control character (a body nested too deep for the parser included)."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise HTTPException(415, "send the request body as Content-Type: application/json")
    declared = request.headers.get("content-length")
    if declared is not None and (not (declared.isascii() and declared.isdigit()) or int(declared) > MAX_BODY):
        raise HTTPException(413, f"request body over {MAX_BODY} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise HTTPException(413, f"request body over {MAX_BODY} bytes")
    try:
        data = json.loads(bytes(body).decode("utf-8") or "{}")
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise HTTPException(400, "the request body is not JSON in UTF-8") from None
    if not isinstance(data, dict):
        raise HTTPException(400, "the request body is not a JSON object")
    if any(_UNWRITABLE.search(s) for s in _strings(data)):
        raise HTTPException(400, "a field of the request holds a control character or a lone surrogate")
    return data


def _strings(value: Any) -> list[str]:
    """Every string in a parsed JSON value, keys included (iteratively: the depth is the sender's)."""
    out, todo = [], [value]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            todo += [*v.keys(), *v.values()]
        elif isinstance(v, list):
            todo += v
    return out


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every HTTP response (a plain ASGI middleware: no body buffering)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)
