"""CPU features the kernel declares: what chooses a code path (never a timing run)."""
from __future__ import annotations

BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")  # CPU features with native bf16 dot products


def cpu_flags() -> frozenset[str]:
    """The CPU feature flags the kernel reports (Linux ``/proc/cpuinfo``); empty elsewhere."""
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
