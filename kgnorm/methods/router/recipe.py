"""`kgnorm train router`: a directory that routes mentions by type to trained linkers (referenced,
not copied). Nothing is trained: the routes are checked (each names its ontology, all share the
text pipeline) and written down; `annotate --model DIR` then links each type with its own model,
as `annotate --model TYPE=DIR ...` does without a directory."""
from __future__ import annotations

from dataclasses import MISSING, dataclass
from pathlib import Path

from kgnorm.errors import KgnormError
from kgnorm.methods.options import option, out_option
from kgnorm.progress import note

__all__ = ["Options", "train"]


@dataclass(kw_only=True)
class Options:
    """Send each mention type to its own linker (chemicals to a MeSH model, diseases to a MEDIC one)."""

    route: list[str] = option(MISSING, "--route", help="TYPE=DIR: mentions the detector labels TYPE are linked "
                              "by the model in DIR (any model `link` takes); a plain DIR links every type no "
                              "other route names. Repeat for each type.")
    out: Path = out_option("Router directory to write (it holds only kgnorm-model.json).")


def train(opts: Options, store: str | None = None, quiet: bool = False) -> Path:
    """Write the router directory ``opts.out`` over ``opts.route``."""
    from kgnorm.methods.model_dir import library_versions, write_model_meta
    from kgnorm.methods.router.linker import read_router_meta, routes_from_options, router_meta

    meta = routes_from_options(opts.route)
    if isinstance(meta, str):  # one plain DIR: a router of every type to it
        meta = router_meta({"*": meta})
    out = Path(opts.out)
    if str(out.resolve()) in meta["routes"].values():
        raise KgnormError("--out must not be a route's directory (the router references its routes)")
    full = read_router_meta(out, meta)
    meta.update({k: full[k] for k in ("ontologies", "text_pipeline")})
    write_model_meta(out, {**meta, "library_versions": library_versions()})
    note(f"router → {out} ({', '.join(f'{t}: {o}' for t, o in meta['ontologies'].items())}; referenced)", quiet)
    return out
