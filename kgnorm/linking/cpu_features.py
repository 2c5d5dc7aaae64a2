"""CPU features the kernel declares: what chooses a code path (never a timing run)."""
from __future__ import annotations

import os
from functools import lru_cache

BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")  # CPU features with native bf16 dot products
# CPU features with int8 dot products (x86 VNNI / AMX, ARM's dot-product extension): where int8
# pays; without them (AVX2 only) ONNX Runtime's int8 kernel is right (7-bit weights) but slower
INT8_CPU_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8", "asimddp")


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


def int8_native(flags: frozenset[str] | None = None) -> bool:
    """Whether the CPU declares int8 dot products (AVX512-VNNI, AVX-VNNI, AMX-INT8, ARM asimddp):
    what ``auto`` reads to take the onnx engine's int8 query path. A declared fact, never a timing run."""
    flags = cpu_flags() if flags is None else flags
    return any(f in flags for f in INT8_CPU_FLAGS)


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


QUERY_PRECISION_ENV = "KGNORM_QUERY_PRECISION"  # auto, fp32, bf16 (torch engine) or int8 (onnx engine)
DEFAULT_QUERY_PRECISION = "auto"  # bf16 adopted: dev Acc@1 unchanged on NCBI-disease and BC5CDR (benchmarks/LOG.md)
# whether ``auto`` takes the onnx engine's int8 path where the CPU declares int8 dot products
# (int8_native): adopted, dev Acc@1 within 0.003 of fp32 queries on NCBI-disease and BC5CDR-disease for
# each linker measured (two-pass 7-bit weights; benchmarks/LOG.md, "int8 query recipes", issue 51)
AUTO_INT8 = True
QUERY_ROWS_ENV = "KGNORM_QUERY_ROWS"  # rows per call instead of QUERY_ROWS (benchmarks)
# rows per fixed-shape query call on each path (kgnorm.encoders.fixed_shape; benchmarks/LOG.md, issue 29)
QUERY_ROWS = {"fp32": 32, "bf16": 32, "int8": 32}
TORCH_PRECISIONS, ONNX_PRECISIONS = ("fp32", "bf16"), ("fp32", "int8")


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
    (the default) is ``onnx`` (ONNX Runtime, no torch imported) where onnxruntime and tokenizers
    are installed, unless bf16 queries are asked for by name (``KGNORM_QUERY_PRECISION=bf16``: a
    torch path); else ``torch``; int8 asked for by name is ``onnx`` (its one engine). Declared
    facts only (benchmarks/LOG.md, "query engine")."""
    from kgnorm.errors import KgnormError

    value = (engine or os.environ.get(QUERY_ENGINE_ENV) or DEFAULT_QUERY_ENGINE).strip().lower()
    if value == "auto":
        forced = os.environ.get(QUERY_PRECISION_ENV, "").strip().lower()
        value = "onnx" if forced == "int8" or (onnx_runtime_installed() and forced != "bf16") else "torch"
    if value not in QUERY_ENGINES:
        raise KgnormError(f"{QUERY_ENGINE_ENV}={value!r}: expected auto, torch or onnx")
    if value == "torch" and os.environ.get(QUERY_PRECISION_ENV, "").strip().lower() == "int8":
        raise KgnormError(f"{QUERY_PRECISION_ENV}=int8 runs on the onnx query engine, not {QUERY_ENGINE_ENV}=torch")
    return value


def ask_query_precision(value: str) -> None:
    """Take `value` as ``$KGNORM_QUERY_PRECISION`` for this process and the processes it starts (Ray
    workers): what ``link --fast`` asks for (int8) where the variable says nothing else."""
    if os.environ.get(QUERY_PRECISION_ENV, "").strip().lower() not in ("", "auto", value):
        from kgnorm.errors import KgnormError

        raise KgnormError(f"{QUERY_PRECISION_ENV}={os.environ[QUERY_PRECISION_ENV]} contradicts the {value} asked for")
    os.environ[QUERY_PRECISION_ENV] = value


def query_path(precision: str | None = None, flags: frozenset[str] | None = None,
               engine: str = "torch") -> tuple[str, int]:
    """(precision, rows) of the query encoder: `precision` or ``$KGNORM_QUERY_PRECISION``
    (default: DEFAULT_QUERY_PRECISION). The torch `engine` runs fp32 or bf16, ``auto`` being bf16
    where the CPU declares native bf16; the ``onnx`` one runs fp32 or int8, ``auto`` being int8
    where AUTO_INT8 and the CPU declares int8 dot products (int8_native), else fp32; int8 asked for
    by name runs on any CPU (7-bit weights: right on AVX2-only kernels too, only slower), and a
    torch model (the trainer's dev scoring) encodes fp32 then: int8 is the onnx engine's path. Every
    process of one job must take the same path (the paths give different vectors): force one on a
    mixed cluster."""
    from kgnorm.errors import KgnormError

    value = (precision or os.environ.get(QUERY_PRECISION_ENV) or DEFAULT_QUERY_PRECISION).strip().lower()
    paths = ONNX_PRECISIONS if engine == "onnx" else TORCH_PRECISIONS
    if value == "int8" and engine != "onnx":
        value = "fp32"  # a torch model (the trainer's) has no int8 path; `link` opens the onnx engine for it
    if value == "auto":
        if engine == "onnx":
            value = "int8" if AUTO_INT8 and int8_native(flags) else "fp32"
        else:
            value = "bf16" if bf16_native(flags) else "fp32"
    if value not in paths:
        hint = f" (set {QUERY_ENGINE_ENV}=torch for bf16)" if value == "bf16" else ""
        raise KgnormError(f"{QUERY_PRECISION_ENV}={value!r}: the {engine} query engine runs auto, "
                          f"{' or '.join(paths)}{hint}")
    rows = os.environ.get(QUERY_ROWS_ENV, "").strip()  # a benchmark's knob
    return value, int(rows) if rows else QUERY_ROWS[value]
