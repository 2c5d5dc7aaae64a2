"""`kgnorm serve`: the review web app for curators (kgnorm.serve) on a local port."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kgnorm.cli.common import LockTimeoutOpt, StoreOpt, warn

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def allowed_hosts(host: str) -> list[str] | None:
    """Host headers the app answers: the loopback names when it listens there (so a DNS-rebinding
    page cannot read the token), the bound name otherwise; None (any) on a wildcard address."""
    if host in ("0.0.0.0", "::", ""):
        return None
    return [*LOOPBACK, host] if host not in LOOPBACK else list(LOOPBACK)


def serve_cmd(
    store: StoreOpt = None,
    model: Annotated[Optional[list[str]], typer.Option("--model", help="A linking model directory: the mention panel "
                                                       "and the orphans page offer its top concepts (TYPE=DIR, "
                                                       "repeated: each mention's from its type's model, as in "
                                                       "annotate).")] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (0.0.0.0: every interface; anyone who "
                                      "reaches it and has the token can write reviews).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port (0: any free one; the address is printed).")] = 8765,
    read_only: Annotated[bool, typer.Option("--read-only", help="Browse only: no review can be written.")] = False,
    reviewer: Annotated[Optional[str], typer.Option("--reviewer", help="Reviewer name used when the page gives "
                                                    "none.")] = None,
    lock_timeout: LockTimeoutOpt = 2.0,
) -> None:
    """Review linked mentions in a browser: documents with their mentions highlighted, concepts,
    runs, orphans; decisions are written to the store as Review nodes."""
    import secrets

    import uvicorn

    from kgnorm.review.desk import ReviewDesk
    from kgnorm.serve import create_app

    from kgnorm.methods.router.linker import routes_from_options

    desk = ReviewDesk(store, read_only=read_only, model=routes_from_options(model) if model else None,
                      lock_timeout=lock_timeout)
    try:
        token = secrets.token_urlsafe(24)
        app = create_app(desk, token, read_only=read_only, reviewer=reviewer or "", allowed_hosts=allowed_hosts(host))
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="off",
                                server_header=False)
        sock = config.bind_socket()  # bound and listening before the address is printed: it is the one served,
        sock.listen(config.backlog)  # and a browser opened at once waits for the server instead of being refused
        shown = f"[{host}]" if ":" in host else host
        sys.stdout.write(f"kgnorm serve: http://{shown}:{sock.getsockname()[1]}/\ntoken: {token}\n")
        sys.stdout.flush()
        if allowed_hosts(host) is None:
            warn(f"serving on {host}: every interface; the pages (and their token) are open to the network")
        try:
            uvicorn.Server(config).run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn stops on Ctrl-C, then passes the signal on
            pass
    finally:
        desk.close()
        left = len(desk.pending())
        if left:
            warn(f"{left} review(s) still wait for the store (another process holds it): they are kept in "
                 f"{desk.journal.path if desk.journal else 'the journal'} and written when kgnorm serve next runs")
    typer.echo("kgnorm serve: stopped", err=True)
