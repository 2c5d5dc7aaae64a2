"""What every route of one app shares: the desk, the token, read-only, and how a view is run (off
the event loop, on the desk's reader, with the reviews still pending overlaid)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse

from kgnorm.review.desk import ReviewDesk
from kgnorm.stores import redact

QUEUE_WAIT_S = 30.0  # how long a queue request waits for the queue's build in the background


@dataclass
class Served:
    desk: ReviewDesk
    token: str
    read_only: bool = False
    reviewer: str = ""  # the default reviewer name (--reviewer), used when a request names none

    @property
    def store_label(self) -> str:
        """The store as a page may show it: never a password."""
        return redact(str(getattr(self.desk, "uri", "")))

    async def view(self, fn: Callable[..., Any], *args: Any, pending: bool = False, **kw: Any) -> Any:
        """`fn(store, *args, **kw)` in a worker thread (store calls block); with `pending`, the
        desk's not-yet-written reviews go in as `pending=`."""
        def call() -> Any:
            extra = {"pending": self.desk.pending()} if pending else {}
            with self.desk.reading() as store:
                return fn(store, *args, **kw, **extra)
        return await run_in_threadpool(call)

    async def queue(self, *args: Any) -> Any:
        """The review queue (kgnorm.review.queue_cache's `view(store, *args)`, pending reviews in).
        While the server's build of it in the background runs, the request waits for it (up to
        QUEUE_WAIT_S, then 503 saying so) before it takes the desk's reader: the other pages go on."""
        queue = self.desk.queue
        if not await run_in_threadpool(queue.wait_ready, QUEUE_WAIT_S):
            raise HTTPException(503, "the review queue is still being built (it starts when the server does): "
                                "ask again in a moment", headers={"Retry-After": "5"})
        return await self.view(queue.view, *args, pending=True)

    async def call(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return await run_in_threadpool(fn, *args, **kw)


def json_safe(x: Any) -> Any:
    """JSON has no NaN or infinity: they become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def json_response(content: Any, status_code: int = 200) -> JSONResponse:
    return JSONResponse(json_safe(content), status_code=status_code)
