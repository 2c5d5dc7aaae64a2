"""`kgnorm ingest FORMAT PATH` (kgnorm.jobs.ingest does the work) and `kgnorm compact`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kgnorm.cli.common import LockTimeoutOpt, QuietOpt, StoreOpt, info, setup
from kgnorm.jobs.ingest import ingest

app = typer.Typer(help="Load an ontology into the graph store (replaces an ontology of the same name).",
                  no_args_is_help=True)

PathArg = Annotated[Path, typer.Argument(help="Source file or directory.")]
NameOpt = Annotated[Optional[str], typer.Option("--ontology", help="Ontology name in the store (default per format).")]
DryRunOpt = Annotated[bool, typer.Option(
    "--dry-run", help="Parse and print what replacing the stored version would do to its links (kept, moved, "
                      "orphaned) and concepts (added, removed, merged); the store is only read.")]
DanglingOpt = Annotated[bool, typer.Option("--allow-dangling", help="Drop IS_A edges to unknown ids instead of failing.")]


def _ingest(fmt: str, path: Path, name: str | None, allow_dangling: bool, store: str | None,
            quiet: bool, lock_timeout: float, dry_run: bool = False, **options: Any) -> None:
    setup(quiet)
    ingest(fmt, path, name, allow_dangling, store, lock_timeout, quiet, dry_run=dry_run, **options)


def _format_command(fmt: str, doc: str):
    """One `kgnorm ingest FORMAT` command: the formats differ only in their help (MedDRA below
    adds an option)."""
    def command(path: PathArg, ontology: NameOpt = None, allow_dangling: DanglingOpt = False,
                dry_run: DryRunOpt = False, store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0,
                quiet: QuietOpt = False) -> None:
        _ingest(fmt, path, ontology, allow_dangling, store, quiet, lock_timeout, dry_run)

    command.__doc__ = doc
    return app.command(fmt)(command)


for _fmt, _doc in (
    ("obo", "Any OBO ontology (via pronto), e.g. HPO's hp.obo."),
    ("mesh", "MeSH descriptor/supplementary XML (a file, .xml.gz, or a directory holding them)."),
    ("medic", "CTD MEDIC: CTD_diseases.tsv/.csv or the DNorm pipe file (medic_06Jul2012.txt)."),
    ("snomed", "SNOMED CT RF2 Snapshot (release root, Snapshot/ or Terminology/ directory)."),
):
    _format_command(_fmt, _doc)


@app.command("meddra")
def meddra(path: PathArg, ontology: NameOpt = None, allow_dangling: DanglingOpt = False,
           include_noncurrent: Annotated[bool, typer.Option(
               "--include-noncurrent", help="Also keep non-current LLTs as synonyms.")] = False,
           dry_run: DryRunOpt = False, store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0,
           quiet: QuietOpt = False) -> None:
    """MedDRA ASCII release (the MedAscii directory)."""
    _ingest("meddra", path, ontology, allow_dangling, store, quiet, lock_timeout, dry_run,
            include_noncurrent=include_noncurrent)


@app.command("umls")
def umls(path: PathArg, ontology: NameOpt = None, allow_dangling: Annotated[bool, typer.Option(
             "--allow-dangling", help="Skip MRREL rows naming a CUI that MRCONSO lacks instead of failing.")] = False,
         sab: Annotated[Optional[str], typer.Option(
             "--sab", help="Sources to keep, comma-separated (e.g. MSH,SNOMEDCT_US); default: all.")] = None,
         lang: Annotated[str, typer.Option("--lang", help="Languages to keep, comma-separated; ALL for all.")] = "ENG",
         suppress: Annotated[bool, typer.Option("--suppress", help="Also keep suppressible names (SUPPRESS not N).")] = False,
         store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False) -> None:
    """UMLS Metathesaurus RRF (a release's META folder): concepts are CUIs, source codes alt ids."""
    _ingest("umls", path, ontology, allow_dangling, store, quiet, lock_timeout, sab=sab, lang=lang, suppress=suppress)


def compact_cmd(store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False) -> None:
    """Reclaim the space an embedded store keeps after ontologies were replaced (LadybugDB has
    no vacuum): the store is copied into a fresh file that takes its place."""
    setup(quiet)
    from kgnorm.jobs.compact import compact_store

    uri, s = compact_store(store, lock_timeout=lock_timeout)
    info(f"compacted {uri}: {s.mb_before:.1f} MB → {s.mb_after:.1f} MB ({s.nodes:,} nodes, {s.edges:,} edges) "
         f"in {s.seconds:.1f}s", quiet)
