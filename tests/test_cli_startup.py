"""Every `kgnorm` command starts without the heavy libraries: the CLI layer parses options, the
jobs import what they need when called, and `kgnorm ingest` / `kgnorm train` build only the
command that is named (no other loader's options, no method's recipe)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "pandas", "pyarrow", "tqdm", "networkx", "torch", "transformers", "ladybug", "pronto",
         "kgnorm.jobs", "kgnorm.stores", "kgnorm.methods.registry", "kgnorm.graph")


def _loaded(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``heavy`` (a package counts when any module of it is held) that a fresh
    interpreter holds after running ``code``."""
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps(sorted({{h for h in {heavy!r} for m in list(sys.modules) "
             f"if m == h or m.startswith(h + '.')}})))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _cli(*args: str) -> str:
    return ("from kgnorm.cli.app import main\n"
            f"try:\n    main({list(args)!r})\nexcept SystemExit as exc:\n    assert not exc.code, exc.code")


def test_importing_the_cli_loads_no_heavy_library():
    assert _loaded("import kgnorm.cli.app") == []


@pytest.mark.parametrize("args", [["--help"], ["ingest", "obo", "--help"], ["ingest", "--help"], ["eval", "--help"]])
def test_help_loads_no_heavy_library(args):
    assert _loaded(_cli(*args)) == []


def test_train_help_of_one_method_imports_that_recipe_only():
    """DAN's recipe pulls networkx (graph levels); BioSyn's options are shown without it."""
    loaded = _loaded(_cli("train", "biosyn", "--help"),
                     ("kgnorm.methods.biosyn.recipe", "kgnorm.methods.dan.recipe", "networkx", "torch"))
    assert loaded == ["kgnorm.methods.biosyn.recipe"]
