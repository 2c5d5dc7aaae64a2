"""`kgnorm ingest FORMAT PATH`: loader → OntologyGraph → store.load_ontology (atomic replace)."""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kgnorm.cli.common import LockTimeoutOpt, QuietOpt, StoreOpt, info, setup
from kgnorm.errors import InputError, KgnormError
from kgnorm.stores import NEO4J_SCHEMES, check_store_uri, open_store, store_exists

app = typer.Typer(help="Load an ontology into the graph store (replaces an ontology of the same name).",
                  no_args_is_help=True)

PathArg = Annotated[Path, typer.Argument(help="Source file or directory.")]
NameOpt = Annotated[Optional[str], typer.Option("--ontology", help="Ontology name in the store (default per format).")]
DanglingOpt = Annotated[bool, typer.Option("--allow-dangling", help="Drop IS_A edges to unknown ids instead of failing.")]


def _ingest(fmt: str, path: Path, name: str | None, allow_dangling: bool, store: str | None,
            quiet: bool, lock_timeout: float, **options: Any) -> None:
    setup(quiet)
    uri = check_store_uri(store)  # a malformed --store fails before the parse, not after it
    if not path.exists():
        raise InputError("no such file or directory", path=path)
    # An existing store is locked before the parse, so a second writer waits (or fails) before
    # it parses; readers are not blocked. A new store is made only once the file has parsed.
    st = open_store(uri, lock_timeout=lock_timeout) if store_exists(uri) else None
    try:
        loader = importlib.import_module(f"kgnorm.ontologies.{fmt}")
        graph = loader.load(path, name, allow_dangling=allow_dangling, **options)
        for warning in graph.warnings:
            info(f"warning: {warning}", quiet)
        if not graph.concepts:
            raise InputError(f"no concepts found; is this a {fmt} file?", path=path)
        if st is None:
            st = open_store(uri, create=True, lock_timeout=lock_timeout)
        if getattr(st, "created", False):  # said even with --quiet: a typo'd --store makes a new store
            typer.echo(f"kgnorm: creating a new store at {st.uri}", err=True)
        summary = st.load_ontology(graph)
    finally:
        if st is not None:
            st.close()
    verb = "replaced" if summary.replaced else "loaded"
    info(f"{verb} {graph.name} {graph.version}".rstrip() +
         f": {summary.concepts:,} concepts, {summary.is_a:,} IS_A, {summary.xrefs:,} XREF "
         f"({graph.report.cycle_edges_removed} cycle edge(s) broken, {graph.report.roots} root(s)) "
         f"into {st.uri} in {summary.seconds:.1f}s", quiet)
    if summary.replaced:
        typer.echo(f"kgnorm: {graph.name}: {summary.reingest_note()}", err=True)


@app.command("obo")
def obo(path: PathArg, ontology: NameOpt = None, allow_dangling: DanglingOpt = False,
        store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False) -> None:
    """Any OBO ontology (via pronto), e.g. HPO's hp.obo."""
    _ingest("obo", path, ontology, allow_dangling, store, quiet, lock_timeout)


@app.command("mesh")
def mesh(path: PathArg, ontology: NameOpt = None, allow_dangling: DanglingOpt = False,
         store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False) -> None:
    """MeSH descriptor/supplementary XML (a file, .xml.gz, or a directory holding them)."""
    _ingest("mesh", path, ontology, allow_dangling, store, quiet, lock_timeout)


@app.command("medic")
def medic(path: PathArg, ontology: NameOpt = None, allow_dangling: DanglingOpt = False,
          store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False) -> None:
    """CTD MEDIC: CTD_diseases.tsv/.csv or the DNorm pipe file (medic_06Jul2012.txt)."""
    _ingest("medic", path, ontology, allow_dangling, store, quiet, lock_timeout)


@app.command("snomed")
def snomed(path: PathArg, ontology: NameOpt = None, allow_dangling: DanglingOpt = False,
           store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False) -> None:
    """SNOMED CT RF2 Snapshot (release root, Snapshot/ or Terminology/ directory)."""
    _ingest("snomed", path, ontology, allow_dangling, store, quiet, lock_timeout)


@app.command("meddra")
def meddra(path: PathArg, ontology: NameOpt = None, allow_dangling: DanglingOpt = False,
           include_noncurrent: Annotated[bool, typer.Option(
               "--include-noncurrent", help="Also keep non-current LLTs as synonyms.")] = False,
           store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False) -> None:
    """MedDRA ASCII release (the MedAscii directory)."""
    _ingest("meddra", path, ontology, allow_dangling, store, quiet, lock_timeout, include_noncurrent=include_noncurrent)


def compact_cmd(store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False) -> None:
    """Reclaim the space an embedded store keeps after ontologies were replaced (LadybugDB has
    no vacuum): the store is copied into a fresh file that takes its place."""
    setup(quiet)
    uri = check_store_uri(store)
    if uri.startswith(NEO4J_SCHEMES):
        raise KgnormError("compact is for the embedded store; a Neo4j server manages its own space")
    if not store_exists(uri):
        raise KgnormError(f"no store at {uri}")
    from kgnorm.stores.ladybug_compact import compact

    s = compact(uri[len("ladybug://"):] if uri.startswith("ladybug://") else uri, lock_timeout=lock_timeout)
    info(f"compacted {uri}: {s.mb_before:.1f} MB → {s.mb_after:.1f} MB ({s.nodes:,} nodes, {s.edges:,} edges) "
         f"in {s.seconds:.1f}s", quiet)
