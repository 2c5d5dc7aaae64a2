"""CPU features the kernel declares: what chooses a code path (never a timing run)."""
from __future__ import annotations

import os
from functools import lru_cache

BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")  # CPU features with native bf16 dot products


def cpu_flags() -> frozenset[str]:
    """The CPU feature flags the kernel reports (Linux ``/proc/cpuinfo``); empty elsewhere."""
    return _proc_flags()


@lru_cache(maxsize=1)
def _proc_flags() -> frozenset[str]:
    """Read once per process: the search paths ask on every call."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def bf16_native(flags: frozenset[str] | None = None) -> bool:
    """Whether the CPU declares native bf16 arithmetic (AMX-BF16 or AVX512-BF16): what
    ``precision="auto"`` reads to choose the bf16 pre-filter. A declared fact, not a timing
    run, so the path a machine takes is known before anything is loaded."""
    flags = cpu_flags() if flags is None else flags
    return any(f in flags for f in BF16_CPU_FLAGS)


def declared_bf16(env: str) -> bool:
    """Whether a search path runs its bf16 pre-filter: ``$env`` = fp32 or bf16 forces one path (a
    test run, a mixed cluster); unset or ``auto``, the CPU's declared bf16 support decides."""
    from kgnorm.errors import KgnormError

    forced = os.environ.get(env, "").strip().lower()
    if forced in ("fp32", "bf16"):
        return forced == "bf16"
    if forced not in ("", "auto"):
        raise KgnormError(f"{env} must be fp32, bf16 or auto, not {forced!r}")
    return bf16_native()


QUERY_PRECISION_ENV = "KGNORM_QUERY_PRECISION"  # auto, fp32 or bf16
DEFAULT_QUERY_PRECISION = "auto"  # bf16 adopted: dev Acc@1 unchanged on NCBI-disease and BC5CDR (benchmarks/LOG.md)
QUERY_ROWS_ENV = "KGNORM_QUERY_ROWS"  # rows per call instead of QUERY_ROWS (benchmarks)
# rows per fixed-shape query call on each path (kgnorm.encoders.fixed_shape; benchmarks/LOG.md, issue 29)
QUERY_ROWS = {"fp32": 32, "bf16": 32}


QUERY_ENGINE_ENV = "KGNORM_QUERY_ENGINE"  # auto, torch or onnx
QUERY_ENGINES = ("torch", "onnx")
DEFAULT_QUERY_ENGINE = "auto"


@lru_cache(maxsize=1)
def onnx_runtime_installed() -> bool:
    """Whether onnxruntime, onnx and tokenizers can be imported (looked up, not imported)."""
    from importlib.util import find_spec

    return all(find_spec(m) is not None for m in ("onnxruntime", "onnx", "tokenizers"))


def query_engine(engine: str | None = None, flags: frozenset[str] | None = None) -> str:
    """Which runtime encodes `link`'s queries: `engine` or ``$KGNORM_QUERY_ENGINE``; ``auto``
    (the default) is ``onnx`` (ONNX Runtime fp32, no torch imported) where onnxruntime and tokenizers
    are installed, unless bf16 queries are asked for by name (``KGNORM_QUERY_PRECISION=bf16``: a
    torch path); else ``torch``. Declared facts only (benchmarks/LOG.md, "query engine")."""
    from kgnorm.errors import KgnormError

    value = (engine or os.environ.get(QUERY_ENGINE_ENV) or DEFAULT_QUERY_ENGINE).strip().lower()
    if value == "auto":
        forced = os.environ.get(QUERY_PRECISION_ENV, "").strip().lower()
        value = "onnx" if onnx_runtime_installed() and forced != "bf16" else "torch"
    if value not in QUERY_ENGINES:
        raise KgnormError(f"{QUERY_ENGINE_ENV}={value!r}: expected auto, torch or onnx")
    return value


def query_path(precision: str | None = None, flags: frozenset[str] | None = None,
               engine: str = "torch") -> tuple[str, int]:
    """(precision, rows) of the query encoder: `precision` or ``$KGNORM_QUERY_PRECISION``;
    ``auto`` is bf16 where the CPU declares native bf16, else fp32 (default: DEFAULT_QUERY_PRECISION). Every process of one job must
    take the same path (the two give different vectors): force one on a mixed cluster. The ``onnx``
    `engine` runs fp32 only."""
    from kgnorm.errors import KgnormError

    value = (precision or os.environ.get(QUERY_PRECISION_ENV) or DEFAULT_QUERY_PRECISION).strip().lower()
    if engine == "onnx":
        if value not in ("auto", "fp32"):
            raise KgnormError(f"{QUERY_PRECISION_ENV}={value!r}: the onnx query engine runs fp32 only "
                              f"(set {QUERY_ENGINE_ENV}=torch for bf16)")
        value = "fp32"
    if value == "auto":
        value = "bf16" if bf16_native(flags) else "fp32"
    if value not in QUERY_ROWS:
        raise KgnormError(f"{QUERY_PRECISION_ENV}={value!r}: expected auto, fp32 or bf16")
    rows = os.environ.get(QUERY_ROWS_ENV, "").strip()  # a benchmark's knob
    return value, int(rows) if rows else QUERY_ROWS[value]
