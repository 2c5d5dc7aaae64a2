"""The ontology loaders by format: what `kgnorm ingest FORMAT`, `Workbench.ingest` and
`kgnorm.jobs.ingest` look up.

A loader is a :class:`Loader` entry: its format ``name`` (the `kgnorm ingest` subcommand),
``reads`` (what PATH is: the command's help), ``load`` (``"module:function"``, resolved on use so
that naming a loader imports nothing heavy) and ``options`` (a dataclass whose fields, each made
with :func:`option`, are its extra command-line options and the keywords ``load`` takes).

The load function is ``load(path, name=None, *, allow_dangling=False, **options) -> OntologyGraph``:
it parses ``path`` into a finalized :class:`~kgnorm.graph.ontology_graph.OntologyGraph` named
``name`` (None: the loader's default), whose ``format`` is the loader's name; a file it cannot read
is an InputError naming the file and line. The ingest job stores that graph. A new loader is a
module in ``ontologies/`` and one :func:`register` call (here, or from its own package).
"""
from __future__ import annotations

import importlib
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Callable, Optional

from kgnorm.errors import KgnormError

if TYPE_CHECKING:
    from kgnorm.graph.ontology_graph import OntologyGraph

__all__ = ["Loader", "LOADERS", "register", "loader", "option", "NoOptions"]

DANGLING_HELP = "Drop IS_A edges to unknown ids instead of failing."


def option(default: Any = MISSING, *flags: str, help: str | None = None) -> Any:
    """A field of a loader's options dataclass: its ``default``, command-line ``flags`` (default
    ``--field-name``) and ``help`` (the metadata shape of kgnorm.methods.options.option)."""
    return field(default=default, metadata={"flags": flags, "help": help})


@dataclass(kw_only=True)
class NoOptions:
    """A loader without options of its own."""


@dataclass(frozen=True)
class Loader:
    """One source format. ``options``: a dataclass type, or ``"module:Class"``. ``dangling_help``:
    the help of ``--allow-dangling`` (what this format's dangling rows are); ``dry_run``: whether
    the command offers ``--dry-run`` (the job supports it for every loader)."""

    name: str
    load: str
    reads: str
    options: type | str = NoOptions
    dangling_help: str = DANGLING_HELP
    dry_run: bool = True

    def load_function(self) -> Callable[..., OntologyGraph]:
        return _resolve(self.load)

    def options_class(self) -> type:
        return _resolve(self.options) if isinstance(self.options, str) else self.options

    def option_names(self) -> list[str]:
        return [f.name for f in fields(self.options_class())]

    def __call__(self, path: Any, name: str | None = None, *, allow_dangling: bool = False,
                 **options: Any) -> OntologyGraph:
        """Parse ``path`` with this loader."""
        return self.load_function()(path, name, allow_dangling=allow_dangling, **options)


LOADERS: dict[str, Loader] = {}


def register(entry: Loader) -> Loader:
    """Add (or replace) a loader: `kgnorm ingest <name>`, `Workbench.ingest(<name>, …)` and the
    ingest job find it from then on."""
    LOADERS[entry.name] = entry
    return entry


def loader(name: str) -> Loader:
    try:
        return LOADERS[name]
    except KeyError:
        raise KgnormError(f"unknown ontology format {name!r} (known: {', '.join(LOADERS)})") from None


def _resolve(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(kw_only=True)
class MeddraOptions:
    include_noncurrent: bool = option(False, "--include-noncurrent", help="Also keep non-current LLTs as synonyms.")


@dataclass(kw_only=True)
class UmlsOptions:
    sab: Optional[str] = option(None, "--sab", help="Sources to keep, comma-separated (e.g. MSH,SNOMEDCT_US); "
                                                    "default: all.")
    lang: str = option("ENG", "--lang", help="Languages to keep, comma-separated; ALL for all.")
    suppress: bool = option(False, "--suppress", help="Also keep suppressible names (SUPPRESS not N).")


@dataclass(kw_only=True)
class MeshOptions:
    branches: Optional[list[str]] = option(
        None, "--branches", help="Keep only the descriptors under this tree letter (D: Chemicals and Drugs) or "
                                 "tree number (C04), and the supplementary records mapped into them; repeatable.")


@dataclass(kw_only=True)
class OboOptions:
    parser: str = option("fast", "--parser",
                         help="fast: a well-formed file is read in one pass (the same graph pronto builds, several "
                              "times faster), any other with pronto; pronto: every file with pronto.")


@dataclass(kw_only=True)
class TableOptions:
    id_column: str = option("0", "--id-column", help="Column of the ids: a header name or a 0-based index.")
    name_column: str = option("1", "--name-column", help="Column of the preferred names (header name or index).")
    synonyms_column: Optional[str] = option(None, "--synonyms-column",
                                            help="Column of the synonyms, several split on --separator.")
    parents_column: Optional[str] = option(None, "--parents-column",
                                           help="Column of the parent ids (IS_A), several split on --separator.")
    separator: str = option("|", "--separator", help="What separates several synonyms or parents in one cell.")
    delimiter: Optional[str] = option(None, "--delimiter", help="Column delimiter (tab, comma, semicolon or one "
                                      "character); default: tab for .tsv, comma for .csv, else sniffed.")
    header: bool = option(True, "--header/--no-header", help="Whether the first row names the columns.")
    prefix: Optional[str] = option(None, "--prefix", help="CURIE prefix given to ids without one: `--prefix MYV` "
                                   "makes id 12 `MYV:12` (needed when some id has none).")


for _entry in (
    Loader("obo", "kgnorm.ontologies.obo:load", "Any OBO ontology, e.g. HPO's hp.obo (a well-formed file in one "
           "pass, any other through pronto).", options=OboOptions),
    Loader("mesh", "kgnorm.ontologies.mesh:load",
           "MeSH descriptor/supplementary XML (a file, .xml.gz, or a directory holding them), or a directory "
           "holding the MeSH name tables (mesh_id_label_mappings.tsv, mesh_supp_id_label_mappings.tsv).",
           options=MeshOptions),
    Loader("medic", "kgnorm.ontologies.medic:load",
           "CTD MEDIC: CTD_diseases.tsv/.csv or the DNorm pipe file (medic_06Jul2012.txt)."),
    Loader("snomed", "kgnorm.ontologies.snomed:load",
           "SNOMED CT RF2 Snapshot (release root, Snapshot/ or Terminology/ directory)."),
    Loader("meddra", "kgnorm.ontologies.meddra:load", "MedDRA ASCII release (the MedAscii directory).",
           options=MeddraOptions),
    Loader("umls", "kgnorm.ontologies.umls:load",
           "UMLS Metathesaurus RRF (a release's META folder): concepts are CUIs, source codes alt ids.",
           options=UmlsOptions,
           dangling_help="Skip MRREL rows naming a CUI that MRCONSO lacks instead of failing.",
           dry_run=False),  # as the command always was; the job's dry run works for it too
    Loader("table", "kgnorm.ontologies.table:load",
           "A vocabulary table (TSV or CSV): one concept per row; choose the id, name, synonyms and parents "
           "columns.", options=TableOptions, dangling_help="Drop parents that no row defines instead of failing."),
):
    register(_entry)
