"""A router as a linker: each mention goes to the linker of its type (the detector's label), and
each linker stamps its own ontology on its hits (kgnorm.graph.refs), so one run links chemicals
into MeSH and diseases into MEDIC without any job knowing there are two.

A router is a ``wrapper`` kind (kgnorm.methods.registry), as the ensemble is: its meta names its
routes, ``{TYPE: model directory}`` (``*``: the route of every other type), and each route is
opened as :func:`kgnorm.methods.registry.open_linker` opens it alone. The meta comes from a
directory `kgnorm train router` wrote, or is built in memory from the command line
(:func:`router_meta`, `annotate --model TYPE=DIR ...`). A mention whose type has no route and no
``*`` route is not linked (nil). The routes must share the text pipeline: a mention's queries are
prepared once, before it is routed."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Hit, PartLinker

__all__ = ["ROUTER", "ANY_TYPE", "RouterLinker", "routes_from_options", "router_meta", "router_label",
           "open_router", "open_router_dir", "read_router_meta", "load_router"]

ROUTER = "router"
ANY_TYPE = "*"  # the route of the types no other route names


def _route_key(mention_type: str) -> str:
    return mention_type.strip().casefold()


class RouterLinker:
    """PartLinker over one PartLinker per mention type (types compared without case)."""

    method = ROUTER

    def __init__(self, routes: Mapping[str, PartLinker]) -> None:
        if not routes:
            raise KgnormError("a router needs at least one route (TYPE=DIR)")
        self.routes = {_route_key(t): linker for t, linker in routes.items()}
        self.unrouted: dict[str, int] = {}  # mention type -> mentions no route took (not linked)

    def route(self, mention_type: str) -> PartLinker | None:
        linker = self.routes.get(_route_key(mention_type))
        return linker if linker is not None else self.routes.get(ANY_TYPE)

    def _grouped(self, mentions: list[Any]) -> list[tuple[PartLinker, list[int]]]:
        """The queries' positions grouped by the linker of their mention's type."""
        groups: dict[int, tuple[PartLinker, list[int]]] = {}
        for i, m in enumerate(mentions):
            linker = self.route(getattr(m, "type", "") or "")
            if linker is not None:
                groups.setdefault(id(linker), (linker, []))[1].append(i)
        return list(groups.values())

    def prefetch_parts(self, queries: list[str], mentions: list[Any], top_k: int) -> None:
        """Queries a later call will link, each handed to its route's ``prefetch`` where it has one
        (kgnorm.linking.linker.link_stream: the query encoder fills its calls ahead)."""
        for linker, idx in self._grouped(mentions):
            ahead = getattr(linker, "prefetch", None)
            if ahead is not None:
                ahead([queries[i] for i in idx], top_k)

    def link_parts(self, queries: list[str], mentions: list[Any], whole: list[bool], top_k: int) -> list[list[Hit]]:
        out: list[list[Hit]] = [[] for _ in queries]
        counted: set[int] = set()  # a composite mention's parts share its Mention: counted once
        for m in mentions:
            typ = getattr(m, "type", "") or ""
            if self.route(typ) is None and id(m) not in counted:
                counted.add(id(m))
                self.unrouted[typ] = self.unrouted.get(typ, 0) + 1
        for linker, idx in self._grouped(mentions):
            got = linker.link_parts([queries[i] for i in idx], [mentions[i] for i in idx], [whole[i] for i in idx],
                                    top_k)
            for i, hits in zip(idx, got):
                out[i] = hits
        return out


def routes_from_options(values: Sequence[str | Path]) -> str | dict[str, Any]:
    """What ``--model`` values name: one model directory as it is, or ``TYPE=DIR`` values (and at
    most one plain DIR: the route of every other type) as a router's in-memory meta."""
    values = [str(v) for v in values]
    if not values:
        raise KgnormError("--model: give a linking model directory, or TYPE=DIR for each mention type")
    if len(values) == 1 and "=" not in values[0]:
        return values[0]
    routes: dict[str, str] = {}
    for v in values:
        typ, sep, path = v.partition("=")
        typ, path = (typ.strip(), path.strip()) if sep and not Path(v).is_dir() else (ANY_TYPE, v)
        if not typ or not path:
            raise KgnormError(f"--model {v}: use TYPE=DIR (e.g. Chemical=models/mesh) or a plain DIR")
        if _route_key(typ) in {_route_key(t) for t in routes}:
            raise KgnormError(f"--model {v}: type {typ} is given twice")
        routes[typ] = path
    return router_meta(routes)


def router_meta(routes: Mapping[str, str | Path]) -> dict[str, Any]:
    """A router's meta over ``{TYPE: model directory}``, each directory checked and resolved (what
    `kgnorm train router` writes, and what `annotate --model TYPE=DIR` builds in memory)."""
    out: dict[str, str] = {}
    for typ, path in routes.items():
        p = Path(path)
        if not (p / "kgnorm-model.json").is_file():
            raise KgnormError(f"route {typ}={path}: not a model directory (no kgnorm-model.json)")
        out[typ] = str(p.resolve())
    return {"method": ROUTER, "routes": out}


def router_label(meta: Mapping[str, Any]) -> str:
    """How a Run names an in-memory router: its routes, sorted (the same routes: the same run)."""
    return "router:" + ",".join(f"{t}={p}" for t, p in sorted(meta["routes"].items()))


def _shared(meta: dict[str, Any], metas: list[dict[str, Any]]) -> dict[str, Any]:
    """The router's meta with its routes' metas: every route names its ontology, and all share
    one text pipeline (refused in one line naming the first that does not). Its ``ontology`` is
    the routes' when they share one, else "" (each route stamps its own on its hits)."""
    routes = list(meta["routes"].items())
    for (typ, path), m in zip(routes, metas):
        if not m.get("ontology"):
            raise KgnormError(f"route {typ}={path}: the model records no ontology; a router's routes must name one")
        if m.get("text_pipeline") != metas[0].get("text_pipeline"):
            raise KgnormError(f"a router's routes must share the text pipeline: {typ}={path} has "
                              f"{m.get('text_pipeline')!r}, {routes[0][0]}={routes[0][1]} has "
                              f"{metas[0].get('text_pipeline')!r}")
    ontologies = {t: m["ontology"] for (t, _), m in zip(routes, metas)}
    one = set(ontologies.values())  # the router's own ontology when every route links into the same
    return {**meta, "ontology": one.pop() if len(one) == 1 else "", "text_pipeline": metas[0].get("text_pipeline", {}),
            "ontologies": ontologies, "member_meta": metas}


def read_router_meta(model_dir: Any, meta: dict[str, Any]) -> dict[str, Any]:
    """The registry's meta reader: the router's meta with its routes' (no weights loaded)."""
    from kgnorm.methods.registry import model_meta

    return _shared(meta, [model_meta(p) for p in meta["routes"].values()])


def open_router(meta: dict[str, Any]) -> tuple[RouterLinker, dict[str, Any]]:
    """The linker of a router's meta: each route opened as it would be alone and put behind the
    query cache (a cache per route: the same text may be a chemical and a disease)."""
    from kgnorm.linking.query_cache import with_cache
    from kgnorm.methods.registry import open_linker

    full = read_router_meta(None, meta)
    linkers = {typ: with_cache(open_linker(path)[0]) for typ, path in meta["routes"].items()}
    return RouterLinker(linkers), full


def open_router_dir(model_dir: Any, meta: dict[str, Any]) -> tuple[RouterLinker, dict[str, Any]]:
    """The registry's opener (a ``wrapper`` kind)."""
    return open_router(meta)


def load_router(model_dir: str | Path) -> Any:
    """The registry's loader: a router has no encoder of its own."""
    raise KgnormError(f"{model_dir} routes mentions by type to other linkers: it links (`link`, `annotate`) but has "
                      "no encoder of its own; use one of its routes' directories here")
